"""Profile a page under load: py-spy samples the real server while simulated users move a control.

    python -m bench.profile self --users 10 --seconds 15

Writes the collapsed stacks (open them in speedscope or flamegraph.pl) and prints the functions that hold the most
samples, inclusive and by their own lines, so the cost of a rerun can be read off directly.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import sys
from pathlib import Path

from bench.loadclient import run_load
from bench.scenarios import SCENARIOS, Scenario, start_server

RESULTS = Path(__file__).resolve().parent / "results" / "profiles"


def top_functions(collapsed: Path, limit: int = 30) -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
    """(inclusive, self) sample counts per function from py-spy's collapsed stacks, and the total."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        for name in set(frames):
            inclusive[name] += count
        own[frames[-1]] += count
    return inclusive.most_common(limit), own.most_common(limit), total


def profile(scenario: Scenario, users: int, seconds: float, out: Path) -> Path:
    """Serve the scenario's page, sample it with py-spy while `users` users interact, return the stacks file."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out.parent.mkdir(parents=True, exist_ok=True)
    with start_server(scenario) as server:
        # Warm the page up (imports, caches) before sampling.
        asyncio.run(run_load(server.url, scenario.page, scenario.control, 1, 2.0, query=scenario.query))
        command = [
            py_spy,
            "record",
            "--pid",
            str(server.pid),
            "--format",
            "raw",
            "--rate",
            "200",
            "--nonblocking",
            "--gil",
        ]
        spy = subprocess.Popen(
            [*command, "--output", str(out), "--duration", str(int(seconds) + 2)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        result = asyncio.run(
            run_load(server.url, scenario.page, scenario.control, users, seconds, query=scenario.query)
        )
        _, err = spy.communicate(timeout=seconds + 60)
        if spy.returncode != 0:
            raise RuntimeError(f"py-spy failed: {err.decode(errors='replace')[-2000:]}")
    print(result.summary())
    return out


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--limit", type=int, default=35)
    args = parser.parse_args()
    out = profile(SCENARIOS[args.scenario], args.users, args.seconds, RESULTS / f"{args.scenario}.collapsed")
    inclusive, own, total = top_functions(out, args.limit)
    print(f"\n{total} samples; stacks in {out}\n\ninclusive:")
    for name, count in inclusive:
        print(f"{100 * count / total:6.1f}%  {name}")
    print("\nown time:")
    for name, count in own:
        print(f"{100 * count / total:6.1f}%  {name}")


if __name__ == "__main__":
    main()
