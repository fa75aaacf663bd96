"""A browser-side signal: the page's first chart is drawn.

A new visitor's first run (`attnviz.app.ui.common.first_paint`) draws the title, the inputs and the main chart, and the
rest of the page follows in a second run. That run must not start before the chart is drawn: what it sends is
rendered by the browser's one thread, and while Plotly's 4.7 MB chunk is still being fetched and run (it is fetched
only when the first chart arrives), everything that arrives is rendered first and the chart waits behind it. A fixed
delay cannot know when that is: 0.5 s was after the chart on one machine and 2 s before it on a slower one
(CHANGELOG.md, Performance history). So the browser says when: this component, which draws nothing, watches the page and
sends the trigger "drawn" once

- a Plotly chart on the page is drawn (Plotly has laid it out), or
- the run is over and the page holds no chart and no element still loading its code, for SETTLE_MS (a first
  paint that shows an error in place of its chart), or
- MOST_MS have passed since it was mounted (a chart that never draws: a hidden tab, a failed download).

It asks once per `token` (a session's first paint), however often the component is drawn again before the rest
comes. "The run is over" is read from the `data-test-script-state` attribute of Streamlit's app element, which its
production build sets and the browser tests wait on; without it, a first paint without a chart waits MOST_MS.
The component's JavaScript is the app's own constant, never built from user input.
"""

from __future__ import annotations

import json

import streamlit as st

DRAWN_KEY = "attnviz_first_paint_drawn"  # the first paint's watcher (a simulated browser sends its trigger)
EVENT = "drawn"  # the trigger's name (`on_drawn_change`)
SETTLE_MS = 500  # a finished run without any chart, this long: nothing to wait for
MOST_MS = 6000  # never wait longer than this for a chart
POLL_MS = 40  # how often the page is looked at (a timer, not animation frames: those stop in a hidden tab)

JS = """
const asked = new Set();  // the tokens this tab has asked for already

export default function (component) {
  const { data, setTriggerValue } = component;
  const token = String(data.token);
  if (asked.has(token)) return;
  const started = performance.now();
  let emptySince = null;
  let timer = null;
  const drawn = () =>
    [...document.querySelectorAll(".js-plotly-plot")].some((gd) => gd._fullLayout && gd.data && gd.data.length);
  const empty = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    return (
      app !== null &&
      app.getAttribute("data-test-script-state") === "notRunning" &&
      document.querySelector('.js-plotly-plot, [data-testid="stPlotlyChart"], [data-testid="stSkeleton"]') === null
    );
  };
  const look = () => {
    timer = null;
    if (asked.has(token)) return;
    const now = performance.now();
    emptySince = empty() ? (emptySince ?? now) : null;
    if (drawn() || (emptySince !== null && now - emptySince >= data.settle_ms) || now - started >= data.most_ms) {
      asked.add(token);
      setTriggerValue(data.event, true);
    } else {
      timer = setTimeout(look, data.poll_ms);
    }
  };
  look();
  return () => {
    if (timer !== null) clearTimeout(timer);
  };
}
"""

_component = st.components.v2.component("attnviz_chart_drawn", js=JS)


def watch_first_chart(token: str) -> None:
    """Mount the watcher (it shows nothing). Inside a fragment, its trigger reruns that fragment."""
    _component(
        key=DRAWN_KEY,
        data={"event": EVENT, "token": token, "settle_ms": SETTLE_MS, "most_ms": MOST_MS, "poll_ms": POLL_MS},
        height=0,
        **{f"on_{EVENT}_change": _rerun_is_all},  # a trigger needs a callback to be registered
    )


def _rerun_is_all() -> None:
    """The trigger's callback: the rerun it sets off is all the watcher asks for."""


def trigger_state(component_id: str) -> tuple[str, str]:
    """(widget id, JSON trigger value) that a browser sends when the watcher with element id `component_id` fires:
    for clients that are not browsers but act as one (the class load test's simulated browsers, the tests)."""
    from attnviz.app.streamlit_patches.components import trigger_widget_id

    return trigger_widget_id(component_id, "events"), json.dumps([{"event": EVENT, "value": True}])
