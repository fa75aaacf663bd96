"""A real nginx (Debian's package) on 127.0.0.1 in front of app replicas, with deploy/nginx/attnviz.conf as it is.

nginx runs as the current user from a private prefix in a temporary directory: a small nginx.conf of its own
(pid file, logs, temp paths, an access log that records which replica answered each request) includes the
repository's site file, next to the two files that site file expects: attnviz/listen.conf and
attnviz/upstream.conf. Nothing is installed or started system-wide.
"""

from __future__ import annotations

import atexit
import contextlib
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SITE_CONF = REPO_ROOT / "deploy" / "nginx" / "attnviz.conf"
HOST = "127.0.0.1"
_RUNNING: weakref.WeakSet[NginxProxy] = weakref.WeakSet()

# One JSON object per request: the affinity the site file computed and the replica that answered.
_MAIN_CONF = """\
{user}worker_processes 1;
pid "{prefix}/nginx.pid";
error_log "{prefix}/logs/error.log" info;
daemon off;

events {{
    worker_connections 256;
}}

http {{
    client_body_temp_path "{prefix}/tmp/client_body";
    proxy_temp_path "{prefix}/tmp/proxy";
    fastcgi_temp_path "{prefix}/tmp/fastcgi";
    uwsgi_temp_path "{prefix}/tmp/uwsgi";
    scgi_temp_path "{prefix}/tmp/scgi";
    log_format attnviz escape=json
        '{{"affinity":"$attnviz_affinity","upstream":"$upstream_addr","status":"$status",'
        '"uri":"$request_uri","upgrade":"$http_upgrade"}}';
    access_log "{prefix}/logs/access.log" attnviz;
    include "{site}";
}}
"""


def nginx_binary() -> str:
    """Path of the nginx executable (Debian installs it in /usr/sbin, which a user's PATH may lack)."""
    return shutil.which("nginx") or "/usr/sbin/nginx"


def _user_directive() -> str:
    """`user` line for a root master process, so workers stay the current user (ignored otherwise, so omitted)."""
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"


class NginxProxy:
    """nginx on HOST:`port` proxying to `upstreams` ("host:port" each); start()/stop() or a context manager."""

    def __init__(
        self, upstreams: Sequence[str], port: int, workdir: str | os.PathLike[str], site: Path = SITE_CONF
    ) -> None:
        """Configure (but do not start) a proxy whose files live under `workdir`; `site` is the site file (the
        repository's, or an edited copy of it)."""
        self.upstreams = list(upstreams)
        self.site = site
        self.port = port
        self.prefix = Path(workdir).resolve()
        self.conf_path = self.prefix / "conf" / "nginx.conf"
        self.log_dir = self.prefix / "logs"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the proxy, without a trailing slash."""
        return f"http://{HOST}:{self.port}"

    def url_for(self, path: str = "") -> str:
        """URL of `path` (e.g. "attnviz/Self_attention?p=x") through the proxy."""
        return f"{self.url}/{path.lstrip('/')}"

    def write_config(self) -> Path:
        """Write nginx.conf (including the repository's site file) and attnviz/{listen,upstream}.conf."""
        site_dir = self.conf_path.parent / "attnviz"
        for folder in (site_dir, self.log_dir, self.prefix / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        (site_dir / "listen.conf").write_text(f"listen {HOST}:{self.port};\n")
        servers = "".join(f"server {upstream} max_fails=1 fail_timeout=10s;\n" for upstream in self.upstreams)
        (site_dir / "upstream.conf").write_text(servers)
        self.conf_path.write_text(_MAIN_CONF.format(user=_user_directive(), prefix=self.prefix, site=self.site))
        return self.conf_path

    def _argv(self, *extra: str) -> list[str]:
        """nginx's command line for this prefix (-e: errors before the config is read go there too)."""
        error_log = str(self.log_dir / "error.log")
        return [nginx_binary(), "-p", f"{self.prefix}/", "-c", str(self.conf_path), "-e", error_log, *extra]

    def check(self) -> subprocess.CompletedProcess[str]:
        """`nginx -t` on the written configuration (stdout and stderr together in .stdout)."""
        self.write_config()
        return subprocess.run(
            self._argv("-t"), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, timeout=30
        )

    @property
    def running(self) -> bool:
        """Whether the nginx master process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 15.0) -> NginxProxy:
        """Write the configuration, start nginx in the foreground and wait until it accepts connections."""
        self.write_config()
        self._proc = subprocess.Popen(
            self._argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _RUNNING.add(self)
        deadline = time.monotonic() + timeout
        while not self._accepts():
            if self._proc.poll() is not None:
                raise RuntimeError(f"nginx exited with code {self._proc.returncode}:\n{self.error_log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nginx did not listen on {self.url} in {timeout:.0f} s:\n{self.error_log()}")
            time.sleep(0.05)
        return self

    def _accepts(self) -> bool:
        """Whether something accepts TCP connections on the proxy's port."""
        try:
            with socket.create_connection((HOST, self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self, grace: float = 10.0) -> None:
        """Fast shutdown (SIGTERM), then SIGKILL if nginx is still there after `grace` seconds."""
        proc, self._proc = self._proc, None
        _RUNNING.discard(self)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)

    def __enter__(self) -> NginxProxy:
        """Start nginx."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop nginx."""
        self.stop()

    def access_log(self) -> list[dict[str, Any]]:
        """Every request logged so far: {affinity, upstream, status, uri, upgrade} (a WebSocket is logged on close)."""
        path = self.log_dir / "access.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def error_log(self, lines: int = 40) -> str:
        """The last `lines` lines of nginx's error log."""
        path = self.log_dir / "error.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


@atexit.register
def _stop_leftover_proxies() -> None:
    """Never leave an nginx behind, even when a test's teardown did not run."""
    for proxy in list(_RUNNING):
        with contextlib.suppress(Exception):
            proxy.stop(grace=3)
