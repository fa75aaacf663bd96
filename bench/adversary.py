"""Two requests that used to take a server down, measured on a real server.

    python -m bench.adversary crafted     # the crafted self-attention link, 1 and 3 sessions at once
    python -m bench.adversary sentences   # 60 sessions, each with its own 254-token sentence on the model page

`crafted`: the link `/Self_attention?s=<512 different CJK characters>&dim=64&h=8&pr=random&sc=additive&nh=256
&cmp=concat_tanh` opened by 1, then 3 simulated sessions at once while a student on the default page changes the
temperature 30 times; prints the crafted runs' seconds, the student's latency against the same student alone, and
the server's peak RSS (sampled every 20 ms).

`sentences`: 60 sessions open the pretrained-model page, each with a different sentence of 254 WordPieces, one
after another, and disconnect; prints the server's RSS every 10 sessions and 30 s after the last.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import threading
import time
from urllib.parse import urlencode

from testkit.procstat import rss_mb
from testkit.server import StreamlitServer
from testkit.wire import Control, SimulatedUser

CJK = "".join(chr(0x4E00 + 7 * i) for i in range(512))
CRAFTED = {"s": CJK, "dim": "64", "h": "8", "pr": "random", "sc": "additive", "nh": "256", "cmp": "concat_tanh"}
WORDS = "the cat sat on a mat while dogs ran over green hills and birds sang songs of old kings who ruled far lands"
NOTHING = Control("none", "double", (0.0,))  # sessions that only open a page
TEMPERATURE = Control("w:self:temperature", "double", tuple(x / 10 for x in range(1, 40)))


def server() -> StreamlitServer:
    return StreamlitServer(server_options={"server.headless": True, "server.fileWatcherType": "none"})


class PeakRss:
    """The highest RSS of a process, sampled every 20 ms in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.02)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


async def crafted() -> None:
    with server() as srv:
        student = SimulatedUser(srv.url, "Self_attention", "", TEMPERATURE, random.Random(0))
        await student.open()
        alone = [await student.change() for _ in range(30)]
        base = rss_mb(srv.pid)

        async def adversary(seed: int) -> float:
            user = SimulatedUser(srv.url, "Self_attention", urlencode(CRAFTED), NOTHING, random.Random(seed))
            seconds = await user.open()
            await user.close()
            return seconds

        async def changes() -> list[float]:
            return [await student.change() for _ in range(30)]

        for count in (1, 3):
            peak = PeakRss(srv.pid)
            *runs, latencies = await asyncio.gather(*(adversary(i) for i in range(count)), changes())
            print(
                f"{count} crafted session(s) at once: their runs {', '.join(f'{t:.2f}' for t in runs)} s;"
                f" the student's p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {p95(latencies) * 1000:.0f} ms,"
                f" max {max(latencies) * 1000:.0f} ms (alone: p50 {statistics.median(alone) * 1000:.0f} ms,"
                f" p95 {p95(alone) * 1000:.0f} ms); RSS {base:.0f} MB before, peak {peak.stop():.0f} MB"
            )
        await student.close()


def sentence(seed: int, tokenizer: object) -> str:
    """Random words from WORDS, as many as fit in 254 WordPieces ([CLS] and [SEP] make 256)."""
    rng, words = random.Random(seed), []
    while len(tokenizer.encode(" ".join([*words, "x"])).ids) <= 256:  # type: ignore[attr-defined]
        words.append(rng.choice(WORDS.split()))
    return " ".join(words)


async def sentences(count: int = 60) -> None:
    from attnviz.models.bert import load_minilm

    tokenizer = load_minilm().tokenizer
    with server() as srv:
        print(f"start: RSS {rss_mb(srv.pid):.0f} MB")
        started = time.monotonic()
        for i in range(count):
            user = SimulatedUser(srv.url, "Pretrained_model", urlencode({"s": sentence(i, tokenizer)}), NOTHING,
                                 random.Random(i))  # fmt: skip
            await user.open()
            await user.close()
            if i % 10 == 9:
                print(f"{i + 1} sessions, {time.monotonic() - started:.0f} s: RSS {rss_mb(srv.pid):.0f} MB")
        await asyncio.sleep(30)
        print(f"30 s after the last: RSS {rss_mb(srv.pid):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("crafted", "sentences"))
    args = parser.parse_args()
    asyncio.run(crafted() if args.what == "crafted" else sentences())


if __name__ == "__main__":
    main()
