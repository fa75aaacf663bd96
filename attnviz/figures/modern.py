"""Pure Plotly builders for the modern-attention page: the online softmax's blocks, and which query heads share
which key/value head."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.attention import matrix_heatmap
from attnviz.figures.plotting import Labels, as_vector, make_figure, unique_labels, word
from attnviz.figures.style import BLUE, ORANGE, VERMILLION, VERMILLION_TEXT
from attnviz.i18n import DEFAULT_LANGUAGE

GREY = "#BBBBBB"  # keys of blocks not read yet


def online_softmax_figure(
    scores: Any,
    block_size: int,
    blocks_done: int,
    running_max: float,
    *,
    key_labels: Labels = None,
    title: str = "",
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One query row's scaled scores, a bar per key: the blocks read so far in alternating colours, the others grey,
    masked keys (-inf) as an empty slot; a dashed line at the running maximum m after `blocks_done` blocks."""
    values = as_vector(scores, "scores")  # (K,)
    x = unique_labels(key_labels, values.size, "k")
    finite = np.isfinite(values)
    shown = np.where(finite, values, np.float32(0))
    block = np.arange(values.size) // block_size
    colours = [(BLUE if b % 2 == 0 else ORANGE) if b < blocks_done else GREY for b in block.tolist()]
    key, score, block_word = word("key", lang), word("score", lang), word("block", lang)
    hover = f"{key}: %{{x}}<br>{block_word}: %{{customdata}}<br>{score}: %{{y:.4~g}}<extra></extra>"
    data: list[dict[str, Any]] = [
        {
            "type": "bar",
            "x": x,
            "y": shown,
            "name": score,
            "marker": {"color": colours},
            "customdata": (block + 1).astype(np.int32),
            "hovertemplate": hover,
        }
    ]
    masked = [label for label, ok in zip(x, finite.tolist(), strict=True) if not ok]
    if masked:
        data.append(_masked_marks(masked, lang))
    shapes, annotations = _block_edges(values.size, block_size), []
    if math.isfinite(running_max):
        shapes.append(_running_max_line(running_max))
        annotations.append(_running_max_label(running_max))
    layout = {
        "title": {"text": html.escape(title, quote=False)},
        "xaxis": {"title": {"text": word("keys", lang)}, "type": "category"},
        "yaxis": {"title": {"text": score}},
        "shapes": shapes,
        "annotations": annotations,
        "showlegend": bool(masked),
        "height": 360,
    }
    return make_figure(data, layout)


def _masked_marks(masked: list[str], lang: str) -> dict[str, Any]:
    """A × at 0 on each masked key (-inf): its bar would have no height."""
    return {
        "type": "scatter",
        "x": masked,
        "y": np.zeros(len(masked), dtype=np.float32),
        "mode": "markers",
        "marker": {"symbol": "x", "color": VERMILLION, "size": 10},
        "name": word("masked_short", lang),
        "hoverinfo": "skip",
        "meta": {"table": False},
    }


def _block_edges(keys: int, block_size: int) -> list[dict[str, Any]]:
    """A thin vertical line between each two blocks of `block_size` keys."""
    grey = {"color": "#999999", "width": 1}
    return [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": edge - 0.5,
            "x1": edge - 0.5,
            "y0": 0,
            "y1": 1,
            "line": grey,
        }
        for edge in range(block_size, keys, block_size)
    ]


def _running_max_line(running_max: float) -> dict[str, Any]:
    """A dashed line across the plot at the running maximum m."""
    dashed = {"color": VERMILLION, "dash": "dash", "width": 2}
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": running_max, "y1": running_max, "line": dashed}


def _running_max_label(running_max: float) -> dict[str, Any]:
    """ "m = …" at the right end of the running maximum's line."""
    return {
        "xref": "paper",
        "x": 1,
        "y": running_max,
        "xanchor": "right",
        "yanchor": "bottom",
        "text": f"m = {running_max:.4g}",
        "showarrow": False,
        "font": {"color": VERMILLION_TEXT},  # the line's own colour is 3.9:1 on white
    }


def kv_share_map(groups: tuple[int, ...], *, title: str = "", lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Query heads (rows) against key/value heads (columns): 1 where the query head reads that head's cache."""
    kv_heads = max(groups) + 1
    shared = np.zeros((len(groups), kv_heads), dtype=np.float32)
    shared[np.arange(len(groups)), np.asarray(groups)] = 1.0
    fig = matrix_heatmap(
        shared,
        row_labels=[word("query_head", lang, n=h + 1) for h in range(len(groups))],
        col_labels=[word("kv_head", lang, n=g + 1) for g in range(kv_heads)],
        title=title,
        symmetric=False,
        zmin=0.0,
        zmax=1.0,
        palette="Blues",
        show_values=True,
        x_title=word("kv_heads", lang),
        y_title=word("query_heads", lang),
        lang=lang,
    )
    fig.update_layout(height=int(120 + 34 * len(groups)))
    fig.update_traces(showscale=False)
    return fig
