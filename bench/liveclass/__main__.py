"""The live-class benchmark's command line: `python -m bench.liveclass` (its options: `--help`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path

import bench.liveclass
from bench.classload.__main__ import commit
from bench.liveclass.markdown import markdown
from bench.liveclass.report import checks
from bench.liveclass.run import LiveConfig, LiveRun
from testkit.procstat import machine

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.liveclass",
        description=bench.liveclass.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=3.0, help="the lesson's length")
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="each idle phase's length")
    parser.add_argument("--cost-changes", type=int, default=15, help="changes in each cost phase")
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--restart-after", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for <date>-<name>.md and .json")
    parser.add_argument("--name", default="liveclass", help="results file names: <date>-<name>.md and .json")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    args = argument_parser().parse_args(argv)
    config = LiveConfig(
        students=args.students,
        seconds=args.minutes * 60,
        idle_seconds=args.idle_seconds,
        cost_changes=args.cost_changes,
        kill_at=None if args.no_kill else 0.6,
        restart_after=args.restart_after,
        seed=args.seed,
    )
    print(f"live class: {config.students} students, lesson {config.seconds:g} s, idle phases {config.idle_seconds:g} s")
    before = loadavg()
    with tempfile.TemporaryDirectory(prefix="attnviz-live-") as tmp:
        data = LiveRun(config, Path(tmp)).execute()
    data["checks"] = checks(data)
    print(json.dumps(data["checks"]), flush=True)
    date = dt.date.today().isoformat()
    results = {
        "date": date,
        "machine": machine(),
        "commit": commit(),
        "loadavg": before,
        "loadavg_after": loadavg(),
        **data,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{date}-{args.name}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{date}-{args.name}.md").write_text(markdown(results))
    print(f"wrote {args.out / f'{date}-{args.name}.md'} and .json")


def loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


if __name__ == "__main__":
    main()
