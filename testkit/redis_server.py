"""A real Redis (Debian's redis-server) on 127.0.0.1 for the class store's tests, with its data in a folder of its own.

    server = RedisServer(tmp_path)
    server.start()            # a free port, append-only file, waits until it answers PING
    server.url                # redis://127.0.0.1:<port>/0
    server.stop()             # SIGTERM (Redis writes what it holds, then exits); server.kill() for SIGKILL
    server.start()            # again on the same folder and port: what was written is read back

Persistence as the deployment sets it (`--appendonly yes`), with every write flushed to disk before Redis answers
(`--appendfsync always`) and no snapshots (`--save ""`), so that a test can kill Redis and count what survived.
Nothing is installed or started system-wide (scripts/system-deps.sh installs the package without its service).
"""

from __future__ import annotations

import atexit
import shutil
import signal
import socket
import subprocess
import time
import weakref
from pathlib import Path

from testkit.server import HOST, free_port

_RUNNING: weakref.WeakSet[RedisServer] = weakref.WeakSet()


def redis_server_binary() -> str:
    """Path of Debian's redis-server (in /usr/bin)."""
    return shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """One redis-server process at a time on `folder` and a port chosen once (kept across restarts)."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = Path(folder)
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start Redis and wait until it answers PING (after reading back its append-only file)."""
        assert self.process is None, "already running"
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [
            redis_server_binary(),
            "--bind", HOST,
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        _RUNNING.add(self)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
                self.kill()
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")
            time.sleep(0.02)
        return self

    def answers(self) -> bool:
        """Whether Redis answers PING now (and is done loading its data: it answers -LOADING until then)."""
        try:
            with socket.create_connection((HOST, self.port), timeout=0.5) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Send `sig` and wait for the process to end (SIGTERM: Redis flushes and exits cleanly)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            if sig != signal.SIGKILL:
                self.process.send_signal(signal.SIGCONT)  # a paused Redis acts on the signal only once it runs
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """End Redis at once, as a crash would (SIGKILL)."""
        self.stop(signal.SIGKILL)

    def pause(self) -> None:
        """Freeze Redis (SIGSTOP): it keeps its port open and accepts connections, but answers nothing."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Undo pause() (SIGCONT)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()
