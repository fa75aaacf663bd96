"""A class run's configuration, and the run as the students, the adversaries and the trainer see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from bench.classload.cluster import Cluster


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


class Lesson(Protocol):
    """What the students, the adversaries and the trainer use of the run they are part of (a ClassRun)."""

    config: ClassConfig
    cluster: Cluster
    t0: float  # time.perf_counter() at the start of the load
    kill_t: float | None  # seconds into the run when a replica was killed; None: not (yet)
    lost: list[dict[str, Any]]  # the lost inputs, every student's

    def now(self) -> float:
        """Seconds since the run started."""
        ...
