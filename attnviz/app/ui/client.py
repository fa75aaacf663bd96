"""Who a page's visitor is, for limits that one person must not get around by opening more tabs: the session's own
token, and the address of the client it comes from.

The address is the websocket's peer, unless the app is told that it sits behind proxies (ATTNVIZ_TRUSTED_PROXIES:
how many). Then every request comes from the last proxy, and the client's address is in X-Forwarded-For, which each
proxy extends with the address it saw (nginx's `$proxy_add_x_forwarded_for`, as deploy/nginx/attnviz.conf sets it).
Only the entries the trusted proxies wrote count: the Nth from the right for N proxies. Anything to their left came
from the client, which can write anything there. So the header is trusted only when the setting says so: an app that
is reached directly would otherwise let each request choose its own address. Behind a proxy without the setting,
every client has the proxy's address: the limits then hold for all of them together (too strict, never too loose).

Why the address and not the proxy's affinity cookie: a cookie is what the client chooses to send, and a client
that sends none is given a new one with every request, so it would be a new visitor each time. Its address it
cannot choose. A class behind one NAT address shares it (see PER_CLIENT in attnviz/app/training/jobs.py).
"""

from __future__ import annotations

import os
import secrets

import streamlit as st

TRUSTED_PROXIES_VARIABLE = "ATTNVIZ_TRUSTED_PROXIES"
TOKEN_KEY = "client:session_token"
LOCAL = "local"  # the websocket's peer on this machine: Streamlit gives no address for 127.0.0.1 or ::1


def trusted_proxies() -> int:
    """How many proxies in front of the app write X-Forwarded-For (0: none, the peer is the client)."""
    try:
        return max(0, int(os.environ.get(TRUSTED_PROXIES_VARIABLE, "0") or 0))
    except ValueError:
        return 0


def client_address() -> str:
    """The address of this session's client, as far as the app can trust it."""
    proxies = trusted_proxies()
    if proxies:
        forwarded = [
            part.strip()
            for value in st.context.headers.get_all("X-Forwarded-For")
            for part in value.split(",")
            if part.strip()
        ]
        if forwarded:
            return forwarded[-min(proxies, len(forwarded))]
    return st.context.ip_address or LOCAL


def session_token() -> str:
    """A random token of this browser tab's session (a new session, after a reconnect, has a new one)."""
    if TOKEN_KEY not in st.session_state:
        st.session_state[TOKEN_KEY] = secrets.token_hex(8)
    return str(st.session_state[TOKEN_KEY])
