"""One live-class run: Redis, two replicas behind nginx, a teacher and its students, in phases:

1. idle, the class without students (the teacher's tab open, doing nothing);
2. solo: the teacher's changes with no one following (the cost of one change's rerun alone);
3. the students join; idle again, every student following;
4. followed: the same changes, every student following them;
5. the lesson: a change every 2 s, three questions, a replica SIGKILLed and restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnviz.app.classroom.redis_store import RedisStore
from attnviz.app.classroom.store import new_secret, secret_hash
from bench.classload.cluster import Cluster, MemorySampler
from bench.classload.run import machine_busy_seconds, run_async
from bench.liveclass.questions import question_round
from bench.liveclass.students import Student
from bench.liveclass.teacher import PAGES, Teacher
from testkit.procstat import cpu_seconds
from testkit.proxyclient import ProxyUser
from testkit.redis_server import RedisServer


@dataclass
class LiveConfig:
    """One live-class run."""

    students: int = 30
    seconds: float = 180.0  # the lesson
    idle_seconds: float = 60.0  # each idle phase
    cost_changes: int = 15  # changes in each cost phase
    change_every: float = 2.0
    questions: tuple[float, ...] = (0.12, 0.42, 0.8)  # when each question is asked, as fractions of the lesson
    kill_at: float | None = 0.6  # fraction of the lesson; None: no kill
    restart_after: float = 20.0
    arrival: float = 5.0
    action_timeout: float = 30.0
    seed: int = 0


class LiveRun:
    """The cluster, the class and its members, the measures of each phase."""

    def __init__(self, config: LiveConfig, workdir: Path) -> None:
        self.config = config
        self.redis = RedisServer(workdir / "redis")
        self.cluster = Cluster(workdir, log_prefix="live", env={"ATTNVIZ_CLASS_STORE": self.redis.url})
        self.t0 = time.perf_counter()
        self.store: RedisStore | None = None
        self.teacher: Teacher | None = None
        self.students: list[Student] = []
        self.phases: dict[str, dict[str, Any]] = {}
        self.questions: list[dict[str, Any]] = []
        self.kill: dict[str, Any] | None = None
        self.lesson_start = 0.0
        self.stop = asyncio.Event()
        self.sampler: MemorySampler | None = None

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def pids(self) -> dict[str, int]:
        found = {f"replica {i}": r.pid for i, r in enumerate(self.cluster.replicas) if r.pid}
        if self.redis.process is not None:
            found["redis"] = self.redis.process.pid
        return found

    def cpu(self) -> dict[int, float]:
        """CPU seconds of each replica's and Redis's process, by pid (a process gone: its last sampled value)."""
        found = dict(self.sampler.cpu) if self.sampler is not None else {}
        for pid in self.pids().values():
            with contextlib.suppress(OSError):
                found[pid] = cpu_seconds(pid)
        return found

    def label(self, pid: int) -> str:
        """ "replica 0", "replica 1 (restarted)", "redis": who a pid was."""
        for index, replica in enumerate(self.cluster.replicas):
            lives = list(dict.fromkeys(p for _, i, p, _ in self.sampler.samples if i == index)) if self.sampler else []
            if pid == replica.pid or pid in lives:
                return f"replica {index}" + (" (restarted)" if lives and pid != lives[0] else "")
        return "redis"

    async def phase(self, name: str, body: Any) -> Any:
        """Run `body` (a coroutine) and note its seconds and the CPU seconds of each replica and of Redis (a replica
        killed during it: up to its last sample; its restart: from its start)."""
        before, started = self.cpu(), time.perf_counter()
        busy, client = machine_busy_seconds(), time.process_time()
        result = await body
        if self.sampler is not None:
            self.sampler.sample()
        after, seconds = self.cpu(), time.perf_counter() - started
        cpu = {self.label(pid): round(after[pid] - before.get(pid, 0.0), 3) for pid in after}
        replicas = sum(v for k, v in cpu.items() if k.startswith("replica"))
        cpu["clients"] = round(time.process_time() - client, 2)  # this process: every simulated browser
        cpu["machine"] = round(machine_busy_seconds() - busy, 2)  # all cores, every process (others' too)
        self.phases[name] = {"seconds": round(seconds, 2), "cpu_s": cpu, "replicas_cpu_s": round(replicas, 3),
                             "replicas_core_pct": round(100 * replicas / seconds, 2)}  # fmt: skip
        print(f"  {self.now():6.1f} s  {name}: {self.phases[name]}", flush=True)
        return result

    async def warm_up(self) -> None:
        """Each replica serves the class's pages once (imports, the model), straight, not through the proxy."""
        for replica in self.cluster.replicas:
            for page in ("", *PAGES.values()):
                user = ProxyUser(replica.url, page)
                await user.open(120)
                await user.close()

    async def changes(self, count: int) -> None:
        """`count` temperature changes by the teacher, one every change_every seconds."""
        assert self.teacher is not None
        for _ in range(count):
            tick = time.perf_counter()
            await self.teacher.change(only_temperature=True)
            await asyncio.sleep(max(0.0, tick + self.config.change_every - time.perf_counter()))
        await asyncio.sleep(self.config.change_every)  # the last change's followers

    async def open_class(self) -> None:
        """The class made in the store (as "Start a class" does), its teacher on the teacher link."""
        self.store = RedisStore(self.redis.url)
        secret = new_secret()
        state = await asyncio.to_thread(self.store.create, secret_hash(secret), "self", {}, time.time())
        self.teacher = Teacher(self, state.code, secret)
        await self.teacher.open()

    async def join(self) -> list[asyncio.Task[None]]:
        """Every student opens the join link (arriving over a few seconds), then follows the class."""
        assert self.teacher is not None
        self.students = [Student(i, self, self.teacher.code) for i in range(self.config.students)]

        async def arrive(student: Student) -> None:
            await asyncio.sleep(student.rng.uniform(0, self.config.arrival))
            await student.join()

        await asyncio.gather(*(arrive(s) for s in self.students))
        tasks = [asyncio.create_task(s.follow(self.stop)) for s in self.students]
        tasks += [asyncio.create_task(s.watch(self.stop)) for s in self.students]
        await asyncio.sleep(3.0)
        return tasks

    async def lesson(self) -> None:
        """A change every change_every seconds; the questions asked at their times, alongside."""
        teacher, config = self.teacher, self.config
        assert teacher is not None
        self.lesson_start = time.perf_counter()
        end = self.lesson_start + config.seconds
        asks = [self.lesson_start + f * config.seconds for f in config.questions]
        rounds: list[asyncio.Task[None]] = []
        teacher.phase = "lesson"
        while time.perf_counter() < end:
            tick = time.perf_counter()
            if asks and tick >= asks[0] and not teacher.asking:
                asks.pop(0)
                teacher.asking = True
                rounds.append(asyncio.create_task(question_round(self)))
            if teacher.user.connected:
                await teacher.change()
            await asyncio.sleep(max(0.0, tick + config.change_every - time.perf_counter()))
        await asyncio.gather(*rounds)

    async def killer(self) -> None:
        """SIGKILL the replica holding most students at kill_at; restart it restart_after seconds later."""
        config = self.config
        assert config.kill_at is not None
        await asyncio.sleep(max(0.0, self.lesson_start + config.kill_at * config.seconds - time.perf_counter()))
        owners = await asyncio.to_thread(self.cluster.replica_of)
        counts = [sum(1 for s in self.students if owners.get(s.user.affinity) == self.cluster.upstream(r))
                  for r in self.cluster.replicas]  # fmt: skip
        index = counts.index(max(counts))
        victim = self.cluster.replicas[index]
        teacher = self.teacher.user.affinity if self.teacher else ""
        self.kill = {"index": index, "pid": victim.pid, "students_on_replicas": counts,
                     "teacher_on_victim": owners.get(teacher) == self.cluster.upstream(victim)}  # fmt: skip
        victim.kill()
        self.kill["at_s"] = round(self.now(), 2)
        print(f"  {self.now():6.1f} s  killed replica {index} (students there: {counts[index]})", flush=True)
        await asyncio.sleep(config.restart_after)
        await asyncio.to_thread(victim.restart)
        self.kill["restarted_at_s"] = round(self.now(), 2)

    async def drive(self) -> None:
        config = self.config
        await self.open_class()
        assert self.teacher is not None
        timers = asyncio.gather(self.teacher.timers(self.stop), self.teacher.watch(self.stop))
        self.teacher.phase = "idle"
        await self.phase("idle without students", asyncio.sleep(config.idle_seconds))
        self.teacher.phase = "solo"
        await self.phase("changes without students", self.changes(config.cost_changes))
        tasks = await self.join()
        self.teacher.phase = "idle"
        await self.phase("idle with students", asyncio.sleep(config.idle_seconds))
        self.teacher.phase = "followed"
        await self.phase("changes with students", self.changes(config.cost_changes))
        kill = asyncio.create_task(self.killer()) if config.kill_at is not None else None
        await self.phase("lesson", self.lesson())
        self.stop.set()
        if kill is not None:
            await kill
        for task in [*tasks, timers]:
            task.cancel()
        await asyncio.gather(*tasks, timers, return_exceptions=True)
        for member in [self.teacher, *self.students]:
            await member.user.close()

    def execute(self) -> dict[str, Any]:
        """Start Redis and the cluster, warm up, drive the class; return the results."""
        from bench.liveclass.report import results

        self.redis.start()
        self.cluster.start()
        sampler = self.sampler = MemorySampler(self.cluster)
        try:
            run_async(self.warm_up())
            self.t0 = time.perf_counter()
            sampler.start(self.t0)
            client = time.process_time()
            run_async(self.drive())
            sampler.sample()
            client_s = time.process_time() - client
        finally:
            sampler.stop()
            self.cluster.stop()
            self.redis.stop()
        return results(self, sampler, client_s)
