"""The live class's Markdown report."""

from __future__ import annotations

from typing import Any

from bench.liveclass.report import GOALS


def _value(value: Any, unit: str = "") -> str:
    return "n/a" if value is None else f"{value}{unit}"


def goals_table(data: dict[str, Any]) -> list[str]:
    checks = data["checks"]
    rows = [
        ("Propagation p95, teacher's change to each student's page", f"≤ {GOALS['propagation_p95_ms']:g} ms",
         _value(checks["propagation_p95_ms"]["value"], " ms"), checks["propagation_p95_ms"]["met"]),
        ("Last answer to \"n of n answered\" on the teacher's screen (worst question)",
         f"≤ {GOALS['aggregate_delay_s']:g} s", _value(checks["aggregate_delay_s"]["value"], " s"),
         checks["aggregate_delay_s"]["met"]),
        ("Answers lost (acknowledged, not in the store at the reveal)", "0",
         _value(checks["answers_lost"]["value"]), checks["answers_lost"]["met"]),
        ("Replicas' CPU with every student following, nothing changing",
         f"≤ {GOALS['idle_followers_core_pct']:g} % of a core",
         _value(checks["idle_followers_core_pct"]["value"], " %"), checks["idle_followers_core_pct"]["met"]),
        ("One change followed by the class ÷ the same change alone", "well under the class size",
         _value(checks["change_cost_ratio"]["value"]), None),
    ]  # fmt: skip
    lines = ["| Goal | Target | Measured | Met |", "|---|---|---|---|"]
    for name, target, measured, met in rows:
        lines.append(f"| {name} | {target} | {measured} | {'—' if met is None else ('yes' if met else 'NO')} |")
    return lines


def phases_table(data: dict[str, Any]) -> list[str]:
    lines = ["| Phase | Seconds | Replicas' CPU s | % of one core | Per process (CPU s) |", "|---|---|---|---|---|"]
    for name, phase in data["phases"].items():
        each = ", ".join(f"{k} {v}" for k, v in phase["cpu_s"].items())
        lines.append(
            f"| {name} | {phase['seconds']} | {phase['replicas_cpu_s']} | {phase['replicas_core_pct']} | {each} |"
        )
    return lines


def propagation_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| Changes of | Changes | Student pages | p50 ms | p95 ms | max ms | Not shown |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in data["propagation"].items():
        lines.append(f"| {name} | {p['changes']} | {p['n']} | {_value(p['p50_ms'])} | {_value(p['p95_ms'])} | "
                     f"{_value(p['max_ms'])} | {p['not_shown']} |")  # fmt: skip
    return lines


def questions_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| Question | Asked at s | Kind | Students | Acknowledged | Sent again | In the store | Lost "
        "| Count shows all after s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for q in data["questions"]:
        lines.append(f"| {_value(q.get('id'))} | {_value(q.get('asked_at_s'))} | {_value(q.get('kind'))} | "
                     f"{_value(q.get('students'))} | {_value(q.get('acknowledged'))} | {_value(q.get('sent_again'))} | "
                     f"{_value(q.get('stored'))} | "
                     f"{len(q.get('lost', []))} | {_value(q.get('aggregate_delay_s'))} |")  # fmt: skip
    return lines


def replicas_table(data: dict[str, Any]) -> list[str]:
    lines = ["| Replica | CPU s (whole run, every life) | Peak RSS MiB | Killed | Lives (pid: peak MiB) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for i, r in enumerate(data["replicas"]):
        lives = ", ".join(f"{life['pid']}: {life['peak_mb']}" for life in r["lives"])
        lines.append(f"| {i} | {r['cpu_s_whole_run']} | {r['peak_mb']} | {'yes' if r['killed'] else 'no'} | {lives} |")
    return lines


def markdown(data: dict[str, Any]) -> str:
    """The report: goals, phases, propagation, questions, replicas, the kill and what went wrong."""
    config, cost = data["config"], data["cost"]
    students, teacher = data["students"], data["teacher"]
    out = [
        f"# Live class benchmark, {data['date']}",
        "",
        f"Commit {data['commit']}; {data['machine']['cpu']}, {data['machine']['cores']} cores, "
        f"{data['machine']['memory']}; load average before the run {' '.join(data['loadavg'])}, after it "
        f"{' '.join(data.get('loadavg_after', []))}. "
        f"{config['students']} students ({students['joined']} joined), a {config['seconds']:g} s lesson, idle phases "
        f"of {config['idle_seconds']:g} s, {config['cost_changes']} changes per cost phase. Method: bench/README.md "
        '("Live class").',
        "",
        "## Goals",
        "",
        *goals_table(data),
        "",
        f"One change's CPU (replicas, less the idle rate): alone {_value(cost.get('solo_cpu_ms'), ' ms')}, followed "
        f"by the class {_value(cost.get('followed_cpu_ms'), ' ms')}.",
        "",
        "## Phases",
        "",
        *phases_table(data),
        "",
        "## Propagation",
        "",
        *propagation_table(data),
        "",
        "## Questions",
        "",
        *questions_table(data),
        "",
        "## Replicas",
        "",
        *replicas_table(data),
        "",
        f"Kill: {data['kill']}.",
        "",
        f"Teacher: {teacher['changes']} changes, {len(teacher['errors'])} errors, reconnects {teacher['reconnects']}. "
        f"Students: {len(students['reconnects'])} reconnects "
        f"({sum(1 for r in students['reconnects'] if r['ok'])} succeeded), {students['polls']} long polls, "
        f"{students['student_ids']} distinct student ids, {len(students['errors'])} errors. "
        f"The clients' own CPU: {data['client_cpu_s']} s.",
        "",
    ]
    for error in (teacher["errors"] + students["errors"])[:20]:
        out.append(f"- {error}")
    return "\n".join(out) + "\n"
