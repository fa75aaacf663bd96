"""Where students reach a class: the address of the join link and its QR code. Pure, apart from asking the operating
system which address this machine has on its network.

A teacher who opened the app as `http://localhost:8501` has an address that names their own computer: a phone that
scans it opens its own localhost. The join link then carries the machine's address on the class's network (what
Streamlit's log calls the "Network URL"), unless the operator set the public URL (behind a proxy, the address the
students use: ATTNVIZ_PUBLIC_URL), or the server listens on this computer only, or the machine has no other
address: then the link works on this computer alone, and the teacher's page says so.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

PUBLIC_URL_ENV = "ATTNVIZ_PUBLIC_URL"
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class JoinBase:
    """The address a join link starts with (scheme, host, port and path, ending in "/"), and whether it reaches
    this computer only."""

    url: str
    local_only: bool


def is_local(host: str) -> bool:
    """Whether `host` names this computer alone (localhost, a loopback address), or no host at all."""
    host = host.strip("[]").lower()
    if not host or host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def network_address() -> str | None:
    """This machine's IPv4 address on its network (the interface a route out would take), None if it has none.
    Nothing is sent: connecting a UDP socket only chooses the route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 9))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if is_local(address) or address == "0.0.0.0" else address


def public_base(public_url: str) -> str | None:
    """The operator's public URL as a link's base ("https://host[:port]/path/"), None unless it is one."""
    parts = urlsplit(public_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))


def join_base(teacher_url: str, listening: str | None, public_url: str | None, network: str | None) -> JoinBase:
    """The base of the join link for a teacher at `teacher_url` (the app's root as their browser reached it), on a
    server listening on `listening` (its server.address; None or "" for every interface), with the operator's
    `public_url` and this machine's `network` address (network_address())."""
    if public_url and (base := public_base(public_url)) is not None:
        return JoinBase(base, local_only=False)
    parts = urlsplit(teacher_url)
    if not is_local(parts.hostname or ""):
        return JoinBase(teacher_url, local_only=False)
    if (listening and is_local(listening)) or network is None:
        return JoinBase(teacher_url, local_only=True)
    netloc = f"{network}:{parts.port}" if parts.port else network
    return JoinBase(urlunsplit((parts.scheme or "http", netloc, parts.path, "", "")), local_only=False)
