"""Adversaries: the crafted link, long sentences on the model page, oversized and junk links."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections import Counter
from typing import Any
from urllib.parse import quote

from bench.classload.config import Lesson
from testkit.proxyclient import DisconnectedError, ProxyUser
from testkit.wire import ScriptError


def crafted_query() -> str:
    """The crafted link of the issue: 512 different CJK characters and every setting that multiplies the work."""
    text = "".join(chr(0x4E00 + 7 * i) for i in range(512))
    return f"s={quote(text)}&dim=64&h=8&pr=random&sc=additive&nh=256&cmp=concat_tanh"


def wordpiece_words() -> list[str]:
    """Whole words of the model's WordPiece vocabulary (3-6 letters): one token each."""
    from tokenizers import Tokenizer

    from attnviz.models.bert import model_dir

    vocab = Tokenizer.from_file(str(model_dir() / "tokenizer.json")).get_vocab()
    return sorted(t for t in vocab if t.isascii() and t.isalpha() and t.islower() and 3 <= len(t) <= 6)


def junk_links(rng: random.Random) -> list[tuple[str, str, str]]:
    """(name, page, query): oversized and malformed links, each on a page that reads it."""
    letters = "abcdefghij klmnopqrstuvwxyz"
    big = "".join(rng.choice(letters) for _ in range(600_000))
    return [
        ("600 KB sentence", "Self_attention", "s=" + quote(big)),
        ("2,000 parameters", "Self_attention", "&".join(f"x{i}={i}" for i in range(2000))),
        ("2,000 temperatures", "Cross_attention", "&".join(f"T={i / 100}" for i in range(1, 2001))),
        ("600 KB query points", "Kernel_attention", "q=" + quote(",".join(str(i) for i in range(100_000)))),
        ("60 KB matrix", "Self_attention", "m=numbers&q=" + quote(";".join(["1,2,3,4,5,6,7,8"] * 4000))),
        ("bad escapes and numbers", "Self_attention", "%ZZ%%&&&==&s=%E0%A4&T=nan&h=-1&dim=99999&p=../../etc/passwd"),
        ("infinities", "Kernel_attention", "bw=1e309&T=inf&q=1e999,-inf,nan&kn=%00"),
        ("control characters, markup", "Pretrained_model", "s=%00%01%02%ED%A0%80%3Cscript%3E&hd=0,99,-1&l=9&tk=-5"),
        ("8 KB of random bytes", "Cross_attention", "src=" + quote(bytes(rng.randrange(256) for _ in range(8192)))),
        ("2,000-character word", "Pretrained_model", "s=" + "x" * 2000 + "&s2=" + "y" * 2000),
        ("unknown page", "No_such_page", "p=unit_sentences"),
    ]


class Adversaries:
    """The three adversarial clients and what each got."""

    def __init__(self, run: Lesson) -> None:
        self.run = run
        self.rng = random.Random(run.config.seed + 99)
        self.records: dict[str, list[dict[str, Any]]] = {"crafted": [], "long_sentence": [], "oversized": []}

    async def probe(
        self, kind: str, name: str, page: str, query: str, abandon_after: float | None = None
    ) -> dict[str, Any]:
        """A new browser opens `page?query` (GET, websocket, first run), then leaves."""
        config = self.run.config
        user = ProxyUser(self.run.cluster.url, page, query, rng=self.rng, name=f"{kind} adversary")
        record: dict[str, Any] = {"name": name, "t": self.run.now(), "query_bytes": len(query)}
        self.records[kind].append(record)
        reply = await user.load_page(timeout=config.adversary_timeout)
        record["http"] = reply.status or reply.error
        try:
            await user.connect()
            started = time.perf_counter()
            marks = await user.send_rerun()
            if abandon_after is not None:
                await user.wait_until(lambda: False, abandon_after)
                record["abandoned"] = user.finished_ok(marks) is None
            else:
                finish = await user.wait_run(marks, config.adversary_timeout)
                record["run_s"] = round(finish.at - started, 3)
        except (DisconnectedError, ScriptError, TimeoutError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            record["alerts"] = user.alerts[:3]
            record["exceptions"] = user.exceptions[:3]
            record["received_kb"] = round(user.received_bytes / 1024, 1)
            record["largest_message_kb"] = round(user.largest_message / 1024, 1)
            record["page_not_found"] = user.page_not_found
            record["link_after"] = user.query[:200]
            await user.close()
        return record

    def going(self, count: int) -> bool:
        rounds = self.run.config.adversary_rounds
        return self.run.now() < self.run.config.seconds and (rounds == 0 or count < rounds)

    async def crafted(self) -> None:
        """(a) The crafted link, reopened in new sessions again and again."""
        query, count = crafted_query(), 0
        while self.going(count):
            await self.probe("crafted", "crafted link", "Self_attention", query)
            count += 1
            await asyncio.sleep(self.run.config.adversary_pause)

    async def long_sentences(self) -> None:
        """(b) 254-WordPiece sentences, each different, each in a new session that then disconnects."""
        words, count = wordpiece_words(), 0
        while self.going(count):
            text = " ".join(self.rng.sample(words, 254))
            abandon = 0.5 if count % 2 else None  # every other one leaves before its run ends
            name = "254 WordPieces, left mid-run" if abandon else "254 WordPieces"
            await self.probe("long_sentence", name, "Pretrained_model", "s=" + quote(text), abandon)
            count += 1
            await asyncio.sleep(self.run.config.adversary_pause)

    async def oversized(self) -> None:
        """(c) Oversized and junk links."""
        links, count = junk_links(self.rng), 0
        rounds = self.run.config.adversary_rounds
        while self.going(count // len(links) if rounds else count):
            name, page, query = links[count % len(links)]
            await self.probe("oversized", name, page, query)
            count += 1
            await asyncio.sleep(self.run.config.adversary_pause)

    async def live(self) -> None:
        clients = {"crafted": self.crafted, "long_sentence": self.long_sentences, "oversized": self.oversized}
        await asyncio.gather(*(clients[kind]() for kind in self.run.config.adversary_kinds))

    def summary(self) -> dict[str, Any]:
        """Per adversary: how many requests, what the proxy answered, run times, the page's messages, errors."""
        out: dict[str, Any] = {}
        for kind, records in self.records.items():
            times = [r["run_s"] for r in records if "run_s" in r]
            by_name: dict[str, dict[str, Any]] = {}
            for r in records:
                entry = by_name.setdefault(r["name"], {"count": 0, "http": Counter(), "run_s": [], "alerts": Counter()})
                entry["count"] += 1
                entry["http"][str(r["http"])] += 1
                if "run_s" in r:
                    entry["run_s"].append(r["run_s"])
                for alert in r["alerts"]:
                    entry["alerts"][alert[:240]] += 1
                entry.setdefault("largest_message_kb", 0.0)
                entry["largest_message_kb"] = max(entry["largest_message_kb"], r["received_kb"])
                for key in ("error", "exceptions", "page_not_found", "link_after", "abandoned"):
                    if r.get(key):
                        entry.setdefault(key, [])
                        if len(entry[key]) < 3:
                            entry[key].append(r[key])
            for entry in by_name.values():
                entry["http"] = dict(entry["http"])
                entry["alerts"] = dict(entry["alerts"].most_common(3))
                runs = entry.pop("run_s")
                entry["runs"] = len(runs)
                entry["run_s_median"] = round(statistics.median(runs), 3) if runs else None
                entry["run_s_max"] = round(max(runs), 3) if runs else None
                entry["received_kb_max"] = entry.pop("largest_message_kb")
            out[kind] = {
                "count": len(records),
                "runs_finished": len(times),
                "run_s_median": round(statistics.median(times), 3) if times else None,
                "run_s_max": round(max(times), 3) if times else None,
                "errors": sum(1 for r in records if r.get("error")),
                "exceptions": sum(1 for r in records if r.get("exceptions")),
                "by_link": by_name,
            }
        return out
