"""The kernel-attention page: Nadaraya–Watson regression, its weights, and learning the bandwidth."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from attnviz import figures
from attnviz.explain import explain_kernel_row
from attnviz.i18n import t
from attnviz.kernel import KERNELS, BandwidthFit, fit_bandwidth, toy_function
from attnviz.pipeline import prediction_curve, run_kernel
from attnviz.presets import PRESETS
from attnviz.state import KernelState, apply_kernel_preset, decode_kernel, encode_kernel, parse_vector
from attnviz.ui.common import chart, controls_and_results, publish, push_state, sync_from_url, value, widget_key
from attnviz.ui.settings import begin_run, current_language, error_text, labeller, palette, tr
from attnviz.ui.widgets import preset_label, share_box, work_panel

PAGE = "kernel"
KERNEL_PRESETS = ["", *[k for k, p in PRESETS.items() if p.page == "kernel"]]
TOY = "d2l_toy_regression"
_CONVERT = {"queries": lambda v: ", ".join(f"{x:.6g}" for x in v)}


def _load_preset() -> None:
    key = st.session_state[widget_key(PAGE, "preset")]
    state = st.session_state[f"state:{PAGE}"]
    push_state(PAGE, apply_kernel_preset(state, key) if key else replace(state, preset=""), _CONVERT)


def _reload_toy() -> None:
    state = replace(
        st.session_state[f"state:{PAGE}"], toy_seed=int(value(PAGE, "toy_seed")), toy_n=int(value(PAGE, "toy_n"))
    )
    push_state(PAGE, apply_kernel_preset(state, TOY, keep_controls=True), _CONVERT)


@st.cache_data(max_entries=64, show_spinner=False)
def learned_bandwidth(keys: tuple[float, ...], values: tuple[float, ...], kernel: str) -> BandwidthFit:
    """Leave-one-out fit of σ, cached by its inputs (a pure result)."""
    return _fit(keys, values, kernel)


def _fit(keys: tuple[float, ...], values: tuple[float, ...], kernel: str, progress=None) -> BandwidthFit:
    return fit_bandwidth(list(keys), list(values), kernel=kernel, init=1.0, epochs=200, lr=0.05, progress=progress)


def _points_editor(state: KernelState) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    version = st.session_state.get(f"version:{PAGE}", 0)
    frame = pd.DataFrame(
        {tr("kernel.key_column"): list(state.keys), tr("kernel.value_column"): list(state.values)}, dtype="float64"
    )
    edited = st.data_editor(
        frame, num_rows="dynamic", key=f"points:{version}:{current_language()}", width="stretch", height=240
    )
    if edited.isna().any().any():
        row = int(edited.isna().any(axis=1).to_numpy().nonzero()[0][0]) + 1
        st.error(tr("kernel.empty_cell", row=row))
        return None
    if len(edited) < 1:
        st.error(tr("kernel.no_points"))
        return None
    if len(edited) > 512:
        st.error(tr("kernel.too_many_points", count=len(edited)))
        return None
    keys, values = edited.iloc[:, 0].tolist(), edited.iloc[:, 1].tolist()
    if any(abs(x) > 1e6 for x in keys + values):
        st.error(tr("kernel.out_of_range"))
        return None
    return tuple(float(x) for x in keys), tuple(float(y) for y in values)


def kernel_page() -> None:
    """Draw the kernel regression page."""
    state: KernelState = sync_from_url(PAGE, decode_kernel, _CONVERT)
    with st.sidebar:
        st.selectbox(
            tr("kernel.preset"),
            KERNEL_PRESETS,
            key=widget_key(PAGE, "preset"),
            on_change=_load_preset,
            format_func=preset_label(),
        )
        if state.preset:
            st.caption(f"**{tr(f'preset.{state.preset}.source')}** · {tr(f'preset.{state.preset}.description')}")
        if state.preset == TOY:
            st.number_input(
                tr("kernel.data_seed"), 0, 2**31 - 1, key=widget_key(PAGE, "toy_seed"), on_change=_reload_toy
            )
            st.number_input(tr("kernel.training_count"), 5, 200, key=widget_key(PAGE, "toy_n"), on_change=_reload_toy)
    points_column, queries_column = st.columns([3, 2], gap="large")
    with points_column:
        st.markdown(tr("kernel.points_heading"))
        points = _points_editor(state)
    with queries_column:
        query_text = st.text_input(tr("kernel.queries"), key=widget_key(PAGE, "queries"))
        try:
            queries = parse_vector(query_text, "query points")
        except ValueError as exc:
            st.error(tr("kernel.queries_example", error=error_text(exc)), icon="🚫")
            queries = None
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
    left, right = controls_and_results([2, 3])
    with left:
        kernel = st.selectbox(
            tr("kernel.kernel"), list(KERNELS), key=widget_key(PAGE, "kernel"), format_func=labeller("kernel.{}.label")
        )
        formula = KERNELS[kernel].formula + r",\quad u = \frac{\lvert q - k \rvert}{\sigma}"
        explanation = tr(f"kernel.{kernel}.explanation")
        st.markdown(f"$$\n{formula}\n$$\n\n{explanation}")  # one element: formula and text
        bandwidth = st.number_input(
            tr("widget.bandwidth"), 0.001, 10000.0, key=widget_key(PAGE, "bandwidth"), format="%.4g"
        )
    state = replace(state, kernel=kernel, bandwidth=float(bandwidth), row=int(value(PAGE, "row")))
    with right:
        if ready:
            _draw(state)
        share_box(publish(PAGE, state, encode_kernel), PAGE)


def _draw(state: KernelState) -> None:
    trace = run_kernel(state)
    curve = prediction_curve(state)
    grid = curve.queries[:, 0]
    fit_key = (state.keys, state.values, state.kernel)
    fitted = st.session_state.get("fit_request") == fit_key and state.kernel != "boxcar"
    fit = learned_bandwidth(*fit_key) if fitted else None
    extra = None
    if fit is not None:
        learned = prediction_curve(state, bandwidth=fit.bandwidth)
        extra = (learned.output.numpy(), tr("kernel.learned_curve", sigma=f"{fit.bandwidth:.3g}"))
    fig = figures.kernel_regression_figure(
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
    chart(fig, "kernel_regression")
    labels = [f"{x:.4g}" for x in state.keys]
    q_labels = [f"{x:.4g}" for x in state.queries]
    if bool(trace.no_support.any()):
        missing = ", ".join(q for q, flag in zip(q_labels, trace.no_support.tolist(), strict=True) if flag)
        st.warning(tr("kernel.no_support", kernel=tr(f"kernel.{state.kernel}.label"), queries=missing))
    st.markdown(
        tr("kernel.predictions")
        + ", ".join(f"f({q}) = {y:.4g}" for q, y in zip(q_labels, trace.output.tolist(), strict=True))
    )
    chart(
        figures.weights_heatmap(
            trace.weights.numpy(),
            scores=trace.scores.numpy(),
            query_labels=q_labels,
            key_labels=labels,
            title=tr("kernel.weights_title"),
            palette=palette(),
            lang=current_language(),
        ),
        "kernel_weights",
    )
    st.subheader(tr("kernel.learn_heading"))
    st.caption(tr("kernel.learn_caption"))
    if st.button(
        tr("kernel.learn_button"),
        disabled=state.kernel == "boxcar" or len(state.keys) < 2,
        help=tr("kernel.learn_help"),
    ):
        bar = st.progress(0.0, text=tr("kernel.training"))
        lang = current_language()

        def epoch_text(**params: object) -> str:
            return t("kernel.epoch", lang, **params)

        # Trained here with visible progress; the cached call (same inputs) serves the reruns after it.
        _fit(
            *fit_key,
            progress=lambda epoch, loss: bar.progress(epoch / 200, text=epoch_text(epoch=epoch, loss=f"{loss:.4g}")),
        )
        bar.empty()
        st.session_state["fit_request"] = fit_key
        st.rerun()
    if fit is not None:
        chart(figures.loss_curve(fit.losses, lang=current_language()), "kernel_loss_curve")
        st.success(
            tr(
                "kernel.learned",
                sigma=f"{fit.bandwidth:.4g}",
                first=f"{fit.losses[0]:.4g}",
                last=f"{fit.losses[-1]:.4g}",
            )
        )
        st.button(tr("kernel.use_learned"), on_click=_use_bandwidth, args=(fit.bandwidth,))
    st.subheader(tr("attention.show_work"))
    key = widget_key(PAGE, "row")
    if st.session_state.get(key, 0) >= len(q_labels):
        st.session_state[key] = 0
    row = st.selectbox(
        tr("kernel.query_to_explain"), list(range(len(q_labels))), key=key, format_func=lambda i: q_labels[i]
    )
    work_panel(explain_kernel_row(trace, row, labels, current_language()))


def _use_bandwidth(bandwidth: float) -> None:
    st.session_state[widget_key(PAGE, "bandwidth")] = float(f"{bandwidth:.4g}")
