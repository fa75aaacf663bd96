"""The project's nginx site file, run by a real nginx in front of a stand-in replica: security headers on every
response, Streamlit's metrics closed, the app's own paths open."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.deploy.nginx_proxy import HOST, SITE_CONF, NginxProxy


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
