"""The pretrained-model page's own figures: model load time, all 72 heads at 128 and 256 tokens, page reruns.

python -m bench.model            # prints the load and compute figures as JSON (also part of `make bench`)
python -m bench.model --runs 1 --repeats 5   # a quick look
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: what a new server process pays on its first model-page visit, after torch is imported
# (the app imports torch at start-up for every page, so that cost is not the model's).
LOAD_PROBE = """
import json, time
import torch
started = time.perf_counter()
from attnviz.models.bert import load_minilm
model = load_minilm()
loaded = time.perf_counter()
model.run("warm up")
print(json.dumps({"load_s": loaded - started, "first_run_s": time.perf_counter() - loaded}))
"""


def load_times(runs: int = 3) -> dict[str, Any]:
    """Seconds to import the model code, read the weights and tokenizer, and run a first sentence (fresh processes)."""
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", LOAD_PROBE], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        samples.append(json.loads(out.strip().splitlines()[-1]))
    return {
        "load_s": [round(s["load_s"], 3) for s in samples],
        "load_s_median": round(statistics.median(s["load_s"] for s in samples), 3),
        "first_run_s_median": round(statistics.median(s["first_run_s"] for s in samples), 3),
    }


def compute_times(lengths: tuple[int, ...] = (16, 128, 256), repeats: int = 30) -> dict[str, Any]:
    """Milliseconds for all 6 x 12 heads (the whole encoder, every head traced) per input length: median and p90."""
    import torch

    from attnviz.models.bert import load_minilm

    model = load_minilm()
    out: dict[str, Any] = {"threads": torch.get_num_threads()}
    for length in lengths:
        sentence = " ".join(["cat"] * (length - 2))  # one WordPiece token a word, plus [CLS] and [SEP]
        encoded = model.encode(sentence)
        assert len(encoded.tokens) == length
        model.forward(encoded.ids, encoded.type_ids)  # warm up
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            model.forward(encoded.ids, encoded.type_ids)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[str(length)] = {"p50_ms": round(statistics.median(times), 1), "p90_ms": round(times[int(0.9 * repeats)], 1)}
    return out


def measure(runs: int = 3, repeats: int = 30) -> dict[str, Any]:
    """The model's load times (fresh processes) and compute times (this one)."""
    return {"load": load_times(runs), "compute": compute_times(repeats=repeats)}


def main(argv: list[str] | None = None) -> None:
    """Measure and print the figures as JSON; a missing model is said in one line, not a traceback."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes timed loading the model (default 3)")
    parser.add_argument("--repeats", type=int, default=30, help="forward passes timed per length (default 30)")
    args = parser.parse_args(argv)
    from attnviz.models.bert import ModelUnavailableError

    try:
        result = measure(args.runs, args.repeats)
    except ModelUnavailableError as exc:
        raise SystemExit(f"bench.model: {exc}") from exc
    except subprocess.CalledProcessError as exc:  # the load probe failed: its last line says why
        said = (exc.stderr or "").strip().splitlines()
        raise SystemExit(f"bench.model: the load probe failed: {said[-1] if said else exc}") from exc
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
