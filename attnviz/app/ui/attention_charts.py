"""The attention pages' heatmaps: one head's weights or every head's and their mean, the comparison of two scores,
and how they are pooled or thinned to stay within the bytes one rerun may send (attnviz/app/budget.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st
import torch
import torch.nn.functional as F

from attnviz.app.budget import DRAW_CELLS, RERUN_BYTES, draw_factors, pool_factor
from attnviz.app.pipeline import AttentionInputs, run_attention
from attnviz.app.state import AttentionState, attention_fields
from attnviz.app.ui.common import chart
from attnviz.app.ui.editors import colour_range_picker
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, error_text, palette, presenting, tr
from attnviz.core.fields import field
from attnviz.core.multihead import MultiHeadTrace
from attnviz.figures import attention as figures
from attnviz.figures.attention import AttentionGrid
from attnviz.models.bert_views import pooled_labels


def _pool(values: torch.Tensor, factor: int) -> torch.Tensor:
    """(..., Q, K) as max-pooled factor x factor blocks (adaptive pooling: the last block may be smaller)."""
    size = (-(-values.shape[-2] // factor), -(-values.shape[-1] // factor))
    flat = values.float().reshape(-1, *values.shape[-2:])
    return F.adaptive_max_pool2d(flat, size).reshape(*values.shape[:-2], *size)


def _pooled(source: AttentionGrid, factor: int, heads: bool = False) -> AttentionGrid:
    """A heatmap's weights (..., Q, K) and mask (torch tensors) and its labels as drawn, as numpy arrays: as they are
    (`factor` 1), or in max-pooled blocks, with a caption saying why: the heads' grid's (`heads`) own drawing limit,
    or this change's bytes."""
    values, mask = source.weights, source.mask
    if factor == 1:
        return replace(source, weights=values.numpy(), mask=mask.numpy())
    pooled = _pool(values, factor)
    rows, columns = pooled.shape[-2:]
    cells = values.numel()
    if heads and factor == pool_factor(cells):  # the grid's drawing limit alone decided it
        st.caption(tr("budget.pooled", factor=factor, cells=f"{cells:,}", limit=f"{DRAW_CELLS:,}"))
    else:
        st.caption(tr("budget.pooled_bytes", factor=factor, limit=RERUN_BYTES // 2**20))
    return AttentionGrid(
        pooled.numpy(),
        _pool(mask, factor).bool().numpy(),
        pooled_labels(list(source.query_labels or ()), rows),
        pooled_labels(list(source.key_labels or ()), columns),
    )


def weights_charts(
    session: PageSession,
    state: AttentionState,
    trace: MultiHeadTrace,
    inputs: AttentionInputs,
    factors: list[int],
    side: Any = None,
    shared: tuple[Any, ...] | None = None,
) -> list[Callable[[], Any]]:
    """The weights (one head), or every head and their mean; returns what builds each figure (their tables go in the
    numbers section). The colour range's control sits above them, or in `side` (beside the chart, on a projector).
    `factors`: each chart's pooling (attnviz/app/budget.py: `draw_factors`), one head's, or the grid's and the
    mean's. `shared`: everything the trace depends on; the figures' JSON is then made once for every session that
    shows them (a class following its teacher)."""
    lang, page = current_language(), session.page
    colour_range_picker(session, field(attention_fields(page), "crange"), where=side or st)
    mask = trace.heads[0].mask
    look = {"palette": palette(), "colour_range": state.crange, "lang": lang}
    if trace.num_heads == 1:  # max-pooled blocks keep a sharp pattern visible; the full numbers are in the CSV
        head, factor = trace.heads[0], factors[0]
        shown = _pooled(AttentionGrid(head.weights, mask, inputs.query_labels, inputs.key_labels), factor)
        scores = _pool(head.scores, factor) if factor > 1 else head.scores
        title = tr("attention.weights_title", score=tr(f"score.{state.score}.label"))
        builds = [
            (functools.partial(figures.weights_heatmap, shown, scores=scores.numpy(), title=title, **look), "weights")
        ]
    else:
        titles = [tr("attention.head_n", n=h + 1) for h in range(trace.num_heads)]
        every = AttentionGrid(trace.weights, mask, inputs.query_labels, inputs.key_labels)
        grid = functools.partial(figures.heads_grid, _pooled(every, factors[0], heads=True), head_titles=titles, **look)
        mean = functools.partial(
            figures.weights_heatmap,
            _pooled(replace(every, weights=trace.mean_weights), factors[1]),
            title=tr("attention.mean_title"),
            **look,
        )
        builds = [(grid, "heads"), (mean, "mean")]
    for build, what in builds:
        name = f"{page}_attention_{what}"
        key = None if shared is None else (*shared, name, tuple(factors), *look.values())
        chart(build, name, table="elsewhere", shared=key, specs=True)
    return [build for build, _ in builds]


@dataclass(frozen=True)
class DrawPlan:
    """How each heatmap of a rerun is drawn (k: k x k blocks, or every k-th row and column; 1: as it is)."""

    weights: list[int]  # one head's weights, or every head's grid and their mean
    raw: list[int]  # the numbers section's raw scores and output (1, 1 while it is closed)
    compare: int  # the comparison's three charts


def draw_plan(trace: MultiHeadTrace, raw: bool, compare: bool) -> DrawPlan:
    """The heatmaps a rerun draws, pooled to stay within the bytes one rerun may send (attnviz/app/budget.py:
    `draw_factors`): the weights, then with the numbers section open (`raw`) the raw scores and the output, then with
    a comparison its three charts."""
    square = tuple(trace.mean_weights.shape[-2:])
    weights = [square] if trace.num_heads == 1 else [tuple(trace.weights.shape), square]
    numbers = [square, tuple(trace.output.shape[-2:])] if raw else []
    factors = draw_factors(weights + numbers + [square] * (3 * compare))
    main, rest = factors[: len(weights)], factors[len(weights) :]
    return DrawPlan(main, rest[:2] if raw else [1, 1], max(rest[len(numbers) :], default=1))


def comparison_section(
    page: str, state: AttentionState, trace: MultiHeadTrace, inputs: AttentionInputs, factor: int = 1
) -> None:
    """The weights of a second score beside the chosen one, and their difference: three charts, two side by side
    above the difference (the columns stack on a phone), or one above the other on a projector. `factor` > 1: every
    factor-th query and key is drawn (the difference stays exact where it is drawn)."""
    try:
        other = run_attention(state, inputs, score=state.compare)
    except ValueError as exc:
        score = tr(f"score.{state.compare}.label")
        st.error(tr("attention.comparison_error", score=score, error=error_text(exc)), icon="🚫")
        return
    st.subheader(tr("attention.side_by_side"))
    every = slice(None, None, factor)
    if factor > 1:
        st.caption(tr("budget.thinned", factor=factor, limit=RERUN_BYTES // 2**20))
    drawn = AttentionGrid(
        trace.mean_weights[every, every].numpy(),
        trace.heads[0].mask[every, every].numpy(),
        inputs.query_labels[every],
        inputs.key_labels[every],
    )
    panels = figures.comparison_charts(
        drawn,
        other.mean_weights[every, every].numpy(),
        label_a=tr(f"score.{state.score}.label"),
        label_b=tr(f"score.{state.compare}.label"),
        palette=palette(),
        colour_range=state.crange,
        lang=current_language(),
    )
    slots = [st.container()] * 3 if presenting() else [*st.columns(2), st.columns(2)[0]]
    for slot, fig, part in zip(slots, panels, ("a", "b", "difference"), strict=True):
        with slot:
            chart(fig, f"{page}_compare_{state.score}_{state.compare}_{part}")
