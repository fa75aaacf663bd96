"""Memory one open session holds, per page: what sizes a pod (deploy/k8s/README.md, "What one replica holds").

    python -m bench.sessions --sessions 100

One replica (`python -m attnviz.app.server app.py`, the class settings). Each page is warmed up by one session, then
`--sessions` sessions open it one after another, each moving the page's control once (a model-page session types a
sentence of its own, ~15 WordPieces; a "model128" session opens the model page with one shared 128-token sentence and
toggles a view control), and stay connected. The replica's RSS before and after, divided by the
sessions, is what one session of that page holds; the pages are measured one after another in one process, so the
last line is a replica holding all of them at once. Sessions are opened one at a time: this measures what sessions
keep, not what concurrent runs need while they compute (bench/classload/ measures that).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from bench.scenarios import SCENARIOS
from testkit.procstat import machine, rss_mb
from testkit.server import StreamlitServer
from testkit.wire import Control, SimulatedUser

_WORDS = "the cat sat on a mat while dogs ran past old trees near quiet rivers and children read books about stars"
WORDS = _WORDS.split()
SENTENCE = Control("w:model:sentence", "string", ())


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12))


async def open_sessions(url: str, page: str, count: int, rng: random.Random) -> list[SimulatedUser]:
    """`count` connected sessions of `page`, each after one change of its control."""
    scenario = SCENARIOS["model" if page == "model128" else page]
    users = []
    for _ in range(count):
        if page == "model":
            control = Control(SENTENCE.key, "string", (sentence(rng),))
            user = SimulatedUser(url, scenario.page, "", control, rng)
        else:
            user = SimulatedUser(url, scenario.page, scenario.query, scenario.control, rng)
        await user.open()
        await user.change()
        users.append(user)
    return users


async def measure(server: StreamlitServer, sessions: int, settle: float) -> list[tuple[str, float, float]]:
    rng = random.Random(0)
    rows = []
    pages = ("self", "cross", "kernel", "model", "model128")
    for page in pages:  # one session per page first: torch, the model and each page's imports are loaded
        for user in await open_sessions(server.url, page, 1, rng):
            await user.close()
    await asyncio.sleep(settle)
    held: list[SimulatedUser] = []
    for page in pages:
        before = rss_mb(server.pid)
        held += await open_sessions(server.url, page, sessions, rng)
        await asyncio.sleep(settle)
        rows.append((page, before, rss_mb(server.pid)))
    for user in held:
        await user.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions per page")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before each reading")
    args = parser.parse_args()
    options = {"server.headless": True, "server.fileWatcherType": "none"}
    with StreamlitServer(server_options=options, log_name="bench-sessions") as server:
        started = rss_mb(server.pid)
        began = time.monotonic()
        rows = asyncio.run(measure(server, args.sessions, args.settle))
        took = time.monotonic() - began
    m = machine()
    print(
        f"{m['cpu']}, {m['cores']} cores, {m['memory']}; {args.sessions} sessions per page,"
        f" all connected at the end ({took:.0f} s)"
    )
    print(f"replica at start: {started:.0f} MiB")
    print("| page | RSS before, MiB | RSS after, MiB | per session, MiB |")
    print("|---|---|---|---|")
    for page, before, after in rows:
        print(f"| {page} | {before:.0f} | {after:.0f} | {(after - before) / args.sessions:.2f} |")


if __name__ == "__main__":
    main()
