"""Check the cost model of attnviz/app/budget.py against this machine: estimated and measured seconds per request.

    python -m bench.budget

The budget keeps each change on an attention page within BUDGET_SECONDS of *estimated* time. The estimate's
constants were measured on a 2-core machine; on another machine the ratio measured / estimated shows how far they
are off (a ratio of 2 means a change there may take up to twice the budget). Single-threaded, as the image runs
PyTorch (OMP_NUM_THREADS=1). Prints one line per request and the median ratio.
"""

from __future__ import annotations

import statistics
import time

import torch

from attnviz.app.budget import Request, fit_seconds, plan
from attnviz.core.kernel import fit_bandwidth
from attnviz.core.multihead import multi_head_attend

REQUESTS = (
    Request("scaled_dot", 512, 512, heads=1, head_dim=64),
    Request("scaled_dot", 512, 512, heads=8, head_dim=8),
    Request("gaussian", 512, 512, heads=8, head_dim=8),
    Request("additive", 512, 512, heads=8, head_dim=8, num_hiddens=8),
    Request("additive", 128, 128, heads=8, head_dim=8, num_hiddens=64),
    Request("concat", 256, 256, heads=8, head_dim=8),
    Request("concat_tanh", 128, 128, heads=8, head_dim=8, num_hiddens=64),
    Request("additive", 512, 512, heads=8, head_dim=8, num_hiddens=256),  # the crafted link's first score
)


def measured_seconds(request: Request, repeats: int = 3) -> float:
    """Median wall time of multi_head_attend for the request's sizes (random inputs, seeded projections)."""
    x = torch.randn(request.num_queries, request.head_dim * request.heads)
    params = {"num_hiddens": request.num_hiddens} if request.score in ("additive", "concat_tanh") else {}
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        multi_head_attend(x, x, x, num_heads=request.heads, projections="random", score=request.score, **params)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    ratios = []
    for request in REQUESTS:
        estimate, measured = request.seconds(), measured_seconds(request)
        ratios.append(measured / estimate)
        rows = plan(request).rows
        print(
            f"{request.score:12s} {request.num_queries:4d} tokens {request.heads} heads"
            f" hiddens {request.num_hiddens:3d}: estimated {estimate * 1000:8.1f} ms,"
            f" measured {measured * 1000:8.1f} ms,"
            f" ratio {measured / estimate:4.2f}; within budget: {rows} rows"
        )
    points = [float(i) / 100 for i in range(512)]
    fit_bandwidth(points[:8], points[:8], epochs=1)  # the optimiser's first use costs ~1 s once per process
    started = time.perf_counter()
    fit_bandwidth(points, [p % 1 for p in points], epochs=200)
    measured, estimate = time.perf_counter() - started, fit_seconds(512, 200)
    ratios.append(measured / estimate)
    print(f"learn σ, 512 points, 200 epochs: estimated {estimate * 1000:.1f} ms, measured {measured * 1000:.1f} ms")
    print(f"median ratio measured / estimated: {statistics.median(ratios):.2f} (max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
