"""The class load test's command line: `python -m bench.classload` (its options: `--help`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

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


def argument_parser() -> argparse.ArgumentParser:
    """The options of `python -m bench.classload`."""
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
    return parser


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    args = argument_parser().parse_args(argv)
    if args.markdown_from:
        markdown_from(args.markdown_from)
        return
    runs = run_all(args)
    date = dt.date.today().isoformat()
    for run in runs:  # every action's timing stays out of the file: the summaries above are computed from them
        run["actions_per_student"] = dict(Counter(a["student"] for a in run.pop("actions")))
    results = {"date": date, "machine": machine(), "commit": commit(), "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{date}-{args.name}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{date}-{args.name}.md").write_text(markdown(results))
    print(f"wrote {args.out / f'{date}-{args.name}.md'} and .json")


def markdown_from(path: Path) -> None:
    """Judge the recoveries of a results .json again (rewriting it) and write its .md beside it."""
    results = json.loads(path.read_text())
    reevaluate(results)
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    path.with_suffix(".md").write_text(markdown(results))


def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The runs the options ask for (without adversaries, then with them), each on a fresh cluster."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="attnviz-class-") as tmp:
        workdir = args.workdir or Path(tmp)
        for config in configs(args):
            print(
                f"{config.label}: {args.students} students, {config.seconds:g} s, kill at {config.kill_at}, "
                f"quota {args.quota}, training {args.training}",
                flush=True,
            )
            runs.append(run_class(config, workdir / config.label.replace(" ", "-")))
            print(json.dumps(checks(runs[-1])), flush=True)
    return runs


def configs(args: argparse.Namespace) -> list[ClassConfig]:
    """The configuration of each run the options ask for."""
    seconds = args.minutes * 60
    kill_at = None if args.no_kill else (args.kill_at if args.kill_at is not None else seconds / 2)
    variants = [False, True]
    if args.no_adversaries:
        variants = [False]
    elif args.only_adversaries:
        variants = [True]
    out = []
    for adversaries in variants:
        config = ClassConfig(
            students=args.students,
            seconds=seconds,
            adversaries=adversaries,
            kill_at=kill_at,
            restart_after=args.restart_after,
            settle=args.settle,
            seed=args.seed,
            label="with adversaries" if adversaries else "without adversaries",
            quota=args.quota,
            memory=args.memory,
            training=args.training,
        )
        if args.adversary:
            config.adversary_kinds = tuple(args.adversary)
        config.replica_env = dict(item.split("=", 1) for item in args.replica_env)
        out.append(config)
    return out


if __name__ == "__main__":
    main()
