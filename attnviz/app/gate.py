"""Large reruns on one server process take turns, and take at most a share of its time.

The budget (attnviz/app/budget.py) bounds what one change costs. It does not bound how often: a crafted link reopened
again and again, or long sentences pasted into the model page in new sessions, each cost up to the budget and
arrive back to back. In one process they also hold Python's GIL while they build charts, so every student's small
rerun waits behind them. The class load test (bench/classload/) measured it: with three such clients beside 30
students, the students' p95 went from 72 ms to 178 ms and each replica peaked over its memory limit, because
several large runs were in memory at once.

So a rerun estimated above HEAVY_SECONDS goes through the process's gate:

- one large rerun at a time;
- after a large rerun of t seconds the gate stays shut for t * (1 - SHARE) / SHARE seconds, so large reruns use at
  most SHARE of the process's time, whoever sends them;
- the others wait in order (the page says how many are ahead), and a rerun the student replaces leaves the queue;
- when MAX_WAITING are already waiting, or after MAX_WAIT_SECONDS, a rerun gives up with `ServerBusyError`, and the
  page says so instead of computing.

Small reruns, what students do almost all the time, never wait. A process's first large rerun, when nobody is
ahead, does not wait either.

Measured with the class load test (bench/README.md): with a share of a half, the students' p95 with the adversaries
was 2.04x that without them, with a quarter 1.26x (before the gate 2.48x), and the replicas peaked at ~1.1 GB
instead of 1.6 GB. Later runs, with the byte budget and more adversaries, measured 2.09x at a quarter and at a fifth
(56 -> 116 ms), and 1.46x at a tenth (59 -> 86 ms; the adversaries' replica CPU 268 -> 201 s, the run without them
unchanged), so the share is a tenth. What it costs: a student's own large rerun (the kernel page's "learn σ", ~0.2 s)
waits longer behind an attacker's (its p95 under attack 0.87 -> 1.2 s), and a lone teacher's 254-token sentence on the
model page (~0.15 s) shuts the gate for ~1.4 s, which only a next large rerun notices; a class on one sentence shares
its views and computes it once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from attnviz.app import malloc

HEAVY_SECONDS = 0.05  # an estimated cost above this makes a rerun large
SHARE = 0.1  # the most of a process's time that large reruns take together
MAX_WAITING = 4
MAX_WAIT_SECONDS = 15.0
POLL_SECONDS = 0.1


class ServerBusyError(Exception):
    """A large rerun could not get its turn: too many waiting, or waited too long."""

    def __init__(self, ahead: int, waited: float) -> None:
        super().__init__(f"{ahead} large requests ahead; waited {waited:.1f} s")
        self.ahead = ahead  # the one running and those waiting before this one
        self.waited = waited


class Gate:
    """Turns for large work in one process (see the module's text). Thread-safe; re-entrant in one thread."""

    def __init__(
        self,
        share: float = SHARE,
        max_waiting: int = MAX_WAITING,
        max_wait: float = MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        after: Callable[[], None] | None = None,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1]; got {share}")
        self.share = share
        self.max_waiting = max_waiting
        self.max_wait = max_wait
        self._clock = clock
        self._sleep = sleep
        self._after = after
        self._lock = threading.Lock()
        self._queue: deque[object] = deque()
        self._holder: int | None = None  # the thread whose turn it is
        self._open_at = float("-inf")  # the gate is shut until then after a turn

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._queue)

    def _ahead(self, ticket: object) -> int | None:
        """None when it is `ticket`'s turn now; else how many turns come before it (the one running counts)."""
        if self._queue[0] is ticket and self._holder is None and self._clock() >= self._open_at:
            return None
        return self._queue.index(ticket) + (self._holder is not None)

    @contextmanager
    def turn(self, on_wait: Callable[[int, float], None] = lambda ahead, waited: None) -> Iterator[None]:
        """Wait for this thread's turn, then hold it for the `with` block.

        While waiting, `on_wait(ahead, waited_seconds)` is called about every POLL_SECONDS; an exception it raises
        (Streamlit's, when the student's next change replaces this rerun) leaves the queue. Raises ServerBusyError."""
        me = threading.get_ident()
        with self._lock:
            reentered = self._holder == me  # a fragment run inside the page's own turn
            if not reentered:
                shut = self._queue or self._holder is not None or self._clock() < self._open_at
                if shut and len(self._queue) >= self.max_waiting:
                    raise ServerBusyError(len(self._queue) + (self._holder is not None), 0.0)
                ticket = object()
                self._queue.append(ticket)
        if reentered:
            yield
            return
        start = self._clock()
        try:
            while True:
                with self._lock:
                    ahead = self._ahead(ticket)
                    if ahead is None:
                        self._queue.popleft()
                        self._holder = me
                        break
                waited = self._clock() - start
                if waited > self.max_wait:
                    raise ServerBusyError(ahead, waited)
                on_wait(ahead, waited)
                self._sleep(POLL_SECONDS)
        except BaseException:
            with self._lock:
                if ticket in self._queue:
                    self._queue.remove(ticket)
            raise
        began = self._clock()
        try:
            yield
        finally:
            took = self._clock() - began
            with self._lock:
                self._holder = None
                self._open_at = self._clock() + took * (1 - self.share) / self.share
            if self._after is not None:
                self._after()


def configured_share(value: str | None) -> float:
    """The share that ATTNVIZ_GATE_SHARE sets: a number in (0, 1]. SHARE when it is unset or anything else (said in
    the server's log). 1 lets large reruns follow each other without a pause: for a server one teacher uses alone,
    and for tests that send many large reruns on purpose; never for a class on the internet."""
    if value is None or not value.strip():
        return SHARE
    try:
        share = float(value)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:  # NaN too
        logging.getLogger(__name__).warning("ATTNVIZ_GATE_SHARE=%r is not in (0, 1]: using %s", value[:40], SHARE)
        return SHARE
    return share


# The server process's gate. After each large rerun the heap's free pages go back to the system, so a replica's
# memory falls back between large reruns instead of staying at its peak.
GATE = Gate(share=configured_share(os.environ.get("ATTNVIZ_GATE_SHARE")), after=malloc.trim)
