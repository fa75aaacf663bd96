"""Class load test: a class of simulated students behind the real nginx, adversaries alongside, a replica killed.

    python -m bench.classload --students 30 --minutes 5               # a full run: with and without adversaries
    python -m bench.classload --students 30 --minutes 1 --no-adversaries --kill-at 30
    python -m bench.classload --students 30 --minutes 5 --quota 1 --training --name class-quota-training  # root

Two app replicas (`python -m attnviz.app.server app.py`, one cookie secret) run on loopback behind nginx with the
project's site file (deploy/nginx/attnviz.conf, through testkit/nginx.py). Every client goes through the
proxy as a browser does (testkit/proxyclient.py): it GETs the page, gets nginx's affinity cookie, then opens the
websocket with it.

- Students spread over every page and move its real controls, thinking 1-3 s between actions. After each change the
  app must write the new value into the URL (`page_info_changed`); a change that does not show up is a lost input.
- Adversaries, alongside: the crafted link (512 different CJK tokens, 64 dimensions, 8 heads, random projections,
  additive scoring with 256 hidden units, a concat_tanh comparison) reopened in new sessions again and again;
  254-WordPiece sentences on the model page, each different, each in a new session that then disconnects;
  oversized links (600 KB, 2,000 parameters) and junk links.
- One replica is SIGKILLed midway and restarted 20 s later, as a supervisor would. Every student whose session was
  on it reconnects as a browser does and changes a control soon after; the change must reach the URL, and the page
  must come back from its link.
- `--memory MIB`: each replica's cgroup limited to MIB MiB, as a pod's memory limit (its trainings included): the
  kernel kills what goes past it, and the report counts it.
- `--quota CORES`: each replica in a cgroup of its own with CORES cores of CPU quota, as a pod's CPU limit (its
  restart and the trainings it starts too; testkit/cgroups.py, needs root). `--training`: a training always running
  beside the class (a client presses Train on the Learned attention page, again as each training ends).

Results: bench/results/<date>-class.md and .json (`--name`: <date>-<name>.*). The method is in bench/README.md
("Class load test").
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import json
import os
import random
import re
import secrets
import statistics
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote

from testkit.cgroups import ControlGroup
from testkit.nginx import NginxProxy
from testkit.procstat import children, cpu_seconds, machine, rss_mb
from testkit.proxyclient import DisconnectedError, ProxyUser
from testkit.server import HOST, StreamlitServer, free_port
from testkit.wire import ScriptError

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DEPLOYMENT = ROOT / "deploy" / "k8s" / "deployment.yaml"
PAGES = {
    "self": "Self_attention",
    "cross": "Cross_attention",
    "kernel": "Kernel_attention",
    "model": "Pretrained_model",
}
LEARN = "Learn σ from the training points"
USE_LEARNED = "Use the learned σ"
# Links a class passes around; "link" students open one, then reopen another now and then (a new tab).
SHARE_LINKS = (
    ("self", "p=unit_sentences&b=1"),
    ("cross", "p=d2l_additive"),
    ("kernel", "p=d2l_toy_regression"),
    ("model", "s=the+teacher+asked+a+question+about+the+map&l=3"),
    ("self", "s=attention+is+all+you+need&T=0.5&c=1"),
)
# Words a student types (short sentences on the attention and model pages).
_WORDS = (
    "the cat sat on a mat while dogs ran past old trees near quiet rivers and children read books about stars "
    "planets oceans music history maps numbers birds clouds rain wind snow bread apples green blue red small large "
    "fast slow happy tired bright dark teacher student school lesson question answer"
)
WORDS = tuple(_WORDS.split())
T = TypeVar("T")
KERNEL_KEYS = ("gaussian", "laplace", "boxcar", "epanechnikov")  # attnviz.core.kernel.KERNELS, in the picker's order


def _decimal(rng: random.Random, low: float, high: float) -> float:
    """A value with three decimals, the last one not 0: never a preset's or a default's round number."""
    while True:
        value = round(rng.uniform(low, high), 3)
        if round(value * 1000) % 10:
            return value


def _number_text(value: float) -> str:
    from attnviz.core.fields import format_number

    return format_number(value)


def sentence(rng: random.Random, low: int = 4, high: int = 12) -> str:
    """A short sentence a student might type."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


# ----- configuration ---------------------------------------------------------------------------------------------


@dataclass
class ClassConfig:
    """One class run."""

    students: int = 30
    seconds: float = 300.0
    adversaries: bool = True
    kill_at: float | None = 150.0  # seconds into the run; None: no replica is killed
    restart_after: float = 20.0
    think: tuple[float, float] = (1.0, 3.0)
    arrival: float = 5.0  # students arrive over this many seconds
    adversary_rounds: int = 0  # 0: each adversary again and again until the end; n: n times each
    adversary_pause: float = 0.2
    adversary_kinds: tuple[str, ...] = ("crafted", "long_sentence", "oversized")
    settle: float = 15.0  # seconds with no session before the "settled" memory reading
    action_timeout: float = 30.0
    adversary_timeout: float = 120.0
    kill_window: float = 10.0  # a websocket closed this soon after the kill is the expected disconnect
    seed: int = 0
    label: str = ""
    replica_env: dict[str, str] = field(default_factory=dict)  # extra environment of the replicas (experiments)
    quota: float | None = None  # CPU cores of each replica's own cgroup, as a pod's CPU limit; None: no quota
    memory: float | None = None  # MiB of memory in each replica's own cgroup, as a pod's memory limit; None: none
    training: bool = False  # a training always running: a client presses Train again as each one ends


@dataclass(frozen=True)
class Change:
    """One control a student changes, and what the link must show afterwards."""

    action: str  # name in the report
    key: str  # widget key
    kind: str  # the widget state's kind: double, int, string, bool
    value: float | int | str | bool
    param: str  # the link parameter that carries the control
    expected: str | None  # its text in the link; None: a toggle, checked as "changed"
    exact: bool = True  # numbers and texts (never a default's value here); False: toggles and choices

    def applied(self, before: str | None, after: str | None) -> bool:
        """Whether the link after the run carries this change (`before`, `after`: the parameter's text).

        A number or a text must appear as sent. A toggle or a choice may be back at the page's base value, which
        the link leaves out: then the parameter must have changed, to the value sent or out of the link."""
        if self.exact:
            return after == self.expected
        return after != before and (after == self.expected or after is None or self.expected is None)


# ----- the cluster -----------------------------------------------------------------------------------------------


class Replica(StreamlitServer):
    """One replica; in its own CPU quota when it has a group (from its start on, restarts and trainings too)."""

    group: ControlGroup | None = None

    def command(self) -> list[str]:
        argv = super().command()
        return self.group.command(argv) if self.group is not None else argv


class Cluster:
    """Two replicas of app.py sharing a cookie secret, and the real nginx in front of them; with `quota`, each
    replica in a cgroup of its own with that many cores of CPU quota, as a pod's CPU limit (needs root)."""

    def __init__(
        self,
        workdir: Path,
        log_prefix: str = "class",
        env: dict[str, str] | None = None,
        quota: float | None = None,
        memory: float | None = None,
    ) -> None:
        self.workdir = workdir
        self.env = {**(env or {}), "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
        self.replicas = [Replica("app.py", env=self.env, log_name=f"{log_prefix}-{i}") for i in range(2)]
        self.quota, self.memory = quota, memory
        self.groups: list[ControlGroup] = []
        self.proxy: NginxProxy | None = None

    def start(self) -> Cluster:
        """Make the quotas' groups, start both replicas (each until /_stcore/health answers) and nginx."""
        for replica in self.replicas:
            if self.quota is not None or self.memory is not None:
                replica.group = ControlGroup(cpu_cores=self.quota, memory_mb=self.memory).__enter__()
                self.groups.append(replica.group)
            replica.start()
        self.proxy = NginxProxy([f"{HOST}:{r.port}" for r in self.replicas], free_port(), self.workdir / "nginx")
        self.proxy.start()
        return self

    def stop(self) -> None:
        """Stop nginx and the replicas."""
        if self.proxy is not None:
            self.proxy.stop()
        for replica in self.replicas:
            replica.stop()
        for group in self.groups:
            group.remove()
        self.groups = []

    @property
    def url(self) -> str:
        """The proxy's base URL."""
        assert self.proxy is not None
        return self.proxy.url

    def upstream(self, replica: StreamlitServer) -> str:
        """The replica's address as nginx logs it."""
        return f"{HOST}:{replica.port}"

    def sessions(self) -> dict[str, int | None]:
        """Active Streamlit sessions per replica, as each server reports it (None: no answer)."""
        counts: dict[str, int | None] = {}
        for replica in self.replicas:
            try:
                with urllib.request.urlopen(replica.url_for("_stcore/metrics"), timeout=5) as response:
                    match = re.search(r"^active_sessions (\d+)$", response.read().decode(), re.MULTILINE)
                counts[self.upstream(replica)] = int(match.group(1)) if match else None
            except OSError:
                counts[self.upstream(replica)] = None
        return counts

    def replica_of(self) -> dict[str, str]:
        """Affinity cookie -> the replica that answered its latest request (from nginx's access log)."""
        assert self.proxy is not None
        owners: dict[str, str] = {}
        for entry in self.proxy.access_log():
            upstream = entry.get("upstream", "").split(", ")[-1]
            if entry.get("affinity") and upstream.startswith(HOST):
                owners[entry["affinity"]] = upstream
        return owners


class MemorySampler:
    """RSS of each replica from /proc, every `interval` seconds, in a thread (the event loop may be busy); with
    `trainings`, also of the trainings each replica runs (child processes: its pod's memory holds them too)."""

    def __init__(self, cluster: Cluster, interval: float = 0.25, trainings: bool = False) -> None:
        self.cluster = cluster
        self.interval = interval
        self.trainings = trainings
        self.samples: list[tuple[float, int, int, float]] = []  # (t, replica index, pid, MiB)
        self.cpu: dict[int, float] = {}  # pid -> CPU seconds at its last sample
        self.training_cpu: dict[int, float] = {}  # training's pid -> CPU seconds at its last sample
        self.with_training: list[tuple[int, float, float]] = []  # (replica index, its trainings' MiB, both MiB)
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, t0: float) -> MemorySampler:
        self.t0 = t0
        self._thread.start()
        return self

    def sample(self) -> None:
        for index, replica in enumerate(self.cluster.replicas):
            pid = replica.pid
            if pid is None:
                continue
            with contextlib.suppress(OSError, RuntimeError):  # the process went away between the two reads
                self.samples.append((time.perf_counter() - self.t0, index, pid, rss_mb(pid)))
                self.cpu[pid] = cpu_seconds(pid)
                if self.trainings:
                    training = 0.0
                    for child in children(pid, "attnviz.app.training.worker"):
                        with contextlib.suppress(OSError, RuntimeError):
                            training += rss_mb(child)
                            self.training_cpu[child] = cpu_seconds(child)
                    self.with_training.append((index, training, self.samples[-1][3] + training))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def summary(self, index: int, kill: dict[str, Any] | None) -> dict[str, Any]:
        """Peak RSS of one replica, over the run and per life (before the kill, after the restart)."""
        mine = [(t, pid, mb) for t, i, pid, mb in self.samples if i == index]
        pids = list(dict.fromkeys(pid for _, pid, _ in mine))
        lives = [
            {"pid": pid, "peak_mb": round(max(mb for _, p, mb in mine if p == pid), 1)}
            for pid in pids  # one entry per process: the restarted replica has two
        ]
        summary = {
            "port": self.cluster.replicas[index].port,
            "killed": bool(kill and kill.get("index") == index),
            "peak_mb": round(max((mb for *_, mb in mine), default=0.0), 1),
            "lives": lives,
        }
        if self.trainings:
            both = [(training, total) for i, training, total in self.with_training if i == index]
            summary["training_peak_mb"] = round(max((training for training, _ in both), default=0.0), 1)
            summary["with_training_peak_mb"] = round(max((total for _, total in both), default=0.0), 1)
        return summary


# ----- students --------------------------------------------------------------------------------------------------


class Student:
    """One student: a tab on one page, changing its controls, reconnecting when its replica dies."""

    def __init__(self, index: int, run: ClassRun) -> None:
        self.index = index
        self.run = run
        self.rng = random.Random(run.config.seed * 1000 + index)
        kinds = ("self", "cross", "kernel", "model", "link")
        self.role = kinds[index % len(kinds)]
        if self.role == "link":
            self.kind, query = SHARE_LINKS[(index // len(kinds)) % len(SHARE_LINKS)]
        else:
            self.kind, query = self.role, ""
        self.user = ProxyUser(run.cluster.url, PAGES[self.kind], query, rng=self.rng, name=f"student {index}")
        self.actions: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.recoveries: list[dict[str, Any]] = []
        self.links: list[dict[str, Any]] = []
        self.pending: tuple[Change, str | None] | None = None  # a change sent and not yet seen finished

    @property
    def name(self) -> str:
        return f"student {self.index} ({self.role})"

    def error(self, what: str, detail: str) -> None:
        self.errors.append(
            {"student": self.index, "page": self.kind, "t": self.run.now(), "what": what, "detail": detail}
        )

    # ----- choosing what to do ------------------------------------------------------------------------------------
    def present(self, key: str) -> bool:
        """Whether the widget with `key` was drawn by the page's last full run (or a later fragment run)."""
        return key in self.user.widget_ids and self.user.drawn_since_full_run(self.user.widget_ids[key])

    def button(self, label: str) -> bool:
        """Whether an enabled button labelled `label` is on the page now."""
        widget_id, disabled = self.user.buttons.get(label, ("", True))
        return bool(widget_id) and not disabled and self.user.drawn_since_full_run(widget_id)

    def changes(self) -> list[tuple[int, Callable[[], Change]]]:
        """(weight, make) for each control of this page that can be changed right now."""
        p, rng = self.kind, self.rng
        options: list[tuple[int, str, Callable[[], Change]]] = []
        if p in ("self", "cross"):
            options += [
                (5, f"w:{p}:temperature", lambda: self._number(f"w:{p}:temperature", "T", 0.1, 4.0, "temperature")),
                (2, f"w:{p}:causal", lambda: self._toggle(f"w:{p}:causal", "c", "causal")),
                (1, f"w:{p}:sentence", lambda: self._text(f"w:{p}:sentence", "s", sentence(rng), "sentence")),
            ]
            if p == "self":
                options.append((1, "w:self:embed_seed", self._seed))
        elif p == "kernel":
            options += [
                (5, "w:kernel:bandwidth", lambda: self._number("w:kernel:bandwidth", "bw", 0.2, 3.0, "bandwidth")),
                (2, "w:kernel:kernel", lambda: self._choice("w:kernel:kernel", "kn", KERNEL_KEYS, "kernel")),
            ]
        elif p == "model":
            layers = tuple(str(n) for n in range(1, 7))
            options += [
                (3, "w:model:layer", lambda: self._choice("w:model:layer", "l", layers, "layer")),
                (2, "w:model:renormalise", lambda: self._toggle("w:model:renormalise", "rn", "renormalise")),
                (1, "w:model:hide_special", lambda: self._toggle("w:model:hide_special", "hs", "hide special")),
                (1, "w:model:sentence", lambda: self._text("w:model:sentence", "s", sentence(rng, 6, 16), "sentence")),
            ]
        return [(weight, make) for weight, key, make in options if self.present(key)]

    def _number(self, key: str, param: str, low: float, high: float, action: str) -> Change:
        value = _decimal(self.rng, low, high)
        return Change(action, key, "double", value, param, _number_text(value))

    def _seed(self) -> Change:
        value = self.rng.randint(1, 9999)
        return Change("embedding seed", "w:self:embed_seed", "int", value, "es", str(value))

    def _toggle(self, key: str, param: str, action: str) -> Change:
        current = bool(self.user.value_of(key))
        return Change(action, key, "bool", not current, param, None if current else "1", exact=False)

    def _text(self, key: str, param: str, text: str, action: str) -> Change:
        return Change(action, key, "string", text, param, text)

    def _choice(self, key: str, param: str, keys: tuple[str, ...], action: str) -> Change:
        labels = self.user.options.get(self.user.widget_ids[key], [])
        current = self.user.value_of(key)
        choices = [i for i, label in enumerate(labels[: len(keys)]) if label != current]
        if not choices:
            raise ScriptError(f"no option to choose in {key!r}: {labels}")
        index = self.rng.choice(choices)
        return Change(action, key, "string", labels[index], param, keys[index], exact=False)

    def choose(self) -> str | Change:
        """The next action: a Change, "learn" (kernel page) or "reopen" (link students)."""
        weighted: list[tuple[int, str | Callable[[], Change]]] = list(self.changes())
        if self.kind == "kernel" and self.button(LEARN):
            weighted.append((1, "learn"))
        if self.role == "link":
            weighted.append((1, "reopen"))
        if not weighted:
            return "reload"  # nothing to change: the page did not draw its controls (counted as an error below)
        pick = self.rng.choices([w for _, w in weighted], [weight for weight, _ in weighted])[0]
        return pick if isinstance(pick, str) else pick()

    # ----- acting -------------------------------------------------------------------------------------------------
    async def change(self, change: Change) -> None:
        """Set one control, wait for the run, check the link carries the new value."""
        user = self.user
        before = user.params().get(change.param)
        user.set_widget(change.key, change.kind, change.value)
        self.pending = (change, before)
        started = time.perf_counter()
        finish = await user.wait_run(
            await user.send_rerun(user.fragment_of(change.key)), self.run.config.action_timeout
        )
        self.pending = None
        after = {k: v[-1] for k, v in parse_qs(finish.query, keep_blank_values=True).items()}.get(change.param)
        ok = change.applied(before, after)
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": change.action,
                "t": self.run.now(),
                "s": finish.at - started,
                "applied": ok,
            }
        )
        if not ok:
            self.run.lost.append(
                {
                    "student": self.index,
                    "page": self.kind,
                    "when": "normal",
                    "t": self.run.now(),
                    "param": change.param,
                    "sent": change.value,
                    "before": before,
                    "after": after,
                }
            )

    async def learn(self) -> None:
        """Press "Learn σ", then "Use the learned σ"; the link's bandwidth must become the learned one."""
        user = self.user
        seconds = await user.click(LEARN, self.run.config.action_timeout)
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": "learn σ",
                "t": self.run.now(),
                "s": seconds,
                "applied": True,
            }
        )
        if not self.button(USE_LEARNED):
            self.error("learn σ", "no 'Use the learned σ' button after learning")
            return
        alerts = len(user.alerts)
        seconds = await user.click(USE_LEARNED, self.run.config.action_timeout)
        # The σ field must now hold the learned σ (the page's message says it), and the link must carry it; a σ
        # equal to the page's base value (σ did not move from its start, 1) is left out of the link.
        shown = user.value_of("w:kernel:bandwidth")
        said = re.findall(r"σ = ([0-9.e+-]+)", " ".join(user.alerts[alerts:]))
        link = user.params().get("bw")
        ok = shown is not None and bool(said) and float(shown) == float(said[-1])
        ok = ok and (link == _number_text(float(shown)) or (link is None and float(shown) == 1.0))
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": "use learned σ",
                "t": self.run.now(),
                "s": seconds,
                "applied": ok,
            }
        )
        if not ok:
            self.run.lost.append(
                {"student": self.index, "page": self.kind, "when": "normal", "t": self.run.now(), "param": "bw",
                 "sent": f"learned σ {shown}", "before": None, "after": user.params().get("bw")}
            )  # fmt: skip

    async def reopen(self) -> None:
        """Open another shared link in a new tab of the same browser; the page must come from the link."""
        kind, query = SHARE_LINKS[self.rng.randrange(len(SHARE_LINKS))]
        await self.user.close()
        self.user.forget_page()
        self.kind, self.user.page, self.user.query = kind, PAGES[kind], query
        started = time.perf_counter()
        await self.user.open(self.run.config.action_timeout)
        seconds = time.perf_counter() - started
        restored = self.user.params() == {k: v[-1] for k, v in parse_qs(query).items()}
        self.links.append({"student": self.index, "link": f"{PAGES[kind]}?{query}", "s": seconds, "restored": restored})
        self.actions.append(
            {
                "student": self.index,
                "page": kind,
                "action": "open link",
                "t": self.run.now(),
                "s": seconds,
                "applied": True,
            }
        )
        if not restored:
            self.error("open link", f"{PAGES[kind]}?{query} showed ?{self.user.query}")

    async def act(self) -> None:
        """One action, with its failures sorted: a lost replica (reconnect), an error on the page, a timeout."""
        action: str | Change = "choose"
        try:
            action = self.choose()
            if action == "learn":
                await self.learn()
            elif action == "reopen":
                await self.reopen()
            elif action == "reload":
                self.error("controls", f"no control drawn on {self.user.page}?{self.user.query}")
                await self.reopen_same()
            else:
                assert isinstance(action, Change)
                await self.change(action)
        except DisconnectedError:
            await self.recover()
        except (ScriptError, TimeoutError) as exc:
            self.pending = None
            self.error(action if isinstance(action, str) else action.action, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a fault of this client: reported (never silent), and the student goes on
            self.pending = None
            self.error("client error", f"{type(exc).__name__}: {exc}")

    async def reopen_same(self) -> None:
        await self.user.close()
        self.user.forget_page()
        await self.user.open(self.run.config.action_timeout)

    async def live(self) -> None:
        """Arrive, then act and think until the end of the run."""
        config = self.run.config
        await asyncio.sleep(self.rng.uniform(0, config.arrival))
        try:
            seconds = await self.user.open(config.action_timeout)
            self.actions.append(
                {
                    "student": self.index,
                    "page": self.kind,
                    "action": "open",
                    "t": self.run.now(),
                    "s": seconds,
                    "applied": True,
                }
            )
        except DisconnectedError:
            await self.recover()
        except (ScriptError, TimeoutError) as exc:
            self.error("open", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a fault of this client: reported, never silent
            self.error("client error", f"{type(exc).__name__}: {exc}")
        while self.run.now() < config.seconds:
            think = self.rng.uniform(*config.think)
            if not await self.user.wait_until(lambda: False, think) and self.user.closed_at is not None:
                await self.recover()
                continue
            if self.run.now() >= config.seconds:
                break
            await self.act()
        await self.user.close()

    # ----- after a lost replica -----------------------------------------------------------------------------------
    async def recover(self) -> None:
        """Reconnect as a browser does, then change a control soon after and check the change and the page."""
        user, config = self.user, self.run.config
        closed = user.closed_at or time.perf_counter()
        closed_t = closed - self.run.t0
        kill_t = self.run.kill_t
        expected = kill_t is not None and kill_t - 0.5 <= closed_t <= kill_t + config.kill_window
        if not expected:
            self.error("websocket", f"closed at {closed_t:.1f} s, not at a replica's loss")
        pending, self.pending = self.pending, None
        before = user.query
        record: dict[str, Any] = {
            "student": self.index,
            "page": self.kind,
            "closed_at_s": round(closed_t, 2),
            "before": before,
            "pending": pending[0].param if pending else None,
            "attempts": 0,
        }
        self.recoveries.append(record)
        # The frontend: ping /_stcore/health until it answers, then a new websocket with the same cookies.
        delay = self.rng.uniform(0.1, 0.5)
        deadline = closed + 90
        while True:
            await asyncio.sleep(delay)
            record["attempts"] += 1
            reply = await user.health()
            if reply.status == 200:
                try:
                    await user.connect()
                    break
                except DisconnectedError:
                    pass
            if time.perf_counter() > deadline:
                record["works_again_s"] = None
                self.error("reconnect", f"no connection within 90 s (last health: {reply.status} {reply.error})")
                return
            delay = min(delay * 2, 5.0)
        record["reconnect_s"] = round(time.perf_counter() - closed, 3)
        record["reconnected_at_s"] = round(self.run.now(), 2)  # beside the kill's "restarted_at_s"
        # The replica nginx sent the reconnect to (its health request, logged when answered): the survivor, or the
        # killed one already restarted (cold: its first runs import the app and load the model)
        record["reconnected_to"] = (await asyncio.to_thread(self.run.cluster.replica_of)).get(user.affinity)
        immediate = self.rng.random() < 0.5
        record["moment"] = "immediately" if immediate else "after 0.5-2 s"
        try:
            marks = await user.send_rerun()  # the page's query string and widget values, as a browser sends them
            options = self.changes() or [(1, lambda: self._number(f"w:{self.kind}:temperature", "T", 0.1, 4.0, "T"))]
            if not immediate:
                first = await user.wait_run(marks, config.action_timeout)
                record["first_run_s"] = round(first.at - closed, 3)
                await asyncio.sleep(self.rng.uniform(0.5, 2.0))
                options = self.changes() or options
            change = self.rng.choices([m for _, m in options], [w for w, _ in options])[0]()
            change_before = user.params().get(change.param)
            user.set_widget(change.key, change.kind, change.value)
            started = time.perf_counter()
            change_marks = await user.send_rerun(user.fragment_of(change.key))

            def settled() -> bool:
                return user.finished_ok(change_marks) is not None and change.applied(
                    change_before, user.params().get(change.param)
                )

            applied = await user.wait_until(settled, config.action_timeout)
            if not applied and user.closed_at is None:
                await user.wait_until(lambda: False, 2.0)  # a late message: give it a moment more
                applied = settled()
            first = user.finished_ok(marks)
            if immediate and first is not None:
                record["first_run_s"] = round(first.at - closed, 3)
            after_first = first.query if first else None
            ignore = {change.param} | ({pending[0].param} if pending else set())
            record["after_first_run"] = after_first
            record["restored"] = page_restored(self.kind, before, after_first, ignore)
            record["change"] = {"param": change.param, "sent": change.value, "before": change_before}
            record["after_change"] = user.query
            if user.exceptions[marks[1] :]:
                self.error("after reconnect", f"exception on the page: {user.exceptions[marks[1]]}")
            if applied:
                record["works_again_s"] = round(time.perf_counter() - closed, 3)
                record["change_s"] = round(time.perf_counter() - started, 3)
            else:
                record["works_again_s"] = None
                record["why"] = why_lost(user.finished_ok(change_marks) is not None)
                self.run.lost.append(
                    {
                        "student": self.index,
                        "page": self.kind,
                        "when": f"after reconnect ({record['moment']})",
                        "t": self.run.now(),
                        "param": change.param,
                        "sent": change.value,
                        "before": change_before,
                        "after": user.params().get(change.param),
                        "why": record["why"],
                        "reconnected_to": record["reconnected_to"],
                    }
                )
            record["lost"] = not applied
            record["runs_after_reconnect"] = runs_after(user.finishes[marks[0] :], closed, change.param)
            if pending is not None and pending[0].param != change.param:
                kept = pending[0].applied(pending[1], user.params().get(pending[0].param))
                record["pending_kept"] = kept
                if not kept:
                    self.run.lost.append(
                        {"student": self.index, "page": self.kind, "when": "in flight at the kill", "t": self.run.now(),
                         "param": pending[0].param, "sent": pending[0].value, "before": pending[1],
                         "after": user.params().get(pending[0].param)}
                    )  # fmt: skip
        except DisconnectedError:
            record["works_again_s"] = None
            self.error("after reconnect", "the websocket closed again")
            if self.run.now() < config.seconds:
                await self.recover()
        except (ScriptError, TimeoutError) as exc:
            record["works_again_s"] = None
            self.error("after reconnect", f"{type(exc).__name__}: {exc}")


def runs_after(finishes: list[Any], closed: float, param: str) -> list[list[Any]]:
    """The runs a reconnected tab saw end: [seconds since its websocket closed, status, `param` in the link then]."""
    return [
        [round(f.at - closed, 3), f.status, {k: v[-1] for k, v in parse_qs(f.query).items()}.get(param)]
        for f in finishes
    ]


def why_lost(finished: bool) -> str:
    """Why a change sent after a reconnect is counted lost: its run ended without it in the link (the app dropped
    or overwrote it: a race), or no run ended within the action timeout (a slow server: load)."""
    if finished:
        return "its run ended without it in the link"
    return "no run ended within the action timeout"


def _without(query: str, ignore: set[str]) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(query, keep_blank_values=True).items() if k not in ignore}


def page_restored(kind: str, before: str, after_first: str | None, ignore: set[str]) -> bool:
    """Whether the first run after a reconnect showed the page of the student's link (`before`), apart from the
    parameters in `ignore` (the change sent with that run, one typed while the replica died) and what follows from
    them by design: a new sentence shorter than the followed token's position moves the model page's followed token
    to its first word."""
    if after_first is None:
        return False
    if kind == "model" and "s" in ignore:
        ignore = ignore | {"tk"}
    return _without(before, ignore) == _without(after_first, ignore)


def reevaluate(results: dict[str, Any]) -> None:
    """Apply page_restored again to the recoveries of a results file (after a change of the rule)."""
    for run in results["runs"]:
        for record in run["recoveries"]:
            if "after_first_run" in record and "change" in record:
                ignore = {record["change"]["param"]} | ({record["pending"]} if record.get("pending") else set())
                record["restored"] = page_restored(record["page"], record["before"], record["after_first_run"], ignore)


# ----- adversaries -----------------------------------------------------------------------------------------------


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

    def __init__(self, run: ClassRun) -> None:
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


# ----- a training alongside --------------------------------------------------------------------------------------

TRAINING_STEPS = 300  # dates, the page's default: a minute or two beside a class, so that several end in a run
FIRST_TRAINING_SEED = 101  # the package ships seed 0 only


class Trainer:
    """A client that keeps a training running: it presses Train on the Learned attention page with a seed the
    package does not ship (as bench/training.py does), and again with the next seed as soon as that training ends.
    An ended training is checked on its replica: the page opened there must show the run."""

    def __init__(self, run: ClassRun) -> None:
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


# ----- one run ---------------------------------------------------------------------------------------------------


class ClassRun:
    """Students (and adversaries) against a fresh cluster, with a replica killed midway."""

    def __init__(self, config: ClassConfig, workdir: Path) -> None:
        self.config = config
        prefix = f"class-{'adv' if config.adversaries else 'base'}"
        self.cluster = Cluster(
            workdir, log_prefix=prefix, env=config.replica_env, quota=config.quota, memory=config.memory
        )
        self.t0 = time.perf_counter()
        self.kill_t: float | None = None
        self.kill: dict[str, Any] | None = None
        self.lost: list[dict[str, Any]] = []
        self.students: list[Student] = []
        self.adversaries: Adversaries | None = None
        self.trainer: Trainer | None = None
        self.client_cpu_s = 0.0
        self.cpu: dict[str, float] = {}
        self.quota: list[dict[str, float]] = []
        self.memory_groups: list[dict[str, float]] = []
        self.loadavg_before: list[str] = []

    def now(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    async def warm_up(self) -> None:
        """Each replica serves every page once (imports, the model), straight, not through the proxy."""
        for replica in self.cluster.replicas:
            for page in PAGES.values():
                user = ProxyUser(replica.url, page)
                await user.open(120)
                await user.close()

    async def killer(self) -> None:
        """SIGKILL the replica holding most students at kill_at; restart it restart_after seconds later."""
        config = self.config
        assert config.kill_at is not None
        await asyncio.sleep(max(0.0, config.kill_at - self.now()))
        owners = self.cluster.replica_of()
        on: Counter[str] = Counter(owners.get(s.user.affinity, "?") for s in self.students if s.user.connected)
        sessions = self.cluster.sessions()
        index = max(range(2), key=lambda i: on[self.cluster.upstream(self.cluster.replicas[i])])
        victim = self.cluster.replicas[index]
        upstream = self.cluster.upstream(victim)
        self.kill = {
            "index": index,
            "replica": upstream,
            "pid": victim.pid,
            "students_per_replica": dict(on),
            "sessions_per_replica": sessions,
            "students_on_victim": sorted(s.index for s in self.students if owners.get(s.user.affinity) == upstream),
        }
        victim.kill()
        self.kill_t = self.now()
        self.kill["at_s"] = round(self.kill_t, 2)
        print(f"  {self.kill_t:6.1f} s  killed {upstream} (pid {self.kill['pid']}), students there: {on[upstream]}")
        await asyncio.sleep(max(0.0, self.kill_t + config.restart_after - self.now()))
        started = time.perf_counter()
        await asyncio.to_thread(victim.restart)
        self.kill["restarted_at_s"] = round(self.now(), 2)
        self.kill["restart_to_healthy_s"] = round(time.perf_counter() - started, 2)
        print(f"  {self.now():6.1f} s  restarted {upstream} (pid {victim.pid})")

    async def ticker(self) -> None:
        while self.now() < self.config.seconds:
            await asyncio.sleep(30)
            done = sum(len(s.actions) for s in self.students)
            errors = sum(len(s.errors) for s in self.students)
            print(f"  {self.now():6.1f} s  {done} student actions, {errors} errors, {len(self.lost)} lost inputs")

    async def drive(self) -> None:
        self.students = [Student(i, self) for i in range(self.config.students)]
        tasks = [asyncio.create_task(s.live()) for s in self.students]
        if self.config.adversaries:
            self.adversaries = Adversaries(self)
            tasks.append(asyncio.create_task(self.adversaries.live()))
        if self.config.training:
            self.trainer = Trainer(self)
            tasks.append(asyncio.create_task(self.trainer.live()))
        if self.config.kill_at is not None:
            tasks.append(asyncio.create_task(self.killer()))
        ticker = asyncio.create_task(self.ticker())
        try:
            await asyncio.gather(*tasks)
        finally:
            ticker.cancel()
            for student in self.students:
                await student.user.close()

    def execute(self) -> dict[str, Any]:
        """Start the cluster, warm it up, run the class, let it settle; return the results."""
        config = self.config
        self.cluster.start()
        sampler = MemorySampler(self.cluster, trainings=config.training)
        try:
            run_async(self.warm_up())
            warm = [round(rss_mb(r.pid), 1) for r in self.cluster.replicas if r.pid]
            self.loadavg_before = Path("/proc/loadavg").read_text().split()[:3]
            self.t0 = time.perf_counter()
            sampler.start(self.t0)
            client_cpu, busy = time.process_time(), machine_busy_seconds()
            replicas_cpu = {pid: cpu_seconds(pid) for pid in (r.pid for r in self.cluster.replicas) if pid}
            quota_before = [group.cpu_stat() for group in self.cluster.groups]
            run_async(self.drive())
            sampler.sample()
            self.client_cpu_s = time.process_time() - client_cpu
            self.cpu = {
                "machine_busy_s": round(machine_busy_seconds() - busy, 1),
                "replicas_s": round(sum(sampler.cpu.values()) - sum(replicas_cpu.values()), 1),
                "client_s": round(self.client_cpu_s, 1),
                "training_s": round(sum(sampler.training_cpu.values()), 1),  # trainings started during the load
            }
            self.cpu["others_s"] = round(
                self.cpu["machine_busy_s"] - self.cpu["replicas_s"] - self.cpu["client_s"] - self.cpu["training_s"], 1
            )
            self.quota = [
                {key: round(after[key] - before.get(key, 0), 1) for key in after}
                for before, after in zip(quota_before, (group.cpu_stat() for group in self.cluster.groups), strict=True)
            ]  # each replica's group over the load: CFS periods, those throttled, seconds throttled
            self.memory_groups = [group.memory_stat() for group in self.cluster.groups]  # peak, OOM kills
            end = [round(rss_mb(r.pid), 1) if r.pid else None for r in self.cluster.replicas]
            load_s = self.now()
            time.sleep(config.settle)
            settled = [round(rss_mb(r.pid), 1) if r.pid else None for r in self.cluster.replicas]
            sessions_after = self.cluster.sessions()
            log = self.cluster.proxy.access_log() if self.cluster.proxy else []
            status = Counter(e.get("status", "?") for e in log)
            self.note_websockets(log)
        finally:
            sampler.stop()
            self.cluster.stop()
        memory = [sampler.summary(i, self.kill) for i in range(2)]
        for i, entry in enumerate(memory):
            entry.update(after_warm_up_mb=warm[i] if i < len(warm) else None, end_mb=end[i], settled_mb=settled[i])
        return self.results(memory, load_s, sessions_after, dict(status), sampler)

    def note_websockets(self, log: list[dict[str, Any]]) -> None:
        """For each student who reconnected: the replicas that served its websockets, in order (nginx logs a
        websocket when it closes; "a, b" when it tried a first)."""
        served: dict[str, list[str]] = {}
        for entry in log:
            if entry.get("upgrade", "").lower() == "websocket" and entry.get("affinity"):
                served.setdefault(entry["affinity"], []).append(entry.get("upstream", ""))
        for student in self.students:
            for record in student.recoveries:
                record["websockets_served_by"] = served.get(student.user.affinity, [])

    # ----- results ------------------------------------------------------------------------------------------------
    def results(
        self,
        memory: list[dict[str, Any]],
        load_s: float,
        sessions_after: dict[str, int | None],
        status: dict[str, int],
        sampler: MemorySampler,
    ) -> dict[str, Any]:
        actions = [a for s in self.students for a in s.actions]
        timed = [a["s"] for a in actions if a["action"] not in ("open", "open link")]
        per_page: dict[str, Any] = {}
        for page in PAGES:
            mine = [a["s"] for a in actions if a["page"] == page and a["action"] not in ("open", "open link")]
            per_page[page] = _latency(mine)
        per_action: dict[str, Any] = {}
        for name in sorted({a["action"] for a in actions}):
            per_action[name] = _latency([a["s"] for a in actions if a["action"] == name])
        errors = [e for s in self.students for e in s.errors]
        recoveries = [r for s in self.students for r in s.recoveries]
        links = [link for s in self.students for link in s.links]
        limit = k8s_memory_limit_mb()
        # RSS over time, one sample a second per replica, for the record.
        series: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
        for t, index, _pid, mb in sampler.samples:
            if not series[index] or t - series[index][-1][0] >= 1.0:
                series[index].append((round(t, 1), round(mb, 1)))
        return {
            "label": self.config.label,
            "config": asdict(self.config),
            "load_seconds": round(load_s, 1),
            # CPU seconds over the load: the whole machine, the replicas, this process (the clients), the rest (nginx
            # and anything else running on the machine: it should be small for honest figures)
            "cpu": self.cpu,
            "quota": self.quota,
            "memory_groups": self.memory_groups,
            "loadavg_before": self.loadavg_before,  # /proc/loadavg (1, 5, 15 min) after the warm-up
            "actions": actions,
            "students": {
                "count": len(self.students),
                "actions": len(timed),
                "opens": len(actions) - len(timed),
                "latency": _latency(timed),
                "per_page": per_page,
                "per_action": per_action,
                "errors": errors,
                "lost_inputs": self.lost,
                "links_opened": len(links),
                "links_restored": sum(1 for link in links if link["restored"]),
            },
            "kill": self.kill,
            "recoveries": recoveries,
            "memory": {"limit_mb": limit, "replicas": memory, "series": series},
            "sessions_after_settle": sessions_after,
            "proxy_status": status,
            "adversaries": self.adversaries.summary() if self.adversaries else None,
            "training": self.trainer.summary() if self.trainer else None,
        }


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, /proc/stat), for telling our load from others'."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, in a thread of its own when this thread already runs an event loop (in a test run, Playwright's
    sync API leaves one running in the main thread, where asyncio.run refuses to start another)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _latency(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))], 1)

    return {"n": len(values), "p50_ms": rank(50), "p95_ms": rank(95), "p99_ms": rank(99), "max_ms": rank(100)}


def k8s_memory_limit_mb() -> float:
    """The app container's memory limit in deploy/k8s/deployment.yaml, in MiB."""
    import yaml

    for doc in yaml.safe_load_all(DEPLOYMENT.read_text()):
        if doc and doc.get("kind") == "Deployment":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                text = str(container["resources"]["limits"]["memory"])
                number, unit = re.fullmatch(r"([\d.]+)\s*([A-Za-z]*)", text).groups()  # type: ignore[union-attr]
                scale = {"Mi": 1, "Gi": 1024, "M": 1e6 / 2**20, "G": 1e9 / 2**20, "Ki": 1 / 1024, "": 1 / 2**20}
                return round(float(number) * scale[unit], 1)
    raise RuntimeError(f"no memory limit in {DEPLOYMENT}")


def run_class(config: ClassConfig, workdir: Path) -> dict[str, Any]:
    """One class run on a fresh cluster; the results as plain data."""
    workdir.mkdir(parents=True, exist_ok=True)
    return ClassRun(config, workdir).execute()


# ----- verdicts and report ---------------------------------------------------------------------------------------


def checks(result: dict[str, Any]) -> dict[str, Any]:
    """The behaviour a class needs, as numbers: errors, lost inputs, recoveries, memory against the limit."""
    recoveries = result["recoveries"]
    memory = result["memory"]
    return {
        "student_errors": len(result["students"]["errors"]),
        "lost_inputs": len(result["students"]["lost_inputs"]),
        "affected_students": len(recoveries),
        "not_working_again": [r["student"] for r in recoveries if r.get("works_again_s") is None],
        "not_restored": [r["student"] for r in recoveries if not r.get("restored")],
        "peak_rss_mb": [r["peak_mb"] for r in memory["replicas"]],
        "over_limit": [r["port"] for r in memory["replicas"] if r["peak_mb"] >= memory["limit_mb"]],
    }


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _per_replica(
    runs: list[dict[str, Any]],
    entries: Callable[[dict[str, Any]], list[dict[str, Any]]],
    describe: Callable[[dict[str, Any], dict[str, Any]], str],
) -> list[str]:
    """One line per run: each replica's entry described, separated by semicolons."""
    return [f"- {r['label']}: " + "; ".join(describe(r, entry) for entry in entries(r)) for r in runs]


def _run_table(
    columns: list[str],
    runs: list[dict[str, Any]],
    cells: Callable[[Any], list[Any]],
    part: Callable[[dict[str, Any]], Any] = lambda run: run,
) -> list[str]:
    """A Markdown table with a row per run: its label, then `cells` of the run's `part`."""
    rows = [f"| {r['label']} | " + " | ".join(str(cell) for cell in cells(part(r))) + " |" for r in runs]
    return ["| run | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns), *rows]


def _or_dash(value: Any) -> Any:
    return "—" if value is None else value


def markdown(results: dict[str, Any]) -> str:
    """The results of the runs as a Markdown report."""
    runs: list[dict[str, Any]] = results["runs"]
    info = results["machine"]
    first = runs[0]["config"]
    lines = [
        f"# attnviz class load test, {results['date']}",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}; commit {results['commit']}. "
        f"Two replicas of `python -m attnviz.app.server app.py` behind nginx with `deploy/nginx/attnviz.conf`, all on "
        f"this one machine. {first['students']} simulated students for {first['seconds'] / 60:g} minutes, thinking "
        f"{first['think'][0]:g}-{first['think'][1]:g} s between actions; "
        + (
            f"one replica SIGKILLed at {first['kill_at']:g} s and restarted {first['restart_after']:g} s later. "
            if first["kill_at"] is not None
            else "no replica killed. "
        )
        + (f"Replicas' extra environment: {first['replica_env']}. " if first.get("replica_env") else "")
        + (
            f"CPU quota: each replica in a cgroup of its own with {first['quota']:g} "
            f"core{'' if first['quota'] == 1 else 's'} (a pod's CPU limit), "
            "its restart and its trainings included. "
            if first.get("quota")
            else "CPU quota: none. "
        )
        + (
            f"Memory limit: each replica's cgroup limited to {first['memory']:g} MiB (a pod's memory limit), "
            "its trainings included. "
            if first.get("memory")
            else ""
        )
        + (
            f"Training: on, one always running (the Learned attention page's Train, dates, {TRAINING_STEPS} steps, "
            f"seeds from {FIRST_TRAINING_SEED}, the next one pressed as each ends). "
            if first.get("training")
            else "Training: none. "
        )
        + "Method: [bench/README.md, Class load test](../README.md#class-load-test).",
        "",
        "## Goals",
        "",
        "| goal | " + " | ".join(r["label"] for r in runs) + " | |",
        "|---|" + "---|" * len(runs) + "---|",
    ]
    verdicts = [checks(r) for r in runs]
    base = next((r for r in runs if not r["config"]["adversaries"]), None)
    adv = next((r for r in runs if r["config"]["adversaries"]), None)

    def row(goal: str, values: list[str], ok: bool | None) -> None:
        lines.append(
            f"| {goal} | " + " | ".join(values) + f" | {'met' if ok else '**not met**' if ok is not None else ''} |"
        )

    row(
        "student errors: 0",
        [str(v["student_errors"]) for v in verdicts],
        all(v["student_errors"] == 0 for v in verdicts),
    )
    row("lost inputs: 0", [str(v["lost_inputs"]) for v in verdicts], all(v["lost_inputs"] == 0 for v in verdicts))
    row(
        "students on the killed replica working again",
        [f"{v['affected_students'] - len(v['not_working_again'])} of {v['affected_students']}" for v in verdicts],
        all(v["affected_students"] > 0 and not v["not_working_again"] for v in verdicts),
    )
    row(
        "their pages restored from their links",
        [f"{v['affected_students'] - len(v['not_restored'])} of {v['affected_students']}" for v in verdicts],
        all(not v["not_restored"] for v in verdicts),
    )
    row(
        f"peak RSS of each replica under the k8s limit ({runs[0]['memory']['limit_mb']:.0f} MiB)",
        [" / ".join(f"{mb:.0f}" for mb in v["peak_rss_mb"]) + " MiB" for v in verdicts],
        all(not v["over_limit"] for v in verdicts),
    )
    limit = runs[0]["memory"]["limit_mb"]
    if any(r["config"].get("training") for r in runs):
        together = [[m.get("with_training_peak_mb") or 0.0 for m in r["memory"]["replicas"]] for r in runs]
        row(
            f"each replica with its trainings under the limit ({limit:.0f} MiB; peaks added, an upper bound)",
            [" / ".join(f"{mb:.0f}" for mb in v) + " MiB" for v in together],
            all(mb < limit for v in together for mb in v),
        )
    if any(r["config"].get("memory") for r in runs):
        kills = [sum(g.get("oom_kills", 0) for g in r["memory_groups"]) for r in runs]
        row("processes the kernel killed at the memory limit: 0", [str(k) for k in kills], not any(kills))
    p95 = [r["students"]["latency"]["p95_ms"] for r in runs]
    row("student p95 under 1 s", [f"{_ms(v)} ms" for v in p95], all(v is not None and v < 1000 for v in p95))
    if base and adv:
        b, a = base["students"]["latency"]["p95_ms"], adv["students"]["latency"]["p95_ms"]
        ratio = a / b if a and b else None
        values = ["" for _ in runs]
        values[runs.index(adv)] = f"{ratio:.2f}x" if ratio else "—"
        row("p95 with adversaries within 2x of the run without", values, ratio is not None and ratio <= 2)
    lines += ["", "## Students", ""]
    lines += [
        "| run | actions | p50 ms | p95 ms | p99 ms | max ms | errors | lost inputs | links opened (restored) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        s, lat = r["students"], r["students"]["latency"]
        lines.append(
            f"| {r['label']} | {s['actions']} | {_ms(lat['p50_ms'])} | {_ms(lat['p95_ms'])} | {_ms(lat['p99_ms'])} | "
            f"{_ms(lat['max_ms'])} | {len(s['errors'])} | {len(s['lost_inputs'])} | "
            f"{s['links_opened']} ({s['links_restored']}) |"
        )
    lines += ["", "Per page (p50 / p95 ms, actions):", ""]
    lines += ["| page | " + " | ".join(r["label"] for r in runs) + " |", "|---|" + "---|" * len(runs)]
    for page in PAGES:
        cells = [
            f"{_ms(r['students']['per_page'][page]['p50_ms'])} / {_ms(r['students']['per_page'][page]['p95_ms'])} "
            f"({r['students']['per_page'][page]['n']})"
            for r in runs
        ]
        lines.append(f"| {PAGES[page]} | " + " | ".join(cells) + " |")
    names = sorted({n for r in runs for n in r["students"]["per_action"]})
    lines += ["", "Per action (p50 / p95 ms, count):", ""]
    lines += ["| action | " + " | ".join(r["label"] for r in runs) + " |", "|---|" + "---|" * len(runs)]
    for name in names:
        cells = []
        for r in runs:
            entry = r["students"]["per_action"].get(name)
            cells.append(f"{_ms(entry['p50_ms'])} / {_ms(entry['p95_ms'])} ({entry['n']})" if entry else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for r in runs:
        problems = r["students"]["errors"][:10] + r["students"]["lost_inputs"][:10]
        if problems:
            lines += ["", f"Problems, {r['label']} (first ones):", ""]
            lines += [f"- `{json.dumps(p, ensure_ascii=False)[:400]}`" for p in problems]
    lines += ["", "## The replica killed midway", ""]
    for r in runs:
        kill = r["kill"]
        if not kill:
            continue
        recoveries = r["recoveries"]
        works = [x["works_again_s"] for x in recoveries if x.get("works_again_s") is not None]
        reconnect = [x["reconnect_s"] for x in recoveries if x.get("reconnect_s") is not None]
        lines += [
            f"**{r['label']}**: killed {kill['replica']} (pid {kill['pid']}) at {kill['at_s']:.1f} s, holding "
            f"{len(kill['students_on_victim'])} students (sessions per replica: {kill['sessions_per_replica']}); "
            f"restarted at {kill.get('restarted_at_s', float('nan')):.1f} s, healthy after "
            f"{kill.get('restart_to_healthy_s', float('nan')):.1f} s. {len(recoveries)} students lost their "
            f"websocket; reconnected after {_span(reconnect)} s; working again (their change in the URL) after "
            f"{_span(works)} s.",
            "",
            "| student | page | websockets served by | change sent | reconnected s | first run s | working again s | "
            "page from its link | change applied |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for x in recoveries:
            change = x.get("change") or {}
            lines.append(
                f"| {x['student']} | {x['page']} | "
                + _served(x.get("websockets_served_by", []))
                + f" | {x.get('moment', '—')} | {x.get('reconnect_s', '—')} | "
                f"{x.get('first_run_s', '—')} | {x.get('works_again_s') or '—'} | "
                f"{'yes' if x.get('restored') else '**no**'} | "
                f"{change.get('param', '?')}={str(change.get('sent', '?'))[:24]}: "
                f"{'yes' if not x.get('lost') else '**lost**: ' + x.get('why', '?')} |"
            )
        lines.append("")
    lines += ["## Memory (RSS from /proc, MiB)", ""]
    lines += [
        "| run | replica | after warm-up | peak | peak per process | end of load | settled | k8s limit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        for m in r["memory"]["replicas"]:
            lives = ", ".join(f"{life['peak_mb']:.0f}" for life in m["lives"])
            lines.append(
                f"| {r['label']} | :{m['port']}{' (killed)' if m['killed'] else ''} | {m['after_warm_up_mb']} | "
                f"{m['peak_mb']:.0f} | {lives} | {m['end_mb']} | {m['settled_mb']} | {r['memory']['limit_mb']:.0f} |"
            )
    if adv and adv["adversaries"]:
        lines += ["", "## What the adversaries got", ""]
        lines += [
            "| adversary | link | requests | HTTP | runs finished | run s median / max | largest reply KB | "
            "the page said |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for kind, summary in adv["adversaries"].items():
            for name, entry in summary["by_link"].items():
                said = "; ".join(entry["alerts"]) or ", ".join(entry.get("error", [])) or "no message"
                if entry.get("exceptions"):
                    said = f"EXCEPTION {entry['exceptions'][0]}; " + said
                if entry.get("page_not_found"):
                    said = "page not found; " + said
                said = re.sub(r"[\x00-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", said.replace("\n", " "))
                said = said.replace("|", "\\|")[:300]
                http = ", ".join(f"{k}×{v}" for k, v in entry["http"].items())
                lines.append(
                    f"| {kind} | {name} | {entry['count']} | {http} | {entry['runs']} | "
                    f"{entry['run_s_median']} / {entry['run_s_max']} | {entry['received_kb_max']} | {said} |"
                )
    trained = [r for r in runs if r.get("training")]
    if trained:
        lines += ["", "## The training alongside", ""]
        lines += _run_table(
            ["Train pressed", "started", "finished", "outcomes", "finished in s (median)"],
            trained,
            lambda t: [t["pressed"], t["started"], t["finished"], t["outcomes"], _or_dash(t["finished_in_s_median"])],
            lambda r: r["training"],
        )
        lines += ["", "Peak RSS of each replica's trainings, and of the replica and its trainings together (MiB):", ""]
        lines += _per_replica(
            trained,
            lambda r: r["memory"]["replicas"],
            lambda r, m: (
                f":{m['port']} training {m.get('training_peak_mb')}, together {m.get('with_training_peak_mb')}"
            ),
        )
    groups = (
        (
            "The CPU quota over the load (each replica's group)",
            [r for r in runs if r.get("quota")],
            lambda r: r["quota"],
            lambda r, q: (
                f"{q.get('throttled', 0):.0f} of {q.get('periods', 0):.0f} periods throttled, "
                f"{q.get('throttled_s', 0):.1f} s throttled"
            ),
        ),
        (
            "The memory limit over the load (each replica's group, its trainings included)",
            [r for r in runs if r["config"].get("memory")],
            lambda r: r["memory_groups"],
            lambda r, m: (
                f"peak {m.get('peak_mib', float('nan')):.0f} MiB of {r['config']['memory']:g}, "
                f"{m.get('oom_kills', 0)} killed by the kernel"
            ),
        ),
    )
    for title, selected, entries, describe in groups:
        if selected:
            lines += ["", f"## {title}", "", *_per_replica(selected, entries, describe)]
    lines += ["", "## CPU over the load (seconds, both cores together)", ""]
    lines += _run_table(
        ["load s", "machine busy", "replicas", "trainings", "clients (this process)", "others (nginx, the rest)"],
        runs,
        lambda cpu: [
            cpu["load_seconds"],
            cpu.get("machine_busy_s"),
            cpu.get("replicas_s"),
            cpu.get("training_s", 0),
            cpu.get("client_s"),
            cpu.get("others_s"),
        ],
        lambda r: {**r["cpu"], "load_seconds": r["load_seconds"]},
    )
    lines += ["", "## Proxy responses (nginx access log, status: count)", ""]
    for r in runs:
        lines.append(f"- {r['label']}: {dict(sorted(r['proxy_status'].items()))}")
    return "\n".join(lines) + "\n"


def _served(upstreams: list[str]) -> str:
    """ ":8501 → :8502 → :8501 ×3": the replicas that served a student's websockets, in order ("a/b": a was tried
    first), runs of the same one collapsed (a link student opens new tabs)."""
    runs: list[list[Any]] = []
    for upstream in upstreams:
        name = "/".join(":" + a.split(":")[-1] for a in upstream.split(", "))
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    return " → ".join(name + (f" ×{count}" if count > 1 else "") for name, count in runs)


def _span(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{min(values):.2f}-{max(values):.2f} (median {statistics.median(values):.2f})"


def commit() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--no-adversaries", action="store_true", help="only the run without adversaries")
    parser.add_argument("--only-adversaries", action="store_true", help="only the run with adversaries")
    parser.add_argument("--kill-at", type=float, default=None, help="seconds into the run (default: halfway)")
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--restart-after", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--replica-env", action="append", default=[], metavar="NAME=VALUE", help="extra environment of the replicas"
    )
    parser.add_argument(
        "--adversary", action="append", choices=("crafted", "long_sentence", "oversized"), help="only these (repeat)"
    )
    parser.add_argument(
        "--quota", type=float, metavar="CORES", help="each replica in a CPU quota of CORES cores (a cgroup; root)"
    )
    parser.add_argument(
        "--memory", type=float, metavar="MIB", help="each replica in a memory limit of MIB MiB (a cgroup; root)"
    )
    parser.add_argument("--training", action="store_true", help="a training always running (Learned attention)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for <date>-class.md and .json")
    parser.add_argument("--name", default="class", help="results file names: <date>-<name>.md and .json")
    parser.add_argument("--workdir", type=Path, default=None, help="nginx's files (default: a temporary folder)")
    parser.add_argument(
        "--markdown-from", type=Path, help="only judge the recoveries again and write the .md from a results .json"
    )
    args = parser.parse_args(argv)
    if args.markdown_from:
        results = json.loads(args.markdown_from.read_text())
        reevaluate(results)
        args.markdown_from.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        args.markdown_from.with_suffix(".md").write_text(markdown(results))
        return
    seconds = args.minutes * 60
    kill_at = None if args.no_kill else (args.kill_at if args.kill_at is not None else seconds / 2)
    variants = [False, True]
    if args.no_adversaries:
        variants = [False]
    elif args.only_adversaries:
        variants = [True]
    import tempfile

    runs = []
    with tempfile.TemporaryDirectory(prefix="attnviz-class-") as tmp:
        workdir = args.workdir or Path(tmp)
        for adversaries in variants:
            label = "with adversaries" if adversaries else "without adversaries"
            config = ClassConfig(
                students=args.students,
                seconds=seconds,
                adversaries=adversaries,
                kill_at=kill_at,
                restart_after=args.restart_after,
                settle=args.settle,
                seed=args.seed,
                label=label,
                quota=args.quota,
                memory=args.memory,
                training=args.training,
            )
            if args.adversary:
                config.adversary_kinds = tuple(args.adversary)
            config.replica_env = dict(item.split("=", 1) for item in args.replica_env)
            print(
                f"{label}: {args.students} students, {seconds:g} s, kill at {kill_at}, quota {args.quota}, "
                f"training {args.training}",
                flush=True,
            )
            runs.append(run_class(config, workdir / label.replace(" ", "-")))
            print(json.dumps(checks(runs[-1])), flush=True)
    date = dt.date.today().isoformat()
    for run in runs:  # every action's timing stays out of the file: the summaries above are computed from them
        run["actions_per_student"] = dict(Counter(a["student"] for a in run.pop("actions")))
    results = {"date": date, "machine": machine(), "commit": commit(), "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{date}-{args.name}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{date}-{args.name}.md").write_text(markdown(results))
    print(f"wrote {args.out / f'{date}-{args.name}.md'} and .json")


if __name__ == "__main__":
    main()
