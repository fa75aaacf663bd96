"""Pure Plotly figure builders: numbers in, `go.Figure` out. No streamlit, no torch.

Arrays reach Plotly as float32 numpy arrays, which Plotly serialises as compact binary, never as lists of floats.
Token labels are user text: they are HTML-escaped and made unique before they become axis categories.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.plotting import (
    Labels,
    Trace,
    allowed_mask,
    as_array,
    as_vector,
    axes,
    axis_keys,
    category_ticks,
    cell_text_size,
    cell_texts,
    cells_printed,
    colorscale,
    colour_positions,
    make_figure,
    matrix_axis,
    unique_labels,
    weights_colorscale,
    word,
)
from attnviz.figures.style import (
    BLACK,
    BLUE,
    CELL_TEXT_SIZE,
    DIVERGING_PALETTE,
    MASK_COLOUR,
    MAX_HOVER_SCORE_CELLS,
    MAX_PANEL_TICKS,
    MAX_TICKS,
    ORANGE,
    SEQUENTIAL_PALETTE,
    WEIGHTS_PALETTE,
)
from attnviz.i18n import DEFAULT_LANGUAGE, t

# ---------------------------------------------------------------- inputs


@dataclass(frozen=True, eq=False)  # eq=False: its fields are arrays, which do not compare to one bool
class AttentionGrid:
    """Attention weights and what is drawn with them: the cells that may attend and the names of the rows and
    columns. The weights are (..., Q, K): one head's (Q, K), a grid of heads' (h, Q, K); the mask (True = may attend,
    None: nothing masked) is broadcast to their shape; the labels name the queries (rows) and keys (columns),
    numbered q1.., k1.. when None. The attention builders take one, or bare weights (nothing masked, numbered
    labels). The palette and the language stay keyword arguments, as for every other builder: they are the page's
    look, not part of the data, and nothing has to agree with them."""

    weights: Any
    mask: Any = None
    query_labels: Labels = None
    key_labels: Labels = None

    @classmethod
    def of(cls, grid: AttentionGrid | Any) -> AttentionGrid:
        """`grid` itself, or bare weights as a grid with nothing masked and numbered labels."""
        return grid if isinstance(grid, AttentionGrid) else cls(grid)

    def drawn(self, ndim: int) -> tuple[np.ndarray, np.ndarray | None, list[str], list[str]]:
        """What a heatmap draws: the weights as float32 with `ndim` axes (..., Q, K), the mask broadcast to them
        (None: nothing masked), the query labels and the key labels (escaped, unique: plotting.unique_labels)."""
        values = as_array(self.weights, "weights", ndim)
        allowed = allowed_mask(self.mask, values.shape)
        y = unique_labels(self.query_labels, values.shape[-2], "q")
        x = unique_labels(self.key_labels, values.shape[-1], "k")
        return values, allowed, y, x


# validators cost ~10 ms per heatmap, most of a page rerun. The tests rebuild every figure with validation on and
# check that Plotly accepts it unchanged, so nothing invalid can slip through.


def _heatmap(values: np.ndarray, allowed: np.ndarray | None, x: list[str], y: list[str], **kwargs: Any) -> Trace:
    """A heatmap of (Q, K) values, NaN where masked (the mask trace shows there instead)."""
    z = values if allowed is None else np.where(allowed, values, np.float32(np.nan))  # (Q, K)
    return {"type": "heatmap", "z": z.astype(np.float32), "x": x, "y": y, "hoverongaps": False, **kwargs}


def _mask_trace(
    allowed: np.ndarray, x: list[str], y: list[str], size: int | None, lang: str = DEFAULT_LANGUAGE
) -> Trace:
    """Masked cells (allowed False) in the mask colour (in no palette), with "×" in `size` px when small (None: no
    marks), no colour bar; transparent elsewhere."""
    z = np.where(allowed, np.float32(np.nan), np.float32(1.0)).astype(np.float32)  # (Q, K)
    flat = {"colorscale": [[0.0, MASK_COLOUR], [1.0, MASK_COLOUR]], "zmin": 0.0, "zmax": 1.0, "showscale": False}
    crosses = np.where(allowed, "", "×").astype(object)
    cells = {"text": crosses, "texttemplate": "%{text}", "textfont": {"color": BLACK, "size": size}} if size else {}
    hover = f"{word('query', lang)}: %{{y}}<br>{word('key', lang)}: %{{x}}<br>{word('masked', lang)}<extra></extra>"
    return _heatmap(z, None, x, y, name="masked", hovertemplate=hover, **flat, **cells)


def _mask_traces(
    panels: list[tuple[np.ndarray, int]],
    x: list[str],
    y: list[str],
    layout: dict[str, Any],
    lang: str = DEFAULT_LANGUAGE,
    across: int = 1,
) -> list[Trace]:
    """Mask traces on each (allowed, panel) that has masked cells, plus one legend entry; updates the layout."""
    masked = [(allowed, panel) for allowed, panel in panels if not allowed.all()]
    if not masked:
        return []
    shape = masked[0][0].shape
    # the "×" marks, where numbers would fit, as large as they are
    size = cell_text_size(shape[-1] * across, 4) if cells_printed(None, shape, across) else None
    data = [{**_mask_trace(allowed, x, y, size, lang), **axes(panel)} for allowed, panel in masked]
    square = {"symbol": "square", "size": 14, "color": MASK_COLOUR, "line": {"color": "#7f7f7f", "width": 1}}
    legend_entry = {"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": word("masked", lang)}
    data.append({**legend_entry, "marker": square, "hoverinfo": "skip", **axes(panels[0][1])})
    # above the plot; with subplots, above their titles too (container coordinates)
    place = {"yref": "container", "y": 0.99, "yanchor": "top"} if len(panels) > 1 else {"y": 1.0, "yanchor": "bottom"}
    layout["showlegend"] = True
    layout["legend"] = {"orientation": "h", "x": 0.0, "xanchor": "left", **place}
    layout["margin"] = {**layout.get("margin", {}), "t": 90}
    return data


def _hover(
    prefix: str = "",
    quantity: str | None = None,
    with_scores: bool = False,
    lang: str = DEFAULT_LANGUAGE,
    shown: str = "%{z:.6~g}",
) -> str:
    """Hover text for a cell: query and key labels, the value (`shown`) to 6 significant digits, the raw score if
    known (customdata, or its second entry when the weight is its first)."""
    quantity = quantity or word("weight", lang)
    variable = "customdata[1]" if shown.startswith("%{customdata[0]") else "customdata"
    score = f"<br>{word('score', lang)}: %{{{variable}:.6~g}}" if with_scores else ""
    query, key = word("query", lang), word("key", lang)
    return f"{prefix}{query}: %{{y}}<br>{key}: %{{x}}<br>{quantity}: {shown}{score}<extra></extra>"


def _matrix_layout(
    title: str, height: int, x_title: str = "", y_title: str = "", x: Labels = (), y: Labels = ()
) -> dict[str, Any]:
    """Layout of a one-panel matrix figure: y reversed so that row 1 is at the top, white behind NaN cells; every
    label of `x` and `y` up to MAX_TICKS, then every k-th."""
    return {
        "title": {"text": title},
        "height": height,
        "xaxis": matrix_axis(x_title, **category_ticks(x or (), MAX_TICKS)),
        "yaxis": matrix_axis(y_title, autorange="reversed", **category_ticks(y or (), MAX_TICKS)),
        "plot_bgcolor": "white",  # NaN cells read as empty, not as a tinted cell
    }


def _grid_layout(count: int, cols: int, titles: list[str], h_space: float, v_space: float) -> dict[str, Any]:
    """Subplot axes and titles for `count` panels in rows of `cols`, as plotly.subplots.make_subplots lays them out.

    make_subplots validates its whole layout and costs ~60 ms; the geometry itself is a few lines.
    """
    rows = math.ceil(count / cols)
    width = (1.0 - h_space * (cols - 1)) / cols
    height = (1.0 - v_space * (rows - 1)) / rows
    layout: dict[str, Any] = {"annotations": []}
    for panel in range(1, count + 1):
        row, col = divmod(panel - 1, cols)
        left, top = col * (width + h_space), 1.0 - row * (height + v_space)
        refs = axes(panel)
        x_name, y_name = axis_keys(panel)
        layout[x_name] = {"anchor": refs["yaxis"], "domain": [left, left + width]}
        layout[y_name] = {"anchor": refs["xaxis"], "domain": [max(0.0, top - height), top]}
        title = {"text": titles[panel - 1], "x": left + width / 2, "y": top, "xref": "paper", "yref": "paper"}
        layout["annotations"].append(
            {**title, "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 16}}
        )
    return layout


def _height(rows: int) -> int:
    """A figure height in pixels that gives each of `rows` rows room, within sane bounds."""
    return int(min(900, max(360, 24 * rows + 180)))


NEARLY_UNIFORM = 3.0  # a chart's weights whose largest is under this many times the smallest are called nearly uniform
GRID_SIDES_PX = 150  # a heads grid's query labels and colour bar, beside its panels
GRID_PANEL_TITLE_PX = 60  # a panel's title and the gap below it
GRID_KEY_LABELS_PX = 50  # a panel's key labels, turned upright
MODEBAR_PX = 36  # Plotly's toolbar at a figure's top right
MAX_RATIO = 100.0  # from this many times on, the colour bar gives the range instead of a ratio


def spread_words(low: float, high: float, lang: str) -> str:
    """How far apart a chart's smallest and largest weights are, in words: "nearly uniform: largest 2.2× the smallest"
    (under NEARLY_UNIFORM times), "largest 40× the smallest", or the range itself when the smallest is 0 or next to
    nothing beside the largest (MAX_RATIO times or more: "largest 39824783× the smallest" says nothing)."""
    if low <= 0.0 or high / low >= MAX_RATIO:
        return word("spread_range", lang, low=f"{low:.2g}", high=f"{high:.2g}")
    ratio = high / low
    text = word("spread_ratio", lang, ratio=f"{ratio:.2g}")
    return word("nearly_uniform", lang, spread=text) if ratio < NEARLY_UNIFORM else text


def data_spread(values: np.ndarray, allowed: np.ndarray | None) -> tuple[float, float] | None:
    """The smallest and largest weight a chart shows (masked and non-finite cells left out); None when there are
    none, or all are equal."""
    usable = np.isfinite(values) if allowed is None else np.isfinite(values) & allowed
    if not usable.any():
        return None
    low, high = float(values[usable].min()), float(values[usable].max())
    return (low, high) if high - low >= 1e-6 else None


def _weights_colours(
    palette: str, colour_range: str, low: float, high: float, lang: str, spread: tuple[float, float] | None = None
) -> dict[str, Any]:
    """The colour scale and colour bar of weights on `colour_range` (see plotting.colour_positions); the bar's title
    says which range is in use, and on the chart's own range how far apart its weights are (`spread`, data_spread's).
    As a colour axis: {"colorscale", "cmin", "cmax", "colorbar"}."""
    title = f"{word('weight', lang)}<br><sub>{word(f'range_{colour_range}', lang)}</sub>"
    if colour_range == "data" and spread is not None:  # the whole palette on a narrow range: its spread in words
        title += f"<br><sub>{spread_words(*spread, lang)}</sub>"
    colorbar: dict[str, Any] = {"title": {"text": title}}
    if colour_range == "row":
        colorbar.update(tickvals=[0.0, 1.0], ticktext=[word("row_min", lang), word("row_max", lang)])
    # on 0-1, colour by √weight so that the small weights of a soft row are not one flat block; a chart's own range
    # or a row's already spreads its weights over the whole palette
    scale = weights_colorscale(palette) if colour_range == "unit" else colorscale(palette)
    return {"colorscale": scale, "cmin": low, "cmax": high, "colorbar": colorbar}


def _as_trace_colours(axis: dict[str, Any]) -> dict[str, Any]:
    """A colour axis's settings as a heatmap trace's own (zmin, zmax instead of cmin, cmax)."""
    return {"colorscale": axis["colorscale"], "zmin": axis["cmin"], "zmax": axis["cmax"], "colorbar": axis["colorbar"]}


def _carried(values: np.ndarray, colour_range: str, scores: np.ndarray | None = None) -> tuple[dict[str, Any], str]:
    """Where a weights trace keeps its weights (and raw scores) for the hover: (extra trace settings, the hover's
    weight variable). On a row's range z holds each weight's place on its row (0..1, plotting.colour_positions), so
    the weight itself travels as customdata, the score after it; `figure_tables` reads the weights from there."""
    if colour_range != "row":
        return ({} if scores is None else {"customdata": scores}), "%{z:.6~g}"
    data = values if scores is None else np.stack([values, scores], axis=-1)
    extra = {"customdata": data.astype(np.float32), "meta": {"weights": "customdata"}}
    return extra, "%{customdata:.6~g}" if scores is None else "%{customdata[0]:.6~g}"


def _cell_texts(
    values: np.ndarray, allowed: np.ndarray | None, z: np.ndarray, colours: dict[str, Any], across: int = 1
) -> dict[str, Any]:
    """The weights printed in their cells to 2 decimals (masked cells stay empty: the mask trace shows "×"), each in
    black or white on its cell's colour (z on the `colours` axis: colorscale, cmin, cmax); as large as fits a phone
    with the columns of `across` panels side by side."""
    text = np.char.mod("%.2f", values).astype(object)
    if allowed is not None:
        text = np.where(allowed, text, "")
    size = cell_text_size(values.shape[-1] * across, 4) or CELL_TEXT_SIZE
    return cell_texts(text, z, colours["cmin"], colours["cmax"], colours["colorscale"], size)


def _difference_bound(first: np.ndarray, second: np.ndarray, allowed: np.ndarray | None, colour_range: str) -> float:
    """The colour range ±bound of weights A − B: the whole -1..1 with the 0-1 range, else the difference's own."""
    if colour_range == "unit":
        return 1.0
    difference = first - second
    usable = np.isfinite(difference) if allowed is None else allowed & np.isfinite(difference)
    return max(float(np.abs(difference[usable]).max()) if usable.any() else 0.0, 1e-3)


# ---------------------------------------------------------------- attention weights


def weights_heatmap(
    grid: AttentionGrid | Any,
    *,
    scores: Any = None,
    title: str | None = None,
    palette: str = WEIGHTS_PALETTE,
    show_values: bool | None = None,
    colour_range: str = "unit",
    data_range: tuple[float, float] | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Attention weights (Q, K) as a heatmap (an AttentionGrid, or bare weights); masked cells marked, raw scores in
    the hover.

    `colour_range`: "unit" (fixed 0-1, for comparing charts), "data" (this chart's smallest to largest weight, or
    `data_range` when charts shown together share one) or "row" (each row's own range); the colour bar says which."""
    title = word("attention_weights", lang) if title is None else title
    values, allowed, y, x = AttentionGrid.of(grid).drawn(2)  # (Q, K), its mask and its labels
    raw = None
    if scores is not None:
        raw = as_array(scores, "scores", 2)  # (Q, K) raw a(q, k), shown on hover
        if raw.shape != values.shape:
            raise ValueError(f"scores shape {raw.shape} differs from weights shape {values.shape}")
        if values.size > MAX_HOVER_SCORE_CELLS:
            raw = None
    z, low, high = colour_positions(values, allowed, colour_range)
    extra, shown = _carried(values, colour_range, raw)
    if colour_range == "data" and data_range is not None:
        low, high = data_range
    axis = _weights_colours(palette, colour_range, low, high, lang, data_spread(values, allowed))
    if cells_printed(show_values, values.shape):
        extra.update(_cell_texts(values, allowed, z, axis))
    hover = _hover(with_scores=raw is not None, lang=lang, shown=shown)
    colours = _as_trace_colours(axis)
    trace = _heatmap(z, allowed, x, y, name="weights", hovertemplate=hover, **colours, **extra)
    layout = _matrix_layout(title, _height(values.shape[0]), word("keys", lang), word("queries", lang), x, y)
    masks = _mask_traces([(allowed, 1)], x, y, layout, lang) if allowed is not None else []
    return make_figure([trace, *masks], layout)


def heads_grid(
    grid: AttentionGrid | Any,
    *,
    head_titles: Labels = None,
    palette: str = WEIGHTS_PALETTE,
    columns: int = 4,
    colour_range: str = "unit",
    square: bool = False,
    width: int | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One small heatmap per head, weights (h, Q, K) (an AttentionGrid, or bare weights), all sharing one colour
    axis (`colour_range` as in weights_heatmap: "data" is the range of all heads together). `square`: square cells
    at any width (a phone's narrow panels otherwise stretch each cell into a tall strip). `width`: the width the
    figure will be drawn at, when known (a phone's): the height then fits square panels instead of leaving gaps."""
    values, allowed, y, x = AttentionGrid.of(grid).drawn(3)  # (h, Q, K), its mask (h, Q, K) or None, labels
    heads, n_queries, n_keys = values.shape
    if heads == 0 or columns < 1:
        raise ValueError("heads_grid needs at least one head and at least one column")
    default_titles = [t("fig.head_n", lang, n=head + 1) for head in range(heads)]
    titles = unique_labels(head_titles if head_titles is not None else default_titles, heads)
    cols = min(columns, heads)
    rows = math.ceil(heads / cols)
    layout = _grid_layout(heads, cols, titles, 0.03, min(0.12, 0.5 / max(rows - 1, 1)))
    z, low, high = colour_positions(values, allowed, colour_range)
    axis = _weights_colours(palette, colour_range, low, high, lang, data_spread(values, allowed))
    printed = cells_printed(None, (n_queries, n_keys), across=cols)
    data = []
    for head in range(heads):
        head_allowed = None if allowed is None else allowed[head]
        extra, shown = _carried(values[head], colour_range)
        if printed:
            extra.update(_cell_texts(values[head], head_allowed, z[head], axis, across=cols))
        hover = _hover(prefix=f"{titles[head]}<br>", lang=lang, shown=shown)
        style = {"coloraxis": "coloraxis", "hovertemplate": hover, **axes(head + 1), **extra}
        data.append(_heatmap(z[head], head_allowed, x, y, name=titles[head], **style))
    if allowed is not None:
        data += _mask_traces([(allowed[head], head + 1) for head in range(heads)], x, y, layout, lang, across=cols)
    _grid_axes(layout, heads, cols, x, y, square=square, phone=width is not None, lang=lang)
    height = int(min(1400, rows * max(220, 14 * n_queries + 120) + 120))
    if width is not None:  # square cells: each panel as tall as its width (less the labels and the colour bar) times
        panel = (width - GRID_SIDES_PX) / cols * n_queries / n_keys  # its rows over its columns
        height = int(rows * (panel + GRID_PANEL_TITLE_PX + GRID_KEY_LABELS_PX) + 120)  # each row names its keys
    if "legend" in layout:  # the mask's legend below the toolbar (a phone shows it always, over the legend)
        layout["legend"]["y"] = 1 - MODEBAR_PX / height
    layout.update(coloraxis=axis, height=height, plot_bgcolor="white")
    return make_figure(data, layout)


def _grid_axes(
    layout: dict[str, Any], heads: int, cols: int, x: list[str], y: list[str], *, square: bool, phone: bool, lang: str
) -> None:
    """Each panel's axes: the key labels on the bottom row (on a phone on every row), the query labels on the left
    column; with `square`, square cells."""
    for head in range(heads):
        x_name, y_name = axis_keys(head + 1)
        bottom, left = head + cols >= heads, head % cols == 0  # the bottom panels carry the key labels
        labelled = bottom or phone  # on a phone every panel: one scrolls past the bottom row's labels
        ticks_x, ticks_y = category_ticks(x, MAX_PANEL_TICKS), category_ticks(y, MAX_PANEL_TICKS)
        # an axis without labels has no tick marks either: a right panel's marks fell on its left neighbour's cells
        layout[x_name].update(
            matrix_axis(word("keys", lang) if bottom else "", showticklabels=labelled, **ticks_x, **_bare(labelled))
        )
        queries = word("queries", lang) if left else ""
        layout[y_name].update(matrix_axis(queries, showticklabels=left, autorange="reversed", **ticks_y, **_bare(left)))
        if square:
            # at the top of its room, right under its title (centred, a spare gap split above and below it)
            layout[y_name].update(
                scaleanchor=axes(head + 1)["xaxis"], scaleratio=1, constrain="domain", constraintoward="top"
            )
            layout[x_name].update(constrain="domain")


def _bare(labelled: bool) -> dict[str, Any]:
    """A grid panel's axis without labels: no tick marks either."""
    return {} if labelled else {"ticks": ""}


def comparison_charts(
    grid: AttentionGrid | Any,
    weights_b: Any,
    *,
    label_a: str,
    label_b: str,
    palette: str = WEIGHTS_PALETTE,
    colour_range: str = "unit",
    lang: str = DEFAULT_LANGUAGE,
) -> list[go.Figure]:
    """The comparison as three charts, for a page that lays them out itself (side by side on a wide screen, one
    above the other on a phone or a projector): weights A (`grid`'s, an AttentionGrid or bare weights) and weights B
    (on the same queries, keys and mask) on one shared colour range (`colour_range` as in weights_heatmap, over both),
    and A − B, diverging: on -1..1 with the 0-1 range, else on ±its largest size. The labels are shown as text, never
    as markup."""
    grid = AttentionGrid.of(grid)
    first, allowed, _, _ = grid.drawn(2)  # (Q, K)
    second = as_array(weights_b, "weights_b", 2)  # (Q, K)
    if first.shape != second.shape:
        raise ValueError(f"weights_a shape {first.shape} differs from weights_b shape {second.shape}")
    both_allowed = None if allowed is None else np.stack([allowed, allowed])
    _, low, high = colour_positions(np.stack([first, second]), both_allowed, colour_range)
    label_a, label_b = (html.escape(str(label), quote=False) for label in (label_a, label_b))
    charts = [
        weights_heatmap(replace(grid, weights=weights), title=label, palette=palette, colour_range=colour_range,
                        data_range=(low, high), lang=lang)
        for weights, label in ((first, label_a), (second, label_b))
    ]  # fmt: skip
    bound = _difference_bound(first, second, allowed, colour_range)
    difference = matrix_heatmap(
        first - second, row_labels=grid.query_labels, col_labels=grid.key_labels, title=f"{label_a} − {label_b}",
        zmin=-bound, zmax=bound, x_title=word("keys", lang), y_title=word("queries", lang), mask=grid.mask, lang=lang,
    )  # fmt: skip
    return [*charts, difference]


# ---------------------------------------------------------------- generic matrices


def _colour_range(values: np.ndarray, symmetric: bool, zmin: float | None, zmax: float | None) -> tuple[float, float]:
    """The colour range: given bounds win; otherwise ±max|finite| (symmetric) or the finite min..max."""
    finite = values[np.isfinite(values)].astype(np.float64)
    if symmetric:
        bound = (float(np.abs(finite).max()) if finite.size else 0.0) or 1.0
        if zmin is None and zmax is None:
            return -bound, bound
        if zmin is None or zmax is None:  # one bound given: mirror it so that 0 stays in the middle
            given = abs(float(zmin if zmax is None else zmax))
            return -given, given
        return float(zmin), float(zmax)
    low = float(zmin) if zmin is not None else float(finite.min()) if finite.size else 0.0
    high = float(zmax) if zmax is not None else float(finite.max()) if finite.size else 1.0
    return (low, high) if high > low else (low - 0.5, low + 0.5)


def _cell_text(value: float) -> str:
    """A cell's number to 3 significant digits ("inf" reads as such); NaN as an empty cell."""
    return "" if math.isnan(value) else f"{value:.3g}"


def _matrix_cells(
    values: np.ndarray, colour: np.ndarray, allowed: np.ndarray | None, bounds: tuple[float, float], scale: list
) -> dict[str, Any]:
    """A matrix's numbers in its cells (masked ones empty: they show "×"), black or white on each cell's `colour`
    (on `scale` between `bounds`); nothing when its longest number does not fit a phone."""
    cells = np.array([[_cell_text(v) for v in row] for row in values.tolist()], dtype=object).reshape(values.shape)
    size = cell_text_size(values.shape[1], max((len(text) for text in cells.flat), default=1))
    if size is None:
        return {}
    cells = cells if allowed is None else np.where(allowed, cells, "")
    return cell_texts(cells, colour, bounds[0], bounds[1], scale, size)


def matrix_heatmap(
    matrix: Any,
    *,
    row_labels: Labels = None,
    col_labels: Labels = None,
    title: str = "",
    palette: str | None = None,
    symmetric: bool = True,
    zmin: float | None = None,
    zmax: float | None = None,
    show_values: bool | None = None,
    x_title: str = "",
    y_title: str = "",
    mask: Any = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Any matrix (scores, outputs, W_q, ...) as a heatmap; signed data on a diverging scale around 0 if symmetric."""
    values = as_array(matrix, "matrix", 2)  # (rows, cols)
    low, high = _colour_range(values, symmetric, zmin, zmax)
    # Plotly draws ±inf as a gap: colour it as the end of the scale, keep the true value for hover and text
    colour = np.where(np.isposinf(values), np.float32(high), np.where(np.isneginf(values), np.float32(low), values))
    allowed = allowed_mask(mask, values.shape)
    y, x = unique_labels(row_labels, values.shape[0]), unique_labels(col_labels, values.shape[1])
    extra: dict[str, Any] = {"zmid": 0.0} if symmetric else {}
    shown = "%{z:.6~g}"
    if np.isinf(values).any():
        extra["customdata"], shown = values, "%{customdata:.6~g}"
    scale = colorscale(palette or (DIVERGING_PALETTE if symmetric else SEQUENTIAL_PALETTE))
    if cells_printed(show_values, values.shape, characters=1):  # formatted here: NaN empty, ±inf as "inf"
        extra.update(_matrix_cells(values, colour, allowed, (low, high), scale))
    row, column, value = y_title or word("row", lang), x_title or word("column", lang), word("value", lang)
    hover = f"{row}: %{{y}}<br>{column}: %{{x}}<br>{value}: {shown}<extra></extra>"
    colours = {"colorscale": scale, "zmin": low, "zmax": high}
    trace = _heatmap(colour, allowed, x, y, name=title or "matrix", hovertemplate=hover, **colours, **extra)
    layout = _matrix_layout(title, _height(values.shape[0]), x_title, y_title, x, y)
    masks = _mask_traces([(allowed, 1)], x, y, layout, lang) if allowed is not None else []
    return make_figure([trace, *masks], layout)


def guess_figure(
    guess: Any, truth: Any, *, key_labels: Labels = None, title: str = "", lang: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """A student's guessed weights beside the true ones, one pair of bars per key."""
    guessed, true = as_vector(guess, "guess"), as_vector(truth, "truth")  # (K,) each
    if guessed.shape != true.shape:
        raise ValueError(f"give one guess per key: {true.size} keys, {guessed.size} guesses")
    x = unique_labels(key_labels, true.size, "k")
    key, weight = word("key", lang), word("weight", lang)
    data = []
    for values, name_id, colour in ((guessed, "your_guess", ORANGE), (true, "true_weight", BLUE)):
        name = word(name_id, lang)
        hover = f"{name}<br>{key}: %{{x}}<br>{weight}: %{{y:.4~g}}<extra></extra>"
        text = {"texttemplate": "%{y:.2f}", "textposition": "outside", "cliponaxis": False} if true.size <= 16 else {}
        bars = {"type": "bar", "x": x, "y": values, "name": name, "marker": {"color": colour}, **text}
        data.append({**bars, "hovertemplate": hover})
    layout = {
        "title": {"text": title},
        "barmode": "group",
        "xaxis": {"type": "category", "title": {"text": word("keys", lang)}},
        "yaxis": {"title": {"text": weight}, "range": [0.0, 1.05]},
        "legend": {"orientation": "h", "x": 0.0, "y": 1.0, "yanchor": "bottom"},
        "height": 380,
        "margin": {"t": 90},
    }
    return make_figure(data, layout)


def chart_config(filename: str) -> dict:
    """The `config` for `st.plotly_chart`: PNG download at 2x under a safe file name, no Plotly logo."""
    slug = re.sub(r"[^a-z0-9_-]+", "_", str(filename).lower()).strip("_-")[:80] or "figure"
    return {"toImageButtonOptions": {"format": "png", "filename": slug, "scale": 2}, "displaylogo": False}


MAX_TABLE_CELLS = 20_000  # a chart's text alternative lists its numbers up to this many cells


def figure_tables(fig: go.Figure) -> list[tuple[str, list[str], list[list[object]]]]:
    """A figure's numbers as tables, its text alternative: (trace name, columns, rows) per trace.

    A heatmap gives a row per y label and a column per x label (empty where masked); points and lines give their
    x and y. Traces drawn only for looks (the mask, legend entries) are left out; a heatmap over
    MAX_TABLE_CELLS cells gives no rows (too large to read as a table)."""
    tables: list[tuple[str, list[str], list[list[object]]]] = []
    for trace in fig.data:
        name = str(trace.name or "")
        if isinstance(trace.meta, dict) and trace.meta.get("table") is False:
            continue
        if trace.type == "heatmap" and name != "masked":
            z = np.asarray(trace.z, dtype=np.float64)
            if isinstance(trace.meta, dict) and trace.meta.get("weights") == "customdata":  # z is a colour position
                weights = np.asarray(trace.customdata, dtype=np.float64)
                weights = weights[..., 0] if weights.ndim == 3 else weights
                z = np.where(np.isnan(z), np.nan, weights)
            if z.size > MAX_TABLE_CELLS:
                tables.append((name, [], []))
                continue
            xs = [str(v) for v in trace.x] if trace.x is not None else [str(j + 1) for j in range(z.shape[1])]
            ys = [str(v) for v in trace.y] if trace.y is not None else [str(i + 1) for i in range(z.shape[0])]
            rows = [[ys[i], *(None if np.isnan(v) else float(v) for v in z[i])] for i in range(z.shape[0])]
            tables.append((name, ["", *xs], rows))
        elif trace.type in ("scatter", "bar") and trace.x is not None and any(v is not None for v in trace.x):
            xs, ys = list(trace.x), list(trace.y)
            rows = [[_plain(x), _plain(y)] for x, y in zip(xs, ys, strict=True)]
            tables.append((name, ["x", "y"], rows))
    return tables


def _plain(value: Any) -> object:
    """A number or label as a table cell (NaN as empty)."""
    if isinstance(value, str):
        return value
    number = float(value)
    return None if math.isnan(number) else number
