"""A new visitor's first run in a browser draws the title, the inputs and the main chart, and the run that follows
everything else (attnviz.app.ui.common.first_paint): spoken over the real server's websocket as a browser speaks it,
then in Chromium."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

from attnviz.app.ui.chart_drawn import MOST_MS, trigger_state
from testkit.browser import exceptions, goto, plotly_figures
from testkit.proxyclient import ProxyUser
from testkit.server import StreamlitServer
from tests.loop import run_in_own_loop

from .test_navigation import TITLES, menu_titles

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36"
BELOW = {"Self_attention": "Show your work", "Pretrained_model": "Head view"}  # the first thing below the chart
CONTROL = {"Self_attention": "Temperature T", "Pretrained_model": "Layer", "Kernel_attention": "Bandwidth σ"}
INPUT = {
    "Self_attention": "Sentence",
    "Pretrained_model": "Sentence",
    "Kernel_attention": "Query points (comma-separated)",
}
MENU = TITLES["en"]  # the navigation menu's titles (st.navigation)


def _texts(messages: list[ForwardMsg]) -> str:
    """Every heading's and markdown's text, and every chart's JSON, of a run's messages."""
    out = []
    for msg in messages:
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            kind = element.WhichOneof("type")
            if kind in ("markdown", "heading"):
                out.append(getattr(element, kind).body)
            elif kind == "plotly_chart":
                out.append(element.plotly_chart.spec)
    return "\n".join(out)


def _elements(messages: list[ForwardMsg], kind: str) -> list:
    """The elements of one kind (e.g. "page_link") that a run drew."""
    return [
        getattr(msg.delta.new_element, kind)
        for msg in messages
        if msg.WhichOneof("type") == "delta"
        and msg.delta.WhichOneof("type") == "new_element"
        and msg.delta.new_element.WhichOneof("type") == kind
    ]


def _menu(messages: list[ForwardMsg]) -> list[list[str]]:
    """The titles of each navigation menu (st.navigation) that a run sent."""
    return [
        [page.page_name for page in msg.navigation.app_pages]
        for msg in messages
        if msg.WhichOneof("type") == "navigation"
    ]


def _watchers(messages: list[ForwardMsg]) -> list[tuple[str, str]]:
    """(fragment id, element id) of each first-paint watcher (`attnviz.app.ui.chart_drawn`) that a run drew."""
    return [
        (msg.delta.fragment_id, msg.delta.new_element.bidi_component.id)
        for msg in messages
        if msg.WhichOneof("type") == "delta"
        and msg.delta.WhichOneof("type") == "new_element"
        and msg.delta.new_element.WhichOneof("type") == "bidi_component"
    ]


def _labels(messages: list[ForwardMsg]) -> set[str]:
    """The labels of the widgets a run drew."""
    kinds = ("number_input", "selectbox", "slider", "checkbox", "radio", "button_group", "text_input")
    return {element.label for kind in kinds for element in _elements(messages, kind)}


def _runs(
    server: StreamlitServer, page: str, user_agent: str, widgets: dict[str, float] | None = None, query: str = ""
) -> list[list[ForwardMsg]]:
    """A first run of `page?query` (with `widgets`, values the browser sends by widget id, as a reconnecting page does),
    then (if it drew the first paint's watcher) the trigger its browser sends once the chart is drawn, then a
    whole-page rerun; the messages of each, up to the end of the last script run that each request set off. (The
    sync client: Playwright's sync API holds an event loop in this thread.)"""
    base = urlsplit(server.url)
    url = f"ws://{base.netloc}/_stcore/stream"
    runs: list[list[ForwardMsg]] = []
    with connect(url, subprotocols=["streamlit"], max_size=None, user_agent_header=user_agent) as ws:
        page_hash = ""

        def run(
            fragment_id: str = "", values: dict[str, float] | None = None, trigger: tuple[str, str] | None = None
        ) -> list[ForwardMsg]:
            nonlocal page_hash
            back = BackMsg()
            back.rerun_script.page_name = page
            back.rerun_script.query_string = query
            back.rerun_script.page_script_hash = page_hash
            back.rerun_script.fragment_id = fragment_id
            for widget_id, value in (values or {}).items():
                state = back.rerun_script.widget_states.widgets.add()
                state.id = widget_id
                state.double_value = value
            if trigger is not None:
                state = back.rerun_script.widget_states.widgets.add()
                state.id, state.json_trigger_value = trigger
            ws.send(back.SerializeToString())
            messages = []
            while True:
                msg = ForwardMsg()
                msg.ParseFromString(ws.recv(timeout=60))
                messages.append(msg)
                if msg.WhichOneof("type") == "delta" and msg.metadata.active_script_hash:
                    page_hash = msg.metadata.active_script_hash
                if (
                    msg.WhichOneof("type") == "script_finished"
                    and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
                ):
                    return messages

        runs.append(run(values=widgets))
        watchers = _watchers(runs[0])
        if watchers:
            (fragment_id, component_id), *_ = watchers
            runs.append(run(fragment_id, trigger=trigger_state(component_id)))
        runs.append(run())
    return runs


@pytest.mark.parametrize("page", sorted(CONTROL))
def test_a_new_visitors_first_run_draws_the_main_chart_and_the_next_run_everything(
    server: StreamlitServer, page: str
) -> None:
    first, deferred, later = _runs(server, page, BROWSER)
    below = BELOW.get(page, "\0")  # the kernel page has nothing below its charts
    # the first paint: the title, the inputs and the main chart; placeholders for the sidebar, the controls beside
    # the chart and the section below it
    assert _elements(first, "plotly_chart")
    assert INPUT[page] in _labels(first)  # the inputs above the chart
    assert below not in _texts(first)
    assert CONTROL[page] not in _labels(first)
    assert _menu(first) == [MENU]  # the navigation menu is not deferred: it is one small message
    assert not [m for m in first if m.WhichOneof("type") == "auto_rerun"]  # no timer: the browser says when
    (watcher,) = _watchers(first)
    # the watcher's trigger: its fragment's run, then a whole-page run with everything
    starts = [m.metadata.run.fragment_ids for m in deferred if m.WhichOneof("type") == "new_session"]
    assert [list(ids) for ids in starts] == [[watcher[0]], []]
    for run in (deferred, later):  # and every later run draws everything at once, with no watcher
        assert _elements(run, "plotly_chart")
        assert below in _texts(run) or page not in BELOW
        assert CONTROL[page] in _labels(run)
        assert _menu(run) == [MENU]  # (the trigger's fragment run sends none; the whole-page run after it does)
    assert not _watchers(deferred) and not _watchers(later)


def test_a_client_that_is_not_a_browser_gets_everything_in_one_run(server: StreamlitServer) -> None:
    first, _later = _runs(server, "Self_attention", "Python/3.11 websockets/17.4")
    assert BELOW["Self_attention"] in _texts(first)
    assert CONTROL["Self_attention"] in _labels(first)
    assert _menu(first) == [MENU]
    assert not _watchers(first)


def test_a_reconnecting_page_gets_everything_in_one_run(server: StreamlitServer) -> None:
    """A page that reconnects to a new session sends the values on its screen with its first run: they reach the
    session only through the widgets that run draws, so it draws them all."""
    reconnecting = {"$$ID-0123456789abcdef-w:self:temperature": 2.0}
    first, _later = _runs(server, "Self_attention", BROWSER, widgets=reconnecting)
    assert CONTROL["Self_attention"] in _labels(first)
    assert BELOW["Self_attention"] in _texts(first)
    assert not _watchers(first)


def test_the_whole_page_after_a_first_paint_sets_the_links_values_again(server: StreamlitServer) -> None:
    """A browser still busy rendering the first paint may never mount its widgets with the link's values: the run
    after it must set them again, or the widgets show (and send back) their defaults."""
    first, deferred, _later = _runs(server, "Self_attention", BROWSER, query="dim=5&es=3")
    assert _watchers(first)  # a first paint
    for run in (first, deferred):
        inputs = {e.label: (e.set_value, e.value) for e in _elements(run, "number_input")}
        assert inputs["Embedding size d"] == (True, 5)
        assert inputs["Embedding seed"] == (True, 3)


def test_a_page_without_controls_beside_its_chart_is_drawn_whole(server: StreamlitServer) -> None:
    first, _later = _runs(server, "Learned_attention", BROWSER)
    assert not _watchers(first)
    assert _menu(first) == [MENU]


@pytest.mark.parametrize("page", sorted(BELOW))
def test_in_chromium_everything_follows_the_first_paint_and_nothing_stays_pending(
    new_page, server: StreamlitServer, page: str
) -> None:
    tab: Page = new_page(viewport={"width": 1400, "height": 1000})
    goto(tab, server.url_for(page))  # waits until nothing is pending
    assert tab.locator('[class*="st-key-attnviz_pending"]').count() == 0
    assert tab.get_by_text(BELOW[page]).first.is_visible()
    assert tab.get_by_label(CONTROL[page]).first.is_visible()
    assert menu_titles(tab) == MENU
    assert len(plotly_figures(tab)) >= (3 if page == "Pretrained_model" else 1)
    tab.wait_for_timeout(1000)  # the watcher asked once: no run follows
    assert tab.locator('[data-testid="stApp"]').get_attribute("data-test-script-state") == "notRunning"
    assert exceptions(tab) == []


# The times (ms since navigation) at which a chart was first drawn, the sidebar's settings (the rest of the page,
# after the first paint) appeared, and an error box appeared; polled with a timer, as the watcher polls.
_SEEN_JS = """
(() => {
  const seen = (window.__seenAt = { chart: null, links: null, alert: null });
  const shown = {
    chart: () => [...document.querySelectorAll('.js-plotly-plot')].some((gd) => gd._fullLayout && gd.data),
    links: () => document.querySelector('[data-testid="stSidebarUserContent"] [data-testid="stSelectbox"]') !== null,
    alert: () => document.querySelector('[data-testid="stAlert"]') !== null,
  };
  const poll = () => {
    for (const [name, now] of Object.entries(shown)) if (seen[name] === null && now()) seen[name] = performance.now();
    if (Object.values(seen).includes(null)) setTimeout(poll, 10);
  };
  poll();
})();
"""


@pytest.mark.parametrize("page", ["Self_attention", "Pretrained_model"])
def test_the_rest_of_a_first_paint_waits_until_its_chart_is_drawn(new_page, server: StreamlitServer, page: str) -> None:
    """Plotly's code arriving 2 s late (a slow machine or network): the sidebar, the controls and what is below the
    chart still come after the chart is drawn, not while it waits (a fixed 0.5 s timer sent them first)."""
    tab: Page = new_page(viewport={"width": 1400, "height": 1000})
    tab.add_init_script(_SEEN_JS)

    def late(route) -> None:
        time.sleep(2.0)
        route.continue_()

    tab.route("**/PlotlyChart*.js", late)
    goto(tab, server.url_for(page))  # waits until nothing is pending
    chart_at, links_at = tab.evaluate("[window.__seenAt.chart, window.__seenAt.links]")
    assert chart_at is not None and links_at is not None
    assert links_at > chart_at
    assert tab.get_by_label(CONTROL[page]).first.is_visible()
    assert exceptions(tab) == []


def test_the_rest_of_a_first_paint_comes_even_if_its_chart_never_draws(
    new_page, server: StreamlitServer, console_errors
) -> None:
    """Plotly's code never arrives (a download that hangs): the watcher stops waiting after MOST_MS, and the rest of
    the page comes; the student can still use the sidebar and the controls."""
    tab: Page = new_page(viewport={"width": 1400, "height": 1000})
    tab.add_init_script(_SEEN_JS)
    held = []

    def hold(route) -> None:  # never answered
        held.append(route)

    tab.route("**/PlotlyChart*.js", hold)
    tab.goto(server.url_for("Self_attention"))
    tab.wait_for_function("() => window.__seenAt.links !== null", timeout=MOST_MS + 20_000)
    assert tab.evaluate("window.__seenAt.chart") is None
    assert tab.evaluate("window.__seenAt.links") >= MOST_MS
    assert tab.get_by_label(CONTROL["Self_attention"]).first.is_visible()
    assert tab.locator('[class*="st-key-attnviz_pending"]').count() == 0
    for route in held:
        route.abort()
    console_errors.ignore.append("PlotlyChart")  # the download this test made fail


def test_a_first_paint_without_a_chart_gets_the_rest_once_its_run_is_over(new_page, server: StreamlitServer) -> None:
    """A link whose sentence the model refuses: the first paint shows the error and no chart. The rest of the page
    comes once the run is over and nothing is loading (SETTLE_MS), not after the watcher's longest wait."""
    tab: Page = new_page(viewport={"width": 1400, "height": 1000})
    tab.add_init_script(_SEEN_JS)
    too_long = "+".join(["word"] * 300)  # 302 WordPiece tokens with [CLS] and [SEP], over the limit of 256
    goto(tab, server.url_for(f"Pretrained_model?s={too_long}"))
    assert tab.locator(".js-plotly-plot").count() == 0
    assert "the limit is 256" in tab.get_by_role("alert").first.inner_text()
    alert_at, links_at = tab.evaluate("[window.__seenAt.alert, window.__seenAt.links]")
    assert alert_at is not None and links_at is not None
    assert links_at - alert_at < MOST_MS / 2  # SETTLE_MS after the run, not MOST_MS after the watcher came
    assert tab.get_by_label(CONTROL["Pretrained_model"]).first.is_visible()
    assert exceptions(tab) == []


def test_the_class_load_tests_simulated_browser_asks_for_the_rest_after_any_first_paint(
    server: StreamlitServer,
) -> None:
    """`testkit.proxyclient.ProxyUser` stands for a browser in the class load test, so it must send the watcher's
    trigger whenever a run was a first paint. That is on opening a link, and also after a reconnect, when the tab
    had changed nothing and its first run in the new session sends no values. Without the trigger, a control changed
    then is lost: the session is still in its first paint, and the control is not drawn (the class load test lost a
    student's σ this way)."""

    async def scenario() -> tuple[bool, bool, str, str]:
        user = ProxyUser(server.url, "Kernel_attention", "p=d2l_toy_regression")
        try:
            await user.open()
            whole_on_open = user.drawn_since_full_run(user.widget_ids["w:kernel:bandwidth"])
            user.session_id = ""  # a replica that died: the new websocket gets a new session
            await user.connect()
            first = await user.send_rerun()  # the tab changed nothing: no widget values
            await user.wait_run(first)
            assert user.rest_marks is not None  # a first paint, whose rest the tab asked for
            await user.wait_run(user.rest_marks)
            whole_after_reconnect = user.drawn_since_full_run(user.widget_ids["w:kernel:bandwidth"])
            before = user.query
            user.set_widget("w:kernel:bandwidth", "double", 0.632)
            await user.wait_run(await user.send_rerun(user.fragment_of("w:kernel:bandwidth")))
            return whole_on_open, whole_after_reconnect, before, user.query
        finally:
            await user.close()

    whole_on_open, whole_after_reconnect, before, after = run_in_own_loop(scenario())
    assert whole_on_open and whole_after_reconnect
    assert "bw=" not in before
    assert "bw=0.632" in after and "p=d2l_toy_regression" in after
