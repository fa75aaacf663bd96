"""One class run: the students, adversaries and trainer against a fresh cluster, a replica killed midway."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from bench.classload.adversaries import Adversaries
from bench.classload.cluster import Cluster, MemorySampler
from bench.classload.config import ClassConfig
from bench.classload.students import PAGES, Student
from bench.classload.trainer import Trainer
from testkit.procstat import cpu_seconds, rss_mb
from testkit.proxyclient import ProxyUser

DEPLOYMENT = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "deployment.yaml"
T = TypeVar("T")


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
