"""A real control group with a CPU quota and a memory limit, as a container's limits are made, for the benchmark and
the tests: the processes moved into it (and the children they start) share its CFS quota and its memory limit.

    with ControlGroup(cpu_cores=1.0) as group:   # cpu.max "100000 100000" (v2), cfs_quota_us 100000 (v1)
        group.add(server.pid)

Both cgroup versions: under version 2 the group is made below this process's own group (its parent must be able to
hand the cpu and memory controllers down); under version 1, one group per hierarchy (cpu, memory). Needs root, or
a delegated cgroup: `ControlGroupError` says what is missing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

from attnviz.app.training.cgroup import ROOT, own_groups, v1_mount

PERIOD_US = 100_000  # the kernel's default CFS period, 100 ms


class ControlGroupError(RuntimeError):
    """This machine does not let us make the group."""


class ControlGroup:
    """A new cgroup with `cpu_cores` of CPU quota and/or `memory_mb` of memory; removed on exit."""

    def __init__(self, cpu_cores: float | None = None, memory_mb: float | None = None, root: Path = ROOT) -> None:
        self.cpu_cores, self.memory_mb, self.root = cpu_cores, memory_mb, root
        self.name = f"attnviz-{os.getpid()}-{secrets.token_hex(3)}"
        self.folders: list[Path] = []
        self.version = 2 if (root / "cgroup.controllers").is_file() else 1

    def __enter__(self) -> ControlGroup:
        try:
            self._make()
        except OSError as exc:
            self.remove()
            raise ControlGroupError(f"cannot make a cgroup here ({exc}); the benchmark and tests need root") from exc
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def _make(self) -> None:
        quota = None if self.cpu_cores is None else str(round(self.cpu_cores * PERIOD_US))
        memory = None if self.memory_mb is None else str(int(self.memory_mb * 2**20))
        groups = own_groups()
        if self.version == 2:
            parent = self.root / groups.get("", "/").strip("/")
            wanted = [name for name, value in (("cpu", quota), ("memory", memory)) if value]
            (parent / "cgroup.subtree_control").write_text(" ".join(f"+{name}" for name in wanted))
            folder = parent / self.name
            folder.mkdir()
            self.folders.append(folder)
            if quota:
                (folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            if memory:
                (folder / "memory.max").write_text(memory)
            return
        for controller, files in (
            ("cpu", {"cpu.cfs_period_us": str(PERIOD_US), "cpu.cfs_quota_us": quota}),
            ("memory", {"memory.limit_in_bytes": memory}),
        ):
            if not any(files.values()) or (controller == "cpu" and quota is None):
                continue
            mount = v1_mount(self.root, controller)
            if mount is None:
                raise ControlGroupError(f"no cgroup v1 hierarchy for {controller} under {self.root}")
            parent = mount / groups.get(controller, "/").strip("/")
            folder = (parent if parent.is_dir() else mount) / self.name
            folder.mkdir()
            self.folders.append(folder)
            for name, value in files.items():
                if value is not None:
                    (folder / name).write_text(value)

    def add(self, pid: int) -> None:
        """Move process `pid` (all its threads) into the group; the children it starts later are born in it."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside the group: a shell moves itself in, then becomes the command."""
        moves = " && ".join(f"echo $$ > '{folder / 'cgroup.procs'}'" for folder in self.folders)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *argv]

    def cpu_stat(self) -> dict[str, float]:
        """The group's CPU figures so far: CFS periods, those throttled (its whole quota spent), seconds throttled."""
        folder = next((f for f in self.folders if (f / "cpu.stat").is_file()), None)
        if folder is None:
            return {}
        stat = {k: int(v) for k, v in (line.split() for line in (folder / "cpu.stat").read_text().splitlines())}
        seconds = stat.get("throttled_usec", 0) / 1e6 + stat.get("throttled_time", 0) / 1e9  # v2 / v1
        return {"periods": stat.get("nr_periods", 0), "throttled": stat.get("nr_throttled", 0), "throttled_s": seconds}

    def memory_stat(self) -> dict[str, float]:
        """The group's memory figures so far: its peak in MiB, and how many processes the kernel's OOM killer took."""
        folder = next(
            (f for f in self.folders if (f / "memory.max").is_file() or (f / "memory.limit_in_bytes").is_file()), None
        )
        if folder is None:
            return {}

        def read(name: str) -> str:
            path = folder / name
            return path.read_text() if path.is_file() else ""

        peak = read("memory.peak") or read("memory.max_usage_in_bytes")  # v2 (kernel 5.19+) / v1
        events = read("memory.events") or read("memory.oom_control")  # both have a line "oom_kill N"
        kills = dict(line.split() for line in events.splitlines() if len(line.split()) == 2).get("oom_kill", "0")
        return {"peak_mib": int(peak) / 2**20 if peak.strip() else float("nan"), "oom_kills": int(kills)}

    def pids(self) -> list[int]:
        """The processes in the group now."""
        if not self.folders:
            return []
        text = (self.folders[0] / "cgroup.procs").read_text()
        return [int(line) for line in text.split()]

    def remove(self) -> None:
        """Move what is left back to the parent and remove the group's folders."""
        for folder in self.folders:
            parent_procs = folder.parent / "cgroup.procs"
            with contextlib.suppress(OSError):
                for pid in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        parent_procs.write_text(pid)
            for _ in range(50):  # a process that just exited may hold the folder a moment
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        self.folders = []
