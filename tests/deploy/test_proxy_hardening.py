"""The project's nginx site file, run by a real nginx in front of stand-in replicas: security headers on every
response, Streamlit's metrics closed, the app's own paths open; the affinity cookie issued by the proxy and only
accepted from it, Secure over HTTPS; per-client limits that let a whole class behind one address in and turn a flood
away with 429, uploads included; /media alike from every replica; links up to Streamlit's limits passed, longer ones
answered with a page that says so."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import os
import re
import secrets
import socket
import ssl
import subprocess
import threading
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

from attnviz.app.links import LINK_MAX_CHARS, LINK_MAX_FIELDS
from testkit.nginx import HOST, REPO_ROOT, SITE_CONF, NginxProxy, StandInReplica

T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run in a thread of its own: Playwright's sync API (the browser tests of the same run) leaves an event
    loop running in the main thread, where asyncio.run refuses to start another."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class _Replica(BaseHTTPRequestHandler):
    """Answers every path with 200 and the path: what reaches it got through the proxy."""

    def do_GET(self) -> None:
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NginxProxy]:
    replica = ThreadingHTTPServer((HOST, 0), _Replica)
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    nginx = NginxProxy([f"{HOST}:{replica.server_address[1]}"], _free_port(), tmp_path_factory.mktemp("nginx"))
    nginx.start()
    yield nginx
    nginx.stop()
    replica.shutdown()


def _get(url: str) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), ""


@pytest.mark.parametrize("path", ["/", "/Self_attention?T=2", "/_stcore/health", "/attnviz/_stcore/metrics"])
def test_every_response_carries_the_security_headers(proxy: NginxProxy, path: str) -> None:
    _, headers, _ = _get(proxy.url_for(path))
    assert headers["Content-Security-Policy"] == "frame-ancestors 'self'"  # no other site may frame the app
    assert headers["X-Frame-Options"] == "SAMEORIGIN"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "strict-origin-when-cross-origin"


@pytest.mark.parametrize("path", ["/_stcore/metrics", "/attnviz/_stcore/metrics"])
def test_streamlits_metrics_are_not_served_through_the_proxy(proxy: NginxProxy, path: str) -> None:
    status, _, body = _get(proxy.url_for(path))
    assert status == 404 and path not in body


@pytest.mark.parametrize("path", ["/", "/_stcore/health", "/attnviz/Self_attention"])
def test_the_apps_own_paths_reach_the_replica(proxy: NginxProxy, path: str) -> None:
    status, _, body = _get(proxy.url_for(path))
    assert status == 200 and body == path


def test_an_lms_can_be_allowed_to_frame_the_app_by_editing_two_lines(tmp_path: Path) -> None:
    """The edit deploy/README.md documents: the LMS's origin in frame-ancestors, X-Frame-Options left out."""
    site = SITE_CONF.read_text(encoding="utf-8")
    allowed = "frame-ancestors 'self' https://lms.example.edu"
    site = site.replace("default \"frame-ancestors 'self'\";", f'default "{allowed}";')
    site = site.replace('default "SAMEORIGIN";', 'default "";')
    assert "lms.example.edu" in site
    edited = tmp_path / "attnviz.conf"
    edited.write_text(site, encoding="utf-8")
    replica = ThreadingHTTPServer((HOST, 0), _Replica)
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    nginx = NginxProxy([f"{HOST}:{replica.server_address[1]}"], _free_port(), tmp_path / "nginx", site=edited)
    try:
        nginx.start()
        _, headers, _ = _get(nginx.url_for("/"))
    finally:
        nginx.stop()
        replica.shutdown()
    assert headers["Content-Security-Policy"] == allowed
    assert "X-Frame-Options" not in headers


# ----- a raw HTTP/1.1 client, fast enough for a classroom of browsers ------------------------------------------

COOKIE = "attnviz_affinity"
ISSUED = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}")


@dataclass
class Response:
    """One response as the proxy sent it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first header called `name` (any case), or None."""
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    @property
    def set_cookie(self) -> str | None:
        """The affinity cookie's Set-Cookie header, or None."""
        cookies = [value for key, value in self.headers if key.lower() == "set-cookie"]
        return next((c for c in cookies if c.startswith(f"{COOKIE}=")), None)

    @property
    def issued(self) -> str | None:
        """The affinity cookie's value this response issued, or None."""
        return self.set_cookie.split(";", 1)[0].split("=", 1)[1] if self.set_cookie else None

    @property
    def replica(self) -> str | None:
        """The stand-in replica that answered (its port), or None when nginx answered by itself."""
        return self.header("X-Replica")


class Client:
    """One keep-alive connection to the proxy, as a browser holds it; `stream()` turns it into a WebSocket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, proxy: NginxProxy, context: ssl.SSLContext | None = None) -> Client:
        """Connect to `proxy` (over TLS with `context`)."""
        reader, writer = await asyncio.open_connection(HOST, proxy.port, ssl=context, limit=1 << 20)
        return cls(reader, writer, f"{HOST}:{proxy.port}")

    async def get(self, path: str = "/", cookie: str | None = None, headers: dict[str, str] | None = None) -> Response:
        """GET `path` with the affinity cookie `cookie` (if any) and extra `headers`."""
        return await self.request("GET", path, cookie, headers)

    async def request(
        self,
        method: str,
        path: str,
        cookie: str | None = None,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> Response:
        """`method` `path` with the affinity cookie `cookie` (if any), extra `headers` and a `body` (if any)."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}"]
        lines += [f"Cookie: {COOKIE}={cookie}"] if cookie is not None else []
        lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
        lines += [f"Content-Length: {len(body)}"] if body or method in ("PUT", "POST") else []
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        with contextlib.suppress(ConnectionError):  # nginx may refuse a body (413) before taking all of it
            await self.writer.drain()
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        fields = [tuple(part.strip() for part in line.split(":", 1)) for line in head[1:] if ":" in line]
        response = Response(status, [(key, value) for key, value in fields], b"")
        if status != 101:
            length = response.header("Content-Length")
            assert length is not None, head
            response.body = await self.reader.readexactly(int(length))
        return response

    async def stream(self, path: str = "/_stcore/stream", cookie: str | None = None) -> Response:
        """Open a WebSocket at `path`, as a browser tab opens its session's; a 101 keeps it open until close()."""
        key = base64.b64encode(os.urandom(16)).decode()
        headers = {
            "Origin": f"http://{self.host}",
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
        }
        return await self.get(path, cookie, headers)

    def close(self) -> None:
        """Close the connection (an open WebSocket ends with it)."""
        self.writer.close()


async def fetch(proxy: NginxProxy, path: str = "/", cookie: str | None = None, **headers: str) -> Response:
    """One GET on a connection of its own."""
    client = await Client.open(proxy)
    try:
        return await client.get(path, cookie, {key.replace("_", "-"): value for key, value in headers.items()})
    finally:
        client.close()


def get(proxy: NginxProxy, path: str = "/", cookie: str | None = None, **headers: str) -> Response:
    """fetch(), from synchronous code."""
    return run_async(fetch(proxy, path, cookie, **headers))


def site_limit(pattern: str) -> int:
    """A number of the site file's limits, e.g. site_limit(r"limit_conn attnviz_in_flight (\\d+);")."""
    match = re.search(pattern, SITE_CONF.read_text(encoding="utf-8"))
    assert match, f"no {pattern!r} in {SITE_CONF}"
    return int(match.group(1))


@pytest.fixture(scope="module")
def replicas() -> Iterator[list[StandInReplica]]:
    """Two stand-in replicas (/slow answers after 3 s)."""
    started = [StandInReplica(slow=3.0).start() for _ in range(2)]
    yield started
    for replica in started:
        replica.stop()


@pytest.fixture
def start_proxy(replicas: list[StandInReplica], tmp_path: Path) -> Iterator[Callable[..., NginxProxy]]:
    """Factory: a fresh nginx (its limits' counters at zero) in front of both replicas; NginxProxy's keywords."""
    started: list[NginxProxy] = []

    def start(**kwargs: object) -> NginxProxy:
        workdir = tmp_path / f"nginx{len(started)}"
        proxy = NginxProxy([r.address for r in replicas], _free_port(), workdir, **kwargs)  # type: ignore[arg-type]
        started.append(proxy)
        return proxy.start()

    yield start
    for proxy in started:
        proxy.stop()


# ----- the affinity cookie: issued by the proxy, refused when forged -------------------------------------------


def test_the_proxy_issues_the_cookie_and_a_browser_keeps_its_replica(
    start_proxy: Callable[..., NginxProxy], replicas: list[StandInReplica]
) -> None:
    """A new browser gets "<id>.<tag>"; sent back, it is kept (no new Set-Cookie) and always reaches one replica;
    sixteen browsers spread over both replicas."""
    proxy = start_proxy()
    first = get(proxy, "/_stcore/health")
    assert first.status == 200 and first.set_cookie is not None
    assert re.fullmatch(rf"{COOKIE}={ISSUED.pattern}; Path=/; HttpOnly; SameSite=Lax", first.set_cookie)
    cookies = [get(proxy).issued for _ in range(16)]
    assert len(set(cookies)) == 16 and all(cookies)
    answered: dict[str, set[str | None]] = {}
    for cookie in cookies:
        responses = [get(proxy, "/Self_attention", cookie) for _ in range(4)]
        assert [r.set_cookie for r in responses] == [None] * 4, "an issued cookie was replaced"
        answered[cookie] = {r.replica for r in responses}  # type: ignore[index]
    assert all(len(ports) == 1 for ports in answered.values()), answered
    assert set().union(*answered.values()) == {str(r.port) for r in replicas}, answered


def test_a_new_browsers_first_request_goes_where_its_cookie_sends_the_rest(
    start_proxy: Callable[..., NginxProxy], replicas: list[StandInReplica]
) -> None:
    """The replica a first request reaches, the cookie it is given and what the log names are one id: nginx used to
    make a new one at each read, so a first request was hashed on one id and given a cookie of another."""
    proxy = start_proxy()
    firsts = [get(proxy, "/_stcore/health") for _ in range(24)]
    for first in firsts:
        assert first.issued is not None
        assert get(proxy, "/_stcore/health", first.issued).replica == first.replica, "the cookie sends it elsewhere"
    logged = [entry["affinity"] for entry in proxy.access_log()[: len(firsts)]]
    assert logged == [first.issued for first in firsts]
    assert {first.replica for first in firsts} == {str(r.port) for r in replicas}


def _tampered(cookie: str) -> str:
    """The cookie with its tag's last digit changed."""
    return cookie[:-1] + ("0" if cookie[-1] != "0" else "1")


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda issued: secrets.token_hex(16), id="chosen-32-hex"),
        pytest.param(lambda issued: "0" * 32, id="zeros"),
        pytest.param(lambda issued: f"{secrets.token_hex(16)}.{secrets.token_hex(16)}", id="well-formed-made-up"),
        pytest.param(_tampered, id="tampered-tag"),
        pytest.param(lambda issued: secrets.token_hex(16) + issued[32:], id="other-id-same-tag"),
        pytest.param(lambda issued: issued.upper(), id="upper-case"),
        pytest.param(lambda issued: issued + "0", id="longer"),
        pytest.param(lambda issued: "x; Path=/evil", id="header-injection"),
    ],
)
def test_a_cookie_the_proxy_did_not_issue_is_replaced(
    start_proxy: Callable[..., NginxProxy], forge: Callable[[str], str]
) -> None:
    """Whatever the browser made up is replaced by a freshly issued cookie and never echoed back."""
    proxy = start_proxy()
    issued = get(proxy).issued
    assert issued
    forged = forge(issued)
    response = get(proxy, "/", forged)
    assert response.issued and ISSUED.fullmatch(response.issued), response.headers
    assert response.issued not in (forged, issued)
    assert not any(forged in value for _, value in response.headers), "the forged value was echoed back"
    assert get(proxy, "/", response.issued).set_cookie is None, "the freshly issued cookie is not accepted"


def test_only_proxies_that_share_the_secret_accept_each_others_cookies(
    start_proxy: Callable[..., NginxProxy],
) -> None:
    """A cookie signed with another secret is refused; several proxies in front of the same replicas work together
    when they share one."""
    secret = secrets.token_hex(32)
    first, twin, stranger = start_proxy(affinity_secret=secret), start_proxy(affinity_secret=secret), start_proxy()
    cookie = get(first).issued
    assert get(twin, "/", cookie).set_cookie is None
    assert get(stranger, "/", cookie).issued not in (None, cookie)


@pytest.mark.parametrize(
    "forged",
    [None, secrets.token_hex(16), f"{secrets.token_hex(16)}.{secrets.token_hex(16)}"],
    ids=["none", "32-hex", "id.tag"],
)
def test_a_session_opens_only_with_an_issued_cookie_and_sessions_cannot_be_aimed(
    start_proxy: Callable[..., NginxProxy], replicas: list[StandInReplica], forged: str | None
) -> None:
    """20 new sessions (WebSockets) sending no cookie, or one made-up value, are refused by the proxy itself (403),
    each given a cookie of its own; the browser's next attempt carries it and lands where that cookie hashes, so they
    spread over both replicas like 20 new browsers."""
    proxy = start_proxy()

    async def sessions() -> tuple[list[Response], list[Response]]:
        first = [await Client.open(proxy) for _ in range(20)]
        again = [await Client.open(proxy) for _ in range(20)]
        try:
            refused = [await client.stream(cookie=forged) for client in first]
            return refused, [await c.stream(cookie=r.issued) for c, r in zip(again, refused, strict=True)]
        finally:
            for client in first + again:
                client.close()

    refused, opened = run_async(sessions())
    assert [(r.status, r.replica) for r in refused] == [(403, None)] * 20, "a session opened without an issued cookie"
    assert len({r.issued for r in refused}) == 20 and forged not in {r.issued for r in refused}
    assert [(r.status, r.set_cookie) for r in opened] == [(101, None)] * 20
    assert {r.replica for r in opened} == {str(r.port) for r in replicas}, Counter(r.replica for r in opened)


def test_open_streams_per_cookie_are_capped(start_proxy: Callable[..., NginxProxy]) -> None:
    """One issued cookie holds at most the cap's WebSockets at once (more get 429); another cookie is not affected,
    and a closed stream frees its place."""
    cap = site_limit(r"limit_conn attnviz_streams_per_cookie (\d+);")
    assert 3 <= cap <= 16, "a handful of tabs per browser"
    proxy = start_proxy()

    async def scenario() -> None:
        cookie, other = (await fetch(proxy)).issued, (await fetch(proxy)).issued
        tabs = [await Client.open(proxy) for _ in range(cap)]
        opened = [await tab.stream(cookie=cookie) for tab in tabs]
        assert [r.status for r in opened] == [101] * cap and len({r.replica for r in opened}) == 1
        extra = await Client.open(proxy)
        refused = await extra.stream(cookie=cookie)
        assert refused.status == 429 and refused.replica is None
        elsewhere = await Client.open(proxy)
        assert (await elsewhere.stream(cookie=other)).status == 101
        tabs.pop().close()
        deadline = time.monotonic() + 10
        while True:  # nginx frees the place once it has seen the stream close
            again = await Client.open(proxy)
            status = (await again.stream(cookie=cookie)).status
            tabs.append(again)
            if status == 101 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert status == 101
        for client in [*tabs, extra, elsewhere]:
            client.close()

    run_async(scenario())


# ----- Secure over HTTPS ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("forwarded_proto", "secure"), [(None, False), ("https", True), ("HTTPS", True), ("http", False)]
)
def test_the_cookie_is_secure_when_a_tls_front_says_https(
    start_proxy: Callable[..., NginxProxy], forwarded_proto: str | None, secure: bool
) -> None:
    """Plain HTTP: no Secure, unless a TLS-terminating front in front of nginx says the browser used HTTPS."""
    proxy = start_proxy()
    headers = {"X_Forwarded_Proto": forwarded_proto} if forwarded_proto else {}
    set_cookie = get(proxy, "/", **headers).set_cookie
    assert set_cookie is not None and set_cookie.endswith("; Secure") == secure, set_cookie


def test_the_cookie_is_secure_when_nginx_terminates_tls(start_proxy: Callable[..., NginxProxy], tmp_path: Path) -> None:
    """nginx serving HTTPS itself ($scheme) marks the cookie Secure, and accepts it back."""
    certificate, key = tmp_path / "proxy.crt", tmp_path / "proxy.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
            *("-keyout", str(key), "-out", str(certificate), "-days", "1", "-subj", f"/CN={HOST}"),
            *("-addext", f"subjectAltName=IP:{HOST}"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    proxy = start_proxy(tls=(certificate, key))
    context = ssl.create_default_context(cafile=str(certificate))

    async def over_tls() -> tuple[Response, Response]:
        client = await Client.open(proxy, context)
        try:
            first = await client.get("/")
            return first, await client.get("/", first.issued)
        finally:
            client.close()

    first, again = run_async(over_tls())
    assert first.status == 200 and first.set_cookie is not None, first.headers
    assert first.set_cookie.endswith("; HttpOnly; SameSite=Lax; Secure"), first.set_cookie
    assert again.status == 200 and again.set_cookie is None


def test_without_a_secret_the_proxy_refuses_to_serve(start_proxy: Callable[..., NginxProxy]) -> None:
    """No secret (or a short one): 500 and no cookie at all, rather than cookies anyone could forge; the error log
    says why."""
    for secret in ("", "too-short"):
        proxy = start_proxy(affinity_secret=secret)
        response = get(proxy, "/")
        assert response.status == 500 and response.set_cookie is None and response.replica is None
        assert "ATTNVIZ_AFFINITY_SECRET" in proxy.error_log()


# ----- per-client limits ---------------------------------------------------------------------------------------

# Measured with Chromium through this proxy in front of two app replicas, empty cache (deploy/README.md): opening
# every page of the app in one browser costs 164 HTTP requests (107 for the first page), over at most 6
# connections; each tab holds one WebSocket.
STUDENTS = 60
REQUESTS_PER_STUDENT = 164
CONNECTIONS_PER_BROWSER = 6
TABS_PER_STUDENT = 5


async def _student(proxy: NginxProxy, start: asyncio.Event) -> tuple[Counter[int], list[Client]]:
    """One student's browser, behind the class's one address: the first request gets the cookie, then every page's
    requests over six connections and a WebSocket per tab, all at once. Returns the statuses and open streams."""
    await start.wait()
    connections = [await Client.open(proxy) for _ in range(CONNECTIONS_PER_BROWSER)]
    first = await connections[0].get("/")
    statuses: Counter[int] = Counter([first.status])
    cookie = first.issued

    async def load(client: Client, count: int) -> None:
        for _ in range(count):
            statuses[(await client.get("/static/js/chunk.js", cookie)).status] += 1

    async def tab() -> Client:
        client = await Client.open(proxy)
        statuses[(await client.stream(cookie=cookie)).status] += 1
        return client

    per_connection, extra = divmod(REQUESTS_PER_STUDENT - 1, CONNECTIONS_PER_BROWSER)
    counts = [per_connection + (i < extra) for i in range(CONNECTIONS_PER_BROWSER)]
    streams = [asyncio.ensure_future(tab()) for _ in range(TABS_PER_STUDENT)]
    await asyncio.gather(*(load(client, count) for client, count in zip(connections, counts, strict=True)))
    for client in connections:
        client.close()
    return statuses, list(await asyncio.gather(*streams))


def test_a_class_behind_one_address_loading_at_once_is_never_refused(start_proxy: Callable[..., NginxProxy]) -> None:
    """60 students on one address (127.0.0.1) open every page at the same moment, with five tabs each: every request
    gets 200, every WebSocket 101, while the streams stay open."""
    proxy = start_proxy()

    async def lesson() -> Counter[int]:
        start = asyncio.Event()
        students = [asyncio.ensure_future(_student(proxy, start)) for _ in range(STUDENTS)]
        await asyncio.sleep(0)
        start.set()
        results = await asyncio.gather(*students)
        for _, streams in results:
            for client in streams:
                client.close()
        return sum((statuses for statuses, _ in results), Counter())

    statuses = run_async(lesson())
    assert statuses == {200: STUDENTS * REQUESTS_PER_STUDENT, 101: STUDENTS * TABS_PER_STUDENT}, statuses


def test_a_flood_of_requests_from_one_address_gets_429(start_proxy: Callable[..., NginxProxy]) -> None:
    """One client sending far more than a class: past the burst and the rate, nginx answers 429 by itself."""
    burst = site_limit(r"limit_req zone=attnviz_requests burst=(\d+) nodelay;")
    rate = site_limit(r"zone=attnviz_requests:\d+m rate=(\d+)r/s;")
    assert burst >= STUDENTS * REQUESTS_PER_STUDENT, "the burst must let a whole class in"
    proxy = start_proxy()
    flood = burst + 5000

    async def attack() -> tuple[Counter[int], Counter[str | None], float]:
        statuses: Counter[int] = Counter()
        answered_by: Counter[str | None] = Counter()
        started = time.monotonic()

        async def send(count: int) -> None:
            client = await Client.open(proxy)
            for _ in range(count):
                response = await client.get("/")
                statuses[response.status] += 1
                answered_by[response.replica] += 1
            client.close()

        await asyncio.gather(*(send(flood // 25) for _ in range(25)))
        return statuses, answered_by, time.monotonic() - started

    statuses, answered_by, seconds = run_async(attack())
    allowed = burst + 1 + rate * seconds
    assert set(statuses) == {200, 429}, statuses
    assert statuses[200] <= allowed and statuses[429] >= flood - allowed, (statuses, seconds)
    assert answered_by[None] == statuses[429], "a refused request reached a replica"


def test_more_requests_in_flight_than_a_class_makes_get_429(start_proxy: Callable[..., NginxProxy]) -> None:
    """Past the in-flight limit per address (a class needs 60 x (6 requests + 5 WebSockets)), 429."""
    limit = site_limit(r"limit_conn attnviz_in_flight (\d+);")
    assert limit >= STUDENTS * (CONNECTIONS_PER_BROWSER + TABS_PER_STUDENT)
    proxy = start_proxy()
    excess = 50

    async def hold() -> Counter[int]:
        clients = [await Client.open(proxy) for _ in range(limit + excess)]
        try:
            responses = await asyncio.gather(*(client.get("/slow") for client in clients))
        finally:
            for client in clients:
                client.close()
        return Counter(r.status for r in responses)

    assert run_async(hold()) == {200: limit, 429: excess}


def test_a_flood_of_new_streams_gets_429(start_proxy: Callable[..., NginxProxy]) -> None:
    """Each WebSocket starts a session that runs the script: past a class's worth at once, new ones get 429."""
    burst = site_limit(r"limit_req zone=attnviz_streams burst=(\d+) nodelay;")
    rate = site_limit(r"zone=attnviz_streams:\d+m rate=(\d+)r/s;")
    assert burst >= STUDENTS * TABS_PER_STUDENT
    proxy = start_proxy()
    flood = burst + 200
    per_cookie = site_limit(r"limit_conn attnviz_streams_per_cookie (\d+);")

    async def attack() -> tuple[Counter[int], float]:
        cookies = [(await fetch(proxy)).issued for _ in range(flood // per_cookie + 1)]  # issued cookies, each in cap
        started = time.monotonic()
        clients = [await Client.open(proxy) for _ in range(flood)]
        try:
            streams = (client.stream(cookie=cookies[i // per_cookie]) for i, client in enumerate(clients))
            responses = await asyncio.gather(*streams)
        finally:
            for client in clients:
                client.close()
        return Counter(r.status for r in responses), time.monotonic() - started

    statuses, seconds = run_async(attack())
    allowed = burst + 1 + rate * seconds
    assert set(statuses) == {101, 429} and statuses[429] >= flood - allowed, (statuses, seconds)


# ----- uploads -------------------------------------------------------------------------------------------------

MIB = 1024 * 1024


def upload_limit_mib() -> int:
    """Streamlit's upload limit as the app's settings give it (server.maxUploadSize in .streamlit/config.toml)."""
    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    return int(config["server"]["maxUploadSize"])


def upload_path() -> str:
    """An upload URL as Streamlit's uploader makes one: /_stcore/upload_file/<session id>/<file id>."""
    return f"/_stcore/upload_file/{uuid.uuid4()}/{uuid.uuid4()}"


async def send_upload(proxy: NginxProxy, cookie: str | None, size: int, method: str = "PUT") -> Response:
    """One upload (PUT with a body of `size` bytes) or removal (DELETE) on a connection of its own."""
    client = await Client.open(proxy)
    try:
        return await client.request(method, upload_path(), cookie, body=b"x" * size if method == "PUT" else b"")
    finally:
        client.close()


def test_a_state_file_up_to_streamlits_limit_passes_and_a_larger_upload_is_refused(
    start_proxy: Callable[..., NginxProxy],
) -> None:
    """The proxy takes what Streamlit takes (nginx's default of 1 MB refused a large state file), and nothing more:
    a larger body gets 413 from nginx, before a replica sees it."""
    limit = upload_limit_mib()
    proxy = start_proxy()
    cookie = get(proxy).issued

    async def uploads() -> tuple[Response, Response]:
        return await send_upload(proxy, cookie, limit * MIB), await send_upload(proxy, cookie, limit * MIB + 1)

    fits, too_large = run_async(uploads())
    assert fits.status == 200 and fits.replica is not None
    assert too_large.status == 413 and too_large.replica is None
    assert site_limit(r"client_max_body_size (\d+)m;") == limit


def test_a_class_loading_state_files_at_once_is_never_refused(start_proxy: Callable[..., NginxProxy]) -> None:
    """60 students behind one address each load a state file at the same moment, and replace it: a wrong file, its
    removal, the right one. Every request reaches a replica."""
    proxy = start_proxy()

    async def student(start: asyncio.Event) -> list[int]:
        cookie = (await fetch(proxy)).issued
        await start.wait()
        wrong = await send_upload(proxy, cookie, 20_000)
        removed = await send_upload(proxy, cookie, 0, method="DELETE")
        right = await send_upload(proxy, cookie, 300_000)
        return [wrong.status, removed.status, right.status]

    async def lesson() -> Counter[int]:
        start = asyncio.Event()
        students = [asyncio.ensure_future(student(start)) for _ in range(STUDENTS)]
        await asyncio.sleep(0.5)
        start.set()
        return Counter(status for statuses in await asyncio.gather(*students) for status in statuses)

    assert run_async(lesson()) == {200: STUDENTS * 3}


def test_a_flood_of_uploads_gets_429(start_proxy: Callable[..., NginxProxy]) -> None:
    """One browser uploading file after file is turned away past its own burst; many browsers on one address past
    the address's. Refused uploads never reach a replica."""
    proxy = start_proxy()

    async def flood(cookies: list[str | None], each: int) -> tuple[Counter[int], Counter[str | None], float]:
        started = time.monotonic()
        responses = []
        for _ in range(each):
            responses += await asyncio.gather(*(send_upload(proxy, cookie, 1000) for cookie in cookies))
        statuses = Counter(r.status for r in responses)
        return statuses, Counter(r.replica for r in responses if r.status == 429), time.monotonic() - started

    async def one_browser() -> tuple[Counter[int], Counter[str | None], float]:
        return await flood([(await fetch(proxy)).issued], 100)

    statuses, refused_by, seconds = run_async(one_browser())
    assert set(statuses) == {200, 429}, statuses
    per_cookie = site_limit(r"limit_req zone=attnviz_uploads_per_cookie burst=(\d+) nodelay;")
    cookie_rate_per_minute = site_limit(r"zone=attnviz_uploads_per_cookie:\d+m rate=(\d+)r/m;")
    assert statuses[200] <= per_cookie + 1 + cookie_rate_per_minute * seconds / 60, (statuses, seconds)
    assert set(refused_by) == {None}, "a refused upload reached a replica"

    async def many_browsers() -> tuple[Counter[int], Counter[str | None], float]:
        cookies = [(await fetch(proxy)).issued for _ in range(60)]
        return await flood(cookies, 5)

    proxy = start_proxy()  # counters at zero
    statuses, refused_by, seconds = run_async(many_browsers())
    assert set(statuses) == {200, 429}, statuses
    per_address = site_limit(r"limit_req zone=attnviz_uploads burst=(\d+) nodelay;")
    address_rate = site_limit(r"zone=attnviz_uploads:\d+m rate=(\d+)r/s;")
    assert per_address >= 3 * STUDENTS, "a class loading a state file each, replacing a wrong one"
    assert statuses[200] <= per_address + 1 + address_rate * seconds, (statuses, seconds)
    assert set(refused_by) == {None}, "a refused upload reached a replica"


# ----- /media: the same answer whichever replica a cookie reaches -------------------------------------------------


def test_media_answers_alike_whichever_replica_a_cookie_reaches(
    start_proxy: Callable[..., NginxProxy], replicas: list[StandInReplica]
) -> None:
    """A file one session made (its QR code) lives on one replica. Asked for with any cookie, on either replica, it is
    served (by the replica that has it); a file no replica has is 404 for every cookie. So a file seen in one session
    does not tell which replica another cookie reaches."""
    holder, other = replicas
    qr = "/media/0123456789abcdef0123456789abcdef0123456789abcdef01234567.png"
    holder.media.add(qr)
    proxy = start_proxy()
    try:
        cookies = [get(proxy).issued for _ in range(16)]
        reached = {get(proxy, "/_stcore/health", cookie).replica for cookie in cookies}
        assert reached == {str(holder.port), str(other.port)}, "the cookies should reach both replicas"
        answers = [get(proxy, qr, cookie) for cookie in cookies]
        assert [(r.status, r.replica) for r in answers] == [(200, str(holder.port))] * 16
        missing = [get(proxy, qr.replace("0123", "9999"), cookie) for cookie in cookies]
        assert [r.status for r in missing] == [404] * 16
        prefixed = get(proxy, "/attnviz" + qr, cookies[0])  # under a base path too
        assert prefixed.status == 404  # the stand-in holds the file at /media/ only: asked everywhere, found nowhere
        holder.media.add("/attnviz" + qr)
        assert [get(proxy, "/attnviz" + qr, cookie).status for cookie in cookies] == [200] * 16
    finally:
        holder.media.clear()


# ----- a replica lost, back, then the other lost -------------------------------------------------------------------


def test_a_replica_back_from_a_restart_is_used_again_within_3_s(tmp_path: Path) -> None:
    """A replica is killed and restarted; 3 s later the other one is lost (a rolling update, two out-of-memory kills
    in a row). The proxy tries the restarted replica again and every browser is served by it. With fail_timeout=10s
    nginx kept it marked as failed for 10 s and answered 502 "no live upstreams" (a browser test of a class losing a
    replica saw that page)."""
    first, second = StandInReplica().start(), StandInReplica().start()
    proxy = NginxProxy([first.address, second.address], _free_port(), tmp_path).start()
    try:
        cookies = [get(proxy).issued for _ in range(16)]
        on_first = [c for c in cookies if get(proxy, "/_stcore/health", c).replica == str(first.port)]
        assert on_first, "the cookies should reach both replicas"
        first.stop()
        moved = get(proxy, "/_stcore/health", on_first[0])
        assert (moved.status, moved.replica) == (200, str(second.port))  # the lost replica is marked, the other serves
        first.start()  # on the same port, as a restarted replica
        time.sleep(3)
        second.stop()
        answers = [get(proxy, "/_stcore/health", cookie) for cookie in cookies]
        assert [(r.status, r.replica) for r in answers] == [(200, str(first.port))] * len(cookies)
    finally:
        proxy.stop()
        first.stop()
        second.stop()


# ----- links: what the app writes passes; what Streamlit would ignore gets a page that says so --------------------

LINK_PAGE = REPO_ROOT / "deploy" / "nginx" / "compose" / "link-too-long.html"


@pytest.mark.parametrize(
    ("query", "passed"),
    [
        pytest.param("s=" + "x" * 9000, "", id="9-KiB"),  # nginx's default refused anything over 8 KiB with a bare 414
        pytest.param("s=" + "x" * (LINK_MAX_CHARS - 2), "", id="longest-link"),
        pytest.param("&".join(["T=1"] * LINK_MAX_FIELDS), "&".join(["T=1"] * LINK_MAX_FIELDS), id="most-fields"),
        pytest.param("p=unit_sentences&b=1", "p=unit_sentences&b=1", id="short"),
    ],
)
def test_a_link_the_app_can_write_reaches_the_replica(proxy_for_links: NginxProxy, query: str, passed: str) -> None:
    """Up to Streamlit's limits, a link reaches a replica; one over 8 KiB without its query string, which the page
    does not need (the browser keeps it and sends it over the WebSocket)."""
    for path in ("/Self_attention", "/attnviz/Cross_attention"):
        response = get(proxy_for_links, f"{path}?{query}")
        assert response.status == 200 and response.replica is not None, (path, response.status)
        assert response.body.decode().split(" ", 1)[1] == path + (f"?{passed}" if passed else "")


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("s=" + "x" * (LINK_MAX_CHARS - 1), id="one-character-over"),
        pytest.param("s=" + "x" * 600_000, id="600-KB"),
        pytest.param("&".join(["T=1"] * (LINK_MAX_FIELDS + 1)), id="one-field-over"),
        pytest.param("&" * 2000, id="2001-empty-fields"),
        pytest.param("s=" + "x" * 2_000_000, id="2-MB-over-nginxs-buffer"),
    ],
)
def test_a_link_streamlit_would_ignore_gets_a_page_that_says_so(proxy_for_links: NginxProxy, query: str) -> None:
    """Over Streamlit's limits (it would run the page without the link, without a word), nginx answers 414 itself
    with the page that explains, in every language, with the usual headers and cookie; no replica sees it."""
    for path in ("/Self_attention", "/attnviz/Kernel_attention"):
        response = get(proxy_for_links, f"{path}?{query}")
        assert response.status == 414 and response.replica is None, (path, response.status)
        assert response.body == LINK_PAGE.read_bytes()
        assert response.header("Content-Type") == "text/html; charset=utf-8"
        assert response.header("X-Frame-Options") == "SAMEORIGIN" and response.issued is not None


def test_the_page_for_an_over_long_link_is_not_a_path_of_the_app(proxy_for_links: NginxProxy) -> None:
    assert get(proxy_for_links, "/_attnviz/link-too-long").status == 404


@pytest.fixture(scope="module")
def proxy_for_links(replicas: list[StandInReplica], tmp_path_factory: pytest.TempPathFactory) -> Iterator[NginxProxy]:
    """One nginx in front of both stand-ins for the link tests (they send a request or two each)."""
    proxy = NginxProxy([r.address for r in replicas], _free_port(), tmp_path_factory.mktemp("links")).start()
    yield proxy
    proxy.stop()
