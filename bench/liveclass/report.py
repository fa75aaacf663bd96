"""The live class's results as plain data, the verdicts against the goals, and the Markdown report."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench.liveclass.measures import change_cost, propagation, summary_ms

GOALS = {
    "propagation_p95_ms": 1000.0,  # teacher's change to every student's page
    "aggregate_delay_s": 2.0,  # last answer to "n of n answered" on the teacher's screen
    "answers_lost": 0,
    "idle_followers_core_pct": 3.0,  # the replicas' CPU with every student following and nothing changing
}


def spread(run: Any, phase: str, keep: Any = None) -> dict[str, Any]:
    """Propagation of the teacher's changes of one phase (those `keep` keeps) to every student who joined."""
    chosen = [c for c in run.teacher.changes if c["phase"] == phase and (keep is None or keep(c))]
    changes = [(c["sent"], c["written"], c["state"]) for c in chosen]
    delays: list[float] = []
    missed = 0
    for student in run.students:
        if not student.user.follow_url:
            continue
        mine, lost = propagation(changes, student.user.queries)
        delays += mine
        missed += lost
    return {"changes": len(changes), **summary_ms(delays), "not_shown": missed,
            "negative": sum(1 for d in delays if d < 0)}  # fmt: skip


def propagations(run: Any) -> dict[str, Any]:
    """Over the lesson; away from the kill (not sent between the kill and 10 s after the restart); per kind of
    change; and over the cost phase's changes (temperature only, nothing else happening)."""
    out = {"lesson": spread(run, "lesson")}
    if run.kill and "restarted_at_s" in run.kill:
        start, end = run.kill["at_s"], run.kill["restarted_at_s"] + 10
        out["lesson, away from the kill"] = spread(run, "lesson", lambda c: not start - 2 <= c["t"] <= end)
    for what in sorted({c["what"] for c in run.teacher.changes if c["phase"] == "lesson"}):
        out[f"lesson, {what}"] = spread(run, "lesson", lambda c, what=what: c["what"] == what)
    out["followed phase"] = spread(run, "followed")
    return out


def costs(phases: dict[str, dict[str, Any]], changes: int) -> dict[str, Any]:
    """One change's CPU alone and followed by the students (each less its idle phase's rate), and their ratio."""
    out: dict[str, Any] = {}
    for label, busy, idle in (("solo", "changes without students", "idle without students"),
                              ("followed", "changes with students", "idle with students")):  # fmt: skip
        if busy not in phases or idle not in phases:
            return out
        rate = phases[idle]["replicas_cpu_s"] / phases[idle]["seconds"]
        cost = change_cost(phases[busy]["replicas_cpu_s"], phases[busy]["seconds"], rate, changes)
        out[f"{label}_cpu_ms"] = None if cost is None else round(1000 * cost, 1)
    solo, followed = out.get("solo_cpu_ms"), out.get("followed_cpu_ms")
    out["ratio"] = round(followed / solo, 2) if solo and followed is not None else None
    return out


def results(run: Any, sampler: Any, client_s: float) -> dict[str, Any]:
    """Everything the report shows, as plain data."""
    lesson_cpu: dict[int, float] = {}
    for index in range(2):
        pids = {pid for _, i, pid, _ in sampler.samples if i == index}
        lesson_cpu[index] = round(sum(sampler.cpu.get(pid, 0.0) for pid in pids), 1)
    questions = run.questions
    return {
        "config": asdict(run.config),
        "phases": run.phases,
        "propagation": propagations(run),
        "questions": questions,
        "answers_lost": sum(len(q.get("lost", [])) for q in questions),
        "aggregate_delay_s": [q.get("aggregate_delay_s") for q in questions],
        "cost": costs(run.phases, run.config.cost_changes),
        "replicas": [{**sampler.summary(i, run.kill), "cpu_s_whole_run": lesson_cpu[i]} for i in range(2)],
        "kill": run.kill,
        "teacher": {
            "changes": len(run.teacher.changes),
            "each": [{k: v for k, v in c.items() if k not in ("sent", "written")} for c in run.teacher.changes],
            "errors": run.teacher.errors,
            "reconnects": run.teacher.reconnects,
        },
        "students": {
            "joined": sum(1 for s in run.students if s.user.follow_url),
            "errors": [e for s in run.students for e in s.errors],
            "reconnects": [r for s in run.students for r in s.reconnects],
            "polls": sum(s.polls for s in run.students),
            "student_ids": len({s.student_id for s in run.students if s.student_id}),
        },
        "client_cpu_s": round(client_s, 1),
    }


def checks(data: dict[str, Any]) -> dict[str, Any]:
    """Each goal: the measured value and whether it is met."""
    p95 = data["propagation"]["lesson"]["p95_ms"]
    delays = [d for d in data["aggregate_delay_s"] if d is not None]
    idle = data["phases"].get("idle with students", {}).get("replicas_core_pct")
    worst = max(delays) if delays and len(delays) == len(data["aggregate_delay_s"]) else None
    return {
        "propagation_p95_ms": {"value": p95, "met": p95 is not None and p95 <= GOALS["propagation_p95_ms"]},
        "aggregate_delay_s": {"value": worst, "met": worst is not None and worst <= GOALS["aggregate_delay_s"]},
        "answers_lost": {"value": data["answers_lost"], "met": data["answers_lost"] == 0},
        "idle_followers_core_pct": {
            "value": idle,
            "met": idle is not None and idle <= GOALS["idle_followers_core_pct"],
        },
        "change_cost_ratio": {"value": data["cost"].get("ratio"), "met": None},
    }
