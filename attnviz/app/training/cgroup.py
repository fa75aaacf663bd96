"""What the kernel's control groups say about this process's container: the memory left under its limit, and its CPU
limit in cores.

Both versions of cgroups are read. Version 2 has one hierarchy (`memory.max`, `memory.current`, `cpu.max`); version 1,
still the default of many hosts, has one per controller (`memory/memory.limit_in_bytes`, `memory.usage_in_bytes`,
`cpu/cpu.cfs_quota_us`, `cpu.cfs_period_us`; the cpu hierarchy may be mounted as `cpu,cpuacct`). A process's own
group is named in /proc/self/cgroup: inside a container with a cgroup namespace of its own it is "/", the mount's root,
elsewhere a path under it. A limit may be set on any group above this one, so the tightest from this group up to the
mount's root counts.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
UNLIMITED_V1 = 2**62  # version 1 writes "no limit" as the largest page-aligned 64-bit number


def own_groups(proc_cgroup: Path = PROC_CGROUP) -> dict[str, str]:
    """Controller -> this process's group ("" for version 2's single hierarchy), from /proc/self/cgroup's lines
    `id:controllers:path`; {} where there is nothing to read."""
    groups: dict[str, str] = {}
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return groups
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            groups[controller.removeprefix("name=")] = parts[2]
    return groups


def _chain(mount: Path, group: str) -> list[Path]:
    """The folders of `group` and of every group above it up to `mount`, deepest first, those that exist (a group
    named from outside this container's mount is not there: then the mount's root is this container's group)."""
    parts = [part for part in group.strip("/").split("/") if part]
    folders = [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]
    return [folder for folder in folders if folder.is_dir()]


def v1_mount(root: Path, controller: str) -> Path | None:
    """Where version 1 mounts `controller`'s hierarchy ("cpu" may share a folder with "cpuacct")."""
    if (root / controller).is_dir():
        return root / controller
    try:
        return next((folder for folder in root.iterdir() if controller in folder.name.split(",")), None)
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _folders(root: Path, controller: str, groups: dict[str, str]) -> tuple[int, list[Path]]:
    """The cgroup version in use for `controller` and the folders to read, this process's group first."""
    if (root / "cgroup.controllers").is_file():  # version 2 mounted at the root
        return 2, _chain(root, groups.get("", "/"))
    mount = v1_mount(root, controller)
    if mount is None:
        return 1, []
    return 1, _chain(mount, groups.get(controller, "/"))


def memory_headroom_mb(root: Path = ROOT, groups: dict[str, str] | None = None) -> float | None:
    """MiB left under the tightest memory limit of this process's group and those above it, or None where no limit
    is set or none can be read."""
    version, folders = _folders(root, "memory", own_groups() if groups is None else groups)
    limit_file, usage_file = (
        ("memory.max", "memory.current") if version == 2 else ("memory.limit_in_bytes", "memory.usage_in_bytes")
    )
    headrooms = []
    for folder in folders:
        limit, used = _read_int(folder / limit_file), _read_int(folder / usage_file)  # v2's "max" reads as None
        if limit is not None and used is not None and limit < UNLIMITED_V1:
            headrooms.append((limit - used) / 2**20)
    return min(headrooms) if headrooms else None


def cpu_limit_cores(root: Path = ROOT, groups: dict[str, str] | None = None) -> float | None:
    """The tightest CPU quota of this process's group and those above it, in cores (quota / period), or None where
    none is set or none can be read."""
    version, folders = _folders(root, "cpu", own_groups() if groups is None else groups)
    limits = []
    for folder in folders:
        if version == 2:
            try:
                quota, period = (folder / "cpu.max").read_text().split()[:2]
            except (OSError, ValueError):
                continue
            if quota != "max":
                limits.append(int(quota) / int(period))
        else:
            quota, period = _read_int(folder / "cpu.cfs_quota_us"), _read_int(folder / "cpu.cfs_period_us")
            if quota is not None and period and quota > 0:
                limits.append(quota / period)
    return min(limits) if limits else None


def throttled_periods(root: Path = ROOT, groups: dict[str, str] | None = None) -> int:
    """How many CFS periods this process's group, or one above it, has been throttled in so far: each one is a
    period in which the group spent its whole CPU quota (0 where no quota is set or none can be read)."""
    _, folders = _folders(root, "cpu", own_groups() if groups is None else groups)
    total = 0
    for folder in folders:
        try:
            lines = (folder / "cpu.stat").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith("nr_throttled "))
    return total


def available_cores() -> float:
    """The CPU this process may use: its cores (affinity), or less under a CPU quota."""
    cores = float(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else float(os.cpu_count() or 1)
    quota = cpu_limit_cores()
    return min(cores, quota) if quota is not None else cores
