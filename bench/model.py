"""The pretrained-model page's own figures: model load time, all 72 heads at 128 and 256 tokens, page reruns.

python -m bench.model            # prints the figures as JSON (also part of `make bench`)
"""

from __future__ import annotations

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
