"""The widget values a browser sent with this run, before the page draws the widgets.

A page whose server went away (a replica died and the proxy moved it, or the server restarted) reconnects to a new
session and sends the values on its screen with that session's first run, the student's latest change included.
Streamlit keeps them by widget id until the widget is drawn; Session State has no public way to list them, so this
reads its widget states (`SessionState._new_widget_state`), finds each keyed widget's key in its id
("$$ID-<hash>-<key>") and unpacks its value as its widget would.

No gain to measure: it keeps a reconnected page's latest change (tests/test_reconnect.py) instead of losing it to the
link the new session restores.
"""

from __future__ import annotations

from typing import Any

from streamlit.runtime.state.common import unpack_widget_state_value
from streamlit.runtime.state.session_state import Value
from streamlit.runtime.state.session_state_proxy import get_session_state

WIDGET_ID_PREFIX = "$$ID-"  # Streamlit's ids of keyed widgets: "$$ID-<hash>-<key>"


def sent_keys() -> frozenset[str]:
    """Keys of the widgets whose values the browser sent with this run and that this session has not drawn yet."""
    return frozenset(key for key in map(_user_key, _sent_states()) if key is not None)


def sent_value(key: str) -> Any:
    """The value the browser sent for widget `key` and this session has not drawn yet, as it travelled: a number, a
    bool, or an option's text (a select slider's first); None when none was sent."""
    for widget_id, wstate in _sent_states().items():
        if _user_key(widget_id) != key:
            continue
        if isinstance(wstate, Value):
            return wstate.value
        raw = unpack_widget_state_value(wstate.value)
        if isinstance(raw, list | tuple):
            return raw[0] if raw else None
        return raw
    return None


def _sent_states() -> dict[str, Any]:
    """Streamlit's widget states that the browser sent with this run, by widget id, not drawn yet."""
    try:
        return dict(get_session_state()._state._new_widget_state.states)
    except (AttributeError, RuntimeError):  # outside a script run, or Streamlit's internals changed
        return {}


def _user_key(widget_id: str) -> str | None:
    """The key of a keyed widget's id ("$$ID-<hash>-<key>"), None for others."""
    if widget_id.startswith(WIDGET_ID_PREFIX) and widget_id.count("-") >= 2:
        return widget_id.split("-", 2)[2]
    return None
