"""The kernel page's "learn σ" section: a leave-one-out fit of the bandwidth within the budget of one change, run
once per click in its turn at the server's gate, kept in the session, and its result offered to the σ control."""

from __future__ import annotations

import streamlit as st

from attnviz.app.budget import BUDGET_SECONDS, fit_rows, fit_seconds
from attnviz.app.state import KernelState
from attnviz.app.ui.common import chart
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, tr
from attnviz.app.ui.turns import ServerBusyError, busy_note, turn
from attnviz.core.kernel import BandwidthFit, fit_bandwidth
from attnviz.core.scores import BANDWIDTH
from attnviz.figures import kernel as kernel_figures
from attnviz.i18n import t

EPOCHS = 200
FitKey = tuple[tuple[float, ...], tuple[float, ...], str]  # the keys, values and kernel a fit was learned from


def _fit(keys: tuple[float, ...], values: tuple[float, ...], kernel: str, progress=None) -> BandwidthFit:
    """Leave-one-out fit of σ, within the budget of one change (many points: the errors of some of them)."""
    rows = fit_rows(len(keys), EPOCHS)
    return fit_bandwidth(
        list(keys), list(values), kernel=kernel, init=1.0, epochs=EPOCHS, lr=0.05, progress=progress, max_rows=rows
    )


def learn_section(session: PageSession, state: KernelState, fit_key: FitKey, fit: BandwidthFit | None) -> None:
    """Learning σ: the button (greyed out with the reason where it cannot work), then the learned fit's loss curve."""
    st.subheader(tr("kernel.learn_heading"))
    st.caption(tr("kernel.learn_caption"))
    why_not = "boxcar" if state.kernel == "boxcar" else "points" if len(state.keys) < 2 else None
    clicked = st.button(tr("kernel.learn_button"), disabled=why_not is not None, help=tr("kernel.learn_help"))
    if why_not is not None:  # said beside the greyed-out button, not only in its tooltip
        st.caption(tr(f"kernel.learn_off_{why_not}", kernel=tr(f"kernel.{state.kernel}.label")))
    if clicked:
        _learn(session, fit_key)
    if fit is not None:
        _learned(session, state, fit)


def _learn(session: PageSession, fit_key: FitKey) -> None:
    """Learns σ with visible progress, once, in its turn at the server's gate; the session keeps the result."""
    lang = current_language()

    def epoch_text(**params: object) -> str:
        return t("kernel.epoch", lang, **params)

    points = len(fit_key[0])
    try:  # many points: a large request, which takes its turn at the server's gate
        with turn(fit_seconds(points, EPOCHS, rows=fit_rows(points, EPOCHS))):
            bar = st.progress(0.0, text=tr("kernel.training"))
            # Trained here with visible progress, once: the session keeps the result for the reruns after it.
            result = _fit(
                *fit_key,
                progress=lambda epoch, loss: bar.progress(
                    epoch / EPOCHS, text=epoch_text(epoch=epoch, loss=f"{loss:.4g}")
                ),
            )
            bar.empty()
    except ServerBusyError as exc:
        busy_note(exc)
    else:
        session.put((fit_key, result), "fit")
        st.rerun()


def _learned(session: PageSession, state: KernelState, fit: BandwidthFit) -> None:
    """The learned fit: its loss curve, σ and the loss before and after, and a button that uses that σ."""
    chart(kernel_figures.loss_curve(fit.losses, lang=current_language()), "kernel_loss_curve")
    st.success(
        tr(
            "kernel.learned",
            sigma=f"{fit.bandwidth:.4g}",
            first=f"{fit.losses[0]:.4g}",
            last=f"{fit.losses[-1]:.4g}",
        )
    )
    if fit.rows < len(state.keys):
        total, seconds = len(state.keys), f"{fit_seconds(len(state.keys), EPOCHS):.1f}"
        budget = f"{BUDGET_SECONDS:g}"
        st.caption(tr("kernel.fit_rows", rows=fit.rows, total=total, seconds=seconds, budget=budget))
    st.button(tr("kernel.use_learned"), on_click=_use_bandwidth, args=(session, fit.bandwidth))


def _use_bandwidth(session: PageSession, bandwidth: float) -> None:
    """Callback of "use the learned σ": the bandwidth control takes it (within the control's range)."""
    st.session_state[session.key("bandwidth")] = min(max(float(f"{bandwidth:.4g}"), BANDWIDTH.low), BANDWIDTH.high)
