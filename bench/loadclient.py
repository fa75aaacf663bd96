"""A browserless load client: simulated students speaking Streamlit's own websocket protocol.

Each simulated user (testkit.wire's `SimulatedUser`) opens `/_stcore/stream`, runs the page once (as a browser does
on load), then changes one control again and again, waiting each time for the script to finish: exactly the traffic
of a student moving a slider. Messages are Streamlit's protobufs (`streamlit.proto`), so the server cannot tell us
from a browser, except that we never render anything. Here: many of them at once, and their latencies in a window.

    python -m bench.loadclient --url http://127.0.0.1:8501 --page Self_attention --key w:self:temperature \
        --values 0.5,1,2 --kind double --users 10 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from testkit.wire import WIDGET_KINDS, Control, SimulatedUser


@dataclass
class RunResult:
    """What the simulated users measured in the timed window."""

    users: int
    seconds: float
    latencies: list[float] = field(default_factory=list)  # seconds, one per completed rerun in the window
    errors: list[str] = field(default_factory=list)
    first_run: list[float] = field(default_factory=list)  # seconds for each user's first page load

    @property
    def reruns_per_second(self) -> float:
        """Completed reruns per second of the window."""
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        """The q-th percentile latency in milliseconds (nearest rank), NaN if nothing completed."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
        return ordered[index] * 1000

    def summary(self) -> dict[str, float | int]:
        """Plain numbers for tables and JSON."""
        return {
            "users": self.users,
            "seconds": round(self.seconds, 2),
            "reruns": len(self.latencies),
            "reruns_per_s": round(self.reruns_per_second, 1),
            "p50_ms": round(self.percentile(50), 1),
            "p95_ms": round(self.percentile(95), 1),
            "p99_ms": round(self.percentile(99), 1),
            "mean_ms": round(statistics.fmean(self.latencies) * 1000, 1) if self.latencies else float("nan"),
            "errors": len(self.errors),
        }


async def run_load(
    base_url: str,
    page: str,
    control: Control,
    users: int,
    seconds: float,
    *,
    query: str = "",
    warmup_reruns: int = 3,
    timeout: float = 60.0,
    seed: int = 0,
    on_window: Callable[[str], None] | None = None,
) -> RunResult:
    """Run `users` simulated users against one page for `seconds` after their warm-up; return the measurements."""
    result = RunResult(users=users, seconds=seconds)
    sims = [SimulatedUser(base_url, page, query, control, random.Random(seed + i)) for i in range(users)]
    window: dict[str, float] = {}
    ready = asyncio.Barrier(users + 1)  # everyone warmed up ...
    go = asyncio.Event()  # ... and the window is set

    async def one_user(sim: SimulatedUser) -> None:
        try:
            result.first_run.append(await asyncio.wait_for(sim.open(), timeout))
            for _ in range(warmup_reruns):
                await asyncio.wait_for(sim.change(), timeout)
        except Exception as exc:  # a user that cannot even load counts as an error, never as a silent pass
            result.errors.append(f"warm-up: {type(exc).__name__}: {exc}")
            await ready.wait()
            return
        await ready.wait()
        await go.wait()
        while time.perf_counter() < window["end"]:
            try:
                latency = await asyncio.wait_for(sim.change(), timeout)
            except Exception as exc:
                result.errors.append(f"{type(exc).__name__}: {exc}")
                break
            if time.perf_counter() <= window["end"]:
                result.latencies.append(latency)

    tasks = [asyncio.create_task(one_user(sim)) for sim in sims]
    try:
        await ready.wait()
        window["start"] = time.perf_counter()
        window["end"] = window["start"] + seconds
        if on_window:
            on_window("start")
        go.set()
        await asyncio.gather(*tasks)
        if on_window:
            on_window("end")
    finally:
        await asyncio.gather(*(sim.close() for sim in sims))
    return result


def parse_values(text: str, kind: str) -> tuple[float | int | str | bool, ...]:
    """Comma-separated values for --values, converted to the widget kind."""
    convert = {"double": float, "double_array": float, "int": int, "string": str, "bool": lambda s: s == "true"}
    return tuple(convert[kind](part) for part in text.split(","))


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point for one ad-hoc load run against a running server."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8501")
    parser.add_argument("--page", default="", help="URL path name of the page, empty for the main page")
    parser.add_argument("--query", default="")
    parser.add_argument("--key", required=True, help="the widget's key, e.g. w:self:temperature")
    parser.add_argument("--kind", default="double", choices=WIDGET_KINDS)
    parser.add_argument("--values", required=True)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    control = Control(args.key, args.kind, parse_values(args.values, args.kind))
    result = asyncio.run(run_load(args.url, args.page, control, args.users, args.seconds, query=args.query))
    print(result.summary())
    for error in result.errors[:5]:
        print("error:", error)


if __name__ == "__main__":
    main()
