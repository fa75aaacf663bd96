"""testkit's control groups, as the class load test uses them for a pod's limits (a real cgroup; needs root)."""

from __future__ import annotations

import subprocess
import sys

from testkit.cgroups import ControlGroup

GROW = "chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 2**20))\n"  # 8 MiB at a time, touched (zeroed)


def test_a_process_past_the_memory_limit_is_killed_and_counted():
    """The class load test's --memory reads the group's peak and the kernel's OOM kills: a process that grows without
    end inside a 96 MiB group is killed, the kill is counted, and the peak is the limit's, not more."""
    with ControlGroup(memory_mb=96) as group:
        grown = subprocess.run(group.command([sys.executable, "-c", GROW]), capture_output=True, timeout=120)
        stat = group.memory_stat()
    assert grown.returncode == -9, grown.stderr[-500:]
    assert stat["oom_kills"] >= 1
    assert 60 < stat["peak_mib"] <= 96.5


def test_a_process_within_the_limit_is_not_killed():
    with ControlGroup(memory_mb=256) as group:
        quiet = subprocess.run(group.command([sys.executable, "-c", "x = bytearray(32 * 2**20)"]), timeout=120)
        stat = group.memory_stat()
    assert quiet.returncode == 0
    assert stat["oom_kills"] == 0
    assert 32 < stat["peak_mib"] < 256
