"""Widgets drawn from fields: the same range, label and help as the link codec and the checks use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from attnviz.fields import Field
from attnviz.ui.session import PageSession
from attnviz.ui.settings import labeller, tr


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
