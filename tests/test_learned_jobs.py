"""The training queue: a real child process per training, one training per setting however many ask, in order."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
import torch

from attnviz.app.training import cgroup, jobs
from attnviz.app.training.jobs import OneAtATimeError, QueueFullError, Requester, TrainingQueue
from attnviz.core.errors import AttnvizError
from attnviz.models.learned.train import TrainSettings, run_tensors, train
from tests.test_errors_coded import check_coded


def _tensors_equal(first, second) -> bool:
    """The final model, the history and the probes' attention; a training in the app does not keep the weights of
    every snapshot (only the shipped checkpoints do, for replay), so those are left out."""
    a, b = run_tensors(first, weights=False)[0], run_tensors(second, weights=False)[0]
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def kill_training(job, timeout: float = 60) -> None:
    """SIGKILL a job's training process (as the kernel's out-of-memory killer would), once it has one: a job is
    "running" before its process starts, with pid 0, and os.kill(0, ...) would kill this test's own process group."""
    deadline = time.monotonic() + timeout
    while not job.pid and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.pid > 0, f"no training process after {timeout} s"
    os.kill(job.pid, signal.SIGKILL)


def test_a_queued_training_runs_the_script_and_gives_the_same_numbers_as_training_here():
    queue = TrainingQueue()
    settings = TrainSettings("induction", seed=3, steps=40, probes=("A B C D A B C D",))
    job = queue.submit(settings)
    assert queue.submit(TrainSettings("induction", seed=3, steps=40, probes=("A B C D A B C D",))) is job
    assert queue.submit(TrainSettings("induction", seed=3, steps=40, probes=("B C B C",))) is job  # another input
    assert queue.wait(job, timeout=120)
    assert job.status == "done", job.error
    assert [s.step for s in job.snapshots] == [s.step for s in job.run.snapshots]
    assert job.snapshots[-1].step == 40
    here = train(TrainSettings("induction", seed=3, steps=40))  # the task's own probes, whatever was asked
    assert _tensors_equal(job.run, here)
    assert queue.get(settings) is job
    assert queue.get(TrainSettings("induction", seed=4, steps=40)) is None


def test_what_a_student_types_is_no_part_of_a_training():
    """Issue 36: the typed input was part of the queue's key, so thirty students typing their own dates at one seed
    started thirty trainings of the same weights. The key holds the task, the seed and the steps; the training
    records the attention on the task's own probes."""
    queue = TrainingQueue()
    dates = [
        queue.submit(TrainSettings("dates", seed=7, steps=5, probes=(date,))) for date in ("1 May 2027", "2027年5月1日")
    ]
    assert dates[0] is dates[1]
    assert dates[0].settings == TrainSettings("dates", seed=7, steps=5).resolved()  # the task's own probes
    other = queue.submit(TrainSettings("dates", seed=8, steps=5, probes=("1 May 2027",)))
    assert other is not dates[0]
    for job in (*dates, other):
        assert queue.wait(job, timeout=120) and job.status == "done", job.error


def test_trainings_wait_in_order_and_each_knows_its_place():
    queue = TrainingQueue(concurrency=1)
    first = queue.submit(TrainSettings("induction", seed=10, steps=60))
    second = queue.submit(TrainSettings("induction", seed=11, steps=10))
    third = queue.submit(TrainSettings("induction", seed=12, steps=10))
    assert queue.position(second) == 1 and queue.position(third) == 2
    assert queue.wait(first, timeout=120) and queue.wait(third, timeout=120)
    assert first.finished <= second.started <= second.finished <= third.started  # one at a time, in order
    assert [job.status for job in (first, second, third)] == ["done"] * 3
    assert queue.position(third) == 0


def test_a_failed_training_says_why_and_can_be_asked_again():
    queue = TrainingQueue()
    settings = TrainSettings("induction", seed=1, steps=2000)
    job = queue.submit(settings)
    deadline = time.monotonic() + 60
    while not job.snapshots and time.monotonic() < deadline:  # training now
        time.sleep(0.05)
    kill_training(job)
    assert queue.wait(job, timeout=60)
    assert job.status == "failed"
    assert job.error.code == "training_signal" and job.error.params == {"signal": "SIGKILL"}
    again = queue.submit(settings)
    assert again is not job and again.status in ("queued", "running")
    kill_training(again)
    assert queue.wait(again, timeout=60)


def _says(words: str) -> list[str]:
    """A training command whose process says `words` (English, as a Python traceback's last line is) and exits 1."""
    return [sys.executable, "-c", f"import sys; sys.exit({words!r})"]


def test_a_training_process_that_fails_gives_a_coded_error_not_its_english(monkeypatch):
    monkeypatch.setattr(jobs, "training_command", lambda settings, out="-", server=0: _says("MemoryError: no room"))
    queue = TrainingQueue()
    job = queue.submit(TrainSettings("induction", seed=80, steps=5))
    assert queue.wait(job, timeout=60) and job.status == "failed"
    check_coded(job.error, "training_exit")
    assert job.error.params == {"status": 1}
    assert job.detail == "MemoryError: no room"  # kept for the server's log, never shown on the page


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (jobs.ended(-9), "training_signal"),
        (jobs.ended(-200), "training_signal"),  # no such signal: its number
        (jobs.ended(3), "training_exit"),
        (jobs.failure(OSError("No such file or directory")), "training_failed"),
        (jobs.failure(ValueError("Expecting value: line 1 column 1")), "training_failed"),
        (jobs.failure(AttnvizError("not_checkpoint")), "not_checkpoint"),  # coded already: kept
    ],
)
def test_every_way_a_training_fails_is_coded_and_translated(error, code):
    check_coded(error, code)


def test_a_full_queue_refuses_more(monkeypatch):
    monkeypatch.setattr(jobs, "MAX_WAITING", 2)
    queue = TrainingQueue()
    running = queue.submit(TrainSettings("induction", seed=20, steps=200))
    deadline = time.monotonic() + 30
    while running.status == "queued" and time.monotonic() < deadline:  # a queued one counts as waiting
        time.sleep(0.01)
    assert running.status == "running"
    waiting = [queue.submit(TrainSettings("induction", seed=21 + i, steps=5)) for i in range(2)]
    with pytest.raises(QueueFullError) as refused:
        queue.submit(TrainSettings("induction", seed=30, steps=5))
    assert refused.value.waiting == 2
    assert queue.submit(TrainSettings("induction", seed=21, steps=5)) is waiting[0]  # asking again is not more
    kill_training(running)  # it has shown what it was there for; the waiting ones run
    for job in (running, *waiting):
        queue.wait(job, timeout=120)


def test_finished_runs_are_kept_up_to_the_limit():
    queue = TrainingQueue(keep=2)
    made = [queue.submit(TrainSettings("induction", seed=40 + i, steps=3)) for i in range(3)]
    for job in made:
        assert queue.wait(job, timeout=120)
    assert queue.get(made[0].settings) is None
    assert queue.get(made[1].settings) is made[1] and queue.get(made[2].settings) is made[2]


def test_memory_headroom_reads_the_cgroup_of_either_version(tmp_path):
    v2 = tmp_path / "v2"
    (v2 / "pod" / "app").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    assert cgroup.memory_headroom_mb(v2, {"": "/pod/app"}) is None  # nothing to read: no limit known
    (v2 / "pod" / "app" / "memory.max").write_text("max\n")
    (v2 / "pod" / "app" / "memory.current").write_text("1000\n")
    assert cgroup.memory_headroom_mb(v2, {"": "/pod/app"}) is None
    (v2 / "pod" / "memory.max").write_text(str(1536 * 2**20))  # the pod's limit, one group up
    (v2 / "pod" / "memory.current").write_text(str(1200 * 2**20))
    assert cgroup.memory_headroom_mb(v2, {"": "/pod/app"}) == 336
    # Version 1: a hierarchy per controller, "no limit" written as a huge number
    v1 = tmp_path / "v1"
    (v1 / "memory" / "docker" / "c1").mkdir(parents=True)
    (v1 / "memory" / "docker" / "c1" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (v1 / "memory" / "docker" / "c1" / "memory.usage_in_bytes").write_text(str(100 * 2**20))
    assert cgroup.memory_headroom_mb(v1, {"memory": "/docker/c1"}) is None
    (v1 / "memory" / "docker" / "c1" / "memory.limit_in_bytes").write_text(str(1024 * 2**20))
    assert cgroup.memory_headroom_mb(v1, {"memory": "/docker/c1"}) == 924
    assert cgroup.memory_headroom_mb(v1, {"memory": "/"}) is None  # the root: no limit
    (v1 / "memory" / "memory.limit_in_bytes").write_text(str(1024 * 2**20))  # a container's own namespace: its root
    (v1 / "memory" / "memory.usage_in_bytes").write_text(str(1000 * 2**20))
    assert cgroup.memory_headroom_mb(v1, {"memory": "/not/visible/here"}) == 24


def test_the_cpu_limit_reads_the_cgroup_of_either_version(tmp_path):
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cgroup.controllers").write_text("cpu\n")
    (tmp_path / "v2" / "cpu.max").write_text("max 100000\n")
    assert cgroup.cpu_limit_cores(tmp_path / "v2", {"": "/"}) is None
    (tmp_path / "v2" / "cpu.max").write_text("150000 100000\n")
    assert cgroup.cpu_limit_cores(tmp_path / "v2", {"": "/"}) == 1.5
    v1 = tmp_path / "v1" / "cpu,cpuacct" / "kubepods" / "pod1"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup.cpu_limit_cores(tmp_path / "v1", {"cpu": "/kubepods/pod1"}) is None
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    assert cgroup.cpu_limit_cores(tmp_path / "v1", {"cpu": "/kubepods/pod1", "cpuacct": "/kubepods/pod1"}) == 0.5
    assert cgroup.throttled_periods(tmp_path / "v1", {"cpu": "/kubepods/pod1"}) == 0
    (v1 / "cpu.stat").write_text("nr_periods 120\nnr_throttled 7\nthrottled_time 350000000\n")
    (v1.parent / "cpu.stat").write_text("nr_periods 300\nnr_throttled 2\nthrottled_time 1000\n")
    assert cgroup.throttled_periods(tmp_path / "v1", {"cpu": "/kubepods/pod1"}) == 9  # the pod's and its parent's


def test_a_training_waits_while_the_container_has_no_memory_for_it(monkeypatch):
    headroom = {"mb": 100.0}
    monkeypatch.setattr(jobs, "memory_headroom_mb", lambda: headroom["mb"])
    monkeypatch.setattr(jobs, "MEMORY_POLL_S", 0.05)
    queue = TrainingQueue()
    job = queue.submit(TrainSettings("induction", seed=50, steps=3))
    assert not queue.wait(job, timeout=1.0)
    assert job.status == "queued" and queue.position(job) == 0
    headroom["mb"] = 2000.0
    assert queue.wait(job, timeout=120) and job.status == "done"


def test_one_training_in_line_for_each_session_and_each_client_and_joining_is_free():
    """Issue 36: one client filled the queue with 13 settings. A session (a tab) and a client address may each have
    one training in line or running; asking for a training that is there already joins it."""
    queue = TrainingQueue()
    first = queue.submit(TrainSettings("induction", seed=60, steps=2000), Requester("tab-1", "client-a"))
    with pytest.raises(OneAtATimeError) as same_tab:
        queue.submit(TrainSettings("induction", seed=61, steps=5), Requester("tab-1", "client-b"))
    assert same_tab.value.by == "session" and same_tab.value.job is first
    with pytest.raises(OneAtATimeError) as same_client:
        queue.submit(TrainSettings("induction", seed=62, steps=5), Requester("tab-2", "client-a"))
    assert same_client.value.by == "client" and same_client.value.job is first
    other = queue.submit(TrainSettings("induction", seed=63, steps=5), Requester("tab-3", "client-c"))
    assert queue.submit(TrainSettings("induction", seed=63, steps=5), Requester("tab-1", "client-a")) is other
    kill_training(first)  # over: this tab may ask again
    assert queue.wait(first, timeout=60) and queue.wait(other, timeout=120)
    again = queue.submit(TrainSettings("induction", seed=61, steps=5), Requester("tab-1", "client-a"))
    assert queue.wait(again, timeout=120) and again.status == "done", again.error


def test_the_estimate_follows_what_this_server_took():
    """The page said "under a minute" whatever the server did (1,000 steps took ~140 s under load): the estimate is
    what this server's trainings took, at the pace of the one running now."""
    queue = TrainingQueue()
    started = time.monotonic()
    job = queue.submit(TrainSettings("induction", seed=70, steps=300))
    assert queue.wait(job, timeout=120) and job.status == "done", job.error
    took = time.monotonic() - started
    waits, ready = queue.estimate(TrainSettings("induction", seed=71, steps=300))
    assert waits == 0 and 0.5 * took < ready < 1.5 * took, (ready, took)
    running = queue.submit(TrainSettings("induction", seed=72, steps=400))
    while len(running.snapshots) < 5:  # under way: 40 steps done
        time.sleep(0.05)
    _, left = queue.estimate(running.settings)
    starts, _ = queue.estimate(TrainSettings("induction", seed=73, steps=300))
    assert left > 0 and abs(starts - left) < 1  # a new one waits for what the running one has left
    kill_training(running)
    queue.wait(running, timeout=60)
