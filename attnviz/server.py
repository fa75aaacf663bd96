"""Start the app: `python -m attnviz.server app.py [streamlit options]` is `streamlit run app.py` plus six fixes.

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

6. Clients cannot reach the developer menu's server actions in a class. Any client may send the messages behind the
menu's "Clear cache" (which empties every cache for every session) and the Deploy button's repository check (which
runs `git` subprocesses on the event loop: 200 such messages in one second took another student's change from 18 ms
to over 3 s). When the menu hides them (`client.toolbarMode` viewer or minimal, as `make run` and the image set),
the server drops these messages; `make dev` keeps them.

Then it hands over to Streamlit's own command line.
"""

from __future__ import annotations

import asyncio.base_events
import os
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

from attnviz import malloc

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


ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process (MALLOC_ARENA_MAX in the environment wins); True if set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return malloc.set_arena_max(arenas)


def main(argv: Sequence[str] | None = None) -> None:
    """`streamlit run <argv...>` with TCP_NODELAY on the server's connections, no dropped fragment input, two
    malloc arenas, a run's messages handed to the event loop in batches, widgets that look up their own key and no
    developer-menu messages from clients in a class."""
    from streamlit.web.cli import main as streamlit_main

    limit_malloc_arenas()
    enable_nodelay()
    keep_input_of_unknown_fragments()
    batch_script_events()
    widgets_look_up_their_key()
    drop_developer_messages()
    sys.argv = ["streamlit", "run", *(sys.argv[1:] if argv is None else argv)]
    streamlit_main()


if __name__ == "__main__":
    main()
