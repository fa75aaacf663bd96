"""Scale-out through a real proxy: Debian's nginx with deploy/nginx/attnviz.conf on 127.0.0.1 in front of two app
servers that share one cookie secret (as compose.yaml and deploy/k8s give every replica).

Which replica served what is read from two independent witnesses: nginx's access log (the upstream that answered
each request, the WebSocket included) and each server's own /_stcore/metrics (its active_sessions gauge).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import itertools
import json
import os
import re
import secrets
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from attnviz.app.links import state_file
from attnviz.app.streamlit_patches.uploads import UPLOAD_BYTES
from attnviz.i18n import t
from testkit.browser import APP_SELECTOR, ConsoleRecorder, exceptions, goto, screenshot, wait_for_plotly
from testkit.nginx import NginxProxy
from testkit.server import HOST, StreamlitServer, active_sessions, replicas_behind_nginx
from testkit.uploads import ISSUE_SIZE, run_flood

# A preset's second batch row on the self-attention page: a link that carries state, not just a page name.
SHARE_LINK = "Self_attention?p=unit_sentences&b=1"
# A running container of the image (deploy/smoke.sh starts one), e.g. http://127.0.0.1:32768.
# The affinity cookie nginx issues: "<random id>.<tag>", the tag a keyed hash of the id that only the proxy can make.
AFFINITY = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}")
# Streamlit's frontend, opened on a sub-page, first probes <page>/_stcore/{health,host-config} to find the base
# path, and gets a 404 (streamlit/streamlit#7074); through the proxy the same probe is logged with the proxy's URL.
BASE_PATH_PROBE = (
    r"Failed to load resource: the server responded with a status of 404 \(Not Found\) "
    r"\(http://127\.0\.0\.1:\d+/(attnviz/)?(Self_attention|Cross_attention|Kernel_attention|Pretrained_model)/_stcore/(health|host-config):\d+\)"
)

Figures = list[dict[str, Any]]


@dataclass
class Cluster:
    """Two app replicas and the nginx in front of them."""

    replicas: list[StreamlitServer]
    proxy: NginxProxy
    base_path: str = ""

    def url_for(self, path: str = "") -> str:
        """URL of an app path through the proxy, below the base path."""
        prefix = f"{self.base_path}/" if self.base_path else ""
        return self.proxy.url_for(prefix + path)

    def upstream(self, replica: StreamlitServer) -> str:
        """The replica's address as nginx logs it."""
        return f"{HOST}:{replica.port}"

    def sessions(self) -> dict[str, int]:
        """Active Streamlit sessions per replica (upstream address -> count), as each server reports it."""
        return {self.upstream(replica): active_sessions(replica) for replica in self.replicas}

    def serving(self) -> StreamlitServer:
        """The one replica that holds a session right now (fails unless exactly one does)."""
        holding = [replica for replica in self.replicas if active_sessions(replica) > 0]
        assert len(holding) == 1, f"sessions per replica: {self.sessions()}"
        return holding[0]

    def answered_by(self, affinity: str) -> list[str]:
        """For each logged request of one browser (its affinity cookie), the upstream that finally answered it."""
        # nginx logs "a, b" when it tried a, found it down, and passed the request to b.
        return [entry["upstream"].split(", ")[-1] for entry in self.proxy.access_log() if entry["affinity"] == affinity]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll `condition` every 0.2 s until it holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting until {what}"
        time.sleep(0.2)


def fetch(url: str, cookie: str | None = None) -> tuple[int, str, list[str]]:
    """GET `url` (optionally with an affinity cookie): status, body and the affinity Set-Cookie headers."""
    request = urllib.request.Request(url, headers={"Cookie": f"attnviz_affinity={cookie}"} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        set_cookies = response.headers.get_all("Set-Cookie") or []
        return response.status, response.read().decode(), [c for c in set_cookies if c.startswith("attnviz_affinity=")]


def fetch_bytes(url: str, cookie: str) -> tuple[int, bytes]:
    """GET `url` with an affinity cookie: its status and body (an error status too, with its body)."""
    request = urllib.request.Request(url, headers={"Cookie": f"attnviz_affinity={cookie}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def websocket_handshake(proxy: NginxProxy, path: str, host: str, cookie: str | None = None) -> str:
    """Open /_stcore/stream through the proxy as a browser at http://`host` would, with the affinity cookie `cookie`
    (if any); return the response status line."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        + (f"Cookie: attnviz_affinity={cookie}\r\n" if cookie else "")
        + "\r\n"
    )
    with socket.create_connection((HOST, proxy.port), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def open_page(page: Page, url: str) -> Figures:
    """Open `url`, wait for the script run and the weights heatmap (the other charts sit in a collapsed expander)."""
    goto(page, url)
    figures = wait_for_plotly(page, count=1)
    assert exceptions(page) == [], f"{url} shows an exception"
    assert page.locator(APP_SELECTOR).get_attribute("data-test-connection-state") == "CONNECTED"
    return [{k: v for k, v in figure.items() if k != "index"} for figure in figures]


def affinity_of(page: Page) -> str:
    """The affinity cookie nginx gave this page's browser context."""
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    assert AFFINITY.fullmatch(cookies.get("attnviz_affinity", "")), f"no affinity cookie: {cookies}"
    return cookies["attnviz_affinity"]


def ws_url(http_url: str) -> str:
    """The ws:// form of an http:// URL."""
    return "ws" + http_url.removeprefix("http")


def stream_sockets(page: Page) -> list[str]:
    """Start recording the URLs of the WebSockets `page` opens; returns the (growing) list."""
    urls: list[str] = []
    page.on("websocket", lambda ws: urls.append(ws.url))
    return urls


@contextlib.contextmanager
def running_cluster(folder: Path, base_path: str = "", log_name: str = "proxy") -> Iterator[Cluster]:
    """Two replicas of app.py (started together) that share a cookie secret, and nginx in front of them."""
    secret = {"STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
    options = {"baseUrlPath": base_path} if base_path else {}
    with replicas_behind_nginx(folder, secret, options, log_name) as (replicas, proxy):
        yield Cluster(replicas, proxy, base_path)


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the module's tests that need no replica of their own (cold, killed, or set up otherwise)."""
    with running_cluster(tmp_path_factory.mktemp("proxy"), log_name="proxy-shared") as cluster:
        yield cluster


@pytest.fixture
def cluster(shared_cluster: Cluster, console_errors: ConsoleRecorder) -> Cluster:
    """The module's cluster once every session of an earlier test has left it, both replicas running."""
    console_errors.ignore.append(BASE_PATH_PROBE)
    for replica in shared_cluster.replicas:
        replica.restart()  # (a test that killed one brings it back itself; this is the safety net)
    wait_until(lambda: sum(shared_cluster.sessions().values()) == 0, "the earlier tests' sessions ended")
    return shared_cluster


@pytest.fixture
def start_cluster(console_errors: ConsoleRecorder, tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """Factory: `start_cluster(base_path="")` starts a cluster of the test's own (running_cluster)."""
    console_errors.ignore.append(BASE_PATH_PROBE)
    with contextlib.ExitStack() as stack:
        started = itertools.count()

        def start(base_path: str = "") -> Cluster:
            folder = tmp_path / f"cluster{next(started)}"
            return stack.enter_context(running_cluster(folder, base_path, log_name=f"proxy-{tmp_path.name}"))

        yield start


def test_session_stays_on_one_replica(
    cluster: Cluster, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """The app loads through the proxy, its WebSocket connects, and every request of the browser hits one replica."""
    page = new_page()
    sockets = stream_sockets(page)
    open_page(page, cluster.url_for())
    affinity = affinity_of(page)
    replica = cluster.serving()
    assert cluster.sessions() == {cluster.upstream(r): int(r is replica) for r in cluster.replicas}, (
        "the other replica has a session too"
    )

    # A second page load and a rerun triggered from the page keep to the same replica.
    open_page(page, cluster.url_for(SHARE_LINK))
    temperature = page.get_by_role("spinbutton", name="Temperature T", exact=True)
    temperature.fill("0.5")
    temperature.press("Enter")
    page.wait_for_function("() => new URLSearchParams(window.location.search).get('T') === '0.5'")
    screenshot(page, "proxy_session")
    assert cluster.serving() is replica
    assert len(sockets) == 2 and set(sockets) == {ws_url(cluster.url_for("_stcore/stream"))}, sockets
    page.context.close()  # nginx logs a WebSocket when it closes

    def streams() -> list[dict[str, Any]]:
        return [e for e in cluster.proxy.access_log() if e["affinity"] == affinity and e["uri"] == "/_stcore/stream"]

    wait_until(lambda: len(streams()) == len(sockets), "nginx logged both WebSockets")
    assert all(e["status"] == "101" and e["upgrade"] == "websocket" for e in streams()), streams()
    log = [e for e in cluster.proxy.access_log() if e["affinity"] == affinity]
    assert set(cluster.answered_by(affinity)) == {cluster.upstream(replica)}, log
    assert len(log) > 20, "expected the page, its scripts and assets in the log"
    console_errors.assert_clean()


def test_affinity_cookie_spreads_and_sticks(cluster: Cluster) -> None:
    """New browsers spread over both replicas; one cookie always lands on one; only cookies the proxy issued are
    kept (a value the browser chose, however well-formed, is replaced)."""
    health = cluster.url_for("_stcore/health")
    status, body, set_cookies = fetch(health)
    assert (status, body) == (200, "ok")
    assert len(set_cookies) == 1 and re.fullmatch(
        rf"attnviz_affinity={AFFINITY.pattern}; Path=/; HttpOnly; SameSite=Lax", set_cookies[0]
    ), set_cookies
    cookies = [fetch(health)[2][0].split(";", 1)[0].split("=", 1)[1] for _ in range(16)]
    for cookie in cookies:
        for _ in range(3):
            assert fetch(health, cookie)[2] == [], "a valid affinity cookie was replaced"
    answered = {cookie: set(cluster.answered_by(cookie)) for cookie in cookies}
    assert all(len(upstreams) == 1 for upstreams in answered.values()), answered
    assert set().union(*answered.values()) == {cluster.upstream(r) for r in cluster.replicas}, answered
    made_up = (secrets.token_hex(16), f"{secrets.token_hex(16)}.{secrets.token_hex(16)}", cookies[0][:-1] + "x")
    for forged in ("0" * 31, "G" * 32, "x; Path=/evil", *made_up):
        assert fetch(health, forged)[2][0].startswith("attnviz_affinity="), f"{forged!r} was kept"


def test_websocket_sees_the_browsers_host(cluster: Cluster) -> None:
    """The proxy forwards the Host the browser used, so Streamlit's same-origin check passes for any site name.

    The connection still goes to 127.0.0.1; only the Host and Origin headers carry the public name. Were the proxy
    to send its own upstream name instead, Streamlit would refuse the WebSocket (403).
    """
    cookie = fetch(cluster.url_for("_stcore/health"))[2][0].split(";", 1)[0].split("=", 1)[1]
    status = websocket_handshake(cluster.proxy, "/_stcore/stream", f"attnviz.example:{cluster.proxy.port}", cookie)
    assert status.startswith("HTTP/1.1 101 "), status


def test_a_qr_code_does_not_tell_which_replica_a_cookie_reaches(
    cluster: Cluster, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """The share box's QR code is a file on the replica that holds the session. Fetched with other browsers'
    cookies, half of which reach the other replica, it is the same image for all of them: it no longer sorts
    cookies by replica (with that, 24 of 24 sessions could be aimed at one replica). A browser's WebSocket without
    the proxy's cookie is refused."""
    page = new_page()
    open_page(page, cluster.url_for("Self_attention"))
    page.get_by_text("Share and export").click()
    qr = page.locator('img[src*="/media/"]').first  # the share box's QR code
    qr.wait_for()
    src = qr.get_attribute("src")
    assert src and "/media/" in src, src
    holder = cluster.serving()
    media = "media/" + src.split("/media/", 1)[1]
    status, image = fetch_bytes(cluster.url_for(media), affinity_of(page))
    assert status == 200 and len(image) > 100, status  # the QR code (Streamlit serves it as a JPEG)
    health = cluster.url_for("_stcore/health")
    cookies = [fetch(health)[2][0].split(";", 1)[0].split("=", 1)[1] for _ in range(16)]
    for cookie in cookies:
        fetch(health, cookie)  # a request that carries the cookie: nginx's log names the replica it reaches
    wait_until(lambda: all(cluster.answered_by(cookie) for cookie in cookies), "nginx logged the cookies' requests")
    reached = {cookie: cluster.answered_by(cookie)[-1] for cookie in cookies}
    assert set(reached.values()) == {cluster.upstream(r) for r in cluster.replicas}, reached
    answers = {cookie: fetch_bytes(cluster.url_for(media), cookie) for cookie in cookies}
    wrong = {reached[cookie]: status for cookie, (status, body) in answers.items() if (status, body) != (200, image)}
    assert not wrong, f"the QR code differs for cookies reaching {wrong} (the holder is {cluster.upstream(holder)})"
    assert cluster.serving() is holder
    status = websocket_handshake(cluster.proxy, "/_stcore/stream", f"{HOST}:{cluster.proxy.port}")
    assert status.startswith("HTTP/1.1 403 "), status
    console_errors.assert_clean()


def test_a_long_link_opens_through_the_proxy_and_an_over_long_one_gets_a_page_that_says_so(
    cluster: Cluster, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """A link of 20,000 characters (the app writes links up to 512 Ki; nginx refused any over 8 KiB) opens the page,
    which reads it: its sentence is named as too long. A link over Streamlit's limits gets the proxy's page, in every
    language, whose link opens the page without it."""
    console_errors.ignore.append(r"status of 414")  # the browser reports the proxy's answer to the over-long link
    page = new_page()
    open_page(page, cluster.url_for("Self_attention?s=" + "x" * 20_000))
    expect(page.locator('[data-testid="stAlert"]', has_text="Link parameter 's'")).to_be_visible()
    response = page.goto(cluster.url_for("Self_attention?s=" + "x" * 600_000))
    assert response is not None and response.status == 414
    for lang in ("en", "zh-Hans", "zh-Hant"):
        expect(page.get_by_role("heading", name=t("proxy.link_too_long.title", lang))).to_be_visible()
    screenshot(page, "proxy_link_too_long")
    page.get_by_role("link", name=t("proxy.link_too_long.open", "en")).click()
    page.wait_for_url("**/Self_attention?")
    wait_for_plotly(page, count=1)
    assert exceptions(page) == []
    console_errors.assert_clean()


def test_replica_lost_midway(
    start_cluster: Callable[..., Cluster], new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """One replica dies: the open page fails over, new sessions work, and a share link reproduces the page."""
    cluster = start_cluster()
    page = new_page()
    original = open_page(page, cluster.url_for(SHARE_LINK))
    affinity = affinity_of(page)
    lost = cluster.serving()
    survivor = next(r for r in cluster.replicas if r is not lost)
    assert active_sessions(survivor) == 0, "the survivor must be cold: the link below is the first page it runs"
    lost.stop()

    # The open page reconnects through the proxy, which passes its cookie to the survivor; a reload rebuilds it
    # from the URL.
    wait_until(lambda: active_sessions(survivor) == 1, "the open page reconnected to the surviving replica")
    page.reload()
    assert open_page(page, page.url) == original
    assert cluster.answered_by(affinity)[-1] == cluster.upstream(survivor)
    page.context.close()
    console_errors.clear()  # the lost connection was reported while the replica was down: expected

    fresh = new_page()
    open_page(fresh, cluster.url_for())
    shared = new_page()
    assert open_page(shared, cluster.url_for(SHARE_LINK)) == original, "the share link differs after the loss"
    screenshot(shared, "proxy_share_link_after_replica_loss")
    direct = new_page()
    assert open_page(direct, survivor.url_for(SHARE_LINK)) == original, "the page differs opened directly"
    for other in (fresh, shared):
        assert set(cluster.answered_by(affinity_of(other))) == {cluster.upstream(survivor)}
    console_errors.assert_clean()


def test_base_path_through_proxy(
    start_cluster: Callable[..., Cluster], new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """Served under /attnviz/ (server.baseUrlPath): a cold share link through the proxy shows the direct page."""
    cluster = start_cluster(base_path="attnviz")
    assert fetch(cluster.url_for("_stcore/health"))[:2] == (200, "ok")
    page = new_page()
    sockets = stream_sockets(page)
    through_proxy = open_page(page, cluster.url_for(SHARE_LINK))
    assert sockets == [ws_url(cluster.url_for("_stcore/stream"))]
    replica = cluster.serving()
    direct = new_page()
    assert open_page(direct, replica.url_for(SHARE_LINK)) == through_proxy
    page.context.close()
    wait_until(
        lambda: any(e["uri"] == "/attnviz/_stcore/stream" for e in cluster.proxy.access_log()),
        "nginx logged the WebSocket below the base path",
    )
    console_errors.assert_clean()


# ----- uploads ---------------------------------------------------------------------------------------------------

# What one replica may grow by while any number of uploads arrive: the uploads it keeps
# (attnviz/app/streamlit_patches/uploads.py: UPLOAD_BYTES), plus 32 MiB for the requests in flight and the
# allocator's slack (deploy/README.md).
UPLOAD_GROWTH_BOUND_MB = UPLOAD_BYTES / 2**20 + 32


def uploaded_bytes(replica: StreamlitServer) -> int:
    """The bytes of uploaded files a replica holds, as its /_stcore/metrics reports them (0 when none)."""
    with urllib.request.urlopen(replica.url_for("_stcore/metrics"), timeout=5) as response:
        text = response.read().decode()
    lines = re.findall(r'^cache_memory_bytes\{cache_type="UploadedFileManager"[^}]*\} (\d+)$', text, re.MULTILINE)
    return sum(int(n) for n in lines)


def load_state_file(page: Page, params: dict[str, str]) -> None:
    """Open the self-attention page's share box and load a state file of `params` through its uploader."""
    page.get_by_text("Share and export").click()
    data = state_file("self", params)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "attnviz_self.json", "mimeType": "application/json", "buffer": data}]
    )


def test_a_thousand_uploads_through_the_proxy_leave_the_replica_within_its_bound(
    cluster: Cluster, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """The issue's attacker: one session uploads 1,000 files of 0.99 MB through the proxy, each under a file id of
    its own. The replica grows by less than the bound (Streamlit alone kept them all: +982 MiB), the session still
    runs, and a student then loads a state file through the share box, which the replica does not keep once read."""
    flood = run_flood(cluster.proxy, cluster.replicas, "proxy", uploads=1000, size=ISSUE_SIZE)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # Playwright holds this thread's loop
        result = pool.submit(asyncio.run, flood).result()
    figures = json.dumps(result.__dict__)
    assert set(result.statuses) <= {"204", "429"} and result.statuses.get("204", 0) >= 1, figures
    assert result.growth_mb <= UPLOAD_GROWTH_BOUND_MB, figures
    assert result.reruns_ok, figures
    assert sum(uploaded_bytes(r) for r in cluster.replicas) == ISSUE_SIZE, "the session keeps its newest file only"

    page = new_page()
    open_page(page, cluster.url_for("Self_attention"))
    load_state_file(page, {"T": "0.5"})
    page.wait_for_function("() => new URLSearchParams(window.location.search).get('T') === '0.5'")
    assert exceptions(page) == []
    screenshot(page, "proxy_state_file_after_upload_flood")
    assert sum(uploaded_bytes(r) for r in cluster.replicas) == ISSUE_SIZE, "the state file was kept after reading"
    console_errors.assert_clean()
