"""The benchmark's elements floor page stays what it claims to be: the self-attention page's messages, made by
Streamlit with nothing computed (bench/elements_page.py). If a change adds or removes an element of the self page's
control change, the floor no longer measures the same elements, and this fails until the floor page follows."""

from __future__ import annotations

import concurrent.futures

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.elements import kind, kinds, messages_of
from bench.scenarios import SCENARIOS


def _messages(name: str) -> list[ForwardMsg]:
    """messages_of in a thread of its own: after the browser tests in the same run (`make test` collects bench/tests
    after tests/), Playwright's event loop still runs in this one, and asyncio.run refuses to start another."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(messages_of, SCENARIOS[name]).result()


def test_the_elements_floor_sends_the_self_pages_messages_for_a_control_change() -> None:
    page = _messages("self")
    floor = _messages("elements")
    assert kinds(floor) == kinds(page)
    # The change ran the fragment (no page frame, no sidebar) and drew the chart, on both pages.
    for messages in (page, floor):
        assert "element plotly_chart" in kinds(messages)
        assert kind(messages[-1]) == "script_finished"
        assert not any(msg.WhichOneof("type") == "delta" and msg.delta.fragment_id == "" for msg in messages)
