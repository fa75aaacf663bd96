"""The training queue: a real child process per training, one training per setting however many ask, in order."""

from __future__ import annotations

import time

import pytest
import torch

from attnviz.learned import jobs
from attnviz.learned.jobs import QueueFullError, TrainingQueue
from attnviz.learned.train import TrainSettings, run_tensors, train


def _tensors_equal(first, second) -> bool:
    a, b = run_tensors(first)[0], run_tensors(second)[0]
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def test_a_queued_training_runs_the_script_and_gives_the_same_numbers_as_training_here():
    queue = TrainingQueue()
    settings = TrainSettings("induction", seed=3, steps=40, probes=("A B C D A B C D",))
    job = queue.submit(settings)
    assert queue.submit(TrainSettings("induction", seed=3, steps=40, probes=("A B C D A B C D",))) is job
    assert queue.wait(job, timeout=120)
    assert job.status == "done", job.error
    assert [s.step for s in job.snapshots] == [s.step for s in job.run.snapshots]
    assert job.snapshots[-1].step == 40
    here = train(settings)
    assert _tensors_equal(job.run, here)
    assert queue.get(settings) is job
    assert queue.find_model(TrainSettings("induction", seed=3, steps=40, probes=("B C B C",))) is job
    assert queue.find_model(TrainSettings("induction", seed=4, steps=40)) is None


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


def test_a_failed_training_says_why_and_can_be_asked_again(monkeypatch):
    queue = TrainingQueue()
    bad = TrainSettings("dates", seed=0, steps=5, probes=("22 Nov 2026 🙂",))
    job = queue.submit(bad)
    assert queue.wait(job, timeout=120)
    assert job.status == "failed"
    assert "probe" in job.error and "🙂" in job.error
    again = queue.submit(bad)
    assert again is not job and again.status in ("queued", "running", "failed")
    queue.wait(again, timeout=120)


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
    for job in (running, *waiting):
        queue.wait(job, timeout=120)


def test_finished_runs_are_kept_up_to_the_limit():
    queue = TrainingQueue(keep=2)
    made = [queue.submit(TrainSettings("induction", seed=40 + i, steps=3)) for i in range(3)]
    for job in made:
        assert queue.wait(job, timeout=120)
    assert queue.get(made[0].settings) is None
    assert queue.get(made[1].settings) is made[1] and queue.get(made[2].settings) is made[2]


def test_memory_headroom_reads_the_cgroup(tmp_path):
    assert jobs.memory_headroom_mb(tmp_path) is None  # nothing to read: no limit known
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.current").write_text("1000\n")
    assert jobs.memory_headroom_mb(tmp_path) is None
    (tmp_path / "memory.max").write_text(str(1536 * 2**20))
    (tmp_path / "memory.current").write_text(str(1200 * 2**20))
    assert jobs.memory_headroom_mb(tmp_path) == 336


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
