"""Widgets drawn from fields: the same range, label and help as the link codec and the checks use."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import streamlit as st

from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import labeller, tr
from attnviz.core.fields import Field


def _label(f: Field, label: str | None) -> str:
    return label if label is not None else tr(f.label)


def number(session: PageSession, f: Field, where: Any = st, label: str | None = None, **options: Any) -> int | float:
    """A number input over the field's range."""
    low, high = (int(f.low), int(f.high)) if f.kind == "int" else (float(f.low), float(f.high))
    if f.step is not None:
        options.setdefault("step", f.step)
    if f.fmt is not None:
        options.setdefault("format", f.fmt)
    if f.help:
        options.setdefault("help", tr(f.help))
    value = where.number_input(_label(f, label), low, high, key=session.bound(f.name), **options)
    return int(value) if f.kind == "int" else float(value)


# six steps per decade, nearly even on a log scale: 0.001, 0.0015, 0.002, 0.003, 0.005, 0.007, 0.01, ..., 7000
LOG_STOPS = tuple(m * 10.0**e for e in range(-3, 4) for m in (1, 1.5, 2, 3, 5, 7))


def _nearest_stop(value: float, stops: tuple[float, ...]) -> float:
    return min(stops, key=lambda stop: abs(math.log(stop) - math.log(value)))


def log_number(session: PageSession, f: Field, slider_label: str) -> float:
    """A positive number on a log scale: a slider over six steps per decade of the field's range (0.1 and 10 are as
    far from 1 as each other), beside the exact value, which stays typeable. Both show one value, the field's; the
    slider sits on the step nearest a typed value.

    The slider is a new widget for each step it sits on (its key names the step), never one the server moves: a
    browser's request sent before it redrew a moved slider still carried the old step, which the server took for the
    slider moved back, undoing the number just typed (tests/test_log_slider_race.py). A stale state now names the
    slider of another step, at that step: not a move, and ignored."""
    stops = tuple(s for s in (float(f"{stop:.3g}") for stop in LOG_STOPS) if f.low <= s <= f.high)
    # The exact value first: its widget holds the value (typed, from a link, or sent by a reconnecting browser,
    # which only the drawn widget knows); the slider then sits on its nearest step.
    exact, scale = st.columns([2, 3], vertical_alignment="bottom")
    value = number(session, f, where=exact)
    stop = _nearest_stop(float(value), stops)
    slider_key = session.key(f"{f.name}_log@{stop:g}")

    def slid(key: str, drawn: float) -> None:  # the slider drawn at `drawn`, under `key`
        moved = st.session_state.get(key)
        if moved is not None and moved != drawn:  # a slider still at its step was not moved: a stale state
            st.session_state[session.key(f.name)] = moved

    scale.select_slider(
        slider_label,
        stops,
        value=stop,
        key=slider_key,
        on_change=slid,
        args=(slider_key, stop),
        format_func=lambda v: f"{v:g}",
    )
    return value


def toggle(session: PageSession, f: Field, where: Any = st, label: str | None = None, **options: Any) -> bool:
    """A toggle for a yes/no field."""
    if f.help:
        options.setdefault("help", tr(f.help))
    return bool(where.toggle(_label(f, label), key=session.bound(f.name), **options))


def choice(
    session: PageSession,
    f: Field,
    option_label: str | Callable[[Any], str],
    where: Any = st,
    radio: bool = False,
    label: str | None = None,
    **options: Any,
) -> str:
    """A selectbox (or horizontal radio) over the field's choices; `option_label` is a message template such as
    "score.{}.label", or a function."""
    format_func = labeller(option_label) if isinstance(option_label, str) else option_label
    if f.help:
        options.setdefault("help", tr(f.help))
    widget = where.radio if radio else where.selectbox
    if radio:
        options.setdefault("horizontal", True)
    return widget(_label(f, label), f.options(), key=session.bound(f.name), format_func=format_func, **options)
