"""One queue of trainings per server process: a class that presses Train on the same settings trains once.

A training is keyed by what changes its weights: the task, the seed and the number of steps. What a student typed is
no part of it (each typed date made a training of its own, of the very same weights): every training records the
attention on the task's own probes, the ones the shipped checkpoint records.

A training runs the model's own training script (attnviz/models/learned/train.py, through the paced worker
attnviz/app/training/worker.py) in a child process: it holds no lock of the server's Python, and it is the very code
that made the shipped checkpoints, so the same
settings give the same numbers. The child prints one JSON line per snapshot, which the job keeps as it arrives (the
page draws the curves growing), and the checkpoint itself as its last line, so that nothing is left on disk. It runs
one thread, paces itself to the CPU the server leaves (a container's CPU quota is shared by both: see
`attnviz.app.training.pacing`), and ends when the server does.

At most `concurrency` trainings run at once (one by default); the others wait in order, and each page shows its
place and when it should be ready (`attnviz.app.training.timings`). Finished runs are kept, the least recently used
dropped first, up to `keep`.

No one can hold the queue: a session may have one training in line or running at a time, and so may a client
address (PER_CLIENT; which address the app sees behind a proxy is the page's business: `attnviz.app.ui.client`). Asking
for a training that is already there (the same task, seed and steps) joins it and is never refused.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from attnviz.app.training.cgroup import memory_headroom_mb
from attnviz.app.training.timings import Timings
from attnviz.core.errors import AttnvizError
from attnviz.models.learned.train import Snapshot, TrainingRun, TrainSettings, load_run_bytes, snapshot_from_json

TRAINING_MB = 400  # a training process's peak memory (~370 MB measured: torch itself is ~225 MB of it)
MAX_WAITING = 12  # trainings queued at once: more are refused with a message, not queued for minutes
NICENESS = 10  # the child's CPU priority below the server's (what a machine without a CPU quota goes by)
MEMORY_POLL_S = 1.0  # how often a training waiting for memory looks again
# Trainings one client address may have in line or running at once. A class behind one NAT address shares it: a
# server on the internet for such classes may raise it (ATTNVIZ_TRAININGS_PER_CLIENT), at the cost of what one
# client there can hold.
PER_CLIENT = max(1, int(os.environ.get("ATTNVIZ_TRAININGS_PER_CLIENT", "1") or 1))

log = logging.getLogger(__name__)


class QueueFullError(RuntimeError):
    """Too many trainings are waiting already."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} trainings are waiting; try again when one has finished")
        self.waiting = waiting


@dataclass(frozen=True)
class Requester:
    """Who asks for a training: a browser tab's session, and the address of the client it comes from."""

    session: str
    client: str


class OneAtATimeError(RuntimeError):
    """This session, or this client address, has a training in line or running already (`job`)."""

    def __init__(self, job: TrainingJob, by: str) -> None:
        super().__init__(f"this {by} has a training in line or running already: {job.settings}")
        self.job, self.by = job, by  # by: "session" or "client"


@dataclass
class TrainingJob:
    """One training: its settings, where it is, and what it has recorded so far."""

    settings: TrainSettings
    status: str = "queued"  # queued, running, done, failed
    snapshots: list[Snapshot] = field(default_factory=list)
    run: TrainingRun | None = None
    error: AttnvizError | None = None  # why it failed, coded: the page shows it in the reader's language
    detail: str = ""  # what the training process said last (English, for the server's log, not the page)
    started: float = 0.0
    finished: float = 0.0
    pid: int = 0  # the training process, once it has started
    first_snapshot: float = 0.0  # when its step 0 arrived
    requester: Requester | None = None  # who asked first (None: code, not a page)

    @property
    def active(self) -> bool:
        """Queued or running."""
        return self.status in ("queued", "running")


# A server's training asks the kernel to kill it with the server (PR_SET_PDEATHSIG, 1 in linux/prctl.h) as its first
# statement: `python -m attnviz.app.training.worker` would import torch first (`import attnviz` does), seconds of CPU
# on a loaded pod, and a server killed meanwhile left it running until the import ended. The worker checks again.
WORKER_BOOT = (
    "import sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes, signal\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)\n"
    "import runpy\n"
    "runpy.run_module('attnviz.app.training.worker', run_name='__main__', alter_sys=True)\n"
)


def training_command(settings: TrainSettings, out: Path | str = "-", server: int = 0) -> list[str]:
    """The command line that trains `settings` and writes the checkpoint to `out` ("-": as its last JSON line),
    giving way to and ending with the process `server` (0: none)."""
    script = ["-c", WORKER_BOOT, "--server", str(server)] if server else ["-m", "attnviz.models.learned.train"]
    command = [sys.executable, *script, settings.task, "--seed", str(settings.seed)]
    command += ["--steps", str(settings.steps), "--out", str(out), "--json"]
    for probe in settings.probes:
        command += ["--probe", probe]
    return command


def training_key(settings: TrainSettings) -> TrainSettings:
    """The training that `settings` name: their task, seed and steps, recording the task's own probes."""
    return TrainSettings(settings.task, settings.seed, settings.steps).resolved()


def ended(returncode: int) -> AttnvizError:
    """The coded error of a training process that ended with `returncode`: killed by a signal (negative: the
    out-of-memory killer sends SIGKILL) or exited with a status."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return AttnvizError("training_signal", signal=signal.Signals(-returncode).name)
        return AttnvizError("training_signal", signal=-returncode)
    return AttnvizError("training_exit", status=returncode)


def failure(exc: Exception) -> AttnvizError:
    """A failed training's error, coded: its own when it has a code, else one naming the kind of failure (what it
    said in English stays in the server's log)."""
    if isinstance(exc, AttnvizError):
        return exc
    return AttnvizError("training_failed", kind=type(exc).__name__)


class TrainingQueue:
    """Trainings shared by every session of the process, run in order by one worker thread per slot."""

    def __init__(self, concurrency: int = 1, keep: int = 16) -> None:
        self.concurrency = concurrency
        self.keep = keep
        self._jobs: OrderedDict[TrainSettings, TrainingJob] = OrderedDict()
        self._lock = threading.Condition()
        self._workers: list[threading.Thread] = []
        self.timings = Timings()

    def get(self, settings: TrainSettings) -> TrainingJob | None:
        """The job of these settings' task, seed and steps (queued, running or finished), if there is one."""
        settings = training_key(settings)
        with self._lock:
            job = self._jobs.get(settings)
            if job is not None and not job.active:
                self._jobs.move_to_end(settings)
            return job

    def submit(self, settings: TrainSettings, requester: Requester | None = None) -> TrainingJob:
        """The job of these settings' task, seed and steps: the existing one, or a new one at the end of the queue (a
        failed one again). OneAtATimeError when `requester`'s session or client has one in line or running already;
        QueueFullError when MAX_WAITING are waiting."""
        settings = training_key(settings)
        with self._lock:
            job = self._jobs.get(settings)
            if job is not None and job.status != "failed":
                return job
            if requester is not None:
                self._check_requester(requester)
            waiting = sum(1 for j in self._jobs.values() if j.status == "queued")
            if waiting >= MAX_WAITING:
                raise QueueFullError(waiting)
            job = TrainingJob(settings, requester=requester)
            self._jobs[settings] = job
            self._jobs.move_to_end(settings)
            self._start_workers()
            self._lock.notify_all()
            return job

    def in_line(self) -> int:
        """Trainings in line or running now."""
        with self._lock:
            return sum(job.active for job in self._jobs.values())

    def position(self, job: TrainingJob) -> int:
        """0 while it runs (or has finished); else how many trainings are ahead of it."""
        with self._lock:
            if job.status != "queued":
                return 0
            ahead = 0
            for other in self._jobs.values():
                if other is job:
                    return ahead
                ahead += other.active
            return ahead

    def _check_requester(self, requester: Requester) -> None:
        """OneAtATimeError naming the training this session, or this client, has in line or running."""
        theirs = [job for job in self._jobs.values() if job.active and job.requester is not None]
        for job in theirs:
            if job.requester.session == requester.session:
                raise OneAtATimeError(job, "session")
        from_client = [job for job in theirs if job.requester.client == requester.client]
        if len(from_client) >= PER_CLIENT:
            raise OneAtATimeError(from_client[0], "client")

    def estimate(self, settings: TrainSettings) -> tuple[float, float]:
        """Seconds until the training of these settings starts and until it is ready: its own if it is in line or
        running (0 to start), else a new one's at the end of the line. At the pace of the training running now."""
        settings = training_key(settings)
        now, ahead, slower = time.monotonic(), 0.0, 1.0
        with self._lock:
            for other in self._jobs.values():
                if other.status == "running":
                    done = other.snapshots[-1].step if other.snapshots else 0
                    since_first = now - other.first_snapshot if other.first_snapshot else None
                    left, slower = self.timings.running(
                        other.settings.task, other.settings.steps, done, since_first, now - other.started
                    )
                    if other.settings == settings:
                        return 0.0, left
                    ahead += left / self.concurrency
            for other in self._jobs.values():
                seconds = self.timings.tasks[other.settings.task].seconds(other.settings.steps, slower)
                if other.settings == settings and other.active:
                    return ahead, ahead + seconds
                if other.status == "queued":
                    ahead += seconds / self.concurrency
        return ahead, ahead + self.timings.tasks[settings.task].seconds(settings.steps, slower)

    def _start_workers(self) -> None:
        self._workers = [worker for worker in self._workers if worker.is_alive()]
        while len(self._workers) < self.concurrency:
            worker = threading.Thread(target=self._work, name="attnviz-training", daemon=True)
            worker.start()
            self._workers.append(worker)

    def _next(self) -> TrainingJob | None:
        """The first queued job, once the container has memory for a training (until then it stays queued)."""
        while True:
            with self._lock:
                queued = [job for job in self._jobs.values() if job.status == "queued"]
                if not queued:
                    return None
                headroom = memory_headroom_mb()
                if headroom is None or headroom >= TRAINING_MB:
                    job = queued[0]
                    job.status, job.started = "running", time.monotonic()
                    return job
                self._lock.wait(MEMORY_POLL_S)

    def _work(self) -> None:
        while (job := self._next()) is not None:
            try:
                job.run = self._train(job)
                job.status = "done"
                if job.first_snapshot:
                    self.timings.learn(
                        job.settings.task,
                        job.first_snapshot - job.started,
                        job.settings.steps,
                        time.monotonic() - job.first_snapshot,
                    )
            except Exception as exc:  # any failure of the child is the job's, shown on its page
                job.error, job.status = failure(exc), "failed"
                log.warning("training %s failed: %s %s", job.settings, exc, job.detail)
            job.finished = time.monotonic()
            with self._lock:
                self._drop_old()
                self._lock.notify_all()

    def _train(self, job: TrainingJob) -> TrainingRun:
        child = subprocess.Popen(
            training_command(job.settings, "-", os.getpid()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[3],  # the folder that holds the package
        )
        job.pid = child.pid
        with contextlib.suppress(AttributeError, OSError):  # no priorities on this system: it runs as it is
            os.setpriority(os.PRIO_PROCESS, child.pid, NICENESS)
        assert child.stdout is not None and child.stderr is not None
        errors: list[str] = []
        reader = threading.Thread(target=lambda: errors.append(child.stderr.read()), daemon=True)  # never a full pipe
        reader.start()
        checkpoint = None
        for line in child.stdout:
            data = json.loads(line)
            if "checkpoint" in data:
                checkpoint = base64.b64decode(data["checkpoint"])
            else:
                job.snapshots.append(snapshot_from_json(data))
                job.first_snapshot = job.first_snapshot or time.monotonic()
        reader.join()
        said = "".join(errors).strip()
        job.detail = said.splitlines()[-1] if said else ""
        if child.wait() != 0:
            raise ended(child.returncode)
        if checkpoint is None:
            raise AttnvizError("training_no_checkpoint")
        return load_run_bytes(checkpoint)

    def _drop_old(self) -> None:
        finished = [settings for settings, job in self._jobs.items() if not job.active]
        for settings in finished[: max(0, len(finished) - self.keep)]:
            del self._jobs[settings]

    def wait(self, job: TrainingJob, timeout: float | None = None) -> bool:
        """Block until `job` has finished (True) or `timeout` seconds passed (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: not job.active, timeout)


QUEUE = TrainingQueue()
