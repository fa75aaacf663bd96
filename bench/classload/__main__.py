"""The class load test's command line: `python -m bench.classload` (its options: `--help`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import Counter
from pathlib import Path

import bench.classload
from bench.classload.config import ClassConfig
from bench.classload.report import checks, markdown
from bench.classload.run import run_class
from bench.classload.students import reevaluate
from testkit.procstat import machine

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def commit() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.classload",
        description=bench.classload.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--no-adversaries", action="store_true", help="only the run without adversaries")
    parser.add_argument("--only-adversaries", action="store_true", help="only the run with adversaries")
    parser.add_argument("--kill-at", type=float, default=None, help="seconds into the run (default: halfway)")
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--restart-after", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--replica-env", action="append", default=[], metavar="NAME=VALUE", help="extra environment of the replicas"
    )
    parser.add_argument(
        "--adversary", action="append", choices=("crafted", "long_sentence", "oversized"), help="only these (repeat)"
    )
    parser.add_argument(
        "--quota", type=float, metavar="CORES", help="each replica in a CPU quota of CORES cores (a cgroup; root)"
    )
    parser.add_argument(
        "--memory", type=float, metavar="MIB", help="each replica in a memory limit of MIB MiB (a cgroup; root)"
    )
    parser.add_argument("--training", action="store_true", help="a training always running (Learned attention)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for <date>-class.md and .json")
    parser.add_argument("--name", default="class", help="results file names: <date>-<name>.md and .json")
    parser.add_argument("--workdir", type=Path, default=None, help="nginx's files (default: a temporary folder)")
    parser.add_argument(
        "--markdown-from", type=Path, help="only judge the recoveries again and write the .md from a results .json"
    )
    args = parser.parse_args(argv)
    if args.markdown_from:
        results = json.loads(args.markdown_from.read_text())
        reevaluate(results)
        args.markdown_from.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        args.markdown_from.with_suffix(".md").write_text(markdown(results))
        return
    seconds = args.minutes * 60
    kill_at = None if args.no_kill else (args.kill_at if args.kill_at is not None else seconds / 2)
    variants = [False, True]
    if args.no_adversaries:
        variants = [False]
    elif args.only_adversaries:
        variants = [True]
    import tempfile

    runs = []
    with tempfile.TemporaryDirectory(prefix="attnviz-class-") as tmp:
        workdir = args.workdir or Path(tmp)
        for adversaries in variants:
            label = "with adversaries" if adversaries else "without adversaries"
            config = ClassConfig(
                students=args.students,
                seconds=seconds,
                adversaries=adversaries,
                kill_at=kill_at,
                restart_after=args.restart_after,
                settle=args.settle,
                seed=args.seed,
                label=label,
                quota=args.quota,
                memory=args.memory,
                training=args.training,
            )
            if args.adversary:
                config.adversary_kinds = tuple(args.adversary)
            config.replica_env = dict(item.split("=", 1) for item in args.replica_env)
            print(
                f"{label}: {args.students} students, {seconds:g} s, kill at {kill_at}, quota {args.quota}, "
                f"training {args.training}",
                flush=True,
            )
            runs.append(run_class(config, workdir / label.replace(" ", "-")))
            print(json.dumps(checks(runs[-1])), flush=True)
    date = dt.date.today().isoformat()
    for run in runs:  # every action's timing stays out of the file: the summaries above are computed from them
        run["actions_per_student"] = dict(Counter(a["student"] for a in run.pop("actions")))
    results = {"date": date, "machine": machine(), "commit": commit(), "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{date}-{args.name}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{date}-{args.name}.md").write_text(markdown(results))
    print(f"wrote {args.out / f'{date}-{args.name}.md'} and .json")


if __name__ == "__main__":
    main()
