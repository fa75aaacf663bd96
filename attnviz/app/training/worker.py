"""A training for the app's queue: the model's own training script (attnviz/models/learned/train.py), run in a child
process of the server, paced to the CPU the server leaves and stopped with it.

    python -m attnviz.app.training.worker dates --seed 7 --json --out - --server <the server's process id>
"""

from __future__ import annotations

import argparse

from attnviz.app.training.pacing import Pacer, ServerGoneError, die_with_parent
from attnviz.models.learned import train


def main(argv: list[str] | None = None) -> None:
    """Train as `train.main` does, giving way to the server's CPU use and stopping with the server."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--server", type=int, required=True, help="the server's process id")
    args, rest = parser.parse_known_args(argv)
    die_with_parent(args.server)
    try:
        train.main(rest, pause=Pacer(args.server))
    except ServerGoneError as exc:  # nobody waits for this run any more
        raise SystemExit(f"stopped: {exc}") from exc


if __name__ == "__main__":
    main()
