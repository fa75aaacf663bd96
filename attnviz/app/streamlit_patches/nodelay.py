"""TCP_NODELAY on every connection Streamlit's server accepts.

Streamlit's server binds its listening socket as `socket.socket(family)`, protocol 0. asyncio switches Nagle's
algorithm off (TCP_NODELAY) only for sockets whose protocol is IPPROTO_TCP, so every websocket connection the
server accepts keeps Nagle on, and the last messages of each rerun wait for the browser's delayed ACK: about 40 ms
added to every interaction (measured in bench/: one user, a trivial page, 48 ms -> 15 ms per rerun with the fix).
This module makes asyncio set TCP_NODELAY on any TCP stream socket.
"""

from __future__ import annotations

import asyncio.base_events
import socket

_TCP_FAMILIES = {socket.AF_INET, socket.AF_INET6}


def _set_nodelay(sock: socket.socket) -> None:
    """asyncio's _set_nodelay without the `proto == IPPROTO_TCP` test (an accepted socket inherits proto 0)."""
    if sock.family in _TCP_FAMILIES and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def enable_nodelay() -> None:
    """Make every TCP transport asyncio creates from now on send small messages at once (no Nagle delay)."""
    asyncio.base_events._set_nodelay = _set_nodelay  # selector_events looks it up on this module at each call
