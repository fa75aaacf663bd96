"""What the self- and cross-attention pages draw from a state: weights, heads, raw numbers, the comparison, the
predict-then-reveal question, show-your-work and the exports."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from attnviz.app.budget import BUDGET_SECONDS, RERUN_BYTES, Plan, plan
from attnviz.app.exports import python_snippet, weights_csv
from attnviz.app.pipeline import (
    AttentionInputs,
    attention_request,
    batch_rows,
    first_rows,
    parse_guess,
    run_attention,
    total_variation,
)
from attnviz.app.state import AttentionState, encode_attention, preset_batches
from attnviz.app.ui.attention_charts import comparison_section, draw_plan, weights_charts
from attnviz.app.ui.common import arrow_table, chart, chart_tables, lazy_expander, shared_result
from attnviz.app.ui.editors import selected_row
from attnviz.app.ui.messages import show_error
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, palette, tr
from attnviz.app.ui.turns import ServerBusyError, busy_note, turn
from attnviz.app.ui.work import markdown_table, work_panel
from attnviz.core.multihead import MultiHeadTrace, head_rows
from attnviz.core.note_attn import bmm_rule, note_attn_steps
from attnviz.figures import attention as figures
from attnviz.figures.attention import AttentionGrid
from attnviz.figures.plotting import distinct_labels, unique_labels
from attnviz.i18n import sentences, t
from attnviz.lessons.explain import explain_attention

# Show-your-work's table: the softmax's six columns and the first four components of each value fit the results
# column of a projector (1280 px, the teacher's sidebar open); eight ran off its right edge. Step 5 writes out the
# whole output vector, and "The numbers" holds every value.
WORK_VALUE_COLUMNS = 4


def _head_label() -> Callable[[int], str]:
    """Head index 0, 1, ... as "head 1", "head 2", ... (in this run's language)."""
    lang = current_language()
    return lambda index: t("attention.head_n", lang, n=index + 1)


def _predicted(
    session: PageSession, state: AttentionState, trace: MultiHeadTrace, q_labels: list[str], k_labels: list[str]
) -> int | None:
    """Predict, then reveal: ask for a guess of one query row's weights (the heads' average when there are
    several); once revealed, show it beside the truth.

    Returns the guessed row once the page may show the weights (the guess for exactly this state is revealed)."""
    st.subheader(tr("attention.predict_heading"))
    row = selected_row(session, q_labels, tr("widget.query_row"))
    revealed_key = session.part("revealed")
    fingerprint = (tuple(sorted(encode_attention(replace(state, row=row)).items())), tuple(k_labels))
    revealed = st.session_state.get(revealed_key)
    if revealed is not None and revealed[0] == fingerprint:
        guess = revealed[1]
        truth = trace.mean_weights[row].numpy()
        title = tr("attention.guess_title", query=q_labels[row])
        chart(
            figures.guess_figure(guess, truth, key_labels=k_labels, title=title, lang=current_language()),
            f"{session.page}_guess",
        )
        st.caption(tr("attention.guess_distance", distance=f"{total_variation(guess, truth):.2f}"))
        return row
    st.caption(tr("attention.predict_caption", query=q_labels[row]))
    labels = unique_labels(k_labels, len(k_labels))
    text = st.text_input(
        tr("attention.guess_input", count=len(k_labels)),
        key=session.part("guess", hash(fingerprint)),  # a fresh, empty answer for every new question
        help=tr("attention.guess_order", keys=", ".join(labels)),
    )
    guess, problem, typed = parse_guess(text, len(k_labels))
    st.button(
        tr("attention.reveal"),
        disabled=guess is None,
        type="primary",
        key=session.part("reveal"),
        on_click=st.session_state.__setitem__,  # before the rerun it causes, so that rerun shows the answer
        args=(revealed_key, (fingerprint, guess)),
    )
    if problem == "count":
        st.caption(tr("attention.guess_count", count=typed, keys=len(k_labels)))
    elif problem:
        st.caption(tr("attention.guess_needed"))
    return None


def _batch_rows(page: str, state: AttentionState) -> None:
    """A batched preset's every batch row in one chart, as d2l's show_heatmaps draws its (2, 10) weights: one row
    per batch row's query, with that row's inputs and valid lengths and the page's scoring controls."""
    try:
        rows = batch_rows(state)
    except ValueError:
        return  # the page's own chart already says what is wrong with these controls
    query_labels = [
        tr("attention.batch_row_label", row=b, query=q) for b, q in zip(rows.batches, rows.queries, strict=True)
    ]
    fig = figures.weights_heatmap(
        AttentionGrid(rows.weights.numpy(), rows.mask.numpy(), query_labels, rows.keys),
        title=tr("attention.batch_rows_title"),
        palette=palette(),
        colour_range=state.crange,
        lang=current_language(),
    )
    chart(fig, f"{page}_{state.preset}_batch_rows")


def _note_attn_module(page: str, state: AttentionState, inputs: AttentionInputs) -> None:
    """Note 000's Attn module as written (typos fixed), on this preset's first query, first key and values: its
    shapes step by step, torch.bmm's rule with the letters filled in, and the weights it puts on V's rows."""
    st.subheader(tr("note_attn.heading"))
    st.caption(tr("note_attn.caption"))
    steps = note_attn_steps(inputs.queries, inputs.keys, inputs.values, seed=state.score_seed)
    rows = [[step.code, " · ".join(map(str, step.shapes_in)), str(step.shape_out)] for step in steps]
    columns = [tr("note_attn.code"), tr("note_attn.shapes_in"), tr("note_attn.shape_out")]
    st.markdown(markdown_table(columns, rows))
    bmm = next(step for step in steps if step.code.startswith("torch.bmm"))
    st.markdown(tr("note_attn.bmm", **bmm_rule(*bmm.shapes_in)))
    weights = next(step for step in steps if step.code.startswith("F.softmax")).value
    fig = figures.weights_heatmap(
        AttentionGrid(weights.numpy(), query_labels=["q"], key_labels=[f"v{i + 1}" for i in range(weights.shape[-1])]),
        title=tr("note_attn.weights_title"),
        palette=palette(),
        colour_range=state.crange,
        lang=current_language(),
    )
    chart(fig, f"{page}_note_attn_weights")


SMALL_MATRIX = 8  # W's of up to 8 columns are shown open, in full; larger ones folded


def _projection_matrices(trace: MultiHeadTrace, head: int) -> None:
    """W_q, W_k and W_v, the numbers step 0 multiplies: open when small, folded when large, each with the rows of
    the head being explained marked (step 0 works out the first of them)."""
    features = head_rows(trace.W_q.shape[0], head, trace.num_heads)
    small = trace.W_q.shape[1] <= SMALL_MATRIX
    with st.expander(tr("explain.matrices", first=features.start + 1, last=features.stop), expanded=small):
        for name in ("W_q", "W_k", "W_v"):
            matrix = getattr(trace, name)
            rows = head_rows(matrix.shape[0], head, trace.num_heads)
            columns = ["", *[str(j + 1) for j in range(matrix.shape[1])]]
            table = [[f"▶ {i + 1}" if i in rows else str(i + 1), *values] for i, values in enumerate(matrix.tolist())]
            st.markdown(f"**{name}**")
            if small:
                st.markdown(markdown_table(columns, table))
            else:
                st.dataframe(arrow_table(columns, table), hide_index=True, width="stretch")


def _numbers_section(
    session: PageSession,
    state: AttentionState,
    trace: MultiHeadTrace,
    inputs: AttentionInputs,
    shown: list[Callable[[], Any]],
    factors: list[int],
) -> None:
    """The folded section: the charts' tables, raw scores, outputs and the projection matrices. `factors`: of the
    scores and the output, every factor-th row (and score column) drawn, to stay within the rerun's bytes."""
    raw = lazy_expander(tr("attention.raw"), key=session.part("open", "raw"))
    if raw is None:
        return
    page, lang, head = session.page, current_language(), trace.heads[0]
    q_labels, k_labels = inputs.query_labels, inputs.key_labels
    with raw:
        for build in shown:
            chart_tables(build())
        out_cols = [f"o{j + 1}" for j in range(trace.output.shape[-1])]
        rows, keys, outs = slice(None, None, factors[0]), slice(None, None, factors[0]), slice(None, None, factors[1])
        tables = (  # (values, row labels, columns, title, x axis, name): the raw scores of head 1, then the output
            (head.scores[rows, keys], q_labels[rows], k_labels[keys],
             tr("attention.raw_title_head1" if trace.num_heads > 1 else "attention.raw_title"), tr("fig.keys"),
             f"{page}_raw_scores"),
            (trace.output[outs], q_labels[outs], out_cols,
             tr("attention.output_residual" if trace.residual else "attention.output"), tr("fig.features"),
             f"{page}_outputs"),
        )  # fmt: skip
        if max(factors) > 1:
            st.caption(tr("budget.thinned", factor=max(factors), limit=RERUN_BYTES // 2**20))
        for values, row_labels, columns, title, x_title, name in tables:
            fig = figures.matrix_heatmap(values.numpy(), row_labels=row_labels, col_labels=columns, title=title,
                                         x_title=x_title, y_title=tr("fig.queries"), lang=lang)  # fmt: skip
            chart(fig, name, table="inline")
        if state.projections == "random":
            for col, name in zip(st.columns(4), ("W_q", "W_k", "W_v", "W_o"), strict=True):
                with col:
                    matrix = figures.matrix_heatmap(
                        getattr(trace, name).numpy(), title=name, show_values=False, lang=lang
                    )  # an overview: the numbers are in step 0's tables, full width
                    chart(matrix, f"{page}_{name}")


def _budget_note(state: AttentionState, inputs: AttentionInputs, fit: Plan) -> None:
    """Why only part of the request was computed, and what to reduce to see it all, in the interface language."""
    choices = []
    for knob, value in fit.advice.items():
        if knob == "compare":
            choices.append(tr("budget.reduce_compare"))
        else:
            choices.append(tr(f"budget.reduce_{knob}", value=value))
    total = inputs.queries.shape[0]
    if fit.rows < total:
        text = tr("budget.rows", seconds=f"{fit.seconds:.1f}", budget=f"{BUDGET_SECONDS:g}", rows=fit.rows, total=total)
    else:
        score = tr(f"score.{state.compare}.label")
        text = tr("budget.compare", seconds=f"{fit.seconds:.1f}", budget=f"{BUDGET_SECONDS:g}", score=score)
    st.info(sentences(text, tr("budget.reduce", choices="; ".join(choices))), icon="⏱️")


@dataclass(frozen=True)
class Results:
    """What the page draws after the charts' column: the comparison and show-your-work (full width), and the
    exports (share box)."""

    export: Callable[[], None]
    below: Callable[[], None]


def draw_results(
    session: PageSession, state: AttentionState, inputs: AttentionInputs, side: Any = None
) -> Results | None:
    """Compute and draw every figure of the page; return what draws show-your-work and the exports.

    The request is priced before anything is computed (attnviz/app/budget.py): over the budget of one change, the
    comparison is left out, then only the first query rows are computed, and the page says what to reduce."""
    fit = plan(attention_request(state, inputs))
    if fit.partial:
        _budget_note(state, inputs, fit)
    try:
        with turn(fit.computed_seconds):
            return _compute_and_draw(session, state, inputs, fit, side)
    except ServerBusyError as exc:
        busy_note(exc)
        return None


def _compute_and_draw(
    session: PageSession, state: AttentionState, inputs: AttentionInputs, fit: Plan, side: Any = None
) -> Results | None:
    computed_state, inputs = first_rows(state, inputs, fit.rows)
    shared = ("attention", session.page, computed_state, fit.rows)  # what the trace depends on: the same for a class
    try:
        trace = shared_result(shared, lambda: run_attention(computed_state, inputs))
    except ValueError as exc:
        show_error(exc)
        return None
    q_labels, k_labels = inputs.query_labels, inputs.key_labels
    guessed_row = None
    if state.predict:
        guessed_row = _predicted(session, state, trace, q_labels, k_labels)
        if guessed_row is None:
            return None  # the weights stay hidden until the student's guess is in
    compare = bool(state.compare and fit.compare)
    raw = session.current(session.part("open", "raw"), bool, False)
    drawn = draw_plan(trace, raw, compare)
    shown = weights_charts(session, state, trace, inputs, drawn.weights, side, shared)  # tables: the numbers section
    if state.preset and state.mode == "numbers" and preset_batches(state.preset) > 1:
        _batch_rows(session.page, state)  # the preset's rows: not under a sentence the student switched to
    _numbers_section(session, state, trace, inputs, shown, drawn.raw)

    def below() -> None:  # full width, below the controls and the charts: three panels; a column per quantity
        if compare:
            comparison_section(session.page, computed_state, trace, inputs, drawn.compare)
        if state.preset == "concat_linear":
            _note_attn_module(session.page, state, inputs)
        st.subheader(tr("attention.show_work"))
        row = selected_row(session, q_labels, tr("widget.query_row")) if guessed_row is None else guessed_row
        head_index = 0
        if trace.num_heads > 1:
            head_index = st.selectbox(
                tr("attention.head"),
                list(range(trace.num_heads)),
                format_func=_head_label(),
                key=session.key("workhead"),
            )
        lang = current_language()
        queries, keys = distinct_labels(q_labels), distinct_labels(k_labels)  # "the·1", "the·7", as on the charts
        steps = shared_result(  # the same steps for every session on this state (a class)
            (*shared, "work", head_index, row, lang),
            lambda: explain_attention(
                trace, head_index, row, queries[row], keys, lang, value_columns=WORK_VALUE_COLUMNS
            ),
        )
        work_panel(steps, heading=f"{tr('attention.show_work')} · {queries[row]}")
        if trace.projections != "identity":
            _projection_matrices(trace, head_index)

    return Results(functools.partial(_export, session.page, state, trace.heads[0], q_labels, k_labels), below)


def _export(page: str, state: AttentionState, head: Any, q_labels: list[str], k_labels: list[str]) -> None:
    """The share box's exports: the weights as CSV and the Python that computes them."""
    st.caption(tr("attention.export_caption"))
    st.download_button(
        tr("attention.download_csv"),
        weights_csv(head, q_labels, k_labels),
        file_name=f"attnviz_{page}_weights.csv",
        mime="text/csv",
    )
    st.code(python_snippet(state), language="python")
