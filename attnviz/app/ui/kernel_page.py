"""The kernel-attention page: Nadaraya–Watson regression, its weights, and learning the bandwidth."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from attnviz.app.pipeline import matrix_from_cells, prediction_curve, run_kernel_and_curve
from attnviz.app.state import (
    KERNEL_FIELDS,
    MAX_VECTOR_TEXT,
    KernelState,
    apply_kernel_preset,
    decode_kernel,
    encode_kernel,
)
from attnviz.app.ui import fieldwidgets, live_panels, live_sync
from attnviz.app.ui.common import (
    beside_chart,
    chart,
    controls_and_results,
    first_paint,
    inputs_box,
    pending,
    shared_result,
)
from attnviz.app.ui.editors import (
    colour_range_picker,
    editor_cells,
    preset_label,
    preset_note,
    selected_row,
    text_columns,
)
from attnviz.app.ui.kernel_fit import FitKey, learn_section
from attnviz.app.ui.messages import show_warning
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import begin_run, current_language, error_text, palette, presenting, tr
from attnviz.app.ui.share import share_box
from attnviz.app.ui.work import work_panel
from attnviz.core.errors import AttnvizError, Name
from attnviz.core.fields import MAX_POINTS, field, format_number
from attnviz.core.kernel import KERNELS, BandwidthFit, toy_function
from attnviz.core.scores import BANDWIDTH
from attnviz.core.trace import AttentionTrace
from attnviz.figures import attention as figures
from attnviz.figures import kernel as kernel_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.lessons.explain import explain_kernel_row, number_text

TOY = "d2l_toy_regression"
PAGE = "kernel"
FRAGMENT_FIELDS = frozenset({"kernel", "bandwidth", "row", "crange"})  # the fields whose widgets the fragment draws
SESSION = PageSession(PAGE, convert={"queries": lambda v: ", ".join(f"{x:.6g}" for x in v)})


def _defaults() -> KernelState:
    """The page without a link: the waist example of the notes."""
    return apply_kernel_preset(KernelState(), KernelState().preset)


def _load_preset() -> None:
    """Callback of the preset picker: the preset's points and settings; "none": the page's defaults."""
    key = st.session_state[SESSION.key("preset")]
    SESSION.load(apply_kernel_preset(KernelState(), key) if key else replace(_defaults(), preset=""))
    SESSION.warnings = []


def _reload_toy() -> None:
    state = replace(SESSION.state, toy_seed=int(SESSION.value("toy_seed")), toy_n=int(SESSION.value("toy_n")))
    SESSION.load(apply_kernel_preset(state, TOY, keep_controls=True))


def _points_editor(state: KernelState) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The training points as two columns; a row still being typed is left out, with a note."""
    columns = [tr("kernel.key_column"), tr("kernel.value_column")]
    frame = pd.DataFrame(
        [[format_number(k), format_number(v)] for k, v in zip(state.keys, state.values, strict=True)],
        columns=columns,
        dtype="object",
    )
    edited = st.data_editor(
        frame,
        num_rows="dynamic",
        key=SESSION.versioned("points", current_language()),
        width="stretch",
        height=240,
        column_config=text_columns(frame),  # text, then parsed: a number column turns 1e-3 into -13
    )
    if len(edited) > MAX_POINTS:
        st.error(tr("kernel.too_many_points", count=len(edited)))
        return None
    cells = editor_cells(edited)
    try:
        read = matrix_from_cells(cells, "points")
    except ValueError as exc:
        st.error(error_text(exc), icon="🚫")
        return None
    if read.incomplete:
        st.caption(tr("widget.incomplete_rows", rows=", ".join(map(str, read.incomplete))))
    return tuple(row[0] for row in read.matrix), tuple(row[1] for row in read.matrix)


def _query_points() -> tuple[float, ...] | None:
    queries = field(KERNEL_FIELDS, "queries")
    text = st.text_input(tr(queries.label), key=SESSION.bound("queries"), max_chars=MAX_VECTOR_TEXT)
    try:
        points = queries.parse(text)
        if not points:  # an empty box (or a link's empty q=): nothing to predict at
            raise AttnvizError("empty", name=Name(queries.name))
        return points
    except ValueError as exc:
        st.error(tr("kernel.queries_example", error=error_text(exc)), icon="🚫")
        return None


def _sidebar(state: KernelState) -> None:
    with st.sidebar:
        fieldwidgets.choice(SESSION, field(KERNEL_FIELDS, "preset"), preset_label(), on_change=_load_preset)
        if state.preset and not presenting():  # on a projector the note sits beside the chart
            preset_note(state.preset)
        if state.preset == TOY:
            fieldwidgets.number(SESSION, field(KERNEL_FIELDS, "toy_seed"), on_change=_reload_toy)
            fieldwidgets.number(SESSION, field(KERNEL_FIELDS, "toy_n"), on_change=_reload_toy)
        st.button(tr("frame.reset"), on_click=SESSION.reset, args=(_defaults(),), help=tr("frame.reset_help"))


def kernel_page() -> None:
    """Draw the kernel regression page."""
    state: KernelState = SESSION.sync_from_link(decode_kernel, _defaults)
    for warning in SESSION.warnings:
        show_warning(warning)
    if not first_paint():  # the sidebar follows the main chart
        _sidebar(state)
    with inputs_box():
        points_column, queries_column = st.columns([3, 2], gap="large")
        with points_column:
            st.markdown(tr("kernel.points_heading"))
            points = _points_editor(state)
        with queries_column:
            queries = _query_points()
    if points is not None:
        state = replace(state, keys=points[0], values=points[1])
    if queries is not None:
        state = replace(state, queries=queries)
    _controls_and_results(state, ready=points is not None and queries is not None)


@st.fragment
def _controls_and_results(state: KernelState, ready: bool) -> None:
    """Kernel, σ and everything computed from them. A fragment: moving σ reruns only this part, not the sidebar
    and the data editors above (their values arrive as the arguments of the last full run)."""
    begin_run()  # a fragment rerun does not pass through page_frame
    SESSION.follow_class(decode_kernel, FRAGMENT_FIELDS)
    live_panels.fragment_follower(PAGE)
    left, right = controls_and_results([2, 3])
    with left:
        if first_paint():  # they follow the main chart, which their values (the stored state's) already drew
            pending("controls")
            kernel, bandwidth = state.kernel, state.bandwidth
        else:
            kernel = fieldwidgets.choice(SESSION, field(KERNEL_FIELDS, "kernel"), "kernel.{}.label")
            formula = KERNELS[kernel].formula + r",\quad u = \frac{\lvert q - k \rvert}{\sigma}"
            explanation = tr(f"kernel.{kernel}.explanation")
            st.markdown(f"$$\n{formula}\n$$\n\n{explanation}")  # one element: formula and text
            bandwidth = fieldwidgets.number(SESSION, BANDWIDTH)
    row, crange = int(SESSION.value("row")), SESSION.value("crange")  # their controls are drawn in the results
    state = replace(state, kernel=kernel, bandwidth=bandwidth, row=row, crange=crange)
    with right:
        charts, side = beside_chart()
        if side is not None and state.preset:
            with side:
                preset_note(state.preset)
        if ready and live_sync.answers_hidden():
            with charts:
                live_sync.answer_hidden_note()
        elif ready:
            with charts:
                _draw(state, side)
        share_box(SESSION, SESSION.publish(state, encode_kernel), decode_kernel)


def _draw(state: KernelState, side: Any = None) -> None:
    """The results: the regression, the predictions, the weights, learning σ, and the worked row."""
    trace, curve = shared_result((PAGE, state), lambda: run_kernel_and_curve(state))  # one for a class
    fit_key: FitKey = (state.keys, state.values, state.kernel)
    stored = SESSION.get("fit")  # (the inputs it was learned from, the fit): kept in the session, never redone
    fit = stored[1] if stored is not None and stored[0] == fit_key and state.kernel != "boxcar" else None
    _regression_chart(state, trace, curve, fit)
    labels = [f"{x:.4g}" for x in state.keys]
    q_labels = [f"{x:.4g}" for x in state.queries]
    _predictions(state, trace, q_labels)
    colour_range_picker(SESSION, field(KERNEL_FIELDS, "crange"), where=side or st)
    chart(
        functools.partial(
            figures.weights_heatmap,
            AttentionGrid(trace.weights.numpy(), query_labels=q_labels, key_labels=labels),
            scores=trace.scores.numpy(),
            title=tr("kernel.weights_title"),
            palette=palette(),
            colour_range=state.crange,
            lang=current_language(),
        ),
        "kernel_weights",
    )
    learn_section(SESSION, state, fit_key, fit)
    st.subheader(tr("attention.show_work"))
    row = selected_row(SESSION, q_labels, tr("kernel.query_to_explain"))
    work_panel(
        explain_kernel_row(trace, row, labels, current_language()),
        heading=f"{tr('attention.show_work')} · {q_labels[row]}",
    )


def _regression_chart(
    state: KernelState, trace: AttentionTrace, curve: AttentionTrace, fit: BandwidthFit | None
) -> None:
    """The training points, the prediction over the grid (and with the learned σ, once learned), the chosen queries."""
    grid = curve.queries[:, 0]
    extra = None
    if fit is not None:
        learned = prediction_curve(state, bandwidth=fit.bandwidth)
        extra = (learned.output.numpy(), tr("kernel.learned_curve", sigma=f"{fit.bandwidth:.3g}"))
    regression = functools.partial(
        kernel_figures.kernel_regression_figure,
        state.keys,
        state.values,
        grid.numpy(),
        curve.output.numpy(),
        y_true=toy_function(grid).numpy() if state.preset == TOY else None,
        no_support=curve.no_support.numpy(),
        points=(list(state.queries), trace.output.numpy()),
        extra_curve=extra,
        lang=current_language(),
    )
    chart(regression, "kernel_regression")


def _predictions(state: KernelState, trace: AttentionTrace, q_labels: list[str]) -> None:
    """f(q) for every chosen query, after a warning naming the queries no key was in reach of."""
    if bool(trace.no_support.any()):
        missing = ", ".join(q for q, flag in zip(q_labels, trace.no_support.tolist(), strict=True) if flag)
        st.warning(tr("kernel.no_support", kernel=tr(f"kernel.{state.kernel}.label"), queries=missing))
    predictions = [
        f"f({q}) = {number_text(y)}" if math.isfinite(y) else f"f({q}): {tr('kernel.no_prediction')}"
        for q, y in zip(q_labels, trace.output.tolist(), strict=True)
    ]
    st.markdown(tr("kernel.predictions") + ", ".join(predictions))
