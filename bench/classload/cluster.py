"""The cluster: two replicas behind the real nginx, and their memory sampled from /proc."""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from testkit.cgroups import ControlGroup
from testkit.nginx import NginxProxy
from testkit.procstat import children, cpu_seconds, rss_mb
from testkit.server import HOST, StreamlitServer, free_port


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
