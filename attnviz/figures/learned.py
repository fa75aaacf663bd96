"""Pure Plotly builders for the learned-attention page: the training curves, and attention at two steps side by side."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.attention import AttentionGrid, heads_grid
from attnviz.figures.plotting import as_vector, axes, log_axis, make_figure, word
from attnviz.figures.style import BLUE, ORANGE, VERMILLION
from attnviz.i18n import DEFAULT_LANGUAGE


def learning_curves(
    steps: Any,
    losses: Any,
    accuracies: Any,
    *,
    current: int | None = None,
    total: int | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Training loss (log scale, top) and held-out accuracy (bottom) against the step; a line at `current`.

    `total` fixes the x range to the whole run, so that curves still growing do not rescale at every snapshot."""
    step_values = as_vector(steps, "steps")
    loss_values = as_vector(losses, "losses")
    accuracy_values = as_vector(accuracies, "accuracies")
    step_word, loss_word, accuracy_word = word("step", lang), word("loss", lang), word("heldout_accuracy", lang)
    mode = "lines+markers" if step_values.size <= 60 else "lines"
    data = [
        {
            "type": "scatter",
            "x": step_values,
            "y": loss_values,
            "mode": mode,
            "name": loss_word,
            "line": {"color": BLUE},
            "marker": {"size": 4},
            "hovertemplate": f"{step_word} %{{x}}<br>{loss_word} %{{y:.4~g}}<extra></extra>",
        },
        {
            "type": "scatter",
            "x": step_values,
            "y": accuracy_values * 100,
            "mode": mode,
            "name": accuracy_word,
            "line": {"color": ORANGE},
            "marker": {"size": 4},
            "xaxis": "x2",
            "yaxis": "y2",
            "hovertemplate": f"{step_word} %{{x}}<br>{accuracy_word} %{{y:.1f}} %<extra></extra>",
        },
    ]
    right = float(total if total is not None else (step_values.max() if step_values.size else 1))
    x_range = [0, max(right, 1.0)]
    shapes = [] if current is None else _current_step(current)
    positive = loss_values[np.isfinite(loss_values) & (loss_values > 0)]
    log = positive.size > 0 and float(positive.max()) > 20 * float(positive.min())
    layout = {
        "height": 420,
        "showlegend": False,
        "margin": {"l": 60, "r": 16, "t": 16, "b": 48},
        "xaxis": {"domain": [0, 1], "anchor": "y", "range": x_range, "showticklabels": False},
        "yaxis": {"domain": [0.55, 1], "title": {"text": loss_word}, **(log_axis(loss_values) if log else {})},
        "xaxis2": {"domain": [0, 1], "anchor": "y2", "range": x_range, "title": {"text": step_word}},
        "yaxis2": {"domain": [0, 0.45], "title": {"text": accuracy_word + " (%)"}, "range": [0, 102]},
        "shapes": shapes,
    }
    return make_figure(data, layout)


def _current_step(current: int) -> list[dict[str, Any]]:
    """A dotted line at step `current` across both panels (the loss's and the accuracy's)."""
    dotted = {"color": VERMILLION, "width": 2, "dash": "dot"}
    return [
        {"type": "line", "xref": axis, "yref": y_ref, "x0": current, "x1": current, "y0": 0, "y1": 1, "line": dotted}
        for axis, y_ref in (("x", "y domain"), ("x2", "y2 domain"))
    ]


def two_steps(
    grid: AttentionGrid | Any,
    later: Any,
    *,
    first_title: str,
    second_title: str,
    palette: str,
    width: int | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """The same attention (Q, K) at two steps of training, side by side: `grid`'s weights (an AttentionGrid, or bare
    weights) and `later`'s, on the same queries and keys, both on one scale, 0 to 1: at step 0 the weights are nearly
    uniform and look it (scaled row by row, noise looked like sharp stripes: issue 40). With `width` (a phone's),
    one above the other with square cells (side by side, each cell was a narrow strip)."""
    grid = AttentionGrid.of(grid)
    both = [np.asarray(weights, dtype=np.float32) for weights in (grid.weights, later)]
    return heads_grid(
        replace(grid, weights=np.stack(both)),  # (2, Q, K)
        head_titles=[first_title, second_title],
        palette=palette,
        columns=2 if width is None else 1,
        colour_range="unit",
        square=width is not None,
        width=width,
        lang=lang,
    )


def mark_rows(fig: Any, rows: list[int]) -> Any:
    """Outline `rows` (0-based) of a one-panel heatmap, across its width, in vermillion (the dates model's wrong
    output characters; their labels carry a "✗" too, so the mark does not rest on colour alone). `fig` is a Figure
    or a FigureSpec, changed in place and returned."""
    outline = {"color": VERMILLION, "width": 3}
    shapes = [
        {"type": "rect", "xref": "x domain", "yref": "y", "x0": 0, "x1": 1, "y0": row - 0.5, "y1": row + 0.5}
        | {"line": outline, "fillcolor": "rgba(0, 0, 0, 0)", "layer": "above"}
        for row in rows
    ]
    if isinstance(fig, go.Figure):
        fig.update_layout(shapes=[*fig.layout.shapes, *shapes])
    else:
        fig.layout["shapes"] = [*fig.layout.get("shapes", []), *shapes]
    return fig


OFF_GREY = "rgba(160, 160, 160, 0.72)"  # over a switched-off head's panel: its weights still show, muted


def grey_panels(fig: Any, panels: list[int]) -> Any:
    """Grey out `panels` (0-based) of a heads grid: the heads switched off, whose weights are computed but whose output
    the model no longer uses (their titles say "off" too, so the mark does not rest on colour alone). `fig` is a
    Figure or a FigureSpec, changed in place and returned."""
    shapes = []
    for panel in panels:
        refs = axes(panel + 1)
        shapes.append(
            {"type": "rect", "xref": f"{refs['xaxis']} domain", "yref": f"{refs['yaxis']} domain", "x0": 0, "x1": 1,
             "y0": 0, "y1": 1, "fillcolor": OFF_GREY, "line": {"width": 0}, "layer": "above"}
        )  # fmt: skip
    if isinstance(fig, go.Figure):
        fig.update_layout(shapes=[*fig.layout.shapes, *shapes])
    else:
        fig.layout["shapes"] = [*fig.layout.get("shapes", []), *shapes]
    return fig
