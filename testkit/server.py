"""A Streamlit server process for tests and benchmarks: `python -m attnviz.app.server` (the app's own start, as
`make run` and the image use it) on 127.0.0.1 and a free port, with its log under test-artifacts/logs/.

    with StreamlitServer("app.py") as server:
        server.url_for("Self_attention?T=0.5")

Nothing here needs a browser: the websocket clients (testkit.wire, testkit.proxyclient) and the benchmarks use it as
the browser tests do (testkit.browser).

A server keeps its live classes (ATTNVIZ_CLASS_STORE) in a temporary SQLite file that every server of this process
shares, as the replicas of one deployment share a store, unless its `env` or the environment names a store: a test
never writes to the user's data folder.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from testkit.nginx import NginxProxy

REPO_ROOT: Path = Path(__file__).resolve().parents[1]
ARTIFACTS_DIR: Path = REPO_ROOT / "test-artifacts"
LOG_DIR: Path = ARTIFACTS_DIR / "logs"
HOST = "127.0.0.1"

_LIVE_SERVERS: weakref.WeakSet[StreamlitServer] = weakref.WeakSet()
CLASS_STORE_VARIABLE = "ATTNVIZ_CLASS_STORE"
_class_folder: list[Path] = []  # the temporary folder of this process's class store, made at the first start
_class_folder_lock = threading.Lock()  # servers may start at the same time (start_together)


def default_class_store() -> str:
    """The class store of a server whose environment names none: one SQLite file per process, deleted at exit."""
    with _class_folder_lock:
        if not _class_folder:
            _class_folder.append(Path(tempfile.mkdtemp(prefix="attnviz-classes-")))
            atexit.register(shutil.rmtree, _class_folder[0], True)
    return f"sqlite:///{_class_folder[0] / 'classes.sqlite3'}"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def slug(text: str) -> str:
    """Turn any text (a test id, a script name) into a safe file-name stem."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:150] or "unnamed"


def _option_args(options: Mapping[str, object]) -> list[str]:
    """Turn {"maxUploadSize": 5, "client.toolbarMode": "minimal"} into Streamlit `--section.option value` flags."""
    args: list[str] = []
    for key, value in options.items():
        name = key.removeprefix("--")
        if "." not in name:
            name = f"server.{name}"
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += [f"--{name}", text]
    return args


class StreamlitServerError(RuntimeError):
    """The Streamlit server did not come up (or died); the message carries the log tail."""


class StreamlitServer:
    """One `streamlit run` child process on 127.0.0.1 and a free port; use as a context manager or start()/stop()."""

    def __init__(
        self,
        script: str | os.PathLike[str] = "app.py",
        *,
        cwd: str | os.PathLike[str] | None = None,
        server_options: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        log_name: str | None = None,
        python: str = sys.executable,
    ) -> None:
        """Configure (but do not start) a server for `script`, resolved against `cwd` (default: the repo root)."""
        self.cwd: Path = Path(cwd).resolve() if cwd is not None else REPO_ROOT
        script_path = Path(script)
        self.script: Path = script_path if script_path.is_absolute() else self.cwd / script_path
        self.server_options: dict[str, object] = dict(server_options or {})
        self.env: dict[str, str] = dict(env or {})
        self.startup_timeout = startup_timeout
        self.log_name = log_name
        self.python = python
        self.port: int | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    # ----- lifecycle -------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """Process id of the running server (None when stopped)."""
        return self._proc.pid if self.running and self._proc is not None else None

    @property
    def url(self) -> str:
        """Base URL of the app, without a trailing slash (e.g. http://127.0.0.1:43117)."""
        if self.port is None:
            raise StreamlitServerError("server not started")
        base = str(self.server_options.get("baseUrlPath", "")).strip("/")
        return f"http://{HOST}:{self.port}" + (f"/{base}" if base else "")

    def url_for(self, path: str = "") -> str:
        """URL of a page or endpoint below the app's base URL, e.g. url_for("explore?preset=causal")."""
        return f"{self.url}/{path.lstrip('/')}" if path else f"{self.url}/"

    def command(self) -> list[str]:
        """The argv that start() runs (without the port, which is chosen at start)."""
        return [
            self.python,
            "-m",
            "attnviz.app.server",  # `streamlit run` with TCP_NODELAY, as `make run` and the image start the app
            str(self.script),
            "--server.headless",
            "true",
            "--server.fileWatcherType",
            "none",
            "--server.address",
            HOST,
            "--browser.gatherUsageStats",
            "false",
            *_option_args(self.server_options),
        ]

    def start(self) -> StreamlitServer:
        """Launch the process and block until /_stcore/health answers "ok" (retrying once on a port clash)."""
        if self.running:
            return self
        if not self.script.is_file():
            raise StreamlitServerError(f"Streamlit script not found: {self.script}")
        last_error: StreamlitServerError | None = None
        for _attempt in range(3):
            try:
                self._launch()
                return self
            except StreamlitServerError as exc:
                last_error = exc
                if "already in use" not in str(exc):
                    raise
        assert last_error is not None
        raise last_error

    def restart(self) -> StreamlitServer:
        """Start a stopped (or killed) server again on the same port, as a replica's supervisor would."""
        if self.running:
            return self
        if self._log_file is not None:
            self._log_file.close()
        self._launch(port=self.port)
        return self

    def _launch(self, port: int | None = None) -> None:
        """Start one process on `port` (default: a fresh one) and wait for health; raise StreamlitServerError."""
        self.port = port or free_port()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        stem = slug(self.log_name or self.script.stem)
        self.log_path = LOG_DIR / f"streamlit-{stem}-{self.port}.log"
        self._log_file = self.log_path.open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **self.env}
        if not env.get(CLASS_STORE_VARIABLE, "").strip():
            env[CLASS_STORE_VARIABLE] = default_class_store()
        started = time.monotonic()
        self._proc = subprocess.Popen(
            [*self.command(), "--server.port", str(self.port)],
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _LIVE_SERVERS.add(self)
        try:
            self._wait_healthy(started)
        except StreamlitServerError:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_healthy(self, started: float) -> None:
        """Poll the health endpoint until "ok", the process dies, or the startup timeout passes."""
        health = f"{self.url}/_stcore/health"
        deadline = started + self.startup_timeout
        while True:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise StreamlitServerError(
                    f"Streamlit exited with code {code} before becoming healthy ({self.script}).\n"
                    f"--- log tail ({self.log_path}) ---\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(health, timeout=2) as resp:
                    if resp.status == 200 and resp.read().decode().strip() == "ok":
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise StreamlitServerError(
                    f"Streamlit did not answer {health} with 'ok' within {self.startup_timeout:.0f} s.\n"
                    f"--- log tail ({self.log_path}) ---\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def log_tail(self, lines: int = 60) -> str:
        """The last `lines` lines of the server log (empty if there is none yet)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        """Terminate the process, kill it if it is still alive after `grace` seconds, and close the log."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=grace)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        _LIVE_SERVERS.discard(self)

    def kill(self) -> None:
        """SIGKILL the process (a replica that dies without a word), leaving the port free for restart()."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        _LIVE_SERVERS.discard(self)

    def __enter__(self) -> StreamlitServer:
        """Start the server."""
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the server."""
        self.stop()

    def __repr__(self) -> str:
        """Short description for test output."""
        return f"StreamlitServer(script={str(self.script)!r}, port={self.port}, running={self.running})"


def start_together(servers: list[StreamlitServer]) -> list[StreamlitServer]:
    """Start `servers` at the same time (each waits for its own health in a thread): two replicas come up in about
    the time of one. If one fails, the others are stopped and its error is raised."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(servers) or 1) as pool:
        results = [pool.submit(server.start) for server in servers]
        errors = [result.exception() for result in results]
    failed = next((error for error in errors if error is not None), None)
    if failed is not None:
        for server in servers:
            server.stop()
        raise failed
    return servers


@contextlib.contextmanager
def replicas_behind_nginx(
    folder: Path, env: Mapping[str, str], options: Mapping[str, object] | None = None, log_name: str = "replica"
) -> Iterator[tuple[list[StreamlitServer], NginxProxy]]:
    """Two replicas of app.py started together (same `env` and server options), and a real nginx in front of them."""
    replicas = [
        StreamlitServer("app.py", env=env, server_options=options, log_name=f"{log_name}-{i}") for i in range(2)
    ]
    start_together(replicas)
    try:
        proxy = NginxProxy([f"{HOST}:{r.port}" for r in replicas], free_port(), folder / "nginx").start()
        try:
            yield replicas, proxy
        finally:
            proxy.stop()
    finally:
        for replica in replicas:
            replica.stop()


@atexit.register
def _stop_leftover_servers() -> None:
    """Never leave a Streamlit child behind, even if a fixture's teardown did not run."""
    for server in list(_LIVE_SERVERS):
        with contextlib.suppress(Exception):
            server.stop(grace=3)


def active_sessions(server: StreamlitServer) -> int:
    """The server's own count of connected sessions (Streamlit's /_stcore/metrics, OpenMetrics text); -1 when the
    server does not answer (it was killed)."""
    try:
        with urllib.request.urlopen(server.url_for("_stcore/metrics"), timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return -1
    match = re.search(r"^active_sessions (\d+)$", text, re.MULTILINE)
    assert match, f"no active_sessions gauge in {server.url_for('_stcore/metrics')}"
    return int(match.group(1))
