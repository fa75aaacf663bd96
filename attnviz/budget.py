"""What one change on an attention page may cost the server, estimated before anything is computed.

A class shares one server process: while one student's rerun computes, everyone else's waits for the same core.
One crafted link (512 tokens, 8 heads, the additive score with 256 hidden units, compared with concat_tanh) took
12 s and 730 MB per rerun and sent 20 MB of charts, and a student on the default page saw p95 latency go from 62 ms
to 4 s. So every rerun is priced first, from the sizes alone:

- **compute**: every (head, query, key) pair costs the trace's own work (score, scale, mask, softmax, weight), plus
  each element of the score's per-pair intermediate (additive: its hidden units; concat: [q; k]; concat_tanh: [q; k]
  and its hidden units; Gaussian: q - k), plus the multiply-adds of concat_tanh's per-pair product W [q; k];
- **drawing**: the heatmap cells sent to the browser;
- **bytes**: what one rerun sends as charts, RERUN_BYTES at most. Thirty students opening a link to a 512-token
  cross-attention page with 8 heads and a comparison received 21 MB each (a 3.5 MB heatmap, five of them, the first
  sent twice by the first paint). A page plans its heatmaps' pooling to fit (`draw_factors`), at the largest size a
  cell was measured to take in a chart's JSON with its hover text (BYTES_PER_CELL); a chart that would still go past
  the budget is not sent (attnviz/ui/common.py says so on the page).

The constants were measured on a 2-core machine (`python -m bench.model`-style timings of `multi_head_attend`,
one thread): ~20 ns per pair, ~3 ns per intermediate element, ~0.1 ns per multiply-add; and, from whole page runs
(AppTest, 512 tokens with 1 and 8 heads), ~80 ns per heatmap cell drawn. A change may cost
BUDGET_SECONDS of that; a request over it computes the query rows that fit (the first ones, always at least one),
and the page says what to reduce to see them all. Heatmaps beyond DRAW_CELLS cells are max-pooled.

What a rerun computes and draws, `Plan.computed_seconds`, also decides whether it is large: a large rerun takes its
turn at the server's gate (attnviz/gate.py), so that large reruns sent back to back cannot starve a class.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

NS_PER_PAIR = 20.0
NS_PER_ELEMENT = 3.0
NS_PER_MULTIPLY_ADD = 0.1
NS_PER_DRAWN_CELL = 80.0  # building and sending one heatmap cell (figure, JSON, message): a whole page run
BUDGET_SECONDS = 0.25
DRAW_CELLS = 512 * 512  # one 512 x 512 heatmap: what the pages drew at their largest before (~2.6 MB)
# The largest per-pair intermediate computed at once, in floats (scores.py splits the queries to stay under it).
CHUNK_FLOATS = 4 * 2**20
RERUN_BYTES = 4 * 2**20  # the charts one rerun may send: a 512 x 512 heatmap (1.7-3.5 MB) fits whole
FILE_BYTES = 8 * 2**20  # an offline file's charts, tables and worked steps, besides Plotly's 4.6 MB of code
BYTES_PER_CELL = 14  # a heatmap cell in a chart's JSON with its hover text, at its largest (measured: 6.6-13.4)


def pair_elements(score: str, head_dim: int, num_hiddens: int) -> int:
    """Floats of the score's intermediate per (query, key) pair."""
    if score == "additive":
        return num_hiddens
    if score == "concat":
        return 2 * head_dim
    if score == "concat_tanh":
        return 2 * head_dim + num_hiddens
    if score == "gaussian":
        return head_dim
    return 0  # dot products (dot, scaled_dot, cosine, general) go through a matrix product: no per-pair tensor


def pair_seconds(score: str, head_dim: int, num_hiddens: int) -> float:
    """Estimated seconds for one (head, query, key) pair of `score`."""
    ns = NS_PER_PAIR + NS_PER_ELEMENT * pair_elements(score, head_dim, num_hiddens)
    if score == "concat_tanh":
        ns += NS_PER_MULTIPLY_ADD * 2 * head_dim * num_hiddens
    return ns * 1e-9


@dataclass(frozen=True)
class Request:
    """The sizes that decide a rerun's cost."""

    score: str
    num_queries: int
    num_keys: int
    heads: int
    head_dim: int  # features per head that the score compares (after projections)
    num_hiddens: int = 0  # of the additive and concat_tanh scores
    compare: str = ""  # a second score drawn beside the first
    compare_hiddens: int = 0

    def row_seconds(self, with_compare: bool = True) -> float:
        """Estimated seconds for one query row (every head, every key)."""
        per_pair = pair_seconds(self.score, self.head_dim, self.num_hiddens)
        if with_compare and self.compare:
            per_pair += pair_seconds(self.compare, self.head_dim, self.compare_hiddens)
        return self.heads * self.num_keys * per_pair

    def seconds(self, with_compare: bool = True) -> float:
        """Estimated seconds for the whole request."""
        return self.num_queries * self.row_seconds(with_compare)

    def drawing_seconds(self, rows: int, with_compare: bool) -> float:
        """Estimated seconds to draw `rows` query rows: one head's weights carry its scores; several heads are a
        grid (max-pooled to DRAW_CELLS) and their mean; a comparison adds a figure of both scores' weights."""
        cells = rows * self.num_keys
        drawn = 2 * cells if self.heads == 1 else min(self.heads * cells, DRAW_CELLS) + cells
        if with_compare and self.compare:
            drawn += 2 * cells
        return drawn * NS_PER_DRAWN_CELL * 1e-9


@dataclass(frozen=True)
class Plan:
    """What a rerun computes: the query rows, whether the comparison is drawn, and what to reduce to see it all."""

    rows: int  # the first `rows` query rows are computed
    compare: bool  # the comparison fits as well
    seconds: float  # the estimate of the whole request
    advice: dict[str, int]  # knob -> the largest value that fits with the others unchanged ("tokens", "hiddens", ...)

    computed_seconds: float  # the estimate of what this rerun computes and draws (the gate's measure of it)

    @property
    def partial(self) -> bool:
        return self.seconds > BUDGET_SECONDS


def plan(request: Request, budget: float = BUDGET_SECONDS) -> Plan:
    """The part of `request` that fits in `budget`: every row and the comparison when it all fits; else the
    comparison goes first, then rows, never below one row."""
    total = request.seconds()
    if total <= budget:
        rows, compare, advice = request.num_queries, bool(request.compare), {}
    elif request.compare and request.seconds(with_compare=False) <= budget:
        rows, compare, advice = request.num_queries, False, _advice(request, budget)
    else:
        rows = max(1, min(request.num_queries, math.floor(budget / request.row_seconds(with_compare=False))))
        compare, advice = False, _advice(request, budget)
    computed = rows * request.row_seconds(compare) + request.drawing_seconds(rows, compare)
    return Plan(rows, compare, total, advice, computed)


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n) (fits is monotone: true up to some n); low - 1 if none."""
    if not fits(low):
        return low - 1
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def _advice(request: Request, budget: float) -> dict[str, int]:
    """For each knob, the largest value that brings the whole request (comparison included) within budget."""

    def fits(**change: int) -> bool:
        return replace(request, **change).seconds() <= budget

    advice: dict[str, int] = {}
    tokens = _largest(lambda n: fits(num_queries=min(n, request.num_queries), num_keys=n), 1, request.num_keys)
    if tokens >= 1:
        advice["tokens"] = tokens
    if request.heads > 1:
        heads = _largest(lambda h: fits(heads=h), 1, request.heads - 1)
        if heads >= 1:
            advice["heads"] = heads
    if request.score in ("additive", "concat_tanh") and request.num_hiddens > 1:
        shared = request.compare in ("additive", "concat_tanh")  # the two scores share the hidden-units control
        hiddens = _largest(
            lambda n: fits(num_hiddens=n, **({"compare_hiddens": n} if shared else {})), 1, request.num_hiddens - 1
        )
        if hiddens >= 1:
            advice["hiddens"] = hiddens
    if request.compare and request.seconds(with_compare=False) <= budget:
        advice["compare"] = 0  # leaving the comparison out is enough on its own
    return advice


# Learning σ on the kernel page: each epoch scores every (point, other point) pair in float64 with gradients.
NS_PER_FIT_PAIR = 55.0


def fit_seconds(points: int, epochs: int, rows: int | None = None) -> float:
    """Estimated seconds to learn σ from `points` points over `epochs` (the loss over `rows` of them)."""
    return epochs * (points if rows is None else rows) * points * NS_PER_FIT_PAIR * 1e-9


def fit_rows(points: int, epochs: int, budget: float = BUDGET_SECONDS) -> int:
    """How many points' leave-one-out errors the σ fit can use within `budget` (all of them when they fit)."""
    if fit_seconds(points, epochs) <= budget:
        return points
    return max(2, math.floor(budget / fit_seconds(points, epochs, rows=1)))


def pool_factor(cells: int, limit: int = DRAW_CELLS) -> int:
    """The smallest k such that max-pooling k x k blocks brings `cells` within `limit` (1: draw as it is)."""
    return max(1, math.ceil(math.sqrt(cells / limit)))


def draw_factors(shapes: Sequence[tuple[int, ...]], budget: int = RERUN_BYTES, limit: int = DRAW_CELLS) -> list[int]:
    """For the heatmaps one rerun draws, of `shapes` (..., rows, columns: a grid of heads has a leading count), the k
    of each (k x k blocks drawn as one cell; 1: drawn as it is) so that each draws at most `limit` cells and together
    they send at most `budget` bytes: the chart drawing the most cells is pooled further first."""
    counts = [math.prod(shape) for shape in shapes]
    factors = [pool_factor(count, limit) for count in counts]

    def drawn(i: int) -> int:
        *lead, rows, columns = shapes[i]
        return math.prod(lead) * -(-rows // factors[i]) * -(-columns // factors[i])

    while shapes and sum(drawn(i) for i in range(len(shapes))) * BYTES_PER_CELL > budget:
        largest = max(range(len(shapes)), key=drawn)
        if factors[largest] >= max(shapes[largest][-2:]):  # one cell each: nothing left to pool
            break
        factors[largest] += 1
    return factors


# The pretrained model: every layer and head for n tokens, and the page's views of them. From whole page runs
# (AppTest, 13 to 255 tokens, the trace not yet cached): a fixed part per run and a part per token pair. A student's
# sentence (~15 tokens) costs ~0.02 s; past ~130 tokens a run is large (attnviz/gate.py).
MODEL_SECONDS_PER_RUN = 0.02
NS_PER_MODEL_PAIR = 1800.0


def model_seconds(tokens: int) -> float:
    """Estimated seconds to run the model on `tokens` WordPieces and draw its views (0 for no tokens)."""
    if tokens <= 0:
        return 0.0
    return MODEL_SECONDS_PER_RUN + tokens * tokens * NS_PER_MODEL_PAIR * 1e-9
