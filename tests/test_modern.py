"""Attention as current LLMs compute it (attnviz/core/modern.py) against references written here and torch's own SDPA;
the `mask=`/`bias=` of `attend`, positions in the KV cache, a bias in the online softmax, and the worked bias step."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.attention import attend
from attnviz.core.errors import AttnvizError
from attnviz.core.flash import flash_attention, online_softmax_row
from attnviz.core.kvcache import decode_with_cache
from attnviz.core.modern import grouped_query_attention, kv_groups, modern_attention
from attnviz.core.positions import alibi_bias
from attnviz.core.sparse import sliding_window_mask
from attnviz.lessons.explain import explain_row
from tests.test_positions import d2l_encoding, get_slopes, rope_by_matrices


def masked_softmax_rows(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """softmax over the allowed entries of the last axis; a row with none allowed is all zeros."""
    return torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1).nan_to_num(0.0)


def reference_heads(x, W_q, W_k, W_v, num_heads, kv_heads, head_dim, allowed, rope=False, slopes=None):
    """Multi-head self-attention written out: head h reads rows h d_h..(h+1) d_h of W_q and those of its group g =
    h // (H / G) of W_k and W_v; scores q kᵀ / sqrt(d_h) (+ ALiBi's -slope |i - j|), masked softmax, weights @ v.
    Returns the weights (H, T, T) and the heads' outputs side by side (T, H d_h), in float64."""
    x, W_q, W_k, W_v = (t.to(torch.float64) for t in (x, W_q, W_k, W_v))
    length = x.shape[0]
    Q, K, V = x @ W_q.T, x @ W_k.T, x @ W_v.T
    weights, outputs = [], []
    for h in range(num_heads):
        g = h // (num_heads // kv_heads)
        q = Q[:, h * head_dim : (h + 1) * head_dim]
        k = K[:, g * head_dim : (g + 1) * head_dim]
        v = V[:, g * head_dim : (g + 1) * head_dim]
        if rope:
            q, k = rope_by_matrices(q, list(range(length))), rope_by_matrices(k, list(range(length)))
        scores = q @ k.T / math.sqrt(head_dim)
        if slopes is not None:
            scores = scores - slopes[h] * torch.tensor(
                [[abs(i - j) for j in range(length)] for i in range(length)], dtype=torch.float64
            )
        w = masked_softmax_rows(scores, allowed)
        weights.append(w)
        outputs.append(w @ v)
    return torch.stack(weights), torch.cat(outputs, dim=1)


def causal(length: int) -> torch.Tensor:
    return torch.tensor([[j <= i for j in range(length)] for i in range(length)], dtype=torch.bool).reshape(
        length, length
    )


# --- grouped-query attention ------------------------------------------------------------------------------------


def test_kv_groups_pairs_query_heads_with_their_key_value_head():
    assert kv_groups(8, 2) == (0, 0, 0, 0, 1, 1, 1, 1)
    assert kv_groups(4, 4) == (0, 1, 2, 3)  # MHA
    assert kv_groups(4, 1) == (0, 0, 0, 0)  # MQA
    assert kv_groups(6, 3) == (0, 0, 1, 1, 2, 2)
    for heads, kv in ((6, 4), (4, 8), (4, 0), (0, 1)):
        with pytest.raises(AttnvizError) as bad:
            kv_groups(heads, kv)
        assert bad.value.code == "kv_heads"


@st.composite
def gqa_problems(draw):
    kv = draw(st.integers(1, 3))
    heads = kv * draw(st.integers(1, 3))
    length, keys = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    d, width = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q = torch.randn(heads, length, d, generator=generator, dtype=torch.float64) * 2
    k = torch.randn(kv, keys, d, generator=generator, dtype=torch.float64)
    v = torch.randn(kv, keys, width, generator=generator, dtype=torch.float64)
    return q, k, v, draw(st.booleans())


@settings(max_examples=80, deadline=None)
@given(gqa_problems())
def test_gqa_equals_mha_with_repeated_kv_heads_and_torchs_enable_gqa(problem):
    q, k, v, is_causal = problem
    heads, length, d = q.shape
    kv, keys = k.shape[0], k.shape[1]
    mask = torch.ones(length, keys, dtype=torch.bool).tril() if is_causal else None
    traces, weights, outputs = grouped_query_attention(q, k, v, mask=mask)
    assert len(traces) == heads and weights.shape == (heads, length, keys)
    # (a) ordinary per-head attention over K/V heads repeated H / G times each
    k_rep, v_rep = k.repeat_interleave(heads // kv, dim=0), v.repeat_interleave(heads // kv, dim=0)
    allowed = torch.ones(length, keys, dtype=torch.bool) if mask is None else mask
    expected_weights = masked_softmax_rows(q @ k_rep.transpose(1, 2) / math.sqrt(d), allowed)
    torch.testing.assert_close(weights, expected_weights, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(outputs, expected_weights @ v_rep, rtol=1e-12, atol=1e-12)
    for h, trace in enumerate(traces):
        assert torch.equal(trace.keys, k[h // (heads // kv)])
    # (b) torch's SDPA with enable_gqa (a causal mask on a wide matrix leaves no row empty)
    expected = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask, enable_gqa=True)[0]
    torch.testing.assert_close(outputs, expected, rtol=1e-12, atol=1e-12)


# --- modern_attention -------------------------------------------------------------------------------------------


@st.composite
def layers(draw, even=False):
    kv = draw(st.sampled_from([1, 2]))
    heads = kv * draw(st.sampled_from([1, 2, 3]))
    head_dim = 2 * draw(st.integers(1, 3)) if even else draw(st.integers(1, 5))
    length, d_model = draw(st.integers(1, 7)), draw(st.integers(1, 6))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    x = torch.randn(length, d_model, generator=generator) * 0.5
    return x, heads, kv, head_dim, draw(st.integers(0, 1000))


def run(x, heads, kv, head_dim, seed, **kwargs):
    return modern_attention(x, num_heads=heads, kv_heads=kv, head_dim=head_dim, seed=seed, **kwargs)


@settings(max_examples=60, deadline=None)
@given(layers())
def test_without_positions_it_is_causal_multi_head_self_attention(layer):
    x, heads, kv, head_dim, seed = layer
    trace = run(x, heads, kv, head_dim, seed)
    assert trace.num_heads == heads and trace.kv_heads == kv and trace.encoding is None and trace.slopes is None
    assert trace.W_q.shape == (heads * head_dim, x.shape[1]) and trace.W_k.shape == (kv * head_dim, x.shape[1])
    assert torch.equal(trace.mask, causal(x.shape[0]))
    weights, output = reference_heads(x, trace.W_q, trace.W_k, trace.W_v, heads, kv, head_dim, causal(x.shape[0]))
    torch.testing.assert_close(trace.weights.double(), weights, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(trace.output.double(), output, rtol=1e-4, atol=1e-5)


def test_mha_with_its_own_weights_and_the_seed_reproduces():
    x = torch.tensor([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [-0.6, 0.2, 0.9], [0.1, 0.1, 0.1]])
    trace = modern_attention(x, num_heads=2, head_dim=3, seed=4)
    again = modern_attention(x, num_heads=2, head_dim=3, seed=4)
    assert torch.equal(trace.output, again.output)
    W = {name: torch.randn(6, 3, generator=torch.Generator().manual_seed(i)) for i, name in enumerate("qkv")}
    mine = modern_attention(x, num_heads=2, head_dim=3, weights={"W_q": W["q"], "W_k": W["k"], "W_v": W["v"]})
    weights, output = reference_heads(x, W["q"], W["k"], W["v"], 2, 2, 3, causal(4))
    torch.testing.assert_close(mine.output.double(), output, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(mine.weights.double(), weights, rtol=1e-4, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(layers())
def test_mqa_gives_every_query_head_the_same_keys_and_values(layer):
    x, heads, _, head_dim, seed = layer
    trace = run(x, heads, 1, head_dim, seed)
    assert trace.groups == (0,) * heads and trace.keys.shape == (1, x.shape[0], head_dim)
    for head in trace.heads:
        assert torch.equal(head.keys, trace.keys[0]) and torch.equal(head.values, trace.values[0])
    torch.testing.assert_close(trace.keys[0], x @ trace.W_k.T)


@settings(max_examples=50, deadline=None)
@given(layers(even=True))
def test_rope_turns_the_projected_queries_and_keys(layer):
    x, heads, kv, head_dim, seed = layer
    length = x.shape[0]
    trace = run(x, heads, kv, head_dim, seed, positions="rope")
    Q, K = x.double() @ trace.W_q.double().T, x.double() @ trace.W_k.double().T
    for h in range(heads):
        turned = rope_by_matrices(Q[:, h * head_dim : (h + 1) * head_dim], list(range(length)))
        torch.testing.assert_close(trace.queries[h].double(), turned, rtol=1e-4, atol=1e-5)
    for g in range(kv):
        turned = rope_by_matrices(K[:, g * head_dim : (g + 1) * head_dim], list(range(length)))
        torch.testing.assert_close(trace.keys[g].double(), turned, rtol=1e-4, atol=1e-5)
    weights, output = reference_heads(
        x, trace.W_q, trace.W_k, trace.W_v, heads, kv, head_dim, causal(length), rope=True
    )
    torch.testing.assert_close(trace.weights.double(), weights, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(trace.output.double(), output, rtol=1e-4, atol=1e-5)  # values are not turned


@settings(max_examples=50, deadline=None)
@given(layers())
def test_sinusoidal_adds_P_to_the_inputs_first(layer):
    x, heads, kv, head_dim, seed = layer
    length, d_model = x.shape
    trace = run(x, heads, kv, head_dim, seed, positions="sinusoidal")
    P = d2l_encoding(length, d_model)
    torch.testing.assert_close(trace.encoding.double(), P, rtol=0, atol=1e-6)
    assert torch.equal(trace.inputs, x)  # the tokens as given; P is kept beside them
    weights, output = reference_heads(
        x.double() + P, trace.W_q, trace.W_k, trace.W_v, heads, kv, head_dim, causal(length)
    )
    torch.testing.assert_close(trace.weights.double(), weights, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(trace.output.double(), output, rtol=1e-4, atol=1e-5)


@settings(max_examples=50, deadline=None)
@given(layers(), st.integers(1, 4), st.data())
def test_alibi_adds_minus_slope_times_distance_and_masked_pairs_get_no_weight(layer, window, data):
    x, heads, kv, head_dim, seed = layer
    length = x.shape[0]
    mask = sliding_window_mask(length, window)
    valid = data.draw(st.integers(1, length))
    trace = run(x, heads, kv, head_dim, seed, positions="alibi", mask=mask, valid_len=valid)
    slopes = get_slopes(heads)
    torch.testing.assert_close(trace.slopes.double(), torch.tensor(slopes, dtype=torch.float64), rtol=1e-6, atol=0)
    allowed = torch.tensor(
        [[j <= i and i - j < window and j < valid for j in range(length)] for i in range(length)], dtype=torch.bool
    ).reshape(length, length)
    for h, head in enumerate(trace.heads):
        distance = torch.tensor([[abs(i - j) for j in range(length)] for i in range(length)], dtype=torch.float64)
        torch.testing.assert_close(head.bias.double(), -slopes[h] * distance, rtol=1e-6, atol=1e-12)
        assert torch.equal(head.mask, allowed)
        assert bool((trace.weights[h][~allowed] == 0).all())
    weights, output = reference_heads(x, trace.W_q, trace.W_k, trace.W_v, heads, kv, head_dim, allowed, slopes=slopes)
    torch.testing.assert_close(trace.weights.double(), weights, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(trace.output.double(), output, rtol=1e-4, atol=1e-5)


def test_rope_with_an_odd_head_size_is_refused():
    with pytest.raises(AttnvizError) as bad:
        modern_attention(torch.ones(3, 4), num_heads=2, head_dim=3, positions="rope")
    assert bad.value.code == "rope_odd"
    with pytest.raises(AttnvizError) as bad:
        modern_attention(torch.ones(3, 4), num_heads=4, kv_heads=3)
    assert bad.value.code == "kv_heads"
    with pytest.raises(ValueError, match="positions must be one of"):
        modern_attention(torch.ones(3, 4), positions="learned")


# --- the KV cache with positions --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(layers(even=True), st.sampled_from(["rope", "alibi"]))
def test_decoding_with_the_cache_equals_each_heads_row_of_the_layer(layer, positions):
    x, heads, kv, head_dim, seed = layer
    trace = run(x, heads, kv, head_dim, seed, positions=positions)
    for h, g in enumerate(trace.groups):
        rows = slice(h * head_dim, (h + 1) * head_dim)
        group_rows = slice(g * head_dim, (g + 1) * head_dim)
        W_q, W_k, W_v = trace.W_q[rows], trace.W_k[group_rows], trace.W_v[group_rows]
        if positions == "rope":
            steps = decode_with_cache(x, W_q, W_k, W_v, rope=True)
        else:
            steps = decode_with_cache(x, W_q, W_k, W_v, alibi_slope=float(trace.slopes[h]))
        assert len(steps) == x.shape[0]
        for t, step in enumerate(steps):
            assert step.keys.shape == (t + 1, head_dim) and step.values.shape == (t + 1, head_dim)
            torch.testing.assert_close(step.weights, trace.weights[h, t, : t + 1], rtol=1e-5, atol=1e-5)
            assert bool((trace.weights[h, t, t + 1 :] == 0).all())
            torch.testing.assert_close(step.output, trace.heads[h].output[t], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(step.keys, trace.keys[g, : t + 1], rtol=1e-5, atol=1e-5)  # kept turned


def test_decoding_with_alibi_by_hand():
    # one token dimension, W = 1: q = k = v = x; x = (0, 0, 0) makes every q·k 0, so only the penalty counts.
    # step 2, slope 1: scores (-2, -1, 0), weights e^(-2), e^(-1), 1 over their sum
    steps = decode_with_cache(torch.zeros(3, 1, dtype=torch.float64), [[1.0]], [[1.0]], [[1.0]], alibi_slope=1.0)
    expected = torch.tensor([math.exp(-2), math.exp(-1), 1.0], dtype=torch.float64)
    torch.testing.assert_close(steps[2].scores, torch.tensor([-2.0, -1.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(steps[2].weights, expected / expected.sum(), rtol=1e-12, atol=1e-12)


# --- the online softmax with a bias -----------------------------------------------------------------------------


@st.composite
def biased_problems(draw):
    n_q, n_k = draw(st.integers(1, 6)), draw(st.integers(1, 12))
    d, width = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    spread = draw(st.sampled_from([1.0, 10.0, 40.0]))
    q = torch.randn(n_q, d, generator=generator, dtype=torch.float64)
    k = torch.randn(n_k, d, generator=generator, dtype=torch.float64)
    v = torch.randn(n_k, width, generator=generator, dtype=torch.float64)
    bias = torch.randn(n_q, n_k, generator=generator, dtype=torch.float64) * spread
    mask = None
    if draw(st.booleans()):
        mask = torch.rand(n_q, n_k, generator=generator) < draw(st.sampled_from([0.3, 0.7, 1.0]))
    return q, k, v, mask, bias, draw(st.integers(1, n_k + 2))


@settings(max_examples=100, deadline=None)
@given(biased_problems())
def test_the_online_softmax_with_a_bias_equals_softmax_of_scores_plus_bias(problem):
    q, k, v, mask, bias, block = problem
    allowed = torch.ones(q.shape[0], k.shape[0], dtype=torch.bool) if mask is None else mask
    weights = masked_softmax_rows(q @ k.T / math.sqrt(q.shape[-1]) + bias, allowed)
    for row in range(q.shape[0]):
        trace = online_softmax_row(q, k, v, row, block, mask=mask, bias=bias)
        torch.testing.assert_close(trace.weights, weights[row], rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(trace.output, weights[row] @ v, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(
        flash_attention(q, k, v, block, mask=mask, bias=bias), weights @ v, rtol=1e-10, atol=1e-10
    )


def test_flash_with_alibi_equals_attend_with_alibi():
    generator = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(6, 4, generator=generator, dtype=torch.float64) for _ in range(3))
    bias = alibi_bias(1, 6)[0]
    trace = attend(q, k, v, causal=True, bias=bias)
    torch.testing.assert_close(flash_attention(q, k, v, 4, mask=causal(6), bias=bias), trace.output)


# --- attend's bias and show-your-work ---------------------------------------------------------------------------


def test_attend_adds_the_bias_to_the_scaled_scores_before_the_softmax():
    generator = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, 4, generator=generator, dtype=torch.float64) for _ in range(3))
    bias = torch.randn(3, 3, generator=generator, dtype=torch.float64)
    trace = attend(q, k, v, bias=bias, temperature=2.0)
    logits = (q @ k.transpose(1, 2) / 2.0 + bias) / 2.0  # sqrt(d) = 2, temperature 2
    torch.testing.assert_close(trace.logits, logits, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(trace.weights, torch.softmax(logits, dim=-1), rtol=1e-12, atol=1e-12)
    assert trace.bias.shape == (2, 3, 3) and torch.equal(trace.bias[1], bias)
    assert attend(q, k, v).bias is None


def test_explain_row_shows_the_bias_column_only_when_there_is_a_bias():
    generator = torch.Generator().manual_seed(11)
    q, k, v = (torch.randn(3, 2, generator=generator, dtype=torch.float64) for _ in range(3))
    bias = torch.tensor([[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5], [-1.0, -0.5, 0.0]], dtype=torch.float64)
    labels = ["a", "b", "c"]
    trace = attend(q, k, v, causal=True, bias=bias)
    for row in range(3):
        step = explain_row(trace, row, labels[row], labels, "en")[1]
        assert len(step.columns) == 3
        assert [r[0] for r in step.rows] == labels
        assert [r[1] for r in step.rows] == bias[row].tolist()
        expected = (q[row] @ k.T / math.sqrt(2) + bias[row]).tolist()
        assert [r[2] for r in step.rows] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    plain = explain_row(attend(q, k, v, causal=True), 1, "b", labels, "en")[1]
    assert len(plain.columns) == 2 and len(plain.rows[0]) == 2
    # a head of an ALiBi layer: its bias column is -slope |i - j|
    layer = modern_attention(torch.randn(4, 3, generator=generator), num_heads=2, positions="alibi")
    step = explain_row(layer.heads[1], 3, "d", list("abcd"), "en")[1]
    assert [r[1] for r in step.rows] == pytest.approx(
        [-(3 - j) / 256 for j in range(4)]
    )  # 2 heads: 2^(-8/2) = 1/16, then 1/256


def test_a_bias_or_a_mask_of_the_wrong_shape_is_named_not_broadcast():
    q = torch.randn(4, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"bias must have shape \(4, 4\)"):
        flash_attention(q, q, q, 2, bias=torch.zeros(4, dtype=torch.float64))  # a (K,) row is not every row's bias
    with pytest.raises(ValueError, match="bias"):
        online_softmax_row(q, q, q, 0, 2, bias=torch.full((4, 4), -math.inf))
    with pytest.raises(ValueError, match=r"mask must have shape \(4, 4\)"):
        modern_attention(torch.randn(4, 8), mask=torch.ones(3, 3, dtype=torch.bool))
    trace = modern_attention(torch.randn(4, 8), mask=torch.ones(4, 4, dtype=torch.int64).tril())
    assert trace.mask.dtype == torch.bool
