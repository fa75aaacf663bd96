"""Figures of the pretrained-model page: every head at once (model view) and one query's q·k (neuron view)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures import (
    DIVERGING_PALETTE,
    VERMILLION,
    WEIGHTS_PALETTE,
    Labels,
    _array,
    _axes,
    _axis_keys,
    _colorscale,
    _figure,
    _matrix_axis,
    _vector,
    unique_labels,
)

LEVELS = 254  # thumbnails carry weights as 0..254 (one byte a cell): a 128-token model view is 1.2 MB, not 4.7
MAX_CELL_TEXT_ROWS = 40  # the neuron view prints scores and weights in their cells up to this many keys


def model_view(
    views: Any, *, selected_layer: int = 0, selected_heads: tuple[int, ...] = (), palette: str = WEIGHTS_PALETTE
) -> go.Figure:
    """Every head of every layer as a thumbnail, views (L, h, r, c) on [0, 1]; the chosen heads outlined.

    One heatmap trace per head on a shared pair of axes (72 small images draw much faster than 72 subplots), each
    weight quantised to a byte; the hover names the head. Layer and heads are counted from 1 here."""
    values = _array(views, "views", 4)  # (L, h, r, c)
    layers, heads, rows, cols = values.shape
    gap = max(1, round(0.12 * max(rows, cols)))
    step_x, step_y = cols + gap, rows + gap
    levels = np.rint(np.clip(np.nan_to_num(values), 0.0, 1.0) * LEVELS).astype(np.uint8)
    data = []
    for layer in range(layers):
        for head in range(heads):
            name = f"layer {layer + 1}, head {head + 1}"
            data.append(
                {
                    "type": "heatmap",
                    "z": levels[layer, head],
                    "x0": head * step_x,
                    "dx": 1,
                    "y0": layer * step_y,
                    "dy": 1,
                    "coloraxis": "coloraxis",
                    "name": name,
                    "hovertemplate": f"{name}<extra></extra>",
                }
            )
    shapes = [
        {
            "type": "rect",
            "x0": (head - 1) * step_x - 0.5 - gap / 3,
            "x1": (head - 1) * step_x + cols - 0.5 + gap / 3,
            "y0": (selected_layer - 1) * step_y - 0.5 - gap / 3,
            "y1": (selected_layer - 1) * step_y + rows - 0.5 + gap / 3,
            "line": {"color": VERMILLION, "width": 3},
        }
        for head in selected_heads
        if 1 <= selected_layer <= layers and 1 <= head <= heads
    ]
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    colour = {
        "colorscale": _colorscale(palette),
        "cmin": 0,
        "cmax": LEVELS,
        "colorbar": {
            "title": {"text": "weight"},
            "tickvals": [t * LEVELS for t in ticks],
            "ticktext": [f"{t:g}" for t in ticks],
        },
    }
    axis = {"showgrid": False, "zeroline": False, "ticks": ""}
    layout = {
        "title": {"text": "Model view: every layer and head (queries down, keys across)"},
        # about square tiles at a typical plot width of ~800 px, plus room for the title and head labels
        "height": int(min(1000, max(360, 110 + 640 * layers * step_y / (heads * step_x)))),
        "xaxis": {
            **axis,
            "tickvals": [h * step_x + (cols - 1) / 2 for h in range(heads)],
            "ticktext": [f"head {h + 1}" for h in range(heads)],
            "side": "top",
            "range": [-0.5 - gap, heads * step_x - 0.5],
        },
        "yaxis": {
            **axis,
            "tickvals": [layer * step_y + (rows - 1) / 2 for layer in range(layers)],
            "ticktext": [f"layer {layer + 1}" for layer in range(layers)],
            "range": [layers * step_y - 0.5, -0.5 - gap],  # reversed: layer 1 and the first query at the top
        },
        "coloraxis": colour,
        "shapes": shapes,
        "plot_bgcolor": "white",
        "margin": {"t": 90},
    }
    return _figure(data, layout)


def neuron_view(
    query: Any,
    keys: Any,
    scaled_scores: Any,
    weights: Any,
    *,
    key_labels: Labels = None,
    query_label: str = "query",
) -> go.Figure:
    """How one query weighs every key: q, the keys k_j, q ∘ k_j (whose row sums are q·k_j), q·k_j/√d, softmax.

    query (s,), keys (K, s), scaled_scores (K,), weights (K,)."""
    q = _vector(query, "query")  # (s,)
    k = _array(keys, "keys", 2)  # (K, s)
    if k.shape[1] != q.size:
        raise ValueError(f"keys have {k.shape[1]} features but the query has {q.size}")
    products = k * q  # (K, s) q ∘ k_j: each row sums to q·k_j
    scores, probs = _vector(scaled_scores, "scaled scores"), _vector(weights, "weights")
    count = k.shape[0]
    if not scores.size == probs.size == count:
        raise ValueError(
            f"give one score and one weight per key: {count} keys, {scores.size} scores, {probs.size} weights"
        )
    y = unique_labels(key_labels, count, "k")
    features = [f"f{i + 1}" for i in range(q.size)]
    label = unique_labels([query_label], 1)[0]
    text = count <= MAX_CELL_TEXT_ROWS

    def cells(values: np.ndarray, panel: int, x: list[str], rows: list[str], hover: str, **style: Any) -> dict:
        bound = float(np.nanmax(np.abs(values))) or 1.0
        colours = {"colorscale": _colorscale(DIVERGING_PALETTE), "zmin": -bound, "zmax": bound, "zmid": 0.0}
        return {
            "type": "heatmap",
            "z": values.astype(np.float32),
            "x": x,
            "y": rows,
            "showscale": False,
            "hovertemplate": hover + "<extra></extra>",
            **colours,
            **style,
            **_axes(panel),
        }

    number = {"texttemplate": "%{z:.2f}"} if text else {}
    on_weights = {"colorscale": _colorscale(WEIGHTS_PALETTE), "zmin": 0.0, "zmax": 1.0}
    weight_cells = cells(probs[:, None], 5, ["weight"], y, "key %{y}<br>weight: %{z:.6~g}", name="weight", **number)
    del weight_cells["zmid"]
    data = [
        cells(q[None, :], 1, features, [f"q: {label}"], "q, %{x}: %{z:.4~g}", name="query q"),
        cells(k, 2, features, y, "key %{y}, %{x}: %{z:.4~g}", name="keys k_j"),
        cells(products, 3, features, y, "key %{y}, %{x}: q × k = %{z:.4~g}", name="q ∘ k_j"),
        cells(scores[:, None], 4, ["q·k/√d"], y, "key %{y}<br>q·k/√d: %{z:.6~g}", name="scaled score", **number),
        {**weight_cells, **on_weights},
    ]
    # panel: (x domain, y domain); the query's row sits above the keys' and the products' columns
    top = 0.86
    domains = {
        1: ([0.45, 0.8], [top + 0.03, 1.0]),
        2: ([0.0, 0.38], [0.0, top]),
        3: ([0.45, 0.8], [0.0, top]),
        4: ([0.84, 0.91], [0.0, top]),
        5: ([0.93, 1.0], [0.0, top]),
    }
    titles = {1: "", 2: "keys k_j", 3: "q ∘ k_j (each row sums to q·k_j)", 4: "", 5: ""}
    layout: dict[str, Any] = {
        "title": {"text": f"Neuron view: how '{label}' weighs every key"},
        "height": int(min(1400, max(420, 16 * count + 200))),
        "plot_bgcolor": "white",
        "margin": {"t": 80},
    }
    for panel, (x_domain, y_domain) in domains.items():
        x_name, y_name = _axis_keys(panel)
        refs = _axes(panel)
        # token labels on the left only; the 32 feature names would be noise, the two columns' names are not
        # the two wide panels are titled below (the query's row sits above them); the two columns name themselves
        side = "top" if panel in (4, 5) else "bottom"
        layout[x_name] = _matrix_axis(
            titles[panel], domain=x_domain, anchor=refs["yaxis"], side=side, showticklabels=panel in (4, 5)
        )
        layout[y_name] = _matrix_axis(
            "", domain=y_domain, anchor=refs["xaxis"], autorange="reversed", showticklabels=panel in (1, 2)
        )
    return _figure(data, layout)
