"""The upload flood of issue 36: a client that uploads file after file into its session, each under a file id of
its own, and the replica's resident memory while it does (sampled every 50 ms).

    result = await run_flood(proxy, replicas, "proxy", uploads=1000, size=ISSUE_SIZE)
    result.growth_mb, result.statuses, result.reruns_ok

The sessions are opened through the proxy (testkit.proxyclient); the files go through it ("proxy") or straight to the
replica that holds the session ("direct"). bench/uploads.py runs the scenarios and writes their figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from testkit.nginx import NginxProxy
from testkit.procstat import rss_mb
from testkit.proxyclient import XSRF_COOKIE, ProxyUser
from testkit.server import HOST, StreamlitServer

ISSUE_SIZE = 1_013_000  # 0.99 MB a file, under nginx's default 1 MB body limit, as in the issue


def multipart(data: bytes, name: str = "state.json") -> tuple[str, bytes]:
    """(Content-Type, body) of a form with one file, as the browser's uploader sends it."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/json\r\n\r\n"
    ).encode()
    return f"multipart/form-data; boundary={boundary}", head + data + f"\r\n--{boundary}--\r\n".encode()


async def put_file(host: str, port: int, target: str, cookies: dict[str, str], data: bytes) -> int:
    """PUT one file to `target` (an upload URL) with the browser's cookies and XSRF token; the status (0: none)."""
    content_type, body = multipart(data)
    head = [
        f"PUT {target} HTTP/1.1",
        f"Host: {host}:{port}",
        "Cookie: " + "; ".join(f"{k}={v}" for k, v in cookies.items()),
        f"X-Xsrftoken: {cookies.get(XSRF_COOKIE, '')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        with contextlib.suppress(OSError):  # refused before the whole body went out (413, 429): read the answer
            await writer.drain()
        reply = await reader.read(-1)
    except OSError:
        return 0
    finally:
        writer.close()
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


async def flood(
    host: str, port: int, user: ProxyUser, uploads: int, size: int, concurrency: int = 8
) -> tuple[Counter[int], float]:
    """`uploads` files of `size` bytes into `user`'s session, each under a new file id; statuses and seconds."""
    data = b"x" * size
    statuses: Counter[int] = Counter()
    slots = asyncio.Semaphore(concurrency)
    prefix = f"{user.base_path}/_stcore/upload_file/{user.session_id}"

    async def one() -> None:
        async with slots:
            statuses[await put_file(host, port, f"{prefix}/{uuid.uuid4()}", user.cookies, data)] += 1

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(uploads)))
    return statuses, time.perf_counter() - started


class PeakMemory:
    """The highest resident memory of a process, sampled every 50 ms in a thread while in a `with` block."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = rss_mb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb(self.pid))


@dataclass
class FloodResult:
    """One flood: where it went, what it got, and the replica's memory (MiB) before, at its peak and after."""

    route: str
    uploads: int
    size: int
    sessions: int
    statuses: dict[str, int]
    seconds: float
    rss_before_mb: float
    rss_peak_mb: float
    rss_after_mb: float
    reruns_ok: bool
    notes: list[str] = field(default_factory=list)

    @property
    def growth_mb(self) -> float:
        """How much the replica's memory grew from before the flood to its peak."""
        return self.rss_peak_mb - self.rss_before_mb


def replica_of(proxy: NginxProxy, replicas: list[StreamlitServer], user: ProxyUser) -> StreamlitServer:
    """The replica that holds `user`'s session (the one nginx's log names for its affinity cookie)."""
    answered = [e["upstream"].split(", ")[-1] for e in proxy.access_log() if e["affinity"] == user.affinity]
    return next(r for r in replicas if f"{HOST}:{r.port}" == answered[-1])


async def run_flood(
    proxy: NginxProxy,
    replicas: list[StreamlitServer],
    route: str,
    uploads: int,
    size: int,
    sessions: int = 1,
    concurrency: int = 8,
    settle: float = 2.0,
) -> FloodResult:
    """`sessions` sessions (opened through `proxy`) upload `uploads` files of `size` bytes between them, through the
    proxy (`route` "proxy") or straight to the replica that holds them ("direct"); the first session's replica is
    measured (with several sessions, only those on it upload)."""
    users = []
    for _ in range(sessions):
        users.append(ProxyUser(proxy.url, "Self_attention", name="uploader"))
        await users[-1].open()
    replica = replica_of(proxy, replicas, users[0])
    users = [u for u in users if replica_of(proxy, replicas, u) is replica]
    assert replica.pid is not None and replica.port is not None
    await asyncio.sleep(settle)
    before = rss_mb(replica.pid)
    host, port = (HOST, proxy.port) if route == "proxy" else (HOST, replica.port)
    statuses: Counter[int] = Counter()
    seconds = 0.0
    with PeakMemory(replica.pid) as memory:
        for index, user in enumerate(users):
            share = uploads // len(users) + (index < uploads % len(users))
            got, took = await flood(host, port, user, share, size, concurrency)
            statuses += got
            seconds += took
        await asyncio.sleep(settle)
    after = rss_mb(replica.pid)
    reruns_ok = True
    for user in users:
        try:
            await user.rerun(timeout=60)
        except Exception:  # a page that no longer works is what this records
            reruns_ok = False
        await user.close()
    return FloodResult(
        route=route,
        uploads=uploads,
        size=size,
        sessions=len(users),
        statuses={str(k): v for k, v in sorted(statuses.items())},
        seconds=round(seconds, 2),
        rss_before_mb=round(before, 1),
        rss_peak_mb=round(memory.peak, 1),
        rss_after_mb=round(after, 1),
        reruns_ok=reruns_ok,
    )
