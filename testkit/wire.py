"""Streamlit's websocket protocol, spoken as a browser tab speaks it, without a browser.

A `SimulatedUser` opens `/_stcore/stream`, runs the page once (as a browser does on load), and then sends the rerun
requests a browser sends when a control changes: the page's query string, its widget values, the fragment a widget
lives in, and the hashes of the messages it already has. Messages are Streamlit's protobufs (`streamlit.proto`), so
the server cannot tell it from a browser, except that it never renders anything.

    user = SimulatedUser("http://127.0.0.1:8501", "Self_attention", "", Control("w:self:temperature", "double",
                         (0.5, 1.0, 2.0)), random.Random(0))
    await user.open()       # the first run, in seconds
    await user.change()     # one rerun with the control at a random value of its list

Tests fuzz the app over it, the load benchmarks run many of them (bench/loadclient.py), and testkit.proxyclient
builds on it for clients that go through the proxy.
"""

from __future__ import annotations

import contextlib
import random
import re
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

FINISHED_OK = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
MAX_CACHED_MESSAGE_AGE = 2  # Streamlit's global.maxCachedMessageAge, which the server sends the browser
WIDGET_KINDS = ("double", "int", "string", "bool", "double_array")


@dataclass(frozen=True)
class Control:
    """The control a simulated user changes: its widget key, the kind of its value, and values to pick from."""

    key: str
    kind: str
    values: tuple[float | int | str | bool, ...]

    def state(self, widget_id: str, value: float | int | str | bool) -> WidgetState:
        """The WidgetState a browser sends for this control set to `value`."""
        ws = WidgetState(id=widget_id)
        if self.kind == "double":
            ws.double_value = float(value)
        elif self.kind == "int":
            ws.int_value = int(value)
        elif self.kind == "string":
            ws.string_value = str(value)
        elif self.kind == "bool":
            ws.bool_value = bool(value)
        elif self.kind == "double_array":
            ws.double_array_value.data.append(float(value))
        else:
            raise ValueError(f"unknown widget kind {self.kind!r}; expected one of {WIDGET_KINDS}")
        return ws


class ScriptError(RuntimeError):
    """The page showed an exception or the run did not finish cleanly."""


class SimulatedUser:
    """One browser tab's worth of protocol: a websocket, the page's query string and the widget states it sent."""

    def __init__(self, base_url: str, page: str, query: str, control: Control, rng: random.Random) -> None:
        """Configure the user for `page` (URL path name, "" for the main page) opened with `query`."""
        parts = urlsplit(base_url)
        self.ws_url = f"ws://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream"
        self.origin = f"http://{parts.netloc}"
        self.page = page
        self.query = query
        self.control = control
        self.rng = rng
        self.page_hash = ""
        self.widget_ids: dict[str, str] = {}
        self.widget_fragments: dict[str, str] = {}  # widget id -> id of the st.fragment that drew it
        self.widget_states: dict[str, WidgetState] = {}
        self.ws: ClientConnection | None = None
        self.chart_bytes: list[int] = []  # sizes of the Plotly chart messages of the last run, uncompressed
        self.chart_wire_bytes: list[int] = []  # the same deflated as permessage-deflate sends them (if negotiated)
        self.measure_wire = False  # deflating every chart costs the client CPU: only for payload measurements
        # The browser's message cache, as Streamlit's frontend keeps it: a large element message (>= 10 kB) is kept
        # by its hash, and the hashes go with every rerun request, so the server sends a reference instead of an
        # element the browser already has. Each entry's age is the runs since it was last used; older than
        # MAX_CACHED_MESSAGE_AGE, it is dropped (Streamlit's global.maxCachedMessageAge).
        self.message_ages: dict[str, int] = {}
        self.keep_messages = False  # keep the last run's messages in `messages` (bench.elements lists them)
        self.messages: list[ForwardMsg] = []

    async def open(self) -> float:
        """Connect and load the page; return the seconds the first run took."""
        self.ws = await connect(self.ws_url, subprotocols=["streamlit"], max_size=None, origin=self.origin)
        return await self.rerun()

    def _wire_size(self, frame: bytes) -> int:
        """Bytes of `frame` on the wire: deflated with the negotiated window if permessage-deflate is on."""
        assert self.ws is not None
        extensions = self.ws.response.headers.get("Sec-WebSocket-Extensions", "") if self.ws.response else ""
        if "permessage-deflate" not in extensions:
            return len(frame)
        match = re.search(r"server_max_window_bits=(\d+)", extensions)
        deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -int(match.group(1) if match else 15))
        return len(deflate.compress(frame) + deflate.flush(zlib.Z_SYNC_FLUSH)) - 4  # the frame omits 00 00 ff ff

    async def close(self) -> None:
        """Close the websocket."""
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def change(self) -> float:
        """Set the control to a random value from its list and wait for the rerun; return its seconds."""
        widget_id = self.widget_ids.get(self.control.key)
        if widget_id is None:
            raise ScriptError(f"the page drew no widget with key {self.control.key!r}")
        value = self.rng.choice(self.control.values)
        self.widget_states[widget_id] = self.control.state(widget_id, value)
        # A widget inside an st.fragment reruns only that fragment, and the browser says so in its request.
        return await self.rerun(fragment_id=self.widget_fragments.get(widget_id, ""))

    def rerun_message(self, fragment_id: str = "", triggers: Iterable[WidgetState] = (), auto: bool = False) -> bytes:
        """The rerun request a browser sends: the page's query string and widget values (and one-off triggers;
        `auto` when a fragment's timer sends it)."""
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.query_string = self.query
        rerun.page_script_hash = self.page_hash
        rerun.page_name = self.page
        rerun.widget_states.widgets.extend(self.widget_states.values())
        rerun.widget_states.widgets.extend(triggers)
        rerun.fragment_id = fragment_id
        rerun.is_auto_rerun = auto
        rerun.cached_message_hashes.extend(self.message_ages)
        return msg.SerializeToString()

    def _age_messages(self, used: set[str]) -> None:
        """After a run: the messages it used are new again, the others a run older; too old ones are dropped."""
        ages = {digest: age + 1 for digest, age in self.message_ages.items()} | dict.fromkeys(used, 0)
        self.message_ages = {digest: age for digest, age in ages.items() if age <= MAX_CACHED_MESSAGE_AGE}

    async def rerun(self, fragment_id: str = "") -> float:
        """Send one rerun request with the current client state and read messages until the script finishes."""
        assert self.ws is not None
        started = time.perf_counter()
        await self.ws.send(self.rerun_message(fragment_id))
        problem: str | None = None
        self.chart_bytes, self.chart_wire_bytes = [], []
        used: set[str] = set()
        self.messages = []
        while True:
            frame = await self.ws.recv()
            fwd = ForwardMsg()
            fwd.ParseFromString(frame)
            if self.keep_messages:
                self.messages.append(fwd)
            kind = fwd.WhichOneof("type")
            if kind == "ref_hash":
                used.add(fwd.ref_hash)
            elif fwd.metadata.cacheable and fwd.hash:
                used.add(fwd.hash)
            if kind == "delta" and fwd.metadata.active_script_hash:
                # The page that ran (under st.navigation, the hash of its URL path); a browser
                # sends this hash back on its next rerun.
                self.page_hash = fwd.metadata.active_script_hash
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                element_type = element.WhichOneof("type")
                if element_type == "plotly_chart":
                    self.chart_bytes.append(len(frame))
                    if self.measure_wire:
                        self.chart_wire_bytes.append(self._wire_size(frame))
                if element_type == "exception":
                    problem = problem or f"exception on the page: {element.exception.message[:200]}"
                elif element_type is not None:
                    widget_id = getattr(getattr(element, element_type), "id", "")
                    if isinstance(widget_id, str) and widget_id.startswith("$$ID-"):
                        self.widget_ids[widget_id.split("-", 2)[2]] = widget_id
                        self.widget_fragments[widget_id] = fwd.delta.fragment_id
            elif kind == "page_info_changed":
                self.query = fwd.page_info_changed.query_string  # the app rewrote the URL, as a browser sees
            elif kind == "script_finished":
                elapsed = time.perf_counter() - started
                self._age_messages(used)
                if fwd.script_finished not in FINISHED_OK:
                    problem = problem or f"script finished with status {fwd.script_finished}"
                if problem:
                    raise ScriptError(problem)
                return elapsed
