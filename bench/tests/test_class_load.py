"""A class cannot knock the app over: the class load test (bench/classload/), small enough for every CI run.

Two real replicas behind the real nginx with the project's site file; 8 simulated students on every page, going
through the proxy as browsers do; each adversary of the full test twice (the crafted link, 254-WordPiece model
sentences left mid-run, oversized and junk links); one replica SIGKILLed while the students work and restarted
12 s later. Only behaviour is asserted, never a time: no student sees an error, no input is lost, every student
whose replica died works again on a page restored from its link, and no replica's memory reaches the pod's limit.
The 5-minute run with 30 students, and its figures, is `python -m bench.classload` (bench/README.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bench.classload import ClassConfig, ClassRun, Replica, Student, checks, page_restored, run_async, run_class
from testkit.cgroups import ControlGroup


def _show(items: list[Any]) -> str:
    return "\n".join(json.dumps(item, ensure_ascii=False, default=str)[:500] for item in items[:10])


@pytest.mark.timeout(280)
def test_a_class_survives_adversaries_and_a_lost_replica(tmp_path: Path) -> None:
    config = ClassConfig(
        students=8,
        seconds=38.0,
        kill_at=10.0,
        restart_after=12.0,
        arrival=3.0,
        adversary_rounds=2,
        settle=3.0,
        label="CI",
    )
    result = run_class(config, tmp_path)
    verdict = checks(result)
    students = result["students"]

    assert verdict["student_errors"] == 0, f"errors seen by students:\n{_show(students['errors'])}"
    assert verdict["lost_inputs"] == 0, f"inputs lost:\n{_show(students['lost_inputs'])}"
    # The students did work: every one of them changed controls and saw the change in the link.
    acted = {a["student"] for a in result["actions"] if a["applied"] and a["action"] not in ("open", "open link")}
    assert acted == set(range(config.students)), f"students without an applied change: {set(range(8)) - acted}"

    kill = result["kill"]
    assert kill is not None and kill.get("restarted_at_s"), f"the replica was not killed and restarted: {kill}"
    recoveries = result["recoveries"]
    assert recoveries, f"no student was on the killed replica: {kill}"
    assert {r["student"] for r in recoveries} >= set(kill["students_on_victim"]), (
        f"students on the killed replica that never reconnected: {kill['students_on_victim']}, {_show(recoveries)}"
    )
    assert not verdict["not_working_again"], f"students not working again:\n{_show(recoveries)}"
    assert not verdict["not_restored"], f"pages not restored from their links:\n{_show(recoveries)}"

    memory = result["memory"]
    assert not verdict["over_limit"], f"peak RSS {verdict['peak_rss_mb']} MiB, limit {memory['limit_mb']} MiB"

    adversaries = result["adversaries"]
    assert all(adversaries[kind]["count"] >= 2 for kind in ("crafted", "long_sentence", "oversized")), adversaries
    assert all(adversaries[kind]["exceptions"] == 0 for kind in adversaries), f"an exception page: {adversaries}"


def test_a_replica_with_a_quota_starts_inside_its_group_and_so_does_its_restart(tmp_path: Path) -> None:
    """`--quota`: the replica's command moves itself into its group, then becomes the server (the same process, so
    its pid is the server's), at every start; without a group the command is the plain one."""
    replica = Replica("app.py")
    plain = replica.command()
    group = ControlGroup(cpu_cores=1.0)
    group.folders = [tmp_path]  # where the group's files would be; nothing is written here
    replica.group = group
    wrapped = replica.command()
    assert wrapped[:2] == ["/bin/sh", "-c"] and f"> '{tmp_path / 'cgroup.procs'}'" in wrapped[2]
    assert "exec" in wrapped[2] and wrapped[-len(plain) :] == plain


def test_a_page_counts_as_restored_apart_from_the_changes_and_what_follows_from_them() -> None:
    """A model-page student typed a 6-word sentence as the replica died: the new, shorter sentence moved the
    followed token (tk=8) to its first word (tk=1) by design, and the full run of 2026-11-23 counted that page as
    not restored from its link."""
    before = "s=maps+bright+about+rain+lesson+cat+bread+happy+near+tired+quiet+cat&l=4&hs=1&rn=1"
    after = "s=old+about+and+near+numbers+a&l=4&hs=1&rn=1&tk=1"
    assert page_restored("model", before, after, {"rn", "s"})
    assert not page_restored("model", before, after.replace("l=4", "l=1"), {"rn", "s"})  # the layer was lost
    assert not page_restored("model", before, after, {"rn"})  # no new sentence: tk=1 is not the link's
    assert not page_restored("self", "T=0.5&s=a+b", "T=0.5&s=a+b&tk=1", {"s"})
    assert not page_restored("model", before, None, {"rn"})  # no first run at all


async def _reconnect_after_the_restart(run: ClassRun) -> tuple[str, list[Student]]:
    """Open every student's page and let each change two controls; SIGKILL the replica holding most of them, restart
    it, and only then let its students reconnect: nginx sends each one back to the restarted, cold replica."""
    await run.warm_up()
    run.t0 = time.perf_counter()
    run.students = [Student(i, run) for i in range(run.config.students)]
    await asyncio.gather(*(s.user.open(run.config.action_timeout) for s in run.students))
    for _ in range(2):
        await asyncio.gather(*(s.act() for s in run.students))
    owners = run.cluster.replica_of()
    upstreams = [run.cluster.upstream(r) for r in run.cluster.replicas]
    index = max(range(2), key=lambda i: sum(owners.get(s.user.affinity) == upstreams[i] for s in run.students))
    victim = run.cluster.replicas[index]
    mine = [s for s in run.students if owners.get(s.user.affinity) == upstreams[index]]
    victim.kill()
    run.kill_t = run.now()
    await asyncio.to_thread(victim.restart)
    # Both moments, whichever students the cookies put on the victim (a coin toss each would miss one now and then)
    await asyncio.gather(*(s.recover(immediate=i % 2 == 0) for i, s in enumerate(mine)))
    for student in run.students:
        await student.user.close()
    return upstreams[index], mine


@pytest.mark.timeout(280)
def test_students_who_reconnect_to_the_restarted_replica_lose_nothing(tmp_path: Path) -> None:
    """Issue 36, finding 9: the input lost under load was a student's whose cookie hashed back to the restarted
    replica. In the class load test every student reconnects to the survivor within a second, before the restart, so
    this path is driven here: each student of the killed replica reconnects only once it is back, cold (its first
    runs import the app), and changes a control at once or after its first run."""
    config = ClassConfig(students=10, adversaries=False, kill_at=None, seed=3, kill_window=120.0)
    run = ClassRun(config, tmp_path)
    run.cluster.start()
    try:
        victim, mine = run_async(_reconnect_after_the_restart(run))
    finally:
        run.cluster.stop()
    recoveries = [r for s in mine for r in s.recoveries]
    errors = [e for s in run.students for e in s.errors]
    assert mine and len(recoveries) == len(mine), _show(recoveries)
    assert errors == [], _show(errors)
    assert {r["reconnected_to"] for r in recoveries} == {victim}, _show(recoveries)  # the restarted replica
    assert {r["moment"] for r in recoveries} == {"immediately", "after 0.5-2 s"}, _show(recoveries)
    assert run.lost == [], _show(run.lost)
    assert all(r["works_again_s"] is not None and r["restored"] for r in recoveries), _show(recoveries)
