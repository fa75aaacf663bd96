"""Pure Plotly figure builders: numbers in, `go.Figure` out. No streamlit, no torch.

Arrays reach Plotly as float32 numpy arrays, which Plotly serialises as compact binary.
Token labels are user text: they are HTML-escaped and made unique before they become axis categories.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

WEIGHTS_PALETTE = "Cividis"  # sequential, colour-blind safe
SEQUENTIAL_PALETTE = "Viridis"
DIVERGING_PALETTE = "RdBu_r"  # ColorBrewer RdBu is colour-blind safe; reversed so positive = red
MASK_GREY = "#d9d9d9"
MASK_NAME = "masked: cannot attend (weight exactly 0)"
NO_SUPPORT_NAME = "no key inside the kernel window"
MAX_TEXT_CELLS = 144  # numbers are printed in cells only up to 12 x 12
POSITION_MARK = "·"  # "the·1", "the·5": duplicate tokens stay distinct categories
# Okabe–Ito colours, safe for the common colour-vision deficiencies
ORANGE, BLUE, VERMILLION, BLACK = "#E69F00", "#0072B2", "#D55E00", "#000000"

Labels = Sequence[str] | None


# ---------------------------------------------------------------- inputs


def _float32(data: Any) -> np.ndarray:
    """Numbers as a new float32 array (values beyond float32 become ±inf, never an error)."""
    with np.errstate(over="ignore"):
        return np.array(data, dtype=np.float32)  # a copy: callers' arrays are never modified


def _array(data: Any, name: str, ndim: int) -> np.ndarray:
    """A float32 array that must have `ndim` axes."""
    values = _float32(data)
    if values.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {values.shape}")
    return values


def _vector(data: Any, name: str) -> np.ndarray:
    """A 1-D float32 array; a column (n, 1) is flattened."""
    values = _float32(data)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {values.shape}")
    return values


def _allowed(mask: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """The mask as a bool array broadcast to `shape` (True = may attend), or None."""
    if mask is None:
        return None
    try:
        return np.broadcast_to(np.asarray(mask, dtype=bool), shape)
    except ValueError as error:
        raise ValueError(f"mask of shape {np.shape(mask)} does not fit weights of shape {shape}") from error


def unique_labels(labels: Labels, count: int, prefix: str = "") -> list[str]:
    """Escaped, unique category labels: defaults `prefix1..`, duplicates get a 1-based position mark."""
    if labels is None:
        return [f"{prefix}{i + 1}" for i in range(count)]
    texts = [html.escape(str(label), quote=False) for label in labels]
    if len(texts) != count:
        raise ValueError(f"expected {count} labels, got {len(texts)}")
    repeated = {text for text in texts if texts.count(text) > 1}
    texts = [f"{text}{POSITION_MARK}{i + 1}" if text in repeated else text for i, text in enumerate(texts)]
    seen: set[str] = set()
    for i, text in enumerate(texts):  # a user label may itself look like "the·2": keep marking until unique
        while text in seen:
            text = f"{text}{POSITION_MARK}{i + 1}"
        texts[i] = text
        seen.add(text)
    return texts


def _show_values(show_values: bool | None, shape: tuple[int, ...]) -> bool:
    """Print numbers in cells? Auto when None; never for more than MAX_TEXT_CELLS cells."""
    small = math.prod(shape) <= MAX_TEXT_CELLS
    return small if show_values is None else bool(show_values) and small


# ---------------------------------------------------------------- traces


def _heatmap_trace(
    weights: np.ndarray, allowed: np.ndarray | None, x: list[str], y: list[str], palette: str, text: bool, **kwargs: Any
) -> go.Heatmap:
    """A heatmap of (Q, K) values, NaN where masked (the grey mask trace shows there)."""
    z = weights if allowed is None else np.where(allowed, weights, np.float32(np.nan))  # (Q, K)
    return go.Heatmap(
        z=z.astype(np.float32),
        x=x,
        y=y,
        colorscale=palette,
        hoverongaps=False,
        texttemplate="%{z:.2f}" if text else None,
        **kwargs,
    )


def _mask_trace(allowed: np.ndarray, x: list[str], y: list[str], text: bool, **kwargs: Any) -> go.Heatmap:
    """Masked cells (allowed False) in flat grey with "×", no colour bar; NaN (transparent) elsewhere."""
    z = np.where(allowed, np.float32(np.nan), np.float32(1.0)).astype(np.float32)  # (Q, K)
    cross = np.where(allowed, "", "×").astype(object) if text else None
    return go.Heatmap(
        z=z,
        x=x,
        y=y,
        name="masked",
        colorscale=[[0.0, MASK_GREY], [1.0, MASK_GREY]],
        zmin=0.0,
        zmax=1.0,
        showscale=False,
        hoverongaps=False,
        text=cross,
        texttemplate="%{text}" if text else None,
        textfont={"color": BLACK},
        hovertemplate=f"query: %{{y}}<br>key: %{{x}}<br>{MASK_NAME}<extra></extra>",
        **kwargs,
    )


def _mask_legend() -> go.Scatter:
    """An invisible point whose legend entry is a grey square: explains the masked cells."""
    return go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        name=MASK_NAME,
        marker={"symbol": "square", "size": 14, "color": MASK_GREY, "line": {"color": "#7f7f7f", "width": 1}},
        showlegend=True,
        hoverinfo="skip",
    )


def _weight_hover(with_scores: bool = False, prefix: str = "", quantity: str = "weight") -> str:
    """Hover text for a weight cell: labels, the value to 6 significant digits, the raw score if known."""
    score = "<br>score: %{customdata:.6~g}" if with_scores else ""
    return f"{prefix}query: %{{y}}<br>key: %{{x}}<br>{quantity}: %{{z:.6~g}}{score}<extra></extra>"


def _style_matrix_axes(fig: go.Figure, x_title: str = "", y_title: str = "", **selector: Any) -> None:
    """Category axes (tokens are never parsed as numbers), y reversed so row 1 is at the top."""
    fig.update_xaxes(type="category", title_text=x_title or None, **selector)
    fig.update_yaxes(type="category", title_text=y_title or None, autorange="reversed", **selector)


def _height(rows: int) -> int:
    """A figure height in pixels that gives each of `rows` rows room, within sane bounds."""
    return int(min(900, max(360, 24 * rows + 180)))


def _legend_on_top(fig: go.Figure) -> None:
    """Horizontal legend just above the plot area, clear of the colour bar and tick labels."""
    fig.update_layout(
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        margin={"t": 90},
    )


# ---------------------------------------------------------------- attention weights


def weights_heatmap(
    weights: Any,
    *,
    scores: Any = None,
    mask: Any = None,
    query_labels: Labels = None,
    key_labels: Labels = None,
    title: str = "Attention weights",
    palette: str = WEIGHTS_PALETTE,
    show_values: bool | None = None,
) -> go.Figure:
    """Attention weights (Q, K) as a heatmap on [0, 1]; masked cells grey, raw scores in the hover."""
    values = _array(weights, "weights", 2)  # (Q, K)
    allowed = _allowed(mask, values.shape)
    y = unique_labels(query_labels, values.shape[0], "q")
    x = unique_labels(key_labels, values.shape[1], "k")
    text = _show_values(show_values, values.shape)
    extra: dict[str, Any] = {}
    if scores is not None:
        raw = _array(scores, "scores", 2)  # (Q, K)
        if raw.shape != values.shape:
            raise ValueError(f"scores shape {raw.shape} differs from weights shape {values.shape}")
        extra["customdata"] = raw
    fig = go.Figure(
        _heatmap_trace(
            values,
            allowed,
            x,
            y,
            palette,
            text,
            name="weights",
            zmin=0.0,
            zmax=1.0,
            colorbar={"title": {"text": "weight"}},
            hovertemplate=_weight_hover(scores is not None),
            **extra,
        )
    )
    if allowed is not None and not allowed.all():
        fig.add_trace(_mask_trace(allowed, x, y, text))
        fig.add_trace(_mask_legend())
        _legend_on_top(fig)
    _style_matrix_axes(fig, "keys", "queries")
    fig.update_layout(title={"text": title}, height=_height(values.shape[0]))
    return fig


def heads_grid(
    weights: Any,
    *,
    mask: Any = None,
    query_labels: Labels = None,
    key_labels: Labels = None,
    head_titles: Labels = None,
    palette: str = WEIGHTS_PALETTE,
    columns: int = 4,
) -> go.Figure:
    """One small heatmap per head, weights (h, Q, K), sharing one colour axis on [0, 1]."""
    values = _array(weights, "weights", 3)  # (h, Q, K)
    heads, n_queries, n_keys = values.shape
    if heads == 0 or columns < 1:
        raise ValueError("heads_grid needs at least one head and one column")
    allowed = _allowed(mask, values.shape)  # (h, Q, K) or None
    y = unique_labels(query_labels, n_queries, "q")
    x = unique_labels(key_labels, n_keys, "k")
    titles = unique_labels(head_titles, heads, "head ")
    cols = min(columns, heads)
    rows = math.ceil(heads / cols)
    specs = [[{} if r * cols + c < heads else None for c in range(cols)] for r in range(rows)]
    fig = make_subplots(
        rows=rows,
        cols=cols,
        specs=specs,
        subplot_titles=titles,
        horizontal_spacing=0.03,
        vertical_spacing=min(0.12, 0.5 / max(rows - 1, 1)),
    )
    text = _show_values(None, (n_queries, n_keys))
    cells = [(head // cols + 1, head % cols + 1) for head in range(heads)]
    for head, (row, col) in enumerate(cells):
        head_allowed = None if allowed is None else allowed[head]
        hover = _weight_hover(prefix=f"{titles[head]}<br>")
        trace = _heatmap_trace(
            values[head],
            head_allowed,
            x,
            y,
            palette,
            text,
            name=titles[head],
            coloraxis="coloraxis",
            hovertemplate=hover,
        )
        fig.add_trace(trace, row=row, col=col)
    any_masked = allowed is not None and not allowed.all()
    for head, (row, col) in enumerate(cells):
        if any_masked and not allowed[head].all():
            fig.add_trace(_mask_trace(allowed[head], x, y, text), row=row, col=col)
    if any_masked:
        fig.add_trace(_mask_legend(), row=1, col=1)
        _legend_on_top(fig)
    _style_matrix_axes(fig)
    for head, (row, col) in enumerate(cells):
        bottom = head + cols >= heads  # no head below: this panel carries the key labels
        fig.update_xaxes(showticklabels=bottom, title_text="keys" if bottom else None, row=row, col=col)
        fig.update_yaxes(showticklabels=col == 1, title_text="queries" if col == 1 else None, row=row, col=col)
    fig.update_layout(
        coloraxis={"colorscale": palette, "cmin": 0.0, "cmax": 1.0, "colorbar": {"title": {"text": "weight"}}},
        height=int(min(1400, rows * max(220, 14 * n_queries + 120) + 120)),
    )
    return fig


def comparison_figure(
    weights_a: Any,
    weights_b: Any,
    *,
    label_a: str,
    label_b: str,
    mask: Any = None,
    query_labels: Labels = None,
    key_labels: Labels = None,
    palette: str = WEIGHTS_PALETTE,
) -> go.Figure:
    """Weights A, weights B and their difference A − B (diverging, fixed to [-1, 1]) side by side."""
    first = _array(weights_a, "weights_a", 2)  # (Q, K)
    second = _array(weights_b, "weights_b", 2)  # (Q, K)
    if first.shape != second.shape:
        raise ValueError(f"weights_a shape {first.shape} differs from weights_b shape {second.shape}")
    allowed = _allowed(mask, first.shape)
    y = unique_labels(query_labels, first.shape[0], "q")
    x = unique_labels(key_labels, first.shape[1], "k")
    name_a, name_b = (html.escape(str(label), quote=False) for label in (label_a, label_b))
    difference_name = f"{name_a} − {name_b}"
    fig = make_subplots(rows=1, cols=3, subplot_titles=[name_a, name_b, difference_name], horizontal_spacing=0.04)
    text = _show_values(None, first.shape)
    panels = [(first, name_a, "coloraxis", palette), (second, name_b, "coloraxis", palette)]
    panels.append((first - second, difference_name, "coloraxis2", DIVERGING_PALETTE))  # (Q, K)
    for col, (values, name, axis, scale) in enumerate(panels, start=1):
        hover = _weight_hover(prefix=f"{name}<br>", quantity="weight" if col < 3 else "difference")
        trace = _heatmap_trace(values, allowed, x, y, scale, text, name=name, coloraxis=axis, hovertemplate=hover)
        fig.add_trace(trace, row=1, col=col)
    if allowed is not None and not allowed.all():
        for col in (1, 2, 3):
            fig.add_trace(_mask_trace(allowed, x, y, text), row=1, col=col)
        fig.add_trace(_mask_legend(), row=1, col=1)
        _legend_on_top(fig)
    _style_matrix_axes(fig, "keys")
    fig.update_yaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=True, title_text="queries", row=1, col=1)
    fig.update_layout(
        coloraxis={"colorscale": palette, "cmin": 0.0, "cmax": 1.0, "colorbar": {"title": {"text": "weight"}}},
        coloraxis2={
            "colorscale": DIVERGING_PALETTE,
            "cmin": -1.0,
            "cmax": 1.0,
            "cmid": 0.0,
            "colorbar": {"title": {"text": "A − B"}, "x": 1.12},
        },
        height=_height(first.shape[0]),
    )
    return fig


# ---------------------------------------------------------------- generic matrices


def _colour_range(values: np.ndarray, symmetric: bool, zmin: float | None, zmax: float | None) -> tuple[float, float]:
    """The colour range: given bounds win; otherwise ±max|finite| (symmetric) or finite min..max."""
    finite = values[np.isfinite(values)].astype(np.float64)
    if symmetric:
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        bound = bound or 1.0
        low = -abs(zmax) if zmin is None and zmax is not None else (-bound if zmin is None else zmin)
        high = abs(zmin) if zmax is None and zmin is not None else (bound if zmax is None else zmax)
        return float(low), float(high)
    low = float(finite.min()) if zmin is None and finite.size else (0.0 if zmin is None else zmin)
    high = float(finite.max()) if zmax is None and finite.size else (1.0 if zmax is None else zmax)
    if high <= low:
        low, high = low - 0.5, low + 0.5
    return float(low), float(high)


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
) -> go.Figure:
    """Any matrix (scores, outputs, W_q, ...) as a heatmap; signed data diverging around 0 when symmetric."""
    values = _array(matrix, "matrix", 2)  # (rows, cols)
    low, high = _colour_range(values, symmetric, zmin, zmax)
    # ±inf would be a gap in Plotly: colour it as the end of the scale, keep the true value for hover and text
    colour = np.where(np.isposinf(values), np.float32(high), np.where(np.isneginf(values), np.float32(low), values))
    colour = colour.astype(np.float32)
    has_inf = bool(np.isinf(values).any())
    allowed = _allowed(mask, values.shape)
    y = unique_labels(row_labels, values.shape[0])
    x = unique_labels(col_labels, values.shape[1])
    text = _show_values(show_values, values.shape)
    shown = "%{customdata:.6~g}" if has_inf else "%{z:.6~g}"
    trace_args: dict[str, Any] = {
        "name": title or "matrix",
        "zmin": low,
        "zmax": high,
        "hovertemplate": (
            f"{y_title or 'row'}: %{{y}}<br>{x_title or 'column'}: %{{x}}<br>value: {shown}<extra></extra>"
        ),
    }
    if has_inf:
        trace_args["customdata"] = values
    if symmetric:
        trace_args["zmid"] = 0.0
    scale = palette or (DIVERGING_PALETTE if symmetric else SEQUENTIAL_PALETTE)
    trace = _heatmap_trace(colour, allowed, x, y, scale, False, **trace_args)
    if text:  # numbers formatted here so ±inf and NaN read as such, not as the clipped colour value
        trace.text = np.array([[_short(v) for v in row] for row in values], dtype=object)
        trace.texttemplate = "%{text}"
    fig = go.Figure(trace)
    if allowed is not None and not allowed.all():
        fig.add_trace(_mask_trace(allowed, x, y, text))
        fig.add_trace(_mask_legend())
        _legend_on_top(fig)
    _style_matrix_axes(fig, x_title, y_title)
    fig.update_layout(title={"text": title}, height=_height(values.shape[0]))
    return fig


def _short(value: float) -> str:
    """A cell's number in at most 3 significant digits; NaN as an empty cell."""
    return "" if math.isnan(value) else f"{value:.3g}"


# ---------------------------------------------------------------- kernel regression and training


def kernel_regression_figure(
    x_train: Any,
    y_train: Any,
    x_query: Any,
    y_pred: Any,
    *,
    y_true: Any = None,
    no_support: Any = None,
    title: str = "Nadaraya–Watson regression",
) -> go.Figure:
    """Training points, the true function, and the prediction, with gaps (and ×) where no key was in reach."""
    keys, values = _vector(x_train, "x_train"), _vector(y_train, "y_train")
    queries, predictions = _vector(x_query, "x_query"), _vector(y_pred, "y_pred")
    if keys.shape != values.shape or queries.shape != predictions.shape:
        raise ValueError("x_train/y_train and x_query/y_pred must have matching lengths")
    order = np.argsort(queries, kind="stable")  # lines are drawn left to right
    queries, predictions = queries[order], predictions[order]
    empty = np.zeros(queries.shape, dtype=bool)
    if no_support is not None:
        empty = np.asarray(no_support, dtype=bool).reshape(-1)[order]
        predictions = np.where(empty, np.float32(np.nan), predictions).astype(np.float32)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=keys,
            y=values,
            mode="markers",
            name="training data (keys, values)",
            marker={"color": ORANGE, "size": 7, "opacity": 0.8},
            hovertemplate="key x: %{x:.4~g}<br>value y: %{y:.4~g}<extra></extra>",
        )
    )
    if y_true is not None:
        truth = _vector(y_true, "y_true")
        if truth.shape != queries.shape:
            raise ValueError("y_true must have one value per query")
        fig.add_trace(
            go.Scatter(
                x=queries,
                y=truth[order],
                mode="lines",
                name="true function",
                line={"color": BLACK, "dash": "dash", "width": 2},
                hovertemplate="x: %{x:.4~g}<br>true y: %{y:.4~g}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=queries,
            y=predictions,
            mode="lines",
            name="prediction (attention pooling)",
            line={"color": BLUE, "width": 3},
            connectgaps=False,
            hovertemplate="query x: %{x:.4~g}<br>prediction: %{y:.4~g}<extra></extra>",
        )
    )
    if empty.any():
        fig.add_trace(
            go.Scatter(
                x=queries[empty],
                y=np.zeros(int(empty.sum()), dtype=np.float32),
                yaxis="y2",  # an invisible 0..1 axis pins the × marks to the bottom of the plot
                mode="markers",
                name=NO_SUPPORT_NAME,
                marker={"symbol": "x-thin", "size": 11, "color": VERMILLION, "line": {"color": VERMILLION, "width": 2}},
                hovertemplate=f"query x: %{{x:.4~g}}<br>{NO_SUPPORT_NAME}<extra></extra>",
            )
        )
        fig.update_layout(yaxis2={"overlaying": "y", "range": [0.0, 1.0], "visible": False, "fixedrange": True})
    fig.update_layout(
        title={"text": title},
        xaxis_title="x (queries and keys)",
        yaxis_title="y (values)",
        legend={"orientation": "h", "x": 0.0, "y": 1.0, "yanchor": "bottom"},
        margin={"t": 90},
    )
    return fig


def loss_curve(losses: Any, *, title: str = "Leave-one-out loss") -> go.Figure:
    """Loss per epoch (1-based); log y axis when the losses span more than two decades."""
    values = _vector(losses, "losses")  # (epochs,)
    epochs = np.arange(1, values.size + 1, dtype=np.int32)
    fig = go.Figure(
        go.Scatter(
            x=epochs,
            y=values,
            mode="lines+markers" if values.size <= 50 else "lines",
            name="loss",
            line={"color": BLUE},
            hovertemplate="epoch %{x}<br>loss %{y:.6~g}<extra></extra>",
        )
    )
    positive = values[np.isfinite(values) & (values > 0)]
    spans_decades = positive.size == values.size > 0 and float(positive.max()) > 100 * float(positive.min())
    fig.update_layout(
        title={"text": title}, xaxis_title="epoch", yaxis_title="loss", yaxis_type="log" if spans_decades else None
    )
    return fig


def vector_bars(values: Any, *, labels: Labels = None, title: str = "") -> go.Figure:
    """A small bar chart of one vector, e.g. one query's weights over the keys."""
    heights = _vector(values, "values")  # (n,)
    x = unique_labels(labels, heights.size)
    fig = go.Figure(
        go.Bar(
            x=x,
            y=heights,
            marker_color=BLUE,
            texttemplate="%{y:.2f}" if heights.size <= 16 else None,
            textposition="outside",
            hovertemplate="%{x}: %{y:.6~g}<extra></extra>",
        )
    )
    fig.update_layout(title={"text": title}, xaxis_type="category", height=320, margin={"t": 60})
    return fig


# ---------------------------------------------------------------- helpers for pages and tests


def chart_config(filename: str) -> dict:
    """The `config` for `st.plotly_chart`: PNG download at 2x under a safe file name, no Plotly logo."""
    slug = re.sub(r"[^a-z0-9_-]+", "_", str(filename).lower()).strip("_-")[:80] or "figure"
    return {"toImageButtonOptions": {"format": "png", "filename": slug, "scale": 2}, "displaylogo": False}


def figure_arrays(fig: go.Figure) -> list[np.ndarray]:
    """The z arrays of a figure's heatmap traces, in trace order."""
    return [np.asarray(trace.z) for trace in fig.data if trace.type == "heatmap"]
