"""A real nginx (Debian's package) on 127.0.0.1 in front of app replicas, with deploy/nginx/attnviz.conf as it is.

nginx runs as the current user from a private prefix in a temporary directory: a small nginx.conf of its own
(pid file, logs, temp paths, an access log that records which replica answered each request, the JavaScript module
and the affinity secret's environment variable, as Compose's deploy/nginx/compose/nginx.conf has them) includes the
repository's site file, next to the files that site file expects: attnviz/listen.conf and attnviz/upstream.conf
(written here), attnviz/affinity.js, attnviz/links.js and attnviz/link-too-long.html (the repository's). Nothing is
installed or started system-wide.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SITE_CONF = REPO_ROOT / "deploy" / "nginx" / "attnviz.conf"
COMPOSE_DIR = REPO_ROOT / "deploy" / "nginx" / "compose"
AFFINITY_JS = COMPOSE_DIR / "affinity.js"
# The files of Compose's attnviz/ folder that the site file reads as they are (listen.conf and upstream.conf are
# written for each proxy).
SITE_FILES = (AFFINITY_JS, COMPOSE_DIR / "links.js", COMPOSE_DIR / "link-too-long.html")
# Debian's libnginx-mod-http-js (scripts/system-deps.sh installs it).
JS_MODULE = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")
SECRET_VARIABLE = "ATTNVIZ_AFFINITY_SECRET"
# How nginx treats a replica that fails (max_fails, fail_timeout): Compose's own server line's parameters, so the
# proxy under test behaves as the deployed one.
SERVER_PARAMETERS = re.search(
    r"^server \S+ ([^;]*);", (COMPOSE_DIR / "upstream.conf").read_text(encoding="utf-8"), re.MULTILINE
).group(1)
HOST = "127.0.0.1"
_RUNNING: weakref.WeakSet[NginxProxy] = weakref.WeakSet()

# One JSON object per request: the affinity the site file computed, the replica that answered, the client
# connection's serial number.
_MAIN_CONF = """\
load_module "{js_module}";
env {secret_variable};
{user}worker_processes 1;
worker_rlimit_nofile 8192;
pid "{prefix}/nginx.pid";
error_log "{prefix}/logs/error.log" info;
daemon off;

events {{
    worker_connections 4096;
}}

http {{
    client_body_temp_path "{prefix}/tmp/client_body";
    proxy_temp_path "{prefix}/tmp/proxy";
    fastcgi_temp_path "{prefix}/tmp/fastcgi";
    uwsgi_temp_path "{prefix}/tmp/uwsgi";
    scgi_temp_path "{prefix}/tmp/scgi";
    log_format attnviz escape=json
        '{{"affinity":"$attnviz_affinity","upstream":"$upstream_addr","status":"$status",'
        '"uri":"$request_uri","upgrade":"$http_upgrade","connection":"$connection"}}';
    access_log "{prefix}/logs/access.log" attnviz;
    include "{site}";
}}
"""


def nginx_binary() -> str:
    """Path of the nginx executable (Debian installs it in /usr/sbin, which a user's PATH may lack)."""
    return shutil.which("nginx") or "/usr/sbin/nginx"


def user_directive() -> str:
    """`user` line for a root master process, so workers stay the current user (ignored otherwise, so omitted)."""
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"


class NginxProxy:
    """nginx on HOST:`port` proxying to `upstreams` ("host:port" each); start()/stop() or a context manager."""

    def __init__(
        self,
        upstreams: Sequence[str],
        port: int,
        workdir: str | os.PathLike[str],
        site: Path = SITE_CONF,
        affinity_secret: str | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """Configure (but do not start) a proxy whose files live under `workdir`; `site` is the site file (the
        repository's, or an edited copy of it); `affinity_secret` signs the affinity cookies (default: a random
        one; "" starts nginx without any); `tls` (certificate, key) makes nginx terminate HTTPS itself."""
        self.upstreams = list(upstreams)
        self.site = site
        self.affinity_secret = secrets.token_hex(32) if affinity_secret is None else affinity_secret
        self.tls = tls
        self.port = port
        self.prefix = Path(workdir).resolve()
        self.conf_path = self.prefix / "conf" / "nginx.conf"
        self.log_dir = self.prefix / "logs"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the proxy, without a trailing slash."""
        return f"{'https' if self.tls else 'http'}://{HOST}:{self.port}"

    def url_for(self, path: str = "") -> str:
        """URL of `path` (e.g. "attnviz/Self_attention?p=x") through the proxy."""
        return f"{self.url}/{path.lstrip('/')}"

    def write_config(self) -> Path:
        """Write nginx.conf (including the site file) and attnviz/{listen,upstream}.conf; copy the other site files."""
        if not JS_MODULE.exists():
            raise RuntimeError(f"{JS_MODULE} is missing: run `bash scripts/system-deps.sh` (libnginx-mod-http-js)")
        site_dir = self.conf_path.parent / "attnviz"
        for folder in (site_dir, self.log_dir, self.prefix / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        listen = f"listen {HOST}:{self.port};\n"
        if self.tls:
            certificate, key = self.tls
            listen = f'listen {HOST}:{self.port} ssl;\nssl_certificate "{certificate}";\nssl_certificate_key "{key}";\n'
        (site_dir / "listen.conf").write_text(listen)
        servers = "".join(f"server {upstream} {SERVER_PARAMETERS};\n" for upstream in self.upstreams)
        (site_dir / "upstream.conf").write_text(servers)
        for path in SITE_FILES:
            shutil.copyfile(path, site_dir / path.name)
        main = _MAIN_CONF.format(
            js_module=JS_MODULE,
            secret_variable=SECRET_VARIABLE,
            user=user_directive(),
            prefix=self.prefix,
            site=self.site,
        )
        self.conf_path.write_text(main)
        return self.conf_path

    def _env(self) -> dict[str, str]:
        """nginx's environment: this process's, with the affinity secret (or without any, if it is "")."""
        env = {k: v for k, v in os.environ.items() if k != SECRET_VARIABLE}
        return {**env, SECRET_VARIABLE: self.affinity_secret} if self.affinity_secret else env

    def _argv(self, *extra: str) -> list[str]:
        """nginx's command line for this prefix (-e: errors before the config is read go there too)."""
        error_log = str(self.log_dir / "error.log")
        return [nginx_binary(), "-p", f"{self.prefix}/", "-c", str(self.conf_path), "-e", error_log, *extra]

    def check(self) -> subprocess.CompletedProcess[str]:
        """`nginx -t` on the written configuration (stdout and stderr together in .stdout)."""
        self.write_config()
        return subprocess.run(
            self._argv("-t"),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
            env=self._env(),
        )

    @property
    def running(self) -> bool:
        """Whether the nginx master process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 15.0) -> NginxProxy:
        """Write the configuration, start nginx in the foreground and wait until it accepts connections."""
        self.write_config()
        self._proc = subprocess.Popen(
            self._argv(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self._env(),
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
        """Every request logged so far: {affinity, upstream, status, uri, upgrade, connection} (a WebSocket is logged
        when it closes)."""
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


class StandInReplica:
    """An app replica's stand-in on HOST, fast enough for a classroom's worth of requests (asyncio, in a thread).

    Every request gets 200, an `X-Replica: <port>` header and "<port> <path>" as its body, on a keep-alive
    connection (a request body, as an upload has, is read and dropped); a path ending in /slow answers after `slow`
    seconds (a request held in flight); a path under /media/ answers 404 unless it is in `media` (the files a
    session on this replica made); a WebSocket upgrade gets 101 (with X-Replica) and is held open until the proxy
    closes it. start()/stop() or a context manager; started again after stop(), it listens on the same port (a
    replica restarted).
    """

    def __init__(self, slow: float = 3.0) -> None:
        """Configure (but do not start) a stand-in; `slow` is how long /slow requests wait."""
        self.slow = slow
        self.media: set[str] = set()
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """host:port, as upstream.conf and nginx's log name it."""
        return f"{HOST}:{self.port}"

    def start(self) -> StandInReplica:
        """Listen on a free port and serve in a background thread."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the stand-in replica did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(
            asyncio.start_server(self._serve, HOST, self.port, backlog=4096, limit=1 << 20)
        )
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks))
        loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        replica = f"X-Replica: {self.port}\r\n".encode()
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                path = head.split(" ", 2)[1]
                if re.search(r"^upgrade:\s*websocket\s*$", head, re.IGNORECASE | re.MULTILINE):
                    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
                    writer.write(replica + b"\r\n")
                    await writer.drain()
                    while await reader.read(65536):
                        pass
                    return
                length = re.search(r"^content-length:\s*(\d+)\s*$", head, re.IGNORECASE | re.MULTILINE)
                if length:
                    await reader.readexactly(int(length.group(1)))
                if path.endswith("/slow"):
                    await asyncio.sleep(self.slow)
                body = f"{self.port} {path}".encode()
                status = b"404 Not Found" if "/media/" in path and path not in self.media else b"200 OK"
                writer.write(
                    b"HTTP/1.1 " + status + b"\r\n" + replica + f"Content-Length: {len(body)}\r\n\r\n".encode()
                )
                writer.write(body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        """Stop serving (open connections are dropped)."""
        loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)

    def __enter__(self) -> StandInReplica:
        """Start serving."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop serving."""
        self.stop()


@atexit.register
def _stop_leftover_proxies() -> None:
    """Never leave an nginx behind, even when a test's teardown did not run."""
    for proxy in list(_RUNNING):
        with contextlib.suppress(Exception):
            proxy.stop(grace=3)
