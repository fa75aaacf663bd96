"""A rerun is priced before it is computed: over the budget, part of it is computed and the page says what to reduce.

The crafted link of the stress test (512 different CJK characters, 8 heads, additive with 256 hidden units,
compared with concat_tanh) took 12 s and 730 MB per rerun and sent 20 MB of charts.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.budget import (
    BUDGET_SECONDS,
    BYTES_PER_CELL,
    DRAW_CELLS,
    RERUN_BYTES,
    Request,
    draw_factors,
    fit_rows,
    fit_seconds,
    plan,
    pool_factor,
)
from attnviz.app.pipeline import AttentionInputs, attention_request, first_rows, run_attention
from attnviz.app.state import AttentionState
from attnviz.app.ui import kernel_fit
from attnviz.core import scores
from attnviz.core.kernel import fit_bandwidth, leave_one_out_loss
from tests.messages import says
from tests.test_app import CROSS, KERNEL, ROOT, SELF

CJK = "".join(chr(0x4E00 + 7 * i) for i in range(512))
CRAFTED = {"s": CJK, "dim": "64", "h": "8", "pr": "random", "sc": "additive", "nh": "256", "cmp": "concat_tanh"}
CRAFTED_REQUEST = Request("additive", 512, 512, heads=8, head_dim=8, num_hiddens=256, compare="concat_tanh",
                          compare_hiddens=256)  # fmt: skip


def test_the_default_page_and_a_512_token_sentence_fit():
    assert plan(Request("scaled_dot", 9, 9, heads=1, head_dim=8)).partial is False
    fit = plan(Request("scaled_dot", 512, 512, heads=1, head_dim=64))
    assert not fit.partial and fit.rows == 512


def test_the_crafted_request_is_cut_to_rows_that_fit():
    fit = plan(CRAFTED_REQUEST)
    assert fit.partial and fit.seconds > 10 * BUDGET_SECONDS
    assert not fit.compare  # the comparison goes first
    assert 1 <= fit.rows < 512
    assert replace(CRAFTED_REQUEST, num_queries=fit.rows).seconds(with_compare=False) <= BUDGET_SECONDS
    assert replace(CRAFTED_REQUEST, num_queries=fit.rows + 1).seconds(with_compare=False) > BUDGET_SECONDS


def test_each_piece_of_advice_is_the_largest_value_that_fits():
    fit = plan(CRAFTED_REQUEST)
    assert set(fit.advice) == {"tokens", "hiddens"}  # one head is still too much; so is leaving the comparison out
    n = fit.advice["tokens"]
    assert replace(CRAFTED_REQUEST, num_queries=n, num_keys=n).seconds() <= BUDGET_SECONDS
    assert replace(CRAFTED_REQUEST, num_queries=n + 1, num_keys=n + 1).seconds() > BUDGET_SECONDS
    h = fit.advice["hiddens"]
    assert replace(CRAFTED_REQUEST, num_hiddens=h, compare_hiddens=h).seconds() <= BUDGET_SECONDS
    assert replace(CRAFTED_REQUEST, num_hiddens=h + 1, compare_hiddens=h + 1).seconds() > BUDGET_SECONDS


def test_leaving_the_comparison_out_is_advised_when_it_is_enough():
    request = Request("scaled_dot", 512, 512, heads=1, head_dim=64, compare="concat_tanh", compare_hiddens=128)
    fit = plan(request)
    assert fit.partial and not fit.compare and fit.rows == 512  # every row of the chosen score, no comparison
    assert fit.advice["compare"] == 0


def test_the_largest_grid_is_pooled_to_the_drawing_limit():
    assert pool_factor(8 * 64 * 64) == 1
    factor = pool_factor(8 * 512 * 512)
    assert factor == 3 and 8 * (512 / factor) ** 2 <= DRAW_CELLS < 8 * (512 / (factor - 1)) ** 2


def _drawn(shape: tuple[int, ...], factor: int) -> int:
    *lead, rows, columns = shape
    count = -(-rows // factor) * -(-columns // factor)
    return count * (lead[0] if lead else 1)


@pytest.mark.parametrize(
    "shapes",
    [
        [(512, 512)],
        [(8, 512, 512), (512, 512)],
        [(8, 512, 512), (512, 512), (512, 512), (512, 64), (512, 512), (512, 512), (512, 512)],
        [(3, 7), (1, 5000)],
    ],
)
def test_the_heatmaps_of_one_rerun_are_pooled_to_fit_its_bytes(shapes):
    factors = draw_factors(shapes)
    drawn = [_drawn(shape, factor) for shape, factor in zip(shapes, factors, strict=True)]
    assert sum(drawn) * BYTES_PER_CELL <= RERUN_BYTES
    assert all(count <= DRAW_CELLS for count in drawn)
    assert all(factor >= pool_factor(math.prod(shape)) for shape, factor in zip(shapes, factors, strict=True))


def test_a_heatmap_that_fits_is_drawn_as_it_is_and_more_of_them_are_pooled():
    assert draw_factors([(512, 512)]) == [1]  # one 512-token head: every cell
    assert draw_factors([(20, 20)] * 5) == [1] * 5
    five = draw_factors([(512, 512)] * 5)
    assert all(factor > 1 for factor in five)


CROSS_512 = {
    "m": "sentence",
    "s": " ".join(["cat", "sat", "on", "mat"] * 128),
    "src": " ".join(["la", "vie", "en", "or"] * 128),
    "h": "8",
    "cmp": "dot",
    "cr": "row",
}


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_a_512_token_page_with_heads_and_a_comparison_sends_at_most_the_rerun_budget(lang):
    at = AppTest.from_file(str(ROOT / CROSS), default_timeout=120)
    for key, value in {**CROSS_512, "lang": lang}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert sum(len(spec) for spec in specs) <= RERUN_BYTES  # was 10.5 MB: 3.5 MB per heatmap
    titles = [json.loads(spec)["layout"].get("title", {}).get("text", "") for spec in specs]
    assert sum("−" in title for title in titles) == 1  # the comparison's three charts are drawn, thinned
    captions = [c.value for c in at.caption]
    assert any(says(c, "budget.pooled_bytes", lang) for c in captions)
    assert any(says(c, "budget.thinned", lang) for c in captions)
    assert not any(says(i.value, "budget.not_drawn", lang) for i in at.info)


def test_a_chart_past_the_rerun_budget_is_not_sent_and_the_page_says_so():
    def app() -> None:
        import numpy as np
        import plotly.graph_objects as go

        from attnviz.app.ui.common import chart

        rng = np.random.default_rng(0)
        for number in range(4):  # 1.2 MB each (as JSON): the fourth goes past 4 MiB
            chart(go.Figure(go.Heatmap(z=rng.random((300, 300)))), f"big{number}", table="none")
        chart(go.Figure(go.Bar(y=[1, 2, 3])), "small", table="none")  # a small chart is always drawn

    at = AppTest.from_function(app, default_timeout=60).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 4 and sum(len(c.proto.spec) for c in at.get("plotly_chart")) <= RERUN_BYTES
    assert any(says(i.value, "budget.not_drawn", limit=4) for i in at.info)
    at.run()  # the next run has a budget of its own
    assert len(at.get("plotly_chart")) == 4


@pytest.mark.parametrize(
    ("causal", "lens_mode", "lens"), [(True, "none", ()), (True, "all", (3,)), (False, "all", (4,))]
)
def test_the_first_rows_alone_have_the_full_requests_weights(causal, lens_mode, lens):
    torch.manual_seed(0)
    x = torch.randn(9, 8)
    labels = [f"t{i}" for i in range(9)]
    state = AttentionState(page="self", score="additive", causal=causal, lens_mode=lens_mode, lens=lens, heads=2)
    inputs = AttentionInputs(x, x, x, labels, labels, lens[0] if lens else None)
    full = run_attention(state, inputs)
    part_state, part = first_rows(state, inputs, 4)
    rows = run_attention(part_state, part)
    assert part.query_labels == labels[:4]
    torch.testing.assert_close(rows.weights, full.weights[:, :4], rtol=0, atol=1e-6)
    torch.testing.assert_close(rows.output, full.output[:4], rtol=0, atol=1e-6)


def test_scores_computed_in_blocks_of_queries_equal_the_whole(monkeypatch):
    torch.manual_seed(1)
    q, k = torch.randn(3, 50, 8), torch.randn(3, 40, 6)
    modules = [scores.AdditiveScore(8, 6, 16, seed=1), scores.ConcatScore(8, 6), scores.ConcatTanhScore(8, 6, 16)]
    whole = [m(q, k) for m in modules]
    monkeypatch.setattr(scores, "CHUNK_FLOATS", 3 * 40 * 16 * 7)  # blocks of a few queries
    for m, expected in zip(modules, whole, strict=True):
        torch.testing.assert_close(m(q, k), expected, rtol=0, atol=1e-6)


def test_the_request_of_a_page_state():
    x = torch.zeros(5, 12)
    inputs = AttentionInputs(x, x, x, list("abcde"), list("abcde"), None)
    state = AttentionState(page="self", score="additive", num_hiddens=32, heads=3, compare="concat_tanh")
    assert attention_request(state, inputs) == Request("additive", 5, 5, 3, 4, 32, "concat_tanh", 32)


def test_the_crafted_link_computes_what_fits_and_says_what_to_reduce():
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=120)
    for key, value in CRAFTED.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    rows = plan(CRAFTED_REQUEST).rows
    note = next(i.value for i in at.info if says(i.value, "budget.rows"))
    assert says(note, "budget.rows", rows=rows, total=512)
    assert says(note, "budget.reduce_tokens") and says(note, "budget.reduce_hiddens")
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    heads_grid = charts[0]["data"]
    assert len(heads_grid) >= 8
    assert sum(len(c.proto.spec) for c in at.get("plotly_chart")) < 3_000_000  # was 20 MB
    assert not any(says(s.value, "attention.side_by_side") for s in at.subheader)  # the comparison is left out


def test_the_budget_note_speaks_the_interface_language():
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=120)
    for key, value in {**CRAFTED, "lang": "zh-Hans"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert any(says(i.value, "budget.rows", "zh-Hans") for i in at.info)


# --- learning σ on the kernel page ------------------------------------------------------------------------------------


def test_the_fit_uses_every_point_while_it_fits_and_some_points_beyond():
    assert fit_rows(50, 200) == 50  # d2l's toy data: the whole leave-one-out loss
    rows = fit_rows(512, 200)
    assert 2 <= rows < 512
    assert fit_seconds(512, 200, rows) <= BUDGET_SECONDS < fit_seconds(512, 200, rows + 1)


def test_the_loss_over_some_rows_is_the_mean_of_those_points_leave_one_out_errors():
    torch.manual_seed(3)
    keys, values = torch.rand(12, dtype=torch.float64) * 5, torch.randn(12, dtype=torch.float64)
    log_sigma = torch.tensor(0.3, dtype=torch.float64).log()
    errors = []
    for i in range(12):  # a reference written out: predict point i from the 11 others with Gaussian weights
        others = [j for j in range(12) if j != i]
        w = torch.softmax(-((keys[i] - keys[others]) ** 2) / (2 * 0.3**2), dim=0)
        errors.append(float((w @ values[others] - values[i]) ** 2))
    rows = torch.tensor([0, 5, 11])
    points = keys.unsqueeze(-1)  # (n, 1): one-dimensional points, as fit_bandwidth passes them
    loss = leave_one_out_loss(points, values, log_sigma, "gaussian", rows=rows)
    assert float(loss) == pytest.approx(sum(errors[i] for i in (0, 5, 11)) / 3, rel=1e-9)
    assert float(leave_one_out_loss(points, values, log_sigma, "gaussian")) == pytest.approx(sum(errors) / 12, rel=1e-9)


def test_learning_sigma_trains_once_per_click(monkeypatch):
    """The page trained at the click and then again in a cached call after its rerun: twice the cost."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return fit_bandwidth(*args, **kwargs)

    monkeypatch.setattr(kernel_fit, "fit_bandwidth", counted)
    at = AppTest.from_file(str(ROOT / KERNEL), default_timeout=120)
    at.query_params["p"] = "d2l_toy_regression"
    at.run()
    next(b for b in at.button if "Learn σ" in b.label).click().run()
    assert not at.exception and any("Learned σ" in s.value for s in at.success)
    next(n for n in at.number_input if n.key == "w:kernel:bandwidth").set_value(0.7).run()
    assert calls == [50]


def test_many_points_learn_sigma_within_the_budget_and_say_so():
    keys = [round(i * 0.01, 2) for i in range(512)]
    values = [round((i % 7) * 0.5, 1) for i in range(512)]
    at = AppTest.from_file(str(ROOT / KERNEL), default_timeout=120)
    at.query_params["k"] = ",".join(map(str, keys))
    at.query_params["v"] = ",".join(map(str, values))
    at.run()
    assert not at.exception and not at.error
    next(b for b in at.button if "Learn σ" in b.label).click().run()
    assert not at.exception
    rows = fit_rows(512, 200)
    assert any(f"{rows} of the 512 points" in c.value for c in at.caption)


def test_each_of_the_pages_caps_fits_the_budget_with_the_other_controls_at_their_defaults():
    """The caps (512 tokens, d = 64, 8 heads, 256 hidden units) are what a link may ask for; one at a time, with the
    other controls as the page starts, a change is computed whole. Only combinations get cut to rows."""
    tokens, heads, head_dim, hiddens = 512, 8, 64 // 8, 256
    default_tokens, default_hiddens = 9, 8
    for request in (
        Request("scaled_dot", tokens, tokens, heads=heads, head_dim=head_dim),
        Request("additive", tokens, tokens, heads=heads, head_dim=head_dim, num_hiddens=default_hiddens),
        Request("concat_tanh", tokens, tokens, heads=1, head_dim=64, num_hiddens=default_hiddens),
        Request("additive", default_tokens, default_tokens, heads=heads, head_dim=head_dim, num_hiddens=hiddens),
        Request("concat_tanh", default_tokens, default_tokens, heads=heads, head_dim=head_dim, num_hiddens=hiddens),
    ):
        assert not plan(request).partial, request
