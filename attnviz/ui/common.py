"""Page frame, URL <-> state synchronisation, charts and small shared widgets."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from attnviz.figures import chart_config

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: str) -> str:
    """User text made safe for st.markdown: shown literally, never as markup or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def page_frame(title: str, icon: str, intro: str) -> None:
    """Page config, title and the shared sidebar; every page (and a cold deep link) calls this first."""
    st.set_page_config(page_title=f"{title} · attnviz", page_icon=icon, layout="wide")
    st.title(title)
    st.caption(intro)
    with st.sidebar:
        st.caption(
            "attnviz — attention mechanisms you can see. Every control is saved in the link: share it to "
            "reproduce this page exactly."
        )


def widget_key(page: str, name: str) -> str:
    """Session-state key of the widget bound to state field `name`."""
    return f"w:{page}:{name}"


def push_state(page: str, state: Any, convert: dict[str, Callable[[Any], Any]] | None = None) -> None:
    """Write every field of `state` into its widget's session-state key (before widgets are drawn)."""
    convert = convert or {}
    for f in fields(state):
        value = getattr(state, f.name)
        st.session_state[widget_key(page, f.name)] = convert.get(f.name, lambda v: v)(value)
    st.session_state[f"state:{page}"] = state
    st.session_state[f"version:{page}"] = st.session_state.get(f"version:{page}", 0) + 1


def sync_from_url(
    page: str, decode: Callable[[dict[str, str]], Any], convert: dict[str, Callable[[Any], Any]] | None = None
) -> Any:
    """Load the page state from the URL when the URL changed under us (a shared link, back/forward)."""
    params = st.query_params.to_dict()
    stored = st.session_state.get(f"state:{page}")
    if st.session_state.get(f"url:{page}") != params or stored is None:
        if not params and stored is not None:
            state, warnings = stored, []  # came back to the page: keep what the user had
        else:
            decoded = decode(params)
            state, warnings = decoded.state, decoded.warnings
        push_state(page, state, convert)
        st.session_state[f"warnings:{page}"] = warnings
        st.session_state[f"url:{page}"] = params
    else:
        # Widgets not drawn on the last run lose their keys; restore them from the stored state.
        for f in fields(stored):
            key = widget_key(page, f.name)
            if key not in st.session_state:
                st.session_state[key] = (convert or {}).get(f.name, lambda v: v)(getattr(stored, f.name))
    for message in st.session_state.get(f"warnings:{page}", []):
        st.warning(message, icon="⚠️")
    return st.session_state[f"state:{page}"]


def publish(page: str, state: Any, encode: Callable[[Any], dict[str, str]]) -> dict[str, str]:
    """Store the state and write it to the URL if it changed."""
    previous = st.session_state.get(f"state:{page}")
    if previous is not None and previous != state:
        st.session_state[f"warnings:{page}"] = []  # the user moved on from the link's problems
    st.session_state[f"state:{page}"] = state
    params = encode(state)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    st.session_state[f"url:{page}"] = params
    return params


def chart(fig: go.Figure, name: str, key: str | None = None) -> None:
    """A Plotly chart with the PNG export named after what it shows."""
    st.plotly_chart(fig, width="stretch", config=chart_config(name), key=key)


def value(page: str, name: str) -> Any:
    """The current value of a state field: its widget's, or the stored state's while the widget is not drawn."""
    key = widget_key(page, name)
    if key in st.session_state:
        return st.session_state[key]
    return getattr(st.session_state[f"state:{page}"], name)


def bound_key(page: str, name: str) -> str:
    """The widget key of a state field, filled from the stored state if Streamlit dropped it (a widget that was
    not drawn for a while, e.g. inside a closed lazy expander, loses its key)."""
    key = widget_key(page, name)
    if key not in st.session_state:
        st.session_state[key] = getattr(st.session_state[f"state:{page}"], name)
    return key
