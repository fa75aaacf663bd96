"""A simulated browser tab in a live class: a `ProxyUser` that also does what the page's follower component does
in a browser (attnviz/app/ui/live_follow.py) and notes what the class's measures need.

- The follower component's data (drawn by every full run): the follow URL, the class version the page shows, and
  the cookie it sets (the teacher's secret or the student's id, for a reconnect to find its place in the class).
- `poll()`: one long poll of the version endpoint through the proxy, with the tab's cookies (nginx's affinity too).
- `fire_changed()`: the rerun the component's trigger "changed" sends when the version moved.
- The metrics the page draws ("17 of 28 answered"), with the time each arrived.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from attnviz.app.streamlit_patches.components import trigger_widget_id
from attnviz.app.ui.live_follow import EVENT, FOLLOW_KEY
from testkit.proxyclient import DisconnectedError, ProxyUser

POLL_TIMEOUT = 40.0  # the server answers a long poll within 20 s (HOLD_SECONDS)


def poll_answer(status: int, body: bytes) -> dict[str, Any] | None:
    """The version endpoint's answer as the component reads it: {"ended": True} for 404, the JSON object for 200,
    None for anything else (a failed request: the component tries again after a pause)."""
    if status == 404:
        return {"ended": True}
    if status != 200:
        return None
    start, end = body.find(b"{"), body.rfind(b"}")
    try:
        found = json.loads(body[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def cookie_pair(text: str) -> tuple[str, str] | None:
    """(name, value) of a `document.cookie` assignment ("name=value; Path=/; ..."), None if there is none."""
    pair = text.split(";", 1)[0]
    name, sep, value = pair.partition("=")
    return (name.strip(), value.strip()) if sep and name.strip() else None


class LiveUser(ProxyUser):
    """One tab of a teacher or a student behind the proxy."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.follow_url = ""  # the component's URL ("" for the teacher: it follows no one)
        self.known = -1  # the version the component knows (its data's, then each poll's answer)
        self.metrics: list[tuple[float, str]] = []  # (arrival, the metric's value text)
        self.lock = asyncio.Lock()  # one run at a time from this tab

    def _element(self, fwd: ForwardMsg) -> None:
        element = fwd.delta.new_element
        kind = element.WhichOneof("type")
        if kind == "metric":
            self.metrics.append((time.perf_counter(), element.metric.body))
        elif kind == "bidi_component" and element.bidi_component.id.endswith("-" + FOLLOW_KEY):
            self._follower(element.bidi_component.json)
        super()._element(fwd)
        if kind == "button_group":  # pills: the labels a browser sends back as the chosen value
            self.options[element.button_group.id] = [option.content for option in element.button_group.options]

    def _follower(self, text: str) -> None:
        """The follower drawn with its data: set its cookie, know its URL and version (as the component does)."""
        try:
            data = json.loads(text)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        pair = cookie_pair(str(data.get("cookie") or ""))
        if pair is not None:
            self.cookies[pair[0]] = pair[1]
        self.follow_url = str(data.get("url") or "")
        if isinstance(data.get("version"), int):
            self.known = data["version"]

    def cookie(self, prefix: str) -> str:
        """The value of the first cookie whose name starts with `prefix` ("" if none)."""
        return next((v for k, v in self.cookies.items() if k.startswith(prefix)), "")

    async def poll(self) -> dict[str, Any] | None:
        """One long poll of the class's version (None: the request failed)."""
        if not self.follow_url:
            return None
        reply = await self.get(f"{self.follow_url}?after={self.known}", POLL_TIMEOUT)
        return poll_answer(reply.status, reply.body)

    async def fire_changed(self, version: int, timeout: float) -> float:
        """The component's trigger "changed" with `version`, sent as a browser sends it: a rerun of the fragment that
        drew the follower (the whole page when it sits outside every fragment); the time its run finished."""
        widget_id = self.widget_ids.get(FOLLOW_KEY)
        if widget_id is None:
            raise DisconnectedError("no follower on the page")
        trigger = WidgetState(
            id=trigger_widget_id(widget_id, "events"),
            json_trigger_value=json.dumps([{"event": EVENT, "value": version}]),
        )
        async with self.lock:
            finish = await self.wait_run(await self.send_rerun(self.fragment_of(widget_id), [trigger]), timeout)
        return finish.at

    async def press(self, key: str, timeout: float, values: tuple[WidgetState, ...] = ()) -> float:
        """Press the button with widget key `key` (with form `values`, as a form's submit sends them); the time its
        run finished."""
        widget_id = self.widget_ids[key] if key in self.widget_ids else self.buttons[key][0]
        for state in values:
            self.widget_states[state.id] = state
        async with self.lock:
            marks = await self.send_rerun(self.fragment_of(widget_id), [WidgetState(id=widget_id, trigger_value=True)])
            finish = await self.wait_run(marks, timeout)
        return finish.at

    async def reconnect(self, deadline: float) -> bool:
        """As the frontend after a lost websocket: /_stcore/health through the proxy until it answers, a new websocket
        with the same cookies, and a rerun with the tab's query string (its first run on the new replica)."""
        delay = 0.25
        while time.perf_counter() < deadline:
            await asyncio.sleep(delay)
            if (await self.health()).status == 200:
                try:
                    await self.connect()
                    async with self.lock:
                        await self.wait_run(await self.send_rerun(), 60)
                    return True
                except (DisconnectedError, TimeoutError):
                    pass
            delay = min(delay * 2, 5.0)
        return False
