"""Figures of the pretrained-model page: every head at once (model view) and one query's q·k (neuron view)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.plotting import (
    Labels,
    as_array,
    as_vector,
    axes,
    axis_keys,
    category_ticks,
    cell_text_size,
    cell_texts,
    colorscale,
    make_figure,
    matrix_axis,
    unique_labels,
    word,
)
from attnviz.figures.style import DIVERGING_PALETTE, MAX_TICKS, VERMILLION, WEIGHTS_PALETTE
from attnviz.i18n import DEFAULT_LANGUAGE, t

LEVELS = 254  # thumbnails carry weights as 0..254 (one byte a cell): a 128-token model view is 1.2 MB, not 4.7
MAX_CELL_TEXT_ROWS = 40  # the neuron view prints scores and weights in their cells up to this many keys ...
PHONE_COLUMN_WIDTH = 32  # ... where they fit one of its two narrow columns on a 390 px phone (0.11 of ~290 px)
Z_COLUMN = "z = q·k/√d"  # the logit, as show-your-work names it: a(q, k) = q·k is the score, z = a/√d


def model_view(
    views: Any,
    *,
    row_labels: Labels = None,
    col_labels: Labels = None,
    selected_layer: int = 0,
    selected_heads: tuple[int, ...] = (),
    palette: str = WEIGHTS_PALETTE,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Every head of every layer as a thumbnail, views (L, h, r, c) on [0, 1]; the chosen heads outlined.

    One heatmap of all the thumbnails side by side, weights quantised to a byte (a 128-token view is 1.2 MB, not
    4.7), white lines between the heads. One trace instead of 72 keeps a rerun cheap. The hover names the layer,
    head, query and key. Layer and heads are counted from 1 here."""
    values = as_array(views, "views", 4)  # (L, h, r, c)
    layers, heads, rows, cols = values.shape
    levels = np.rint(np.clip(np.nan_to_num(values), 0.0, 1.0) * LEVELS).astype(np.uint8)
    tiles = levels.transpose(0, 2, 1, 3).reshape(layers * rows, heads * cols)  # (L * r, h * c), tile (l, h) at l, h
    queries, keys = unique_labels(row_labels, rows, "q"), unique_labels(col_labels, cols, "k")
    # t, not _w: the token labels are escaped already (unique_labels), and the templates hold no markup
    y = [t("fig.layer_query", lang, layer=layer + 1, query=query) for layer in range(layers) for query in queries]
    x = [t("fig.head_key", lang, head=head + 1, key=key) for head in range(heads) for key in keys]
    shapes = _tile_lines(values.shape) + _outlines(values.shape, selected_layer, selected_heads)
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    trace = {
        "type": "heatmap",
        "z": tiles,
        "x": x,
        "y": y,
        "colorscale": colorscale(palette),
        "zmin": 0,
        "zmax": LEVELS,
        "colorbar": {
            "title": {"text": word("weight", lang)},
            "tickvals": [tick * LEVELS for tick in ticks],
            "ticktext": [f"{tick:g}" for tick in ticks],
        },
        "name": "model view",
        "hovertemplate": "%{y}<br>%{x}<extra></extra>",
    }
    layout = _model_view_layout(x, y, values.shape, lang)
    layout["shapes"] = shapes
    return make_figure([trace, _click_targets(x, y, values.shape, lang)], layout)


def _tile_lines(shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """White lines between the thumbnails of views of `shape` (L, h, r, c): between heads, then between layers."""
    layers, heads, rows, cols = shape
    white = {"color": "white", "width": 3}
    lines = [
        {"type": "line", "x0": h * cols - 0.5, "x1": h * cols - 0.5, "y0": -0.5, "y1": layers * rows - 0.5}
        for h in range(1, heads)
    ] + [
        {"type": "line", "y0": layer * rows - 0.5, "y1": layer * rows - 0.5, "x0": -0.5, "x1": heads * cols - 0.5}
        for layer in range(1, layers)
    ]
    return [{**line, "line": white} for line in lines]


def _outlines(shape: tuple[int, ...], selected_layer: int, selected_heads: tuple[int, ...]) -> list[dict[str, Any]]:
    """A frame around each chosen head's thumbnail (counted from 1; those outside the model are left out)."""
    layers, heads, rows, cols = shape
    return [
        {
            "type": "rect",
            "x0": (head - 1) * cols - 0.5,
            "x1": head * cols - 0.5,
            "y0": (selected_layer - 1) * rows - 0.5,
            "y1": selected_layer * rows - 0.5,
            "line": {"color": VERMILLION, "width": 3},
        }
        for head in selected_heads
        if 1 <= selected_layer <= layers and 1 <= head <= heads
    ]


def _click_targets(x: list[str], y: list[str], shape: tuple[int, ...], lang: str) -> dict[str, Any]:
    """One point at the centre of every thumbnail, to click: a heatmap reports no selection to the page (Streamlit
    passes on the points of scatter traces only). Nearly invisible; the hover and the click name the head."""
    layers, heads, rows, cols = shape
    centres = [(layer, head) for layer in range(layers) for head in range(heads)]
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [x[head * cols + cols // 2] for _, head in centres],
        "y": [y[layer * rows + rows // 2] for layer, _ in centres],
        "customdata": [[layer + 1, head + 1] for layer, head in centres],
        "marker": {"size": 18, "color": "rgba(255, 255, 255, 0.01)"},
        "name": "heads",
        "meta": {"table": False},  # a click target, not data: no table of its own in the text alternative
        "showlegend": False,
        "hovertemplate": t("fig.open_head", lang, layer="%{customdata[0]}", head="%{customdata[1]}")
        + "<extra></extra>",
    }


def _model_view_layout(x: list[str], y: list[str], shape: tuple[int, ...], lang: str) -> dict[str, Any]:
    """The model view's layout without its shapes: the title, a head's name above each column of thumbnails and
    a layer's beside each row, about square tiles."""
    layers, heads, rows, cols = shape
    axis = {"type": "category", "showgrid": False, "zeroline": False, "ticks": ""}
    return {
        # the title at the very top and the rotated head labels below it: on a phone they overlapped
        "title": {
            "text": word("model_view", lang),
            "subtitle": {"text": word("model_view_axes", lang)},
            "yref": "container",
            "y": 0.99,
            "yanchor": "top",
        },
        # about square tiles at a typical plot width of ~800 px, plus room for the title and head labels
        "height": int(min(1000, max(360, 110 + 640 * layers * rows / (heads * cols)))),
        "xaxis": {
            **axis,
            "tickvals": x[cols // 2 :: cols],
            "ticktext": [word("head_n", lang, n=h + 1) for h in range(heads)],
            "side": "top",
        },
        "yaxis": {
            **axis,
            "tickvals": y[rows // 2 :: rows],
            "ticktext": [word("layer_n", lang, n=layer + 1) for layer in range(layers)],
            "autorange": "reversed",  # layer 1 and the first query at the top
        },
        "plot_bgcolor": "white",
        "margin": {"t": 140},
        "clickmode": "event+select",  # a click selects a head's point: the page opens that head
    }


def _cells(values: np.ndarray, panel: int, x: list[str], rows: list[str], hover: str, **style: Any) -> dict:
    """One panel of the neuron view: `values` on a diverging scale around 0 (±its largest), no colour bar."""
    bound = float(np.nanmax(np.abs(values))) or 1.0
    colours = {"colorscale": colorscale(DIVERGING_PALETTE), "zmin": -bound, "zmax": bound, "zmid": 0.0}
    return {
        "type": "heatmap",
        "z": values.astype(np.float32),
        "x": x,
        "y": rows,
        "showscale": False,
        "hovertemplate": hover + "<extra></extra>",
        **colours,
        **style,
        **axes(panel),
    }


def _column_numbers(values: np.ndarray, colours: dict[str, Any]) -> dict[str, Any]:
    """A narrow column's numbers (K,) in its cells to 2 decimals, black or white on each cell's colour (`colours`:
    colorscale, zmin, zmax); none over MAX_CELL_TEXT_ROWS keys or where they do not fit a phone's column."""
    texts = np.char.mod("%.2f", values[:, None]).astype(object)  # (K, 1)
    size = cell_text_size(1, max(len(text) for text in texts.flat), width=PHONE_COLUMN_WIDTH) if values.size else None
    if values.size > MAX_CELL_TEXT_ROWS or size is None:
        return {}
    return cell_texts(texts, values[:, None], colours["zmin"], colours["zmax"], colours["colorscale"], size)


def neuron_view(
    query: Any,
    keys: Any,
    scaled_scores: Any,
    weights: Any,
    *,
    key_labels: Labels = None,
    query_label: str = "query",
    palette: str = WEIGHTS_PALETTE,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """How one query weighs every key: q, the keys k_j, q ∘ k_j (whose row sums are a = q·k_j), z = a/√d, softmax.

    query (s,), keys (K, s), scaled_scores (K,), weights (K,)."""
    q = as_vector(query, "query")  # (s,)
    k = as_array(keys, "keys", 2)  # (K, s)
    if k.shape[1] != q.size:
        raise ValueError(f"keys have {k.shape[1]} features but the query has {q.size}")
    products = k * q  # (K, s) q ∘ k_j: each row sums to q·k_j
    scores, probs = as_vector(scaled_scores, "scaled scores"), as_vector(weights, "weights")
    count = k.shape[0]
    if not scores.size == probs.size == count:
        raise ValueError(
            f"give one score and one weight per key: {count} keys, {scores.size} scores, {probs.size} weights"
        )
    y = unique_labels(key_labels, count, "k")
    features = [f"f{i + 1}" for i in range(q.size)]
    label = unique_labels([query_label], 1)[0]
    on_weights = {"colorscale": colorscale(palette), "zmin": 0.0, "zmax": 1.0}
    key, weight = word("key", lang), word("weight", lang)
    weight_cells = _cells(probs[:, None], 5, [weight], y, f"{key} %{{y}}<br>{weight}: %{{z:.6~g}}", name=weight)
    del weight_cells["zmid"]
    weight_cells.update(on_weights, **_column_numbers(probs, on_weights))
    score_cells = _cells(scores[:, None], 4, [Z_COLUMN], y, f"{key} %{{y}}<br>{Z_COLUMN}: %{{z:.6~g}}", name=Z_COLUMN)
    data = [
        _cells(q[None, :], 1, features, [f"q: {label}"], "q, %{x}: %{z:.4~g}", name=word("query_q", lang)),
        _cells(k, 2, features, y, f"{key} %{{y}}, %{{x}}: %{{z:.4~g}}", name=word("keys_kj", lang)),
        _cells(products, 3, features, y, f"{key} %{{y}}, %{{x}}: q × k = %{{z:.4~g}}", name="q ∘ k_j"),
        {**score_cells, **_column_numbers(scores, score_cells)},
        weight_cells,
    ]
    layout: dict[str, Any] = {
        "title": {
            "text": t("fig.neuron_view", lang, token=label),  # label is escaped already
            "subtitle": {"text": word("products_note", lang)},
        },
        "height": int(min(1400, max(420, 16 * count + 200))),
        "plot_bgcolor": "white",
        "margin": {"t": 130},
        **_neuron_axes(y, lang),
    }
    return make_figure(data, layout)


def _neuron_axes(y: list[str], lang: str) -> dict[str, Any]:
    """The five panels' axes: the query's row above the keys' and the products' columns, then the two narrow
    columns z and the weights; the keys `y` named on the left."""
    # panel: (x domain, y domain); the query's row sits above the keys' and the products' columns
    top = 0.86
    domains = {
        1: ([0.39, 0.72], [top + 0.03, 1.0]),
        2: ([0.0, 0.33], [0.0, top]),
        3: ([0.39, 0.72], [0.0, top]),
        4: ([0.76, 0.87], [0.0, top]),  # the two narrow columns of numbers: wide enough for them on a phone
        5: ([0.89, 1.0], [0.0, top]),
    }
    titles = {1: "", 2: word("keys_kj", lang), 3: word("products", lang), 4: "", 5: ""}
    layout: dict[str, Any] = {}
    for panel, (x_domain, y_domain) in domains.items():
        x_name, y_name = axis_keys(panel)
        refs = axes(panel)
        # token labels on the left only; the 32 feature names would be noise, the two columns' names are not
        # the two wide panels are titled below (the query's row sits above them); the two columns name themselves
        side = "top" if panel in (4, 5) else "bottom"
        # the two narrow columns' names stand upright: side by side on a phone they ran into each other
        layout[x_name] = matrix_axis(
            titles[panel],
            domain=x_domain,
            anchor=refs["yaxis"],
            side=side,
            showticklabels=panel in (4, 5),
            tickangle=-90 if panel in (4, 5) else 0,
        )
        # every key named up to MAX_TICKS, then every k-th, chosen here: left to Plotly, 13 keys lost every other name
        ticks = category_ticks(y, MAX_TICKS) if panel == 2 else {}
        layout[y_name] = matrix_axis(
            "", domain=y_domain, anchor=refs["xaxis"], autorange="reversed", showticklabels=panel in (1, 2), **ticks
        )
    return layout
