"""A training always running beside the class (`--training`)."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench.classload.config import Lesson
from testkit.procstat import children
from testkit.proxyclient import DisconnectedError, ProxyUser
from testkit.wire import ScriptError

TRAINING_STEPS = 300  # dates, the page's default: a minute or two beside a class, so that several end in a run
FIRST_TRAINING_SEED = 101  # the package ships seed 0 only


class Trainer:
    """A client that keeps a training running: it presses Train on the Learned attention page with a seed the
    package does not ship (as bench/training.py does), and again with the next seed as soon as that training ends.
    An ended training is checked on its replica: the page opened there must show the run."""

    def __init__(self, run: Lesson) -> None:
        self.run = run
        self.seed = FIRST_TRAINING_SEED
        self.records: list[dict[str, Any]] = []

    def running(self) -> tuple[int, int, int] | None:
        """(replica index, replica pid, training pid) of a training running now, or None."""
        for index, replica in enumerate(self.run.cluster.replicas):
            pid = replica.pid
            with contextlib.suppress(OSError):
                found = children(pid, "attnviz.app.training.worker") if pid else []
                if found:
                    return index, pid, found[0]
        return None

    def alive(self, training: int) -> bool:
        """Whether the training's process still runs (not gone, not a zombie its replica has yet to reap)."""
        try:
            return Path(f"/proc/{training}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    async def live(self) -> None:
        config = self.run.config
        while self.run.now() < config.seconds:
            record: dict[str, Any] = {"seed": self.seed, "steps": TRAINING_STEPS, "pressed_s": round(self.run.now(), 1)}
            self.records.append(record)
            self.seed += 1
            user = ProxyUser(self.run.cluster.url, "Learned_attention", f"sd={record['seed']}&n={TRAINING_STEPS}")
            try:
                await user.open(config.action_timeout)
                await user.click("Train", config.action_timeout)
                await user.close()
                found, deadline = None, self.run.now() + 60
                while self.run.now() < min(deadline, config.seconds):  # its process
                    if found := await asyncio.to_thread(self.running):
                        break
                    await asyncio.sleep(0.2)
                if found is None:
                    record["outcome"] = (
                        "no training process within 60 s"
                        if self.run.now() < config.seconds
                        else "not started by the end"
                    )
                    continue
                index, server, training = found
                record["replica"] = self.run.cluster.upstream(self.run.cluster.replicas[index])
                record["started_s"] = round(self.run.now(), 1)
                while self.run.now() < config.seconds and await asyncio.to_thread(self.alive, training):
                    await asyncio.sleep(0.5)
                if self.run.now() >= config.seconds:
                    record["outcome"] = "running at the end"
                    return
                record["ended_s"] = round(self.run.now(), 1)
                await asyncio.sleep(2.0)  # the server reads the checkpoint the training printed last
                replica = self.run.cluster.replicas[index]
                if replica.pid != server:
                    record["outcome"] = "lost with its replica"
                    continue
                # Straight to the replica it ran on: the trainer's cookie may have been issued while the other one
                # was down, and nginx sends it back there once it is up again.
                await user.close()
                user = ProxyUser(replica.url, "Learned_attention", f"sd={record['seed']}&n={TRAINING_STEPS}")
                await user.open(config.action_timeout)
                if "Train" not in user.buttons and not user.timers and not user.exceptions:
                    record["outcome"] = "finished"  # the run's charts: no button, no progress fragment
                elif user.timers:
                    record["outcome"] = "still training, as its page says"
                else:
                    record["outcome"] = "ended unfinished"
                    record["page"] = {"link": user.query, "said": user.alerts, "exceptions": user.exceptions[:1]}
            except (DisconnectedError, ScriptError, TimeoutError) as exc:
                record["outcome"] = f"error: {type(exc).__name__}: {exc}"[:200]
                await asyncio.sleep(1.0)
            finally:
                await user.close()

    def summary(self) -> dict[str, Any]:
        outcomes = Counter(r.get("outcome", "?").split(":")[0] for r in self.records)
        spans = [r["ended_s"] - r["started_s"] for r in self.records if r.get("outcome") == "finished"]
        return {
            "pressed": len(self.records),
            "started": sum(1 for r in self.records if "started_s" in r),
            "finished": outcomes["finished"],
            "outcomes": dict(outcomes),
            "finished_in_s_median": round(statistics.median(spans), 1) if spans else None,
            "trainings": self.records,
        }
