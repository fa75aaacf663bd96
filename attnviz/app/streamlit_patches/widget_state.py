"""A widget looks up its own key, not a copy of the whole session state.

Before it registers, each select box, radio, slider, number, text, date and time input asks whether the app has set
its key to None, and to ask that Streamlit builds `filtered_state`: a new dict of every key in the session, each value
looked up and presented. That is 80 us a widget with a page's 45 keys, about 0.6 ms a control change on the cross page
(8 such widgets). Here those widgets get a view of the session state that answers for the one key (`key in state`,
`state[key]`) from the same session state, under its lock, with the same value.

Measured (bench/README.md, item 26): 44-81 us -> 2 us a widget with the cross page's 45 keys.
"""

from __future__ import annotations

from typing import Any

from attnviz.app.streamlit_patches.version import require_streamlit

# The widget modules that read `get_session_state().filtered_state` only to test their own key
WIDGET_MODULES = ("number_input", "radio", "selectbox", "slider", "text_widgets", "time_widgets")


class _OneKeyView:
    """What a widget reads of `filtered_state`: `key in view` and `view[key]`, looked up, not copied."""

    def __init__(self, safe_state: Any) -> None:
        self._safe = safe_state

    def __contains__(self, key: str) -> bool:
        with self._safe._lock:
            return key in self._safe._state

    def __getitem__(self, key: str) -> Any:
        with self._safe._lock:
            return self._safe._state[key]


class _WidgetSessionState:
    """A session state whose `filtered_state` is a `_OneKeyView`; everything else is the session state's own."""

    def __init__(self, safe_state: Any) -> None:
        self._safe = safe_state

    @property
    def filtered_state(self) -> _OneKeyView:
        return _OneKeyView(self._safe)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._safe, name)


def widgets_look_up_their_key() -> None:
    """Give the widget modules a session state that answers for one key instead of copying the whole state."""
    require_streamlit("widgets_look_up_their_key")
    import importlib

    for name in WIDGET_MODULES:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        get_session_state = module.get_session_state
        if getattr(get_session_state, "one_key", False):
            continue

        def get_widget_session_state(get_session_state: Any = get_session_state) -> _WidgetSessionState:
            return _WidgetSessionState(get_session_state())

        get_widget_session_state.one_key = True  # type: ignore[attr-defined]
        module.get_session_state = get_widget_session_state  # type: ignore[attr-defined]
