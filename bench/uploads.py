"""Upload flood: what a client that uploads file after file does to a replica's memory.

    python -m bench.uploads                        # the four scenarios below, written to bench/results/<date>-uploads
    python -m bench.uploads --only proxy           # one of them

Two app replicas (`python -m attnviz.app.server app.py`, one cookie secret) run behind nginx with the project's site
file (the class load test's Cluster, bench/classload/cluster.py). Simulated browsers open the self-attention page
through the proxy (a session, its cookies, its XSRF token), then PUT files to
`/_stcore/upload_file/<their session>/<a new file id>`, each under a file id of its own, as fast as 8 connections
allow, as the issue's attacker did. The replica that holds the first session is measured (resident memory, sampled
every 50 ms); with several sessions, those on the other replica sit out.

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
import datetime as dt
import json
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.classload.cluster import Cluster
from testkit.procstat import machine
from testkit.uploads import ISSUE_SIZE, FloodResult, run_flood

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


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
