"""The small models' training, measured: time to the stated accuracy, and a class's pages while a training runs.

    python -m bench.training                      # both tasks, then 3 paired rounds of 30 users
    python -m bench.training --rounds 1 --seconds 5

1. Each task is trained as the package's checkpoint is made (`python -m attnviz.models.learned.train TASK --seed 0`),
   reading its snapshots as they are printed: the seconds to the first snapshot at the goal's held-out accuracy
   (dates 95 % exact match, the repeat 90 % token accuracy), the total, the final accuracy on 2,000 held-out
   examples, and the child's peak memory.
2. Thirty simulated students move the self-attention page's temperature (bench/loadclient.py) on one server, in
   paired windows: with nothing else running, and with a training running as the page's queue runs it (the same
   command, in a child process at CPU niceness 10), and for comparison at niceness 0. Reruns/s and latency
   percentiles of each window; the ratio is taken against the quiet window of the same round.

3. `--quota`: the same class inside a real CPU quota of one core (a cgroup, as a pod's CPU limit makes one; the
   server and every process it starts share it, the load client stays outside), in paired windows: quiet; with a
   training as the page starts it (a simulated student presses Train: one thread, paced to what the server leaves);
   and with a training as the queue ran it before issue 36 (two threads at niceness 10, not paced), for comparison.
   Also the training's own pace in each window (its cores, and its steps per second).

Results: bench/results/<date>-training.md and .json (`--quota`: <date>-training-quota.*).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from attnviz.app.training.jobs import NICENESS, training_command
from attnviz.models.learned.train import FINAL_EVAL_EXAMPLES, TrainSettings, load_run
from bench.loadclient import run_load
from bench.scenarios import SCENARIOS, start_server
from testkit.cgroups import ControlGroup
from testkit.procstat import children, cpu_seconds, machine
from testkit.proxyclient import ProxyUser
from testkit.server import StreamlitServer

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
GOALS = {"dates": 0.95, "induction": 0.90}


def pin(pid: int, cores: set[int] | None) -> None:
    """Every thread of process `pid` on `cores` (None: leave it), as a container limited to them would run it."""
    if cores is None:
        return
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cores)


def _child(settings: TrainSettings, out: Path, niceness: int, cores: set[int] | None = None) -> subprocess.Popen[str]:
    child = subprocess.Popen(training_command(settings, out), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    os.setpriority(os.PRIO_PROCESS, child.pid, niceness)
    pin(child.pid, cores)
    return child


def train_task(task: str) -> dict[str, Any]:
    """Train `task` with the shipped settings, timing each snapshot as it arrives."""
    settings = TrainSettings(task).resolved()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run.safetensors"
        started = time.perf_counter()
        child = _child(settings, out, 0)
        assert child.stdout is not None
        to_goal = None
        goal_step = None
        snapshots = 0
        for line in child.stdout:
            snapshot = json.loads(line)
            snapshots += 1
            if to_goal is None and snapshot["accuracy"] >= GOALS[task]:
                to_goal, goal_step = time.perf_counter() - started, snapshot["step"]
        assert child.wait() == 0
        total = time.perf_counter() - started
        run = load_run(out)
        size = out.stat().st_size
    row = {
        "task": task,
        "steps": settings.steps,
        "goal": GOALS[task],
        "seconds_to_goal": round(to_goal, 1) if to_goal is not None else None,
        "step_at_goal": goal_step,
        "seconds_total": round(total, 1),
        "final_accuracy": run.accuracy,
        "held_out_examples": FINAL_EVAL_EXAMPLES,
        "snapshots": snapshots,
        "checkpoint_bytes": size,
        "peak_rss_mb_children": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }
    print(f"  {task}: {row}", flush=True)
    return row


def _window(url: str, users: int, seconds: float) -> dict[str, Any]:
    scenario = SCENARIOS["self"]
    result = asyncio.run(run_load(url, scenario.page, scenario.control, users, seconds, query=scenario.query))
    return result.summary()


def responsiveness(rounds: int, seconds: float, users: int, cores: set[int] | None = None) -> list[dict[str, Any]]:
    """Paired windows on one server: quiet, with a training at the queue's niceness, and with one at niceness 0;
    with `cores`, the server and the training share only those cores."""
    rows = []
    settings = TrainSettings("dates", seed=1).resolved()  # ~30 s: a window of `seconds` fits inside one training
    with start_server(SCENARIOS["self"]) as server, tempfile.TemporaryDirectory() as folder:
        _window(server.url, 2, 2.0)  # warm up: every thread the server keeps exists now
        pin(server.pid, cores)
        for index in range(rounds):
            for arm, niceness in (("quiet", None), (f"training, nice {NICENESS}", NICENESS), ("training, nice 0", 0)):
                child = None
                if niceness is not None:
                    child = _child(settings, Path(folder) / f"{index}-{niceness}.safetensors", niceness, cores)
                    assert child.stdout is not None
                    child.stdout.readline()  # its first snapshot: it is training now
                    pin(child.pid, cores)  # and the threads torch started meanwhile
                try:
                    row = {"round": index + 1, "arm": arm, **_window(server.url, users, seconds)}
                finally:
                    if child is not None:
                        still_training = child.poll() is None
                        child.kill()
                        child.wait()
                        row["training_ran_throughout"] = still_training
                rows.append(row)
                print(
                    f"  round {index + 1} {arm:18s}: {row['reruns_per_s']:6.1f} reruns/s, p50 {row['p50_ms']:6.1f} ms,"
                    f" p95 {row['p95_ms']:6.1f} ms, {row['errors']} errors",
                    flush=True,
                )
    return rows


QUOTA_STEPS = 1000  # dates: minutes at a class's pace, so the training runs all through a window


async def _press_train(url: str, seed: int) -> None:
    """A student opens the learned page on `seed` and presses Train (the server starts the training)."""
    user = ProxyUser(url, "Learned_attention", f"sd={seed}&n={QUOTA_STEPS}")
    try:
        await user.open()
        await user.click("Train")
    finally:
        await user.close()


def _started_training(server: StreamlitServer, arm: str, seed: int, group: ControlGroup, folder: Path) -> int:
    """Start the arm's training; its process id once it has been training for a moment."""
    if arm == "before":  # as the queue ran it before: two threads, niceness 10, no pacing, in the same quota
        settings = TrainSettings("dates", seed=seed, steps=QUOTA_STEPS).resolved()
        command = [*training_command(settings, folder / f"{seed}.safetensors"), "--threads", "2"]
        child = subprocess.Popen(group.command(command), stdout=subprocess.DEVNULL, cwd=ROOT)
        os.setpriority(os.PRIO_PROCESS, child.pid, NICENESS)
        pid = child.pid
    else:
        asyncio.run(_press_train(server.url, seed))
        deadline = time.monotonic() + 60
        while not children(server.pid, "attnviz.app.training.worker") and time.monotonic() < deadline:
            time.sleep(0.1)
        (pid,) = children(server.pid, "attnviz.app.training.worker")
    while cpu_seconds(pid) < 3.0:  # torch imported, step 0 evaluated: training now
        time.sleep(0.1)
    return pid


def quota_responsiveness(rounds: int, seconds: float, users: int) -> list[dict[str, Any]]:
    """Paired windows in a one-core CPU quota: quiet, a training as the page starts it, one as before issue 36."""
    rows = []
    with (
        start_server(SCENARIOS["self"]) as server,
        ControlGroup(cpu_cores=1.0) as group,
        tempfile.TemporaryDirectory() as folder,
    ):
        _window(server.url, 2, 2.0)  # warm up outside the quota: every thread the server keeps exists now
        group.add(server.pid)
        for index in range(rounds):
            for arm in ("quiet", "paced", "before"):
                trainer = None
                if arm != "quiet":
                    trainer = _started_training(server, arm, 100 + 10 * index + len(arm), group, Path(folder))
                    trainer_cpu, started = cpu_seconds(trainer), time.monotonic()
                try:
                    row = {"round": index + 1, "arm": arm, **_window(server.url, users, seconds)}
                finally:
                    if trainer is not None:
                        row["training_cores"] = round(
                            (cpu_seconds(trainer) - trainer_cpu) / (time.monotonic() - started), 3
                        )
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(trainer, signal.SIGKILL)
                rows.append(row)
                print(
                    f"  round {index + 1} {arm:7s}: {row['reruns_per_s']:6.1f} reruns/s, p50 {row['p50_ms']:6.1f} ms,"
                    f" p95 {row['p95_ms']:6.1f} ms, {row['errors']} errors, training cores"
                    f" {row.get('training_cores', '-')}",
                    flush=True,
                )
                time.sleep(1.0)  # the killed training's job is over before the next arm
    return rows


def responsiveness_table(rows: list[dict[str, Any]], cores: bool = False) -> list[str]:
    """The page's figures per round and arm as Markdown table lines, each arm's reruns/s over its round's quiet arm
    (`cores`: with the training's cores)."""
    lines = [
        "| round | arm | reruns/s | p50 ms | p95 ms | errors | reruns/s over quiet |" + (" training's cores |" * cores),
        "|--:|---|--:|--:|--:|--:|--:|" + ("--:|" * cores),
    ]
    quiet = {row["round"]: row["reruns_per_s"] for row in rows if row["arm"] == "quiet"}
    for row in rows:
        ratio = row["reruns_per_s"] / quiet[row["round"]] if quiet.get(row["round"]) else float("nan")
        lines.append(
            f"| {row['round']} | {row['arm']} | {row['reruns_per_s']:.1f} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} "
            f"| {row['errors']} | {ratio:.2f} |" + (f" {row.get('training_cores', '-')} |" * cores)
        )
    return lines


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown (bench/results/<date>-training.md; bench/README.md quotes them)."""
    lines = [
        f"# Training the small models ({results['date']})",
        "",
        f"Machine: {results['machine']}. Command: `python -m bench.training {results['args']}`.",
        "",
        "| task | steps | goal | seconds to goal (step) | seconds in all | final held-out accuracy | checkpoint |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for row in results["training"]:
        lines.append(
            f"| {row['task']} | {row['steps']} | {row['goal']:.0%} | {row['seconds_to_goal']} ({row['step_at_goal']}) "
            f"| {row['seconds_total']} | {row['final_accuracy']:.2%} of {row['held_out_examples']} "
            f"| {row['checkpoint_bytes']:,} B |"
        )
    lines += [
        "",
        f"Peak memory of a training process: {results['training'][-1]['peak_rss_mb_children']} MB.",
        "",
        f"Self-attention page, {results['users']} users moving the temperature, {results['seconds']} s windows, "
        f"cores: {results.get('cores', 'all')}:",
        "",
        *responsiveness_table(results["responsiveness"]),
    ]
    for arm in sorted({row["arm"] for row in results["responsiveness"]}):
        p50 = statistics.median(row["p50_ms"] for row in results["responsiveness"] if row["arm"] == arm)
        lines.append(f"\nMedian p50, {arm}: {p50:.0f} ms")
    return "\n".join(lines) + "\n"


def quota_markdown(results: dict[str, Any]) -> str:
    """The quota scenario's results as Markdown (bench/results/<date>-training-quota.md)."""
    lines = [
        f"# A class beside a training in a one-core CPU quota ({results['date']})",
        "",
        f"Machine: {results['machine']}. Command: `python -m bench.training {results['args']}`. The server and what it"
        f" starts in a cgroup v{results['cgroup_version']} of one core (CFS quota 100 ms per 100 ms); the load client"
        " outside it. The machine's load average (1 minute) before and after: "
        f"{results['load_average_before']}, {results['load_average_after']} (other work shares it: judge the ratios"
        " within a round).",
        "",
        f"Self-attention page, {results['users']} users moving the temperature, {results['seconds']} s windows:",
        "",
        *responsiveness_table(results["responsiveness"], cores=True),
    ]
    lines += ["", "Arms: paced = as the page starts a training now; before = two threads at niceness 10, not paced."]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run both parts and write the results."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument(
        "--one-core", action="store_true", help="server and training pinned to one core (a pod's limit)"
    )
    parser.add_argument(
        "--quota", action="store_true", help="only the class in a real one-core CPU quota, with and without a training"
    )
    args = parser.parse_args()
    if args.quota:
        print("a one-core CPU quota", flush=True)
        results = {
            "date": dt.date.today().isoformat(),
            "machine": machine(),
            "args": " ".join(sys.argv[1:]),
            "users": args.users,
            "seconds": args.seconds,
            "cgroup_version": ControlGroup().version,
            "load_average_before": round(os.getloadavg()[0], 2),
            "responsiveness": quota_responsiveness(args.rounds, args.seconds, args.users),
            "load_average_after": round(os.getloadavg()[0], 2),
        }
        _write(results, "-quota", quota_markdown(results))
        return
    print("training", flush=True)
    training = [train_task(task) for task in ("dates", "induction")]
    print("responsiveness", flush=True)
    rows = responsiveness(args.rounds, args.seconds, args.users, {0} if args.one_core else None)
    results = {
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "args": " ".join(sys.argv[1:]),
        "users": args.users,
        "cores": "one (pinned)" if args.one_core else "all",
        "seconds": args.seconds,
        "training": training,
        "responsiveness": rows,
    }
    _write(results, "-one-core" if args.one_core else "", markdown(results))


def _write(results: dict[str, Any], suffix: str, text: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / f"{results['date']}-training{suffix}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
