"""A simulated browser tab that reaches the app through the proxy, as a student's browser does.

testkit.wire's `SimulatedUser` speaks Streamlit's websocket protocol straight to one server. Behind nginx
(deploy/nginx/attnviz.conf) a browser does more, and `ProxyUser` does it too:

1. It GETs the page first (`/Self_attention?T=0.5`): nginx issues and signs the `attnviz_affinity` cookie, and the
   server may set its XSRF cookie. Every later request carries the cookies, so nginx sends them to one replica.
2. It opens `/_stcore/stream` with those cookies, the XSRF token and, when it reconnects, the id of the session it
   had (the subprotocol list Streamlit's frontend sends: "streamlit", the token, the last session id).
3. A background reader takes every message the server sends, whenever it arrives: widget ids, the fragment that drew
   each widget, the labels of buttons and the options of select boxes, values the server set into widgets,
   exceptions and alerts on the page, the query string the app writes into the address bar (`page_info_changed`),
   and each run's end. A closed connection is noticed at once, not only when the next request fails.
4. After its replica died, it reconnects as the frontend does: it asks `/_stcore/health` through the proxy until it
   answers, opens a new websocket with the same cookies (nginx moves it to a live replica) and sends a rerun with
   its current query string and widget values (see attnviz/app/streamlit_patches/fragments.py and
   attnviz/app/ui/session.py).

    user = ProxyUser("http://127.0.0.1:8080", "Self_attention", "T=0.5")
    await user.open()                       # GET the page, open the websocket, first run
    user.set_widget("w:self:temperature", "double", 1.7)
    await user.rerun(user.fragment_of("w:self:temperature"))
    user.params()["T"]                      # "1.7": the app wrote it into the URL
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from attnviz.app.ui.chart_drawn import DRAWN_KEY, trigger_state
from testkit.wire import FINISHED_OK, Control, ScriptError, SimulatedUser

AFFINITY_COOKIE = "attnviz_affinity"
XSRF_COOKIE = "_streamlit_xsrf"
NO_TOKEN = "PLACEHOLDER_AUTH_TOKEN"  # what the frontend sends when it has no XSRF token
EARLY_FOR_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN
NO_CONTROL = Control("", "double", (0.0,))
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) attnviz-class-load"


class DisconnectedError(ConnectionError):
    """The websocket closed (or could not be opened) before the run finished."""


@dataclass
class HttpReply:
    """One HTTP response as the client saw it; status 0 when there was none (refused, reset, timed out)."""

    status: int
    seconds: float
    headers: list[tuple[str, str]] = field(default_factory=list)
    body_bytes: int = 0
    error: str = ""
    body: bytes = b""  # what came after the headers (chunked transfer encoding left as it is)

    def cookies(self) -> dict[str, str]:
        """The cookies this response sets (name -> value)."""
        found = {}
        for name, value in self.headers:
            if name.lower() == "set-cookie" and "=" in value:
                pair = value.split(";", 1)[0]
                key, _, text = pair.partition("=")
                found[key.strip()] = text.strip()
        return found


async def http_get(
    host: str,
    port: int,
    target: str,
    cookies: dict[str, str] | None = None,
    timeout: float = 30.0,
    source: str = "",
    headers: dict[str, str] | None = None,
) -> HttpReply:
    """GET `target` (path and query, already percent-encoded) as a browser would, on a fresh connection (from the
    local address `source`, e.g. another 127.x address, when given; with `headers` added).

    Written on asyncio streams rather than a library so that a 600 KB request line goes out as it is and a
    proxy that answers (414) and closes before reading all of it is reported, not turned into a client error."""
    started = time.perf_counter()
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}:{port}", f"User-Agent: {USER_AGENT}", "Accept: text/html,*/*"]
    if cookies:
        lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in cookies.items()))
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    request = ("\r\n".join([*lines, "Connection: close", "", ""])).encode("latin-1")
    try:
        local = {"local_addr": (source, 0)} if source else {}
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, **local), timeout)
    except (OSError, TimeoutError) as exc:
        return HttpReply(0, time.perf_counter() - started, error=f"connect: {type(exc).__name__}: {exc}")
    data, error = b"", ""
    try:
        writer.write(request)
        try:
            await asyncio.wait_for(writer.drain(), timeout)
        except (OSError, TimeoutError) as exc:  # the proxy may answer and close before taking the whole request
            error = f"send: {type(exc).__name__}"
        try:
            data = await asyncio.wait_for(reader.read(-1), timeout)
        except (OSError, TimeoutError) as exc:
            error = error or f"read: {type(exc).__name__}"
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    seconds = time.perf_counter() - started
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/"):
        return HttpReply(0, seconds, error=error or "no HTTP response")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in header_lines if ":" in line]
    status = int(status_line.split()[1])
    return HttpReply(status, seconds, headers, len(body), error, body)  # type: ignore[arg-type]


@dataclass
class Finish:
    """The end of one script run: its status, the query string at that moment, when it arrived."""

    status: int
    query: str
    at: float


class ProxyUser(SimulatedUser):
    """One browser tab behind the proxy: cookies, a websocket with a background reader, reconnects."""

    def __init__(
        self,
        base_url: str,
        page: str,
        query: str = "",
        control: Control | None = None,
        rng: random.Random | None = None,
        name: str = "",
        source: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        """A tab that will open `page` (URL path name) with `query` through the proxy at `base_url`, connecting from
        the local address `source` (a client of its own on this machine: any 127.x address) and sending `headers`
        with each request."""
        super().__init__(base_url, page, query, control or NO_CONTROL, rng or random.Random())
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.base_path = parts.path.rstrip("/")
        self.name = name
        self.source = source
        self.headers = dict(headers or {})
        self.cookies: dict[str, str] = {}
        self.session_id = ""
        self.finishes: list[Finish] = []
        self.exceptions: list[str] = []
        self.alerts: list[str] = []
        self.buttons: dict[str, tuple[str, bool]] = {}  # label -> (widget id, disabled)
        self.options: dict[str, list[str]] = {}  # widget id of a select box or radio -> its option labels
        self.shown: dict[str, object] = {}  # widget id -> the value the page shows (its default, or what the app set)
        self.drawn: dict[str, int] = {}  # widget id -> the run that drew it last (an index into `finishes`)
        self.queries: list[tuple[float, str]] = []  # every query string the app wrote, with its time
        self.timers: dict[str, float] = {}  # fragment id -> seconds: the reruns the page asked this tab's timer for
        self.page_not_found = False
        self.received_bytes = 0
        self.largest_message = 0
        self.connected_at: float | None = None
        self.closed_at: float | None = None
        self._reader: asyncio.Task[None] | None = None
        self.rest_marks: tuple[int, int] | None = None  # the marks from which the run after a first paint counts
        # A browser fires the first paint's watcher once it has drawn the chart, which may be well after the run:
        # with `chart_later`, the watcher waits (`waiting_watcher`) until `ask_for_the_rest` fires it
        self.chart_later = False
        self.waiting_watcher = ""
        self._asking: set[asyncio.Task[None]] = set()  # the watcher's triggers being sent
        self._cond = asyncio.Condition()

    # ----- the page and the websocket -----------------------------------------------------------------------------
    @property
    def affinity(self) -> str:
        """The affinity cookie nginx issued to this browser ("" before the first response)."""
        return self.cookies.get(AFFINITY_COOKIE, "")

    @property
    def connected(self) -> bool:
        """Whether the websocket is open (as far as the reader knows)."""
        return self.ws is not None and self.closed_at is None

    def page_target(self) -> str:
        """Path and query of the page's address, as the browser requests it."""
        return f"{self.base_path}/{self.page}" + (f"?{self.query}" if self.query else "")

    async def get(self, target: str, timeout: float = 30.0) -> HttpReply:
        """GET `target` with this browser's cookies; keep the cookies the response sets."""
        reply = await http_get(self.host, self.port, target, self.cookies, timeout, self.source, self.headers)
        self.cookies.update(reply.cookies())
        return reply

    async def load_page(self, timeout: float = 30.0) -> HttpReply:
        """GET the page's address (the first request of a tab: it brings the affinity cookie)."""
        return await self.get(self.page_target(), timeout)

    async def health(self, timeout: float = 10.0) -> HttpReply:
        """GET /_stcore/health through the proxy, as the frontend does before it (re)connects."""
        return await self.get(f"{self.base_path}/_stcore/health", timeout)

    async def connect(self, timeout: float = 30.0) -> None:
        """Open the websocket with the browser's cookies; on a reconnect, name the session it had."""
        await self.close()
        protocols = ["streamlit", self.cookies.get(XSRF_COOKIE) or NO_TOKEN]
        if self.session_id:
            protocols.append(self.session_id)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        headers.update(self.headers)
        local = {"local_addr": (self.source, 0)} if self.source else {}
        try:
            self.ws = await connect(
                self.ws_url,
                subprotocols=protocols,  # type: ignore[arg-type]
                origin=self.origin,  # type: ignore[arg-type]
                additional_headers=headers,
                user_agent_header=USER_AGENT,
                max_size=None,
                open_timeout=timeout,
                ping_interval=20,
                ping_timeout=60,
                **local,
            )
        except (OSError, TimeoutError, WebSocketException) as exc:
            self.ws = None
            raise DisconnectedError(f"websocket: {type(exc).__name__}: {exc}") from exc
        self.connected_at, self.closed_at = time.perf_counter(), None
        self._reader = asyncio.create_task(self._read(self.ws))

    async def open(self, timeout: float = 60.0) -> float:
        """GET the page, open the websocket and run the page (in two runs for a new visitor, whose first run asks for
        the second); return the seconds from the first request to the whole page."""
        reply = await self.load_page()
        if reply.status != 200:
            raise DisconnectedError(f"GET {self.page}: HTTP {reply.status} {reply.error}".strip())
        await self.health()  # the frontend pings the server before it opens the websocket (and loads its assets)
        await self.connect()
        started = time.perf_counter()
        self.rest_marks = None
        await self.rerun(timeout=timeout)
        if self.rest_marks is not None:  # a new visitor's page comes in two runs (attnviz.app.ui.common.first_paint)
            await self.wait_run(self.rest_marks, timeout)
        await self.follow_timers(timeout)
        return time.perf_counter() - started

    async def follow_timers(self, timeout: float = 60.0, most: int = 3) -> None:
        """Send the reruns that the page's timers ask for, as the browser's timers do (a fragment's `run_every`),
        until the page keeps no timer or `most` were sent (no page the class uses keeps one on opening today)."""
        for _ in range(most):
            if not self.timers:
                return
            fragment_id, interval = next(iter(self.timers.items()))
            await asyncio.sleep(interval)
            if fragment_id in self.timers:
                await self.wait_run(await self.send_rerun(fragment_id, auto=True), timeout)

    async def close(self) -> None:
        """Close the websocket (as a closed tab does) and stop the reader."""
        ws, reader, self.ws, self._reader = self.ws, self._reader, None, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 5)
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    def forget_page(self) -> None:
        """A new tab: no widgets, no session, no page hash (the cookies stay: same browser)."""
        self.widget_ids.clear()
        self.widget_fragments.clear()
        self.widget_states.clear()
        self.buttons.clear()
        self.options.clear()
        self.shown.clear()
        self.drawn.clear()
        self.timers.clear()
        self.page_hash = ""
        self.session_id = ""

    # ----- widgets ------------------------------------------------------------------------------------------------
    def set_widget(self, key: str, kind: str, value: float | int | str | bool) -> str:
        """Set the widget with `key` to `value` in the browser's widget states; return its id."""
        widget_id = self.widget_ids.get(key)
        if widget_id is None:
            raise ScriptError(f"the page drew no widget with key {key!r}")
        self.widget_states[widget_id] = Control(key, kind, ()).state(widget_id, value)
        return widget_id

    def fragment_of(self, key_or_id: str) -> str:
        """The id of the fragment that drew a widget ("" for the page itself)."""
        widget_id = self.widget_ids.get(key_or_id, key_or_id)
        return self.widget_fragments.get(widget_id, "")

    def value_of(self, key: str) -> object:
        """The value the tab holds for the widget with `key`: what it sent, else what the page shows."""
        widget_id = self.widget_ids.get(key, "")
        held = self.widget_states.get(widget_id)
        if held is not None and held.WhichOneof("value"):
            return getattr(held, held.WhichOneof("value"))
        return self.shown.get(widget_id)

    def drawn_since_full_run(self, widget_id: str) -> bool:
        """Whether the widget is on the page now: drawn by the last full run or a later (fragment) run."""
        full = [i for i, f in enumerate(self.finishes) if f.status == ForwardMsg.FINISHED_SUCCESSFULLY]
        return widget_id in self.drawn and self.drawn[widget_id] >= (full[-1] if full else 0)

    def params(self) -> dict[str, str]:
        """The page's link parameters as the address bar holds them (last value of a repeated one)."""
        return {k: v[-1] for k, v in parse_qs(self.query, keep_blank_values=True).items()}

    # ----- runs ---------------------------------------------------------------------------------------------------
    async def send_rerun(
        self, fragment_id: str = "", triggers: Iterable[WidgetState] = (), auto: bool = False
    ) -> tuple[int, int]:
        """Send one rerun request with the current client state (and one-off button triggers; `auto` for a timer's);
        return the marks (runs finished, exceptions seen) that `wait_run` counts from."""
        if self.ws is None or self.closed_at is not None:
            raise DisconnectedError("the websocket is closed")
        marks = (len(self.finishes), len(self.exceptions))
        try:
            await self.ws.send(self.rerun_message(fragment_id, triggers, auto=auto))
        except (OSError, WebSocketException) as exc:
            raise DisconnectedError(f"send: {type(exc).__name__}: {exc}") from exc
        return marks

    async def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until `condition()` holds (checked at each message) or the websocket closes; False on timeout."""
        async with self._cond:
            try:
                await asyncio.wait_for(self._cond.wait_for(lambda: condition() or self.closed_at is not None), timeout)
            except TimeoutError:
                return False
        return condition()

    def finished_ok(self, marks: tuple[int, int]) -> Finish | None:
        """The first run that finished cleanly after `marks`, if any."""
        return next((f for f in self.finishes[marks[0] :] if f.status in FINISHED_OK), None)

    async def wait_run(self, marks: tuple[int, int], timeout: float = 60.0) -> Finish:
        """Wait for a run that finishes cleanly after `marks`; ScriptError on an exception or a failed run,
        DisconnectedError if the websocket closes first, TimeoutError if nothing finished in time."""
        done = await self.wait_until(lambda: self.finished_ok(marks) is not None, timeout)
        finish = self.finished_ok(marks)
        problems = self.exceptions[marks[1] :]
        bad = [f.status for f in self.finishes[marks[0] :] if f.status not in (*FINISHED_OK, EARLY_FOR_RERUN)]
        if problems:
            raise ScriptError(f"exception on the page: {problems[0]}")
        if bad:
            raise ScriptError(f"script finished with status {bad[0]}")
        if finish is None:
            if self.closed_at is not None:
                raise DisconnectedError("the websocket closed during the run")
            assert not done
            raise TimeoutError(f"no run finished in {timeout:.0f} s")
        return finish

    async def rerun(self, fragment_id: str = "", timeout: float = 60.0) -> float:
        """Send one rerun request and wait for the run to finish; return its seconds."""
        started = time.perf_counter()
        await self.wait_run(await self.send_rerun(fragment_id), timeout)
        return time.perf_counter() - started

    async def click(self, label: str, timeout: float = 60.0) -> float:
        """Press the button labelled `label` (a trigger, sent once, as a browser does); return the run's seconds."""
        widget_id, disabled = self.buttons.get(label, ("", True))
        if not widget_id or disabled:
            raise ScriptError(f"no enabled button {label!r} on the page")
        started = time.perf_counter()
        marks = await self.send_rerun(self.fragment_of(widget_id), [WidgetState(id=widget_id, trigger_value=True)])
        await self.wait_run(marks, timeout)
        return time.perf_counter() - started

    # ----- the reader ---------------------------------------------------------------------------------------------
    async def _read(self, ws: object) -> None:
        try:
            async for frame in ws:  # type: ignore[attr-defined]
                if isinstance(frame, bytes):
                    self._take(frame)
                async with self._cond:
                    self._cond.notify_all()
        except (OSError, WebSocketException):
            pass
        finally:
            if self.ws is ws or self.ws is None:
                self.closed_at = time.perf_counter()
            async with self._cond:
                self._cond.notify_all()

    def _take(self, frame: bytes) -> None:
        """Read one ForwardMsg into the tab's state."""
        self.received_bytes += len(frame)
        self.largest_message = max(self.largest_message, len(frame))
        fwd = ForwardMsg()
        fwd.ParseFromString(frame)
        kind = fwd.WhichOneof("type")
        if kind == "new_session":
            self.session_id = fwd.new_session.initialize.session_id or self.session_id
            if not fwd.metadata.run.fragment_ids:  # a whole-page run: the browser stops every timer
                self.timers.clear()
        elif kind == "auto_rerun":
            self.timers[fwd.auto_rerun.fragment_id] = fwd.auto_rerun.interval
        elif kind == "stop_auto_rerun":
            for fragment_id in fwd.stop_auto_rerun.fragment_ids:
                self.timers.pop(fragment_id, None)
        elif kind == "delta":
            if fwd.metadata.active_script_hash:
                self.page_hash = fwd.metadata.active_script_hash
            if fwd.delta.WhichOneof("type") == "new_element":
                self._element(fwd)
        elif kind == "page_info_changed":
            self.query = fwd.page_info_changed.query_string
            self.queries.append((time.perf_counter(), self.query))
        elif kind == "page_not_found":
            self.page_not_found = True
        elif kind == "script_finished":
            self.finishes.append(Finish(fwd.script_finished, self.query, time.perf_counter()))
            self._ask_for_the_rest()

    def _ask_for_the_rest(self) -> None:
        """After a first paint, ask for the rest of the page as the browser's watcher does
        (`attnviz.app.ui.chart_drawn`), whatever the tab is doing: after a new visitor's first run, and after a
        reconnect whose first run was one. This tab draws nothing, so at once. The trigger's run comes with the tab's
        widget values, as a browser's does."""
        widget_id = self.widget_ids.get(DRAWN_KEY, "")
        if not widget_id or self.drawn.get(widget_id) != len(self.finishes) - 1:
            return
        if self.finishes[-1].status not in FINISHED_OK:
            return
        if self.chart_later:
            self.waiting_watcher = widget_id
            return
        self.rest_marks = (len(self.finishes), len(self.exceptions))
        task = asyncio.get_running_loop().create_task(self._send_drawn(widget_id))
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    async def ask_for_the_rest(self) -> tuple[int, int]:
        """Fire the watcher that waits for the chart to be drawn (`chart_later`): the rest of the first paint, sent
        with the tab's widget values; return the marks of its run."""
        widget_id, self.waiting_watcher = self.waiting_watcher, ""
        if not widget_id:
            raise ScriptError("no first paint waits for its chart")
        return await self._trigger(widget_id)

    async def _send_drawn(self, widget_id: str) -> None:
        """The watcher's trigger: a rerun of its fragment."""
        with contextlib.suppress(DisconnectedError):  # the tab's reconnect sends its own first run
            await self._trigger(widget_id)

    async def _trigger(self, widget_id: str) -> tuple[int, int]:
        """Send the trigger of the watcher `widget_id` with the tab's widget values; the marks of its run."""
        trigger_id, payload = trigger_state(widget_id)
        return await self.send_rerun(
            self.fragment_of(widget_id), [WidgetState(id=trigger_id, json_trigger_value=payload)]
        )

    def _element(self, fwd: ForwardMsg) -> None:
        element = fwd.delta.new_element
        element_type = element.WhichOneof("type")
        if element_type == "plotly_chart":
            return
        if element_type == "exception":
            self.exceptions.append(f"{element.exception.type}: {element.exception.message[:300]}")
            return
        if element_type == "alert":
            self.alerts.append(element.alert.body[:400])
            return
        if element_type is None:
            return
        proto = getattr(element, element_type)
        widget_id = getattr(proto, "id", "")
        if not (isinstance(widget_id, str) and widget_id.startswith("$$ID-")):
            return
        key = widget_id.split("-", 2)[2]
        if key and key != "None":
            self.widget_ids[key] = widget_id
        self.widget_fragments[widget_id] = fwd.delta.fragment_id
        self.drawn[widget_id] = len(self.finishes)
        if element_type == "button":
            self.buttons[proto.label] = (widget_id, bool(proto.disabled))
        elif element_type in ("selectbox", "radio"):
            self.options[widget_id] = list(proto.options)
        self._note_shown(element_type, widget_id, proto)
        # A value the app set into a widget (a callback, a preset): the browser shows it and sends it from now on.
        held = self.widget_states.get(widget_id)
        if held is not None and getattr(proto, "set_value", False):
            which = held.WhichOneof("value")
            if element_type == "number_input" and which in ("double_value", "int_value"):
                setattr(held, which, type(getattr(held, which))(proto.value))
            elif element_type == "text_input" and which == "string_value":
                held.string_value = proto.value
            elif element_type == "checkbox" and which == "bool_value":
                held.bool_value = proto.value
            elif element_type in ("selectbox", "radio") and which == "string_value" and proto.HasField("raw_value"):
                held.string_value = proto.raw_value

    def _note_shown(self, element_type: str, widget_id: str, proto: Any) -> None:
        """Remember the value a widget shows: the one the app set this run, else the one known, else its default."""
        set_value = bool(getattr(proto, "set_value", False))
        if element_type in ("number_input", "text_input", "checkbox"):
            if set_value or widget_id not in self.shown:
                self.shown[widget_id] = proto.value if set_value else proto.default
        elif element_type in ("selectbox", "radio"):
            if set_value and proto.HasField("raw_value"):
                self.shown[widget_id] = proto.raw_value
            elif widget_id not in self.shown and proto.HasField("default") and 0 <= proto.default < len(proto.options):
                self.shown[widget_id] = proto.options[proto.default]
