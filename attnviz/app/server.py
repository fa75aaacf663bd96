"""Start the app: `python -m attnviz.app.server app.py [streamlit options]` is `streamlit run app.py` plus eight fixes.

1. TCP_NODELAY.
Streamlit's server binds its listening socket as `socket.socket(family)`, protocol 0. asyncio switches Nagle's
algorithm off (TCP_NODELAY) only for sockets whose protocol is IPPROTO_TCP, so every websocket connection the
server accepts keeps Nagle on, and the last messages of each rerun wait for the browser's delayed ACK: about 40 ms
added to every interaction (measured in bench/: one user, a trivial page, 48 ms -> 15 ms per rerun with the fix).
This module makes asyncio set TCP_NODELAY on any TCP stream socket.

2. No input lost after a reconnect. A control inside an `st.fragment` asks for a rerun of that fragment alone. A
session that does not hold the fragment (yet) drops the request, and the student's change with it: that is every
page that has just reconnected to a new session (its replica died, or the server restarted) while the new
session's first run has not reached the fragment. The page then shows the new value and the old results, and its
link keeps the old value. Such a request becomes a rerun of the whole page, with the same widget values. A timer's
rerun (`run_every`) of such a fragment carries no input of its own and is left to Streamlit, which drops it: a
fragment's timer (the learned page's training progress) may tick once more before the browser hears of the
whole-page run that ended it, and that tick must not start another one.

3. Two malloc arenas. glibc gives each thread that meets contention an arena of its own, up to 8 per core, and
an arena keeps the memory its thread freed. A server's script threads come and go, so the freed memory of large
reruns stayed spread over many arenas: in the class load test (bench/classload.py) each replica peaked over its
1536 MiB limit and settled at 1.1-1.3 GB. With two arenas (as MALLOC_ARENA_MAX=2 would set) the same load peaked at
~1.1 GB. Set before Streamlit starts its threads; elsewhere than glibc nothing changes.

4. One wake-up of the event loop per batch of messages, not per message. Every element a script draws is a
message, which Streamlit hands from the script thread to the event loop with its own `call_soon_threadsafe` (a
write to the loop's wake-up socket); there the message is queued, and queuing asks for the send loop with another
`call_soon_threadsafe`. A page whose rerun sends 30 elements woke the loop about 60 times, and the loop and the
script thread took Python's lock from each other as often. Here the script thread's events are kept in order in a
list and handed over with one call while the loop has not taken them yet; the send loop is asked for once until it
runs. Every event is still handled on the loop, in the order it came, by Streamlit's own handler.

5. A widget looks up its own key, not a copy of the whole session state. Before it registers, each select box, radio,
slider, number, text, date and time input asks whether the app has set its key to None, and to ask that Streamlit
builds `filtered_state`: a new dict of every key in the session, each value looked up and presented. That is 80 us a
widget with a page's 45 keys, about 0.6 ms a control change on the cross page (8 such widgets). Here those widgets
get a view of the session state that answers for the one key (`key in state`, `state[key]`) from the same session
state, under its lock, with the same value.

6. Uploads that cannot fill a replica's memory. Streamlit keeps every file a session uploads, under any file id the
client makes up, until the session is removed: through the proxy, 1,000 uploads of 0.99 MB took a replica from 350 to
1,332 MiB. The app takes one upload, a state file (`server.maxUploadSize` in .streamlit/config.toml caps its size),
and drops it once read (`forget_upload`). Here the server keeps at most `UPLOADS_PER_SESSION` files per session (its
newest) and `UPLOAD_BYTES` in all (the oldest files go first: a state file is read, and dropped, within a moment of
its upload, so only files nobody reads are ever pushed out).

7. Long links open, and a link Streamlit ignores is named on the page. Streamlit's HTTP server (uvicorn, with h11)
refuses a request head over 16 KiB that reaches it in more than one piece, as any long one does over a network: a
shared link of 20 KiB, which the app writes, did not open at all. Here it reads heads of up to `LINK_REQUEST_BYTES`.
Streamlit then reads a query string of at most 512 Ki characters and 1,000 fields, and runs the page without a longer
one without a word: the student saw the defaults and no reason. Here each rerun request records whether its query
string was ignored (`ignored_link`), for the page to say so (attnviz/app/ui/session.py).

Patches 6 and 7 reach into Streamlit's private upload manager, server and session: `require_streamlit` stops the
server at start under any other Streamlit than the one they were checked against, and tests/test_server.py fails when
a release changes what they (or `forget_upload`) rely on.

8. Clients cannot reach the developer menu's server actions in a class. Any client may send the messages behind the
menu's "Clear cache" (which empties every cache for every session) and the Deploy button's repository check (which
runs `git` subprocesses on the event loop: 200 such messages in one second took another student's change from 18 ms
to over 3 s). When the menu hides them (`client.toolbarMode` viewer or minimal, as `make run` and the image set),
the server drops these messages; `make dev` keeps them.

Then it hands over to Streamlit's own command line.
"""

from __future__ import annotations

import asyncio.base_events
import functools
import os
import socket
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attnviz.app import malloc

_TCP_FAMILIES = {socket.AF_INET, socket.AF_INET6}


def _set_nodelay(sock: socket.socket) -> None:
    """asyncio's _set_nodelay without the `proto == IPPROTO_TCP` test (an accepted socket inherits proto 0)."""
    if sock.family in _TCP_FAMILIES and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def enable_nodelay() -> None:
    """Make every TCP transport asyncio creates from now on send small messages at once (no Nagle delay)."""
    asyncio.base_events._set_nodelay = _set_nodelay  # selector_events looks it up on this module at each call


def keep_input_of_unknown_fragments() -> None:
    """Make a session run the whole page, instead of nothing, for a fragment rerun it cannot serve."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.runtime.app_session import AppSession

    request_rerun = AppSession.request_rerun
    if getattr(request_rerun, "keeps_unknown_fragment_input", False):
        return

    def request_rerun_keeping_input(self: AppSession, client_state: Any) -> None:
        if (
            client_state is not None
            and client_state.fragment_id
            and not client_state.is_auto_rerun
            and not self.has_fragment(client_state.fragment_id)
        ):
            whole_page = BackMsg().rerun_script  # a ClientState: the same widget values, no fragment id
            whole_page.CopyFrom(client_state)
            whole_page.fragment_id = ""
            client_state = whole_page
        request_rerun(self, client_state)

    request_rerun_keeping_input.keeps_unknown_fragment_input = True  # type: ignore[attr-defined]
    AppSession.request_rerun = request_rerun_keeping_input  # type: ignore[method-assign]


def batch_script_events() -> None:
    """Hand a session's script-runner events to the event loop in batches: one loop wake-up while the loop has not
    yet taken the events before (order kept), and one request for the send loop until it runs."""
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.runtime import Runtime

    on_event = AppSession._on_scriptrunner_event
    if getattr(on_event, "batched", False):
        return
    creating = threading.Lock()

    def batch_of(session: AppSession) -> tuple[threading.Lock, list[tuple[Any, Any, dict[str, Any]]]]:
        found = session.__dict__.get("_attnviz_events")
        if found is None:
            with creating:
                found = session.__dict__.setdefault("_attnviz_events", (threading.Lock(), []))
        return found

    def drain(session: AppSession) -> None:
        lock, events = batch_of(session)
        with lock:
            taken = events[:]
            events.clear()
        for sender, event, kwargs in taken:
            session._handle_scriptrunner_event_on_event_loop(sender, event, **kwargs)

    def on_scriptrunner_event(self: AppSession, sender: Any, event: Any, **kwargs: Any) -> None:
        lock, events = batch_of(self)
        with lock:
            events.append((sender, event, kwargs))
            first = len(events) == 1
        if first:  # otherwise the drain already asked for takes this event too
            self._call_soon_on_event_loop(lambda: drain(self))

    on_scriptrunner_event.batched = True  # type: ignore[attr-defined]
    AppSession._on_scriptrunner_event = on_scriptrunner_event  # type: ignore[method-assign]

    def enqueued_some_message(self: Runtime) -> None:
        if self.__dict__.get("_attnviz_send_asked"):
            return  # the send loop has been asked for and has not woken yet: it will flush this message too
        objs = self._get_async_objs()

        def wake() -> None:
            self.__dict__["_attnviz_send_asked"] = False
            objs.need_send_data.set()

        self.__dict__["_attnviz_send_asked"] = True
        objs.eventloop.call_soon_threadsafe(wake)

    Runtime._enqueued_some_message = enqueued_some_message  # type: ignore[method-assign]


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


# Messages of the developer menu: "Clear cache", the Deploy button's repository check, "Run on save"
DEVELOPER_MESSAGES = frozenset({"clear_cache", "load_git_info", "set_run_on_save"})
HIDDEN_MENU = ("viewer", "minimal")  # toolbar modes that show no developer options


def drop_developer_messages() -> None:
    """Make a session ignore the developer menu's messages while the app's toolbar hides that menu."""
    from streamlit import config
    from streamlit.runtime.app_session import AppSession

    handle_backmsg = AppSession.handle_backmsg
    if getattr(handle_backmsg, "drops_developer_messages", False):
        return

    def handle_backmsg_for_class(self: AppSession, msg: Any) -> None:
        if msg.WhichOneof("type") in DEVELOPER_MESSAGES and config.get_option("client.toolbarMode") in HIDDEN_MENU:
            return
        handle_backmsg(self, msg)

    handle_backmsg_for_class.drops_developer_messages = True  # type: ignore[attr-defined]
    AppSession.handle_backmsg = handle_backmsg_for_class  # type: ignore[method-assign]


# The Streamlit release whose private upload manager `cap_uploads` and `forget_upload` were checked against.
CHECKED_STREAMLIT = "1.67.0"
UPLOADS_PER_SESSION = 1  # the share box's state file; a newer upload replaces it
UPLOAD_BYTES = 64 * 1024 * 1024  # every session's uploads together, in one server


def require_streamlit(what: str) -> None:
    """Refuse to patch any other Streamlit than CHECKED_STREAMLIT (its private API may have changed)."""
    import streamlit

    if streamlit.__version__ != CHECKED_STREAMLIT:
        raise RuntimeError(
            f"attnviz.app.server: {what} relies on Streamlit {CHECKED_STREAMLIT}'s private API, and this is Streamlit "
            f"{streamlit.__version__}: check it (tests/test_server.py) and update CHECKED_STREAMLIT"
        )


def _drop_upload(manager: Any, session_id: str, file_id: str) -> None:
    """Remove one file from the manager's storage and totals (the caller holds its lock)."""
    storage = manager.file_storage.get(session_id)
    record = storage.pop(file_id, None) if storage is not None else None
    if record is not None:
        manager._total_bytes -= len(record.data)
        manager._file_count -= 1
    if storage is not None and not storage:
        del manager.file_storage[session_id]


def cap_uploads(per_session: int = UPLOADS_PER_SESSION, total_bytes: int = UPLOAD_BYTES) -> None:
    """Make Streamlit's upload manager keep at most `per_session` files per session (the newest) and `total_bytes`
    of files in all (the oldest files go first; the file just uploaded always stays)."""
    require_streamlit("cap_uploads")
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    if getattr(MemoryUploadedFileManager.add_file, "capped", False):
        return

    def add_file(self: MemoryUploadedFileManager, session_id: str, file: Any) -> None:
        key = (session_id, file.file_id)
        with self._lock:
            # (session id, file id) of every file kept, oldest first; entries of files Streamlit removed since (a
            # session ended, a file was deleted) are skipped and pruned
            arrivals: OrderedDict[tuple[str, str], None] = self.__dict__.setdefault("_attnviz_arrivals", OrderedDict())
            _drop_upload(self, *key)  # the same id again: replaced, and now the newest
            self.file_storage[session_id][file.file_id] = file
            self._total_bytes += len(file.data)
            self._file_count += 1
            arrivals.pop(key, None)
            arrivals[key] = None
            storage = self.file_storage[session_id]
            while len(storage) > per_session:
                _drop_upload(self, session_id, next(iter(storage)))
            while self._total_bytes > total_bytes:
                oldest = next(iter(arrivals))
                if oldest == key:
                    break
                del arrivals[oldest]
                _drop_upload(self, *oldest)
            if len(arrivals) > 2 * self._file_count + 64:
                kept = [k for k in arrivals if k[1] in self.file_storage.get(k[0], {})]
                self.__dict__["_attnviz_arrivals"] = OrderedDict.fromkeys(kept)

    add_file.capped = True  # type: ignore[attr-defined]
    MemoryUploadedFileManager.add_file = add_file  # type: ignore[method-assign]


def forget_upload(upload: Any) -> None:
    """Drop a file the page has read (an `st.file_uploader` value) from the server's memory; the uploader then
    returns None until the next upload."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    # As Streamlit's own st.chat_input does with the files it has read; never raises on the page
    ctx = get_script_run_ctx()
    if ctx is not None and isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        ctx.uploaded_file_mgr.remove_file(ctx.session_id, upload.file_id)


LINK_REQUEST_BYTES = 1024 * 1024  # the longest request head a server reads: a link of 512 Ki characters, with room


def read_long_links(limit: int = LINK_REQUEST_BYTES) -> None:
    """Make Streamlit's HTTP server read request heads of up to `limit` bytes, however they arrive (h11's default
    is 16 KiB once a head comes in more than one piece)."""
    require_streamlit("read_long_links")
    from streamlit.web.server.starlette import starlette_server

    uvicorn_kwargs = starlette_server._get_uvicorn_config_kwargs
    if getattr(uvicorn_kwargs, "reads_long_links", False):
        return

    def uvicorn_kwargs_reading_long_links() -> dict[str, Any]:
        return {**uvicorn_kwargs(), "h11_max_incomplete_event_size": limit}

    uvicorn_kwargs_reading_long_links.reads_long_links = True  # type: ignore[attr-defined]
    starlette_server._get_uvicorn_config_kwargs = uvicorn_kwargs_reading_long_links


@dataclass(frozen=True)
class IgnoredLink:
    """A page's query string that Streamlit ignored (over its limits): how long it was and how many fields it had."""

    characters: int
    fields: int


# Sessions by id, for `ignored_link` to find the one a script run belongs to (weak: an ended session just goes).
_SESSIONS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def report_ignored_links() -> None:
    """Make each rerun request record, on its session, whether Streamlit will ignore its query string."""
    require_streamlit("report_ignored_links")
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.state import query_params

    request_rerun = AppSession.request_rerun
    if getattr(request_rerun, "reports_ignored_links", False):
        return

    @functools.wraps(request_rerun)  # keeps the markers of patches below this one
    def request_rerun_reporting(self: AppSession, client_state: Any) -> None:
        if client_state is not None:
            query = client_state.query_string
            fields = query.count("&") + 1 if query else 0  # counted as Streamlit counts them
            ignored = (
                len(query) > query_params.CLIENT_STATE_QUERY_STRING_MAX_LENGTH
                or fields > query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS
            )
            self.__dict__["_attnviz_ignored_link"] = IgnoredLink(len(query), fields) if ignored else None
            _SESSIONS[self.id] = self
        request_rerun(self, client_state)

    request_rerun_reporting.reports_ignored_links = True  # type: ignore[attr-defined]
    AppSession.request_rerun = request_rerun_reporting  # type: ignore[method-assign]


def ignored_link() -> IgnoredLink | None:
    """The query string Streamlit ignored for the rerun this script run answers; None when it read it (or when the
    server was not started by this launcher)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    session = _SESSIONS.get(ctx.session_id) if ctx is not None else None
    return None if session is None else session.__dict__.get("_attnviz_ignored_link")


ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process (MALLOC_ARENA_MAX in the environment wins); True if set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return malloc.set_arena_max(arenas)


def main(argv: Sequence[str] | None = None) -> None:
    """`streamlit run <argv...>` with TCP_NODELAY on the server's connections, no dropped fragment input, two
    malloc arenas, a run's messages handed to the event loop in batches, widgets that look up their own key, uploads
    capped, long links read and ignored ones reported, and no developer-menu messages from clients in a class."""
    from streamlit.web.cli import main as streamlit_main

    limit_malloc_arenas()
    enable_nodelay()
    keep_input_of_unknown_fragments()
    batch_script_events()
    widgets_look_up_their_key()
    drop_developer_messages()
    cap_uploads()
    read_long_links()
    report_ignored_links()
    sys.argv = ["streamlit", "run", *(sys.argv[1:] if argv is None else argv)]
    streamlit_main()


if __name__ == "__main__":
    # `python -m` runs this file as __main__, a copy apart from the attnviz.app.server the app imports: start from the
    # latter, so that what the patches record (ignored links) is what the pages read
    from attnviz.app.server import main as imported_main

    imported_main()
