"""A training that gives way to its server: it paces itself to the CPU the server leaves, and it ends with the server.

Under a container's CPU limit (a CFS quota) the server and its trainings share one budget of CPU time per period,
spent on any core. A training on the other core does not compete with the server for a core, so a lower priority
(niceness) changes nothing: it spends the shared budget, and then the whole container waits for the next period.
In a 1-core quota a training beside 30 students cut their reruns by more than half (issue 36). So a training measures
what the server used over the last seconds and, between two units of its work (a training step, a snapshot, a
chunk of evaluation), sleeps long enough that its own CPU time stays within what the server left: the container's
limit less the server's busiest half second of the last two and a reserve for its bursts, and only the floor
whenever the container spent its whole quota in some period of the last half second (it was throttled: the class
is at the limit), never less than the floor, so that it always moves on. With the server idle it runs at full speed;
with a class using it, slowly (bench/README.md has the figures).

A training started by a server also stops when the server does: the kernel kills it when its parent goes (Linux's
PR_SET_PDEATHSIG, asked for before anything is imported: `jobs.WORKER_BOOT`), and where that is not available, it
notices at its next pause that the server's process is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path

from attnviz.app.training.cgroup import available_cores, throttled_periods

WINDOW_S = 0.5  # how often the server's use is measured again
REMEMBER = 4  # the share follows the busiest of the server's last this many windows
RESERVE_CORES = 0.1  # left free for the server's bursts
FLOOR_CORES = 0.1  # the training's share when the server uses everything else
PR_SET_PDEATHSIG = 1  # linux/prctl.h
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ServerGoneError(RuntimeError):
    """The server this training was started for has stopped."""


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user and system, all threads) process `pid` has used, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime and stime, fields 14 and 15 of proc(5)


def die_with_parent(pid: int) -> None:
    """Have the kernel kill this process when its parent `pid` ends (Linux); ServerGoneError if it already has."""
    if sys.platform.startswith("linux") and os.getppid() == pid:
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != pid and process_cpu_s(pid) is None:  # gone before the kernel was told
        raise ServerGoneError(f"process {pid} has ended")


class Pacer:
    """Call it between two units of work: it sleeps as long as the training's share of the CPU asks."""

    def __init__(
        self,
        server_pid: int,
        cores: float | None = None,
        floor: float = FLOOR_CORES,
        reserve: float = RESERVE_CORES,
    ) -> None:
        """Pace this process beside `server_pid` within `cores` (default: this container's CPU)."""
        self.server_pid = server_pid
        self.cores = available_cores() if cores is None else cores
        self.floor, self.reserve = floor, reserve
        self.share = floor  # until the server's use is known (half a second)
        self.shares: list[float] = []  # every share decided, for the record
        self.measured_at, self.server_cpu = time.monotonic(), self._server_cpu()
        self.server_rates: deque[float] = deque(maxlen=REMEMBER)
        self.throttled = throttled_periods()
        self.wall, self.cpu = self.measured_at, time.process_time()

    def _server_cpu(self) -> float:
        server = process_cpu_s(self.server_pid)
        if server is None:
            raise ServerGoneError(f"process {self.server_pid} has ended")
        return server

    def _measure(self, now: float) -> None:
        """The share from the server's use since the last measurement."""
        server, throttled = self._server_cpu(), throttled_periods()
        self.server_rates.append((server - self.server_cpu) / (now - self.measured_at))
        left = self.cores - max(self.server_rates) - self.reserve
        self.share = self.floor if throttled > self.throttled else max(self.floor, min(1.0, left))
        self.throttled = throttled
        self.shares.append(self.share)
        self.measured_at, self.server_cpu = now, server

    def __call__(self) -> None:
        """Sleep until the CPU time used since the account was opened fits the share (measured again every
        WINDOW_S, also while sleeping); then open a new account every few windows, so that no credit piles up."""
        while True:
            now = time.monotonic()
            if now - self.measured_at >= WINDOW_S:
                self._measure(now)
            wait = (time.process_time() - self.cpu) / self.share - (now - self.wall)
            if wait <= 0:
                break
            time.sleep(min(wait, WINDOW_S))
        if now - self.wall >= 4 * WINDOW_S:
            self.wall, self.cpu = now, time.process_time()
