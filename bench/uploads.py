"""Upload flood: what a client that uploads file after file does to a replica's memory.

    python -m bench.uploads                        # the four scenarios below, written to bench/results/<date>-uploads
    python -m bench.uploads --only proxy           # one of them

Two app replicas (`python -m attnviz.app.server app.py`, one cookie secret) run behind nginx with the project's site
file (bench/classload.py's Cluster). Simulated browsers open the self-attention page through the proxy (a session, its
cookies, its XSRF token), then PUT files to `/_stcore/upload_file/<their session>/<a new file id>`, each under a file
id of its own, as fast as 8 connections allow, as the issue's attacker did. The replica that holds the first session
is measured (resident memory, sampled every 50 ms); with several sessions, those on the other replica sit out.

- proxy: one session, 1,000 files of 0.99 MB through the proxy (the issue: 350 -> 1,842 MiB in 7.2 s).
- direct: the same straight to the replica, as on a single container without the proxy.
- large: 32 files of 50 MB straight to the replica (the issue: 1,952 MiB, still held 7 minutes later).
- sessions: 60 sessions (about 30 on the replica) upload 10 files of 4 MB each, straight to the replica: the
  server's total cap, past what one file per session keeps.

Afterwards every session must still run its page. (tests/browser/test_proxy.py runs the first scenario and then loads
a state file through the share box in Chromium.)

Results: bench/results/<date>-uploads.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.classload import Cluster
from bench.procstat import machine, rss_mb
from bench.proxyclient import XSRF_COOKIE, ProxyUser
from tests.browser.helpers import HOST, StreamlitServer
from tests.deploy.nginx_proxy import NginxProxy

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
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


def report(results: list[FloodResult], label: str) -> str:
    """The results as a Markdown table."""
    lines = [
        f"# Upload flood ({label})",
        "",
        f"Machine: {json.dumps(machine())}. Two replicas behind nginx; one replica measured (resident memory, MiB;",
        "peak and growth: the highest sample during the flood and the 2 s after it). Status 0: the server closed the",
        "connection while the file was still being sent (it answers 413 to the size it was told, then stops reading).",
        "",
        "| route | uploads x size | sessions | statuses | seconds | before | peak | after | growth | reruns |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        statuses = ", ".join(f"{k}x{v}" for k, v in r.statuses.items())
        lines.append(
            f"| {r.route} | {r.uploads:,} x {r.size / 1e6:.2f} MB | {r.sessions} | {statuses} | {r.seconds} | "
            f"{r.rss_before_mb:.0f} | {r.rss_peak_mb:.0f} | {r.rss_after_mb:.0f} | {r.growth_mb:+.0f} | "
            f"{'ok' if r.reruns_ok else 'FAILED'} |"
        )
    return "\n".join(lines) + "\n"


# name -> (route, uploads, bytes a file, sessions)
SCENARIOS: dict[str, tuple[str, int, int, int]] = {
    "proxy": ("proxy", 1000, ISSUE_SIZE, 1),
    "direct": ("direct", 1000, ISSUE_SIZE, 1),
    "large": ("direct", 32, 50_000_000, 1),
    "sessions": ("direct", 300, 4_000_000, 60),
}


async def main_async(names: list[str]) -> list[FloodResult]:
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        cluster = Cluster(Path(workdir), log_prefix="uploads").start()
        try:
            for name in names:
                assert cluster.proxy is not None
                results.append(await run_flood(cluster.proxy, cluster.replicas, *SCENARIOS[name]))
                print(report(results[-1:], name).splitlines()[-1], flush=True)
        finally:
            cluster.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", action="append", choices=list(SCENARIOS), help="only these scenarios (repeat)")
    parser.add_argument("--out", type=Path, default=None, help="results stem (default bench/results/<date>-uploads)")
    args = parser.parse_args()
    names = args.only or list(SCENARIOS)
    results = asyncio.run(main_async(names))
    stem = args.out or RESULTS / f"{dt.date.today().isoformat()}-uploads"
    stem.with_suffix(".md").write_text(report(results, ", ".join(names)), encoding="utf-8")
    payload: list[dict[str, Any]] = [asdict(r) | {"growth_mb": round(r.growth_mb, 1)} for r in results]
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
