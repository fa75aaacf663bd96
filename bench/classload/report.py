"""The class load test's report: the verdicts, and the results as Markdown."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from typing import Any

from bench.classload.students import PAGES
from bench.classload.trainer import FIRST_TRAINING_SEED, TRAINING_STEPS

Run = dict[str, Any]  # one run's results, as in the results file


def checks(result: dict[str, Any]) -> dict[str, Any]:
    """The behaviour a class needs, as numbers: errors, lost inputs, recoveries, memory against the limit."""
    recoveries = result["recoveries"]
    memory = result["memory"]
    return {
        "student_errors": len(result["students"]["errors"]),
        "lost_inputs": len(result["students"]["lost_inputs"]),
        "affected_students": len(recoveries),
        "not_working_again": [r["student"] for r in recoveries if r.get("works_again_s") is None],
        "not_restored": [r["student"] for r in recoveries if not r.get("restored")],
        "peak_rss_mb": [r["peak_mb"] for r in memory["replicas"]],
        "over_limit": [r["port"] for r in memory["replicas"] if r["peak_mb"] >= memory["limit_mb"]],
    }


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _per_replica(
    runs: list[dict[str, Any]],
    entries: Callable[[dict[str, Any]], list[dict[str, Any]]],
    describe: Callable[[dict[str, Any], dict[str, Any]], str],
) -> list[str]:
    """One line per run: each replica's entry described, separated by semicolons."""
    return [f"- {r['label']}: " + "; ".join(describe(r, entry) for entry in entries(r)) for r in runs]


def _run_table(
    columns: list[str],
    runs: list[dict[str, Any]],
    cells: Callable[[Any], list[Any]],
    part: Callable[[dict[str, Any]], Any] = lambda run: run,
) -> list[str]:
    """A Markdown table with a row per run: its label, then `cells` of the run's `part`."""
    rows = [f"| {r['label']} | " + " | ".join(str(cell) for cell in cells(part(r))) + " |" for r in runs]
    return ["| run | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns), *rows]


def _or_dash(value: Any) -> Any:
    return "—" if value is None else value


def markdown(results: dict[str, Any]) -> str:
    """The results of the runs as a Markdown report: the set-up and the goals, then a section per part of the test."""
    runs: list[Run] = results["runs"]
    sections: list[Callable[[list[Run]], list[str]]] = [
        _goals,
        _students,
        _per_page,
        _per_action,
        _problems,
        _killed_replica,
        _memory,
        _adversaries,
        _training,
        _control_groups,
        _cpu,
        _proxy,
    ]
    lines = _header(results)
    for section in sections:
        lines += section(runs)
    return "\n".join(lines) + "\n"


def _header(results: dict[str, Any]) -> list[str]:
    """The title, and the set-up: the machine, the commit, the cluster, the class and its conditions."""
    runs: list[Run] = results["runs"]
    info = results["machine"]
    first = runs[0]["config"]
    return [
        f"# attnviz class load test, {results['date']}",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}; commit {results['commit']}. "
        f"Two replicas of `python -m attnviz.app.server app.py` behind nginx with `deploy/nginx/attnviz.conf`, all on "
        f"this one machine. {first['students']} simulated students for {first['seconds'] / 60:g} minutes, thinking "
        f"{first['think'][0]:g}-{first['think'][1]:g} s between actions; "
        + _conditions(first)
        + "Method: [bench/README.md, Class load test](../README.md#class-load-test).",
    ]


def _conditions(first: dict[str, Any]) -> str:
    """The set-up's sentences on the kill, the replicas' environment, the CPU quota, the memory limit, the training."""
    return (
        (
            f"one replica SIGKILLed at {first['kill_at']:g} s and restarted {first['restart_after']:g} s later. "
            if first["kill_at"] is not None
            else "no replica killed. "
        )
        + (f"Replicas' extra environment: {first['replica_env']}. " if first.get("replica_env") else "")
        + (
            f"CPU quota: each replica in a cgroup of its own with {first['quota']:g} "
            f"core{'' if first['quota'] == 1 else 's'} (a pod's CPU limit), "
            "its restart and its trainings included. "
            if first.get("quota")
            else "CPU quota: none. "
        )
        + (
            f"Memory limit: each replica's cgroup limited to {first['memory']:g} MiB (a pod's memory limit), "
            "its trainings included. "
            if first.get("memory")
            else ""
        )
        + (
            f"Training: on, one always running (the Learned attention page's Train, dates, {TRAINING_STEPS} steps, "
            f"seeds from {FIRST_TRAINING_SEED}, the next one pressed as each ends). "
            if first.get("training")
            else "Training: none. "
        )
    )


def _goal(goal: str, values: list[str], ok: bool | None) -> str:
    """A row of the goals' table: the goal, each run's figure, and whether it was met (None: no verdict)."""
    return f"| {goal} | " + " | ".join(values) + f" | {'met' if ok else '**not met**' if ok is not None else ''} |"


def _goals(runs: list[Run]) -> list[str]:
    """The goals' table: a row per goal, a column per run."""
    verdicts = [checks(r) for r in runs]
    return [
        "",
        "## Goals",
        "",
        "| goal | " + " | ".join(r["label"] for r in runs) + " | |",
        "|---|" + "---|" * len(runs) + "---|",
        *_recovery_goals(verdicts),
        *_memory_goals(runs, verdicts),
        *_latency_goals(runs),
    ]


def _recovery_goals(verdicts: list[dict[str, Any]]) -> list[str]:
    """No errors, no lost inputs, and every student on the killed replica working again on its own page."""
    return [
        _goal(
            "student errors: 0",
            [str(v["student_errors"]) for v in verdicts],
            all(v["student_errors"] == 0 for v in verdicts),
        ),
        _goal(
            "lost inputs: 0", [str(v["lost_inputs"]) for v in verdicts], all(v["lost_inputs"] == 0 for v in verdicts)
        ),
        _goal(
            "students on the killed replica working again",
            [f"{v['affected_students'] - len(v['not_working_again'])} of {v['affected_students']}" for v in verdicts],
            all(v["affected_students"] > 0 and not v["not_working_again"] for v in verdicts),
        ),
        _goal(
            "their pages restored from their links",
            [f"{v['affected_students'] - len(v['not_restored'])} of {v['affected_students']}" for v in verdicts],
            all(not v["not_restored"] for v in verdicts),
        ),
    ]


def _memory_goals(runs: list[Run], verdicts: list[dict[str, Any]]) -> list[str]:
    """Each replica under the limit (with its trainings, when they ran), and nothing killed at a memory limit."""
    limit = runs[0]["memory"]["limit_mb"]
    rows = [
        _goal(
            f"peak RSS of each replica under the k8s limit ({limit:.0f} MiB)",
            [" / ".join(f"{mb:.0f}" for mb in v["peak_rss_mb"]) + " MiB" for v in verdicts],
            all(not v["over_limit"] for v in verdicts),
        )
    ]
    if any(r["config"].get("training") for r in runs):
        together = [[m.get("with_training_peak_mb") or 0.0 for m in r["memory"]["replicas"]] for r in runs]
        rows.append(
            _goal(
                f"each replica with its trainings under the limit ({limit:.0f} MiB; peaks added, an upper bound)",
                [" / ".join(f"{mb:.0f}" for mb in v) + " MiB" for v in together],
                all(mb < limit for v in together for mb in v),
            )
        )
    if any(r["config"].get("memory") for r in runs):
        kills = [sum(g.get("oom_kills", 0) for g in r["memory_groups"]) for r in runs]
        rows.append(
            _goal("processes the kernel killed at the memory limit: 0", [str(k) for k in kills], not any(kills))
        )
    return rows


def _latency_goals(runs: list[Run]) -> list[str]:
    """The students' p95 under 1 s, and within 2x of the run without adversaries in the run with them."""
    p95 = [r["students"]["latency"]["p95_ms"] for r in runs]
    rows = [_goal("student p95 under 1 s", [f"{_ms(v)} ms" for v in p95], all(v is not None and v < 1000 for v in p95))]
    base = next((r for r in runs if not r["config"]["adversaries"]), None)
    adv = next((r for r in runs if r["config"]["adversaries"]), None)
    if base and adv:
        b, a = base["students"]["latency"]["p95_ms"], adv["students"]["latency"]["p95_ms"]
        ratio = a / b if a and b else None
        values = ["" for _ in runs]
        values[runs.index(adv)] = f"{ratio:.2f}x" if ratio else "—"
        rows.append(
            _goal("p95 with adversaries within 2x of the run without", values, ratio is not None and ratio <= 2)
        )
    return rows


def _students(runs: list[Run]) -> list[str]:
    """The students' table: actions, latency, errors, lost inputs and shared links, a row per run."""
    lines = [
        "",
        "## Students",
        "",
        "| run | actions | p50 ms | p95 ms | p99 ms | max ms | errors | lost inputs | links opened (restored) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        s, lat = r["students"], r["students"]["latency"]
        lines.append(
            f"| {r['label']} | {s['actions']} | {_ms(lat['p50_ms'])} | {_ms(lat['p95_ms'])} | {_ms(lat['p99_ms'])} | "
            f"{_ms(lat['max_ms'])} | {len(s['errors'])} | {len(s['lost_inputs'])} | "
            f"{s['links_opened']} ({s['links_restored']}) |"
        )
    return lines


def _latencies(entry: dict[str, Any] | None) -> str:
    """ "p50 / p95 (count)" of one page's or one action's latency; a dash when there is none."""
    return f"{_ms(entry['p50_ms'])} / {_ms(entry['p95_ms'])} ({entry['n']})" if entry else "—"


def _per_page(runs: list[Run]) -> list[str]:
    """The students' latency on each page, a column per run."""
    lines = ["", "Per page (p50 / p95 ms, actions):", ""]
    lines += ["| page | " + " | ".join(r["label"] for r in runs) + " |", "|---|" + "---|" * len(runs)]
    for page in PAGES:
        cells = [_latencies(r["students"]["per_page"][page]) for r in runs]
        lines.append(f"| {PAGES[page]} | " + " | ".join(cells) + " |")
    return lines


def _per_action(runs: list[Run]) -> list[str]:
    """The students' latency for each kind of action, a column per run."""
    names = sorted({n for r in runs for n in r["students"]["per_action"]})
    lines = ["", "Per action (p50 / p95 ms, count):", ""]
    lines += ["| action | " + " | ".join(r["label"] for r in runs) + " |", "|---|" + "---|" * len(runs)]
    for name in names:
        cells = [_latencies(r["students"]["per_action"].get(name)) for r in runs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _problems(runs: list[Run]) -> list[str]:
    """The first errors and lost inputs of each run, as recorded."""
    lines: list[str] = []
    for r in runs:
        problems = r["students"]["errors"][:10] + r["students"]["lost_inputs"][:10]
        if problems:
            lines += ["", f"Problems, {r['label']} (first ones):", ""]
            lines += [f"- `{json.dumps(p, ensure_ascii=False)[:400]}`" for p in problems]
    return lines


def _killed_replica(runs: list[Run]) -> list[str]:
    """For each run with a kill: what was killed and when, and each affected student's way back."""
    lines = ["", "## The replica killed midway", ""]
    for r in runs:
        if r["kill"]:
            lines += _kill_summary(r)
            lines += [_recovery_row(x) for x in r["recoveries"]]
            lines.append("")
    return lines


def _kill_summary(r: Run) -> list[str]:
    """The kill in one run, in a sentence, and the head of its students' table."""
    kill, recoveries = r["kill"], r["recoveries"]
    works = [x["works_again_s"] for x in recoveries if x.get("works_again_s") is not None]
    reconnect = [x["reconnect_s"] for x in recoveries if x.get("reconnect_s") is not None]
    return [
        f"**{r['label']}**: killed {kill['replica']} (pid {kill['pid']}) at {kill['at_s']:.1f} s, holding "
        f"{len(kill['students_on_victim'])} students (sessions per replica: {kill['sessions_per_replica']}); "
        f"restarted at {kill.get('restarted_at_s', float('nan')):.1f} s, healthy after "
        f"{kill.get('restart_to_healthy_s', float('nan')):.1f} s. {len(recoveries)} students lost their "
        f"websocket; reconnected after {_span(reconnect)} s; working again (their change in the URL) after "
        f"{_span(works)} s.",
        "",
        "| student | page | websockets served by | change sent | reconnected s | first run s | working again s | "
        "page from its link | change applied |",
        "|---|---|---|---|---|---|---|---|---|",
    ]


def _recovery_row(x: dict[str, Any]) -> str:
    """One affected student's row: who served it, when it worked again, its page and its change."""
    change = x.get("change") or {}
    return (
        f"| {x['student']} | {x['page']} | "
        + _served(x.get("websockets_served_by", []))
        + f" | {x.get('moment', '—')} | {x.get('reconnect_s', '—')} | "
        f"{x.get('first_run_s', '—')} | {x.get('works_again_s') or '—'} | "
        f"{'yes' if x.get('restored') else '**no**'} | "
        f"{change.get('param', '?')}={str(change.get('sent', '?'))[:24]}: "
        f"{'yes' if not x.get('lost') else '**lost**: ' + x.get('why', '?')} |"
    )


def _memory(runs: list[Run]) -> list[str]:
    """Each replica's RSS: after the warm-up, its peaks, at the end of the load, settled; beside the k8s limit."""
    lines = [
        "## Memory (RSS from /proc, MiB)",
        "",
        "| run | replica | after warm-up | peak | peak per process | end of load | settled | k8s limit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        for m in r["memory"]["replicas"]:
            lives = ", ".join(f"{life['peak_mb']:.0f}" for life in m["lives"])
            lines.append(
                f"| {r['label']} | :{m['port']}{' (killed)' if m['killed'] else ''} | {m['after_warm_up_mb']} | "
                f"{m['peak_mb']:.0f} | {lives} | {m['end_mb']} | {m['settled_mb']} | {r['memory']['limit_mb']:.0f} |"
            )
    return lines


def _adversaries(runs: list[Run]) -> list[str]:
    """What each adversary's links got, in the run with adversaries."""
    adv = next((r for r in runs if r["config"]["adversaries"]), None)
    if not (adv and adv["adversaries"]):
        return []
    lines = [
        "",
        "## What the adversaries got",
        "",
        "| adversary | link | requests | HTTP | runs finished | run s median / max | largest reply KB | "
        "the page said |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, summary in adv["adversaries"].items():
        for name, entry in summary["by_link"].items():
            http = ", ".join(f"{k}×{v}" for k, v in entry["http"].items())
            lines.append(
                f"| {kind} | {name} | {entry['count']} | {http} | {entry['runs']} | "
                f"{entry['run_s_median']} / {entry['run_s_max']} | {entry['received_kb_max']} | {_said(entry)} |"
            )
    return lines


def _said(entry: dict[str, Any]) -> str:
    """What the page said to one adversary's link (its messages, else its errors), fit for a table cell."""
    said = "; ".join(entry["alerts"]) or ", ".join(entry.get("error", [])) or "no message"
    if entry.get("exceptions"):
        said = f"EXCEPTION {entry['exceptions'][0]}; " + said
    if entry.get("page_not_found"):
        said = "page not found; " + said
    said = re.sub(r"[\x00-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", said.replace("\n", " "))
    return said.replace("|", "\\|")[:300]


def _training(runs: list[Run]) -> list[str]:
    """The trainings alongside, in the runs that had them: how many ended, and their memory beside the replicas'."""
    trained = [r for r in runs if r.get("training")]
    if not trained:
        return []
    lines = ["", "## The training alongside", ""]
    lines += _run_table(
        ["Train pressed", "started", "finished", "outcomes", "finished in s (median)"],
        trained,
        lambda t: [t["pressed"], t["started"], t["finished"], t["outcomes"], _or_dash(t["finished_in_s_median"])],
        lambda r: r["training"],
    )
    lines += ["", "Peak RSS of each replica's trainings, and of the replica and its trainings together (MiB):", ""]
    lines += _per_replica(
        trained,
        lambda r: r["memory"]["replicas"],
        lambda r, m: f":{m['port']} training {m.get('training_peak_mb')}, together {m.get('with_training_peak_mb')}",
    )
    return lines


def _control_groups(runs: list[Run]) -> list[str]:
    """The replicas' cgroups over the load, in the runs that had them: the CPU quota's throttling, the memory limit."""
    groups = (
        (
            "The CPU quota over the load (each replica's group)",
            [r for r in runs if r.get("quota")],
            lambda r: r["quota"],
            lambda r, q: (
                f"{q.get('throttled', 0):.0f} of {q.get('periods', 0):.0f} periods throttled, "
                f"{q.get('throttled_s', 0):.1f} s throttled"
            ),
        ),
        (
            "The memory limit over the load (each replica's group, its trainings included)",
            [r for r in runs if r["config"].get("memory")],
            lambda r: r["memory_groups"],
            lambda r, m: (
                f"peak {m.get('peak_mib', float('nan')):.0f} MiB of {r['config']['memory']:g}, "
                f"{m.get('oom_kills', 0)} killed by the kernel"
            ),
        ),
    )
    lines: list[str] = []
    for title, selected, entries, describe in groups:
        if selected:
            lines += ["", f"## {title}", "", *_per_replica(selected, entries, describe)]
    return lines


def _cpu(runs: list[Run]) -> list[str]:
    """CPU seconds over the load: the whole machine, the replicas, the trainings, the clients, the rest."""
    return [
        "",
        "## CPU over the load (seconds, both cores together)",
        "",
        *_run_table(
            ["load s", "machine busy", "replicas", "trainings", "clients (this process)", "others (nginx, the rest)"],
            runs,
            lambda cpu: [
                cpu["load_seconds"],
                cpu.get("machine_busy_s"),
                cpu.get("replicas_s"),
                cpu.get("training_s", 0),
                cpu.get("client_s"),
                cpu.get("others_s"),
            ],
            lambda r: {**r["cpu"], "load_seconds": r["load_seconds"]},
        ),
    ]


def _proxy(runs: list[Run]) -> list[str]:
    """The proxy's responses by status, from nginx's access log."""
    lines = ["", "## Proxy responses (nginx access log, status: count)", ""]
    return lines + [f"- {r['label']}: {dict(sorted(r['proxy_status'].items()))}" for r in runs]


def _served(upstreams: list[str]) -> str:
    """ ":8501 → :8502 → :8501 ×3": the replicas that served a student's websockets, in order ("a/b": a was tried
    first), runs of the same one collapsed (a link student opens new tabs)."""
    runs: list[list[Any]] = []
    for upstream in upstreams:
        name = "/".join(":" + a.split(":")[-1] for a in upstream.split(", "))
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    return " → ".join(name + (f" ×{count}" if count > 1 else "") for name, count in runs)


def _span(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{min(values):.2f}-{max(values):.2f} (median {statistics.median(values):.2f})"
