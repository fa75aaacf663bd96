"""Figures of "Is attention an explanation?": the maps side by side, each row with its Spearman ρ against blank-out,
and the share of [CLS] and [SEP] per layer, by attention weight and by norm-based contribution."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.plotting import (
    Labels,
    as_array,
    category_ticks,
    colorscale,
    make_figure,
    matrix_axis,
    unique_labels,
    word,
)
from attnviz.figures.style import BLUE, DIVERGING_PALETTE, MAX_TICKS, VERMILLION
from attnviz.i18n import DEFAULT_LANGUAGE

LABEL_SIZE = 12  # the maps' labels, in pixels; the gap above each row of cells makes room for them
CELLS_HEIGHT = 26  # pixels of one map's row of cells


def rho_text(rho: float | None) -> str:
    """ "ρ = +0.75" (two decimals, signed); "ρ = —" for the reference itself (None) or a constant map (NaN)."""
    if rho is None or math.isnan(rho):
        return "ρ = —"
    return f"ρ = {rho:+.2f}"


def row_scaled(values: np.ndarray) -> np.ndarray:
    """Each row divided by its own largest |value| (a row of zeros stays zero): every row on [-1, 1]."""
    peaks = np.abs(values).max(axis=1, keepdims=True)  # (m, 1)
    return np.divide(values, peaks, out=np.zeros_like(values), where=peaks > 0)


def _row_scale_bar(title: str) -> dict:
    """The colour bar of the rows' own scales: horizontal, below the maps (the tokens are above them), -1 to 1."""
    return {"title": {"text": title, "side": "top"}, "orientation": "h", "tickvals": [-1, 0, 1], "thickness": 10,
            "len": 0.5, "x": 1.0, "xanchor": "right", "y": 0.0, "yanchor": "top", "ypad": 8}  # fmt: skip


def row_label(method: str, rho: float | None, top: bool | None, lang: str) -> str:
    """A map's label: its name, whether it ranks blank-out's first token first too ("1st ✓"; None for the reference
    itself), and its ρ."""
    if rho is None and top is None:
        return f"{method}  {rho_text(rho)}"
    mark = "" if top is None else f"{word('first_same' if top else 'first_other', lang)}  "
    return f"{method}  {mark}{rho_text(rho)}"


def maps_heatmap(
    values: np.ndarray | Sequence[Sequence[float]],
    methods: Sequence[str],
    rhos: Sequence[float | None] | None,
    *,
    tops: Sequence[bool | None] | None = None,
    tokens: Labels = None,
    label_size: int = LABEL_SIZE,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One row per map (`methods`, their names as shown), one column per token: values (m, n), each row coloured by
    its own largest |value| on a diverging scale (its sign kept), the hover giving the value itself. Each row's label
    carries its ρ against the reference (`rhos`, None for the reference), above the row in `label_size` pixels;
    `rhos` None: the names alone (a live class's question about them is open). `tops`: whether each map's first token
    is the reference's first (None for the reference). The tokens are above the rows, so that a projector's first
    screen shows them with the first maps."""
    data = as_array(values, "values", 2)  # (m, n)
    if len(methods) != data.shape[0] or (rhos is not None and len(rhos) != data.shape[0]):
        raise ValueError(f"expected {data.shape[0]} methods and ρ values, got {len(methods)} and {len(rhos or [])}")
    x = unique_labels(tokens, data.shape[1], "t")
    marks = [None] * len(methods) if tops is None else list(tops)
    named = (
        methods
        if rhos is None
        else [row_label(m, rho, top, lang) for m, rho, top in zip(methods, rhos, marks, strict=True)]
    )
    y = unique_labels(list(named), data.shape[0])
    scale_title = word("row_scaled", lang)
    gap = 2 * label_size + 10  # between two rows of cells: half of it above a row, where its label hangs
    trace = {
        "type": "heatmap",
        "z": row_scaled(data).astype(np.float32),
        "customdata": data,
        "x": x,
        "y": y,
        "zmin": -1.0,
        "zmax": 1.0,
        "colorscale": colorscale(DIVERGING_PALETTE),
        "colorbar": _row_scale_bar(scale_title),
        "xgap": 1,
        "ygap": gap,
        "name": word("maps", lang),
        "meta": {"weights": "customdata"},  # the tables show the values, not their colour positions
        "hovertemplate": "%{y}<br>%{x}: %{customdata:.4g}<extra></extra>",
    }
    return make_figure([trace], _maps_layout(x, y, gap, label_size, lang))


def _maps_layout(x: list[str], y: list[str], gap: int, label_size: int, lang: str) -> dict:
    """The maps' layout: the tokens on top, each row's label hanging above it, the colour bar below."""
    # Each map's name and ρ above its row, not beside it: the cells keep the chart's whole width (on a phone, labels
    # beside the rows left the cells a quarter of it). A label hangs from the top of its row's slot, in the gap.
    labels = [
        {"text": label, "x": 0, "xref": "paper", "xanchor": "left", "y": index - 0.5, "yref": "y",
         "yanchor": "top", "showarrow": False, "font": {"size": label_size}}
        for index, label in enumerate(y)
    ]  # fmt: skip
    layout = {
        # The title at the top of the figure, the tokens below it (automargin makes room for them above the rows)
        "title": {"text": word("maps_title", lang), "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 8}},
        "xaxis": matrix_axis(side="top", automargin=True, **category_ticks(x, MAX_TICKS)),
        "yaxis": matrix_axis(autorange="reversed", showticklabels=False, ticks=""),
        "annotations": labels,
        "height": int(170 + (gap + CELLS_HEIGHT) * len(y)),
        "margin": {"l": 10, "r": 10, "t": 100, "b": 70},
    }
    return layout


def sink_bars(weight: Sequence[float], norm: Sequence[float], *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Two bars per layer (counted from 1): the share of the attention weight α on [CLS] and [SEP], and the share of
    the norm-based contribution ‖α f(x)‖ on them, both on [0, 1]."""
    shares = as_array([list(weight), list(norm)], "shares", 2)  # (2, L)
    layers = [word("layer_n", lang, n=index + 1) for index in range(shares.shape[1])]
    bars = [
        {
            "type": "bar",
            "x": layers,
            "y": row,
            "name": name,
            "marker": {"color": colour},
            "hovertemplate": "%{x}: %{y:.0%}<extra>" + name + "</extra>",
        }
        for row, name, colour in (
            (shares[0], word("sink_weight", lang), VERMILLION),
            (shares[1], word("sink_norm", lang), BLUE),
        )
    ]
    layout = {
        "title": {"text": word("sink_title", lang)},
        "barmode": "group",
        "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": word("share", lang)}},
        "xaxis": {"type": "category"},
        "legend": {"orientation": "h", "y": -0.15},
        "height": 380,
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
    }
    return make_figure(bars, layout)


def matter_bars(labels: Sequence[str], accuracy: Sequence[float], *, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Does attention matter? One horizontal bar per model variant (`labels`, the first the model as trained): its
    accuracy on held-out data, on [0, 1], written at the bar's end."""
    values = as_array([list(accuracy)], "accuracy", 2)[0]  # (m,)
    colours = [BLUE] + [VERMILLION] * (len(values) - 1)
    bars = {
        "type": "bar",
        "orientation": "h",
        "x": values,
        "y": unique_labels(labels, len(values), "m"),
        "marker": {"color": colours},
        "text": [f"{v:.0%}" for v in values],
        "textposition": "outside",
        "cliponaxis": False,
        "hovertemplate": "%{y}: %{x:.1%}<extra></extra>",
    }
    layout = {
        "title": {"text": word("matter_title", lang)},
        "xaxis": {"range": [0, 1.15], "tickformat": ".0%", "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
                  "title": {"text": word("held_out_accuracy", lang)}},
        "yaxis": {"autorange": "reversed", "automargin": True, "type": "category"},
        "height": int(140 + 44 * len(values)),
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
    }  # fmt: skip
    return make_figure([bars], layout)
