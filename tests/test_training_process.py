"""A training's process beside its server (issue 36, finding 3), with real processes in real control groups: it reads
the memory limit of either cgroup version, it leaves a busy server its share of a CPU quota, and it ends with its
server, leaving nothing on disk."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from attnviz.app.training.jobs import training_command
from attnviz.app.training.pacing import process_cpu_s
from attnviz.models.learned.train import TrainSettings
from testkit.cgroups import ControlGroup
from testkit.procstat import children
from testkit.proxyclient import ProxyUser
from testkit.server import StreamlitServer

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _trainers(parent: int) -> list[int]:
    """The training processes that `parent` started."""
    return children(parent, "attnviz.app.training.worker")


def _wait_for(condition, timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())


def test_the_memory_check_reads_the_limit_of_a_real_cgroup():
    """The check before a training read only cgroup v2's memory.max: on a cgroup-v1 host every training started
    unchecked. A process in a real 700 MB group (v1 or v2, whichever this machine has) sees its headroom."""
    code = "from attnviz.app.training.jobs import memory_headroom_mb; print(memory_headroom_mb())"
    with ControlGroup(memory_mb=700) as group:
        said = subprocess.run(
            group.command([sys.executable, "-c", code]), capture_output=True, text=True, cwd=ROOT, timeout=120
        )
    assert said.returncode == 0, said.stderr
    headroom = said.stdout.strip()
    assert headroom != "None", f"no limit seen in a cgroup v{group.version} group"
    assert 100 < float(headroom) < 700  # 700 MB less what this process (torch imported) uses


# A stand-in for a busy server: this process hosts the real training queue, asks for a training, then keeps one core
# busy in pure Python, as a server's reruns do; it prints "ready" once the training has sent its first snapshot.
BUSY_HOST = textwrap.dedent(
    """
    import sys, time
    from attnviz.app.training.jobs import TrainingQueue
    from attnviz.models.learned.train import TrainSettings

    queue = TrainingQueue()
    job = queue.submit(TrainSettings("dates", seed=11, steps=1000))
    while not job.snapshots:
        time.sleep(0.05)
    print("ready", flush=True)
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        sum(range(1000))
    """
)


def test_a_training_leaves_a_busy_server_its_share_of_a_cpu_quota():
    """Inside one core of CFS quota (a pod's CPU limit), the trainer's two threads spent the quota beside the server,
    whatever their niceness. Now one thread, paced to what the server leaves: at most ~0.2 of a core here."""
    with ControlGroup(cpu_cores=1.0) as group:
        host = subprocess.Popen(
            group.command([sys.executable, "-c", BUSY_HOST, "60"]),
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert host.stdout is not None
            assert host.stdout.readline().strip() == "ready"
            (trainer,) = _trainers(host.pid)
            time.sleep(2.0)  # the pacer has measured the server a few times
            windows = []  # (the trainer's, the host's) cores over 2-second windows
            for _ in range(6):
                trainer_cpu, host_cpu, started = process_cpu_s(trainer), process_cpu_s(host.pid), time.monotonic()
                time.sleep(2.0)
                seconds = time.monotonic() - started
                used = (process_cpu_s(trainer) - trainer_cpu, process_cpu_s(host.pid) - host_cpu)
                windows.append(tuple(round(cpu / seconds, 2) for cpu in used))
            threads = len(list(Path(f"/proc/{trainer}/task").iterdir()))
        finally:
            host.kill()
            host.wait()
        gone = _wait_for(lambda: not _alive(trainer), 10)
        if not gone:
            os.kill(trainer, signal.SIGKILL)
    # Judged where the host was busy: on a machine shared with other work it may get less than its core
    busy = [trainer for trainer, host in windows if host > 0.6]
    assert busy, f"the host was never busy (trainer, host: {windows}): the machine is too loaded to judge"
    assert max(busy) < 0.25, f"the training used this much of the 1-core quota beside a busy host: {windows}"
    assert threads < 8, threads  # one compute thread (torch's pool of two was two more)
    assert gone, "the training outlived its host"


def _run(coroutine):
    """asyncio.run in a thread of its own (Playwright's sync API may hold an event loop in this one)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _press_train(url: str) -> None:
    user = ProxyUser(url, "Learned_attention", "sd=31&n=1000")
    try:
        await user.open()
        await user.click("Train")
    finally:
        await user.close()


# A stand-in for a server: it starts the training command it is given, with its own process id as the server's, prints
# the trainer's process id, and waits to be killed.
STARTS_A_TRAINING = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    command = [str(os.getpid()) if part == "SERVER_PID" else part for part in json.loads(sys.argv[1])]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


def test_a_training_dies_with_its_server_while_it_is_still_starting():
    """The trainer asked the kernel to end it with its server only after `import attnviz` had loaded torch: seconds of
    CPU on a loaded pod, during which a killed server left it running. Here server and trainer share a tenth of a
    core, so that the import takes many seconds, and the server is killed half a second after it started the
    training."""
    command = [
        part if part != "999999" else "SERVER_PID" for part in training_command(TrainSettings("dates"), "-", 999999)
    ]
    assert "SERVER_PID" in command
    with ControlGroup(cpu_cores=0.1) as group:
        server = subprocess.Popen(
            group.command([sys.executable, "-c", STARTS_A_TRAINING, json.dumps(command)]),
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert server.stdout is not None
        trainer = int(server.stdout.readline())
        try:
            time.sleep(0.5)
            assert _alive(trainer), "the training ended before its server"
            server.kill()
            server.wait(timeout=10)
            assert _wait_for(lambda: not _alive(trainer), 1.0), "the training outlived its server"
        finally:
            server.kill()
            with contextlib.suppress(ProcessLookupError):
                os.kill(trainer, signal.SIGKILL)


def test_a_server_killed_during_a_training_takes_the_training_with_it_and_leaves_no_folder():
    """A server killed during a training left the trainer running (~50 s under load: it noticed only when its next
    snapshot found no reader) and an empty temporary folder. Here the server has a quarter of a core, as a loaded
    pod's share, so that the training's snapshots are seconds apart."""
    folders_before = set(Path(tempfile.gettempdir()).glob("attnviz-train-*"))
    server = StreamlitServer("app.py", log_name="training-kill").start()
    try:
        with ControlGroup(cpu_cores=0.25) as group:
            group.add(server.pid)
            _run(_press_train(server.url))
            assert _wait_for(lambda: len(_trainers(server.pid)) == 1, 60), "no training started"
            (trainer,) = _trainers(server.pid)
            time.sleep(5.0)  # well into its training
            assert _alive(trainer)
            server.kill()  # SIGKILL: no clean-up of its own
            assert _wait_for(lambda: not _alive(trainer), 2.0), "the training outlived its server"
    finally:
        server.stop()
    assert set(Path(tempfile.gettempdir()).glob("attnviz-train-*")) == folders_before
