"""A browser's first run of a session draws the main chart, and what is below it in the run that follows
(attnviz.ui.common.below_main_chart): spoken over the real server's websocket as a browser speaks it, then in
Chromium."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

from .helpers import StreamlitServer, exceptions, goto, plotly_figures

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36"
BELOW = {"Self_attention": "Show your work", "Pretrained_model": "Head view"}  # the first thing below the chart


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


def _runs(server: StreamlitServer, page: str, user_agent: str) -> list[list[ForwardMsg]]:
    """A first run of `page`, then (if it asked for one) the auto-rerun its browser would send, then a whole-page
    rerun; the messages of each. (The sync client: Playwright's sync API holds an event loop in this thread.)"""
    base = urlsplit(server.url)
    url = f"ws://{base.netloc}/_stcore/stream"
    runs: list[list[ForwardMsg]] = []
    with connect(url, subprotocols=["streamlit"], max_size=None, user_agent_header=user_agent) as ws:
        page_hash = ""

        def run(fragment_id: str = "", auto: bool = False) -> list[ForwardMsg]:
            nonlocal page_hash
            back = BackMsg()
            back.rerun_script.page_name = page
            back.rerun_script.page_script_hash = page_hash
            back.rerun_script.fragment_id = fragment_id
            back.rerun_script.is_auto_rerun = auto
            ws.send(back.SerializeToString())
            messages = []
            while True:
                msg = ForwardMsg()
                msg.ParseFromString(ws.recv(timeout=60))
                messages.append(msg)
                if msg.WhichOneof("type") == "delta" and msg.metadata.active_script_hash:
                    page_hash = msg.metadata.active_script_hash
                if msg.WhichOneof("type") == "script_finished":
                    return messages

        runs.append(run())
        auto = [m.auto_rerun.fragment_id for m in runs[0] if m.WhichOneof("type") == "auto_rerun"]
        if auto:
            runs.append(run(auto[0], auto=True))
        runs.append(run())
    return runs


@pytest.mark.parametrize("page", sorted(BELOW))
def test_a_browsers_first_run_draws_the_chart_and_the_next_run_what_is_below_it(
    server: StreamlitServer, page: str
) -> None:
    first, deferred, later = _runs(server, page, BROWSER)
    assert '"type":"heatmap"' in _texts(first)  # the main chart
    assert BELOW[page] not in _texts(first)
    (asked,) = [m.auto_rerun for m in first if m.WhichOneof("type") == "auto_rerun"]
    assert 0 < asked.interval <= 0.5
    # the browser's timer: the section below, and the timer stopped
    assert BELOW[page] in _texts(deferred)
    stopped = [m.stop_auto_rerun.fragment_ids for m in deferred if m.WhichOneof("type") == "stop_auto_rerun"]
    assert [list(ids) for ids in stopped] == [[asked.fragment_id]]
    # every later run draws everything at once, and asks for no timer
    assert BELOW[page] in _texts(later) and '"type":"heatmap"' in _texts(later)
    assert not [m for m in later if m.WhichOneof("type") == "auto_rerun"]


def test_a_client_that_is_not_a_browser_gets_everything_in_one_run(server: StreamlitServer) -> None:
    first, _later = _runs(server, "Self_attention", "Python/3.11 websockets/17.4")
    assert BELOW["Self_attention"] in _texts(first)
    assert not [m for m in first if m.WhichOneof("type") == "auto_rerun"]


@pytest.mark.parametrize("page", sorted(BELOW))
def test_in_chromium_the_section_below_follows_and_nothing_stays_pending(
    new_page, server: StreamlitServer, page: str
) -> None:
    tab: Page = new_page(viewport={"width": 1400, "height": 1000})
    goto(tab, server.url_for(page))  # waits until no section is pending
    assert tab.locator(".st-key-attnviz_pending").count() == 0
    assert tab.get_by_text(BELOW[page]).first.is_visible()
    assert len(plotly_figures(tab)) >= (3 if page == "Pretrained_model" else 1)
    tab.wait_for_timeout(1000)  # the timer was stopped: no run follows
    assert tab.locator('[data-testid="stApp"]').get_attribute("data-test-script-state") == "notRunning"
    assert exceptions(tab) == []
