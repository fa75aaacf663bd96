"""Start the app: `python -m attnviz.server app.py [streamlit options]` is `streamlit run app.py` plus two fixes.

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
link keeps the old value. Such a request becomes a rerun of the whole page, with the same widget values.

3. Two malloc arenas. glibc gives each thread that meets contention an arena of its own, up to 8 per core, and
an arena keeps the memory its thread freed. A server's script threads come and go, so the freed memory of large
reruns stayed spread over many arenas: in the class load test (bench/classload.py) each replica peaked over its
1536 MiB limit and settled at 1.1-1.3 GB. With two arenas (as MALLOC_ARENA_MAX=2 would set) the same load peaked at
~1.1 GB. Set before Streamlit starts its threads; elsewhere than glibc nothing changes.

Then it hands over to Streamlit's own command line.
"""

from __future__ import annotations

import asyncio.base_events
import os
import socket
import sys
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
        if client_state is not None and client_state.fragment_id and not self.has_fragment(client_state.fragment_id):
            whole_page = BackMsg().rerun_script  # a ClientState: the same widget values, no fragment id
            whole_page.CopyFrom(client_state)
            whole_page.fragment_id = ""
            client_state = whole_page
        request_rerun(self, client_state)

    request_rerun_keeping_input.keeps_unknown_fragment_input = True  # type: ignore[attr-defined]
    AppSession.request_rerun = request_rerun_keeping_input  # type: ignore[method-assign]


ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process (MALLOC_ARENA_MAX in the environment wins); True if set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return malloc.set_arena_max(arenas)


def main(argv: Sequence[str] | None = None) -> None:
    """`streamlit run <argv...>` with TCP_NODELAY on the server's connections, no dropped fragment input and two
    malloc arenas."""
    from streamlit.web.cli import main as streamlit_main

    limit_malloc_arenas()
    enable_nodelay()
    keep_input_of_unknown_fragments()
    sys.argv = ["streamlit", "run", *(sys.argv[1:] if argv is None else argv)]
    streamlit_main()


if __name__ == "__main__":
    main()
