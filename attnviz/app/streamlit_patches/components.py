"""The widget id of a custom component's trigger, as a browser sends it.

Clients that are not browsers but act as one (the class load test's simulated browsers, the tests) fire the first
paint's watcher (attnviz/app/ui/chart_drawn.py) by sending its trigger's widget state. Its id is made by a private
function of Streamlit's components v2 (`_make_trigger_id`); this calls it rather than copying its format.

No gain to measure: a tool for clients that speak Streamlit's protocol.
"""

from __future__ import annotations

from streamlit.components.v2.bidi_component.main import _make_trigger_id


def trigger_widget_id(component_id: str, event_group: str = "events") -> str:
    """The widget id under which a browser sends the triggers of the component with element id `component_id`."""
    return _make_trigger_id(component_id, event_group)
