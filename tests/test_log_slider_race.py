"""A typed temperature is not undone by the log-scale slider beside it (a lost change seen in a live class).

The page draws the exact number and a slider over log steps; after a typed number the server moves the slider to the
nearest step. A browser that sends its next request before it drew that move still sends the slider at its old step:
on the teacher's projector a timer's rerun did exactly that, the server read it as the slider being moved back, and
set the number to it, so the teacher's next typed value (0.25) came back as the last one (2). Spoken here over the
websocket as a browser speaks it, with the stale slider state in the requests that follow the typed number."""

from __future__ import annotations

import random
from urllib.parse import parse_qs

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from testkit.server import StreamlitServer
from testkit.wire import Control, SimulatedUser
from tests.loop import run_in_own_loop

NUMBER = "w:self:temperature"
SLIDER = "w:self:temperature_log"  # the slider's key, or the start of it


@pytest.fixture(scope="module")
def app_server():
    with StreamlitServer("app.py", log_name="log-slider-race") as server:
        yield server


def slider_state(widget_id: str, shown: str) -> WidgetState:
    """A select_slider's state as the browser sends it: the option as the slider shows it."""
    state = WidgetState(id=widget_id)
    state.string_array_value.data.append(shown)
    return state


async def typed_after_a_stale_slider(url: str) -> list[str]:
    number = Control(NUMBER, "double", (2.0,))
    user = SimulatedUser(url, "Self_attention", "", number, random.Random(0))
    await user.open()
    number_id = user.widget_ids[NUMBER]
    slider_id = next(wid for key, wid in user.widget_ids.items() if key.startswith(SLIDER))
    seen = []
    try:
        fragment = user.widget_fragments[number_id]
        user.widget_states[slider_id] = slider_state(slider_id, "1")  # the slider as drawn: at 1
        for typed in (2.0, 0.25):  # the slider in every request still shows 1: the browser has not redrawn it yet
            user.widget_states[number_id] = number.state(number_id, typed)
            await user.rerun(fragment_id=fragment)
            await user.rerun(fragment_id="")  # a timer's rerun in between, with the same stale states
            seen.append(parse_qs(user.query).get("T", ["1"])[-1])
    finally:
        await user.close()
    return seen


def test_a_typed_temperature_survives_a_request_with_the_slider_not_yet_redrawn(app_server):
    assert run_in_own_loop(typed_after_a_stale_slider(app_server.url)) == ["2", "0.25"]
