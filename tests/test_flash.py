"""FlashAttention's online softmax equals ordinary softmax attention, block by block (attnviz/core/flash.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.errors import AttnvizError
from attnviz.core.flash import flash_attention, memory_traffic, online_softmax_row


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float):
    """Softmax attention written the plain way: the whole score matrix, masked, normalised; empty rows give 0."""
    scores = (q @ k.T) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a fully masked row: 0/0 -> 0
    return weights, weights @ v


@st.composite
def problems(draw):
    n_q, n_k = draw(st.integers(1, 6)), draw(st.integers(1, 12))
    d, width = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    generator = torch.Generator().manual_seed(seed)
    spread = draw(st.sampled_from([1.0, 10.0, 60.0]))  # large spreads force rescales in later blocks
    q = torch.randn(n_q, d, generator=generator, dtype=torch.float64) * spread
    k = torch.randn(n_k, d, generator=generator, dtype=torch.float64)
    v = torch.randn(n_k, width, generator=generator, dtype=torch.float64)
    mask = None
    if draw(st.booleans()):
        mask = torch.rand(n_q, n_k, generator=generator) < draw(st.sampled_from([0.3, 0.7, 1.0]))
    return q, k, v, mask, draw(st.integers(1, n_k + 2))


@settings(max_examples=150, deadline=None)
@given(problems())
def test_flash_attention_equals_softmax_attention_over_shapes_blocks_and_masks(problem):
    q, k, v, mask, block = problem
    scale = 1 / math.sqrt(q.shape[-1])
    weights, expected = reference(q, k, v, mask, scale)
    torch.testing.assert_close(flash_attention(q, k, v, block, mask=mask), expected, rtol=1e-12, atol=1e-12)
    for row in range(q.shape[0]):
        trace = online_softmax_row(q, k, v, row, block, mask=mask)
        torch.testing.assert_close(trace.weights, weights[row], rtol=1e-12, atol=1e-12)
        assert len(trace.steps) == math.ceil(k.shape[0] / block)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_every_block_keeps_the_running_sum_and_output_of_the_keys_seen_so_far(problem):
    q, k, v, mask, block = problem
    trace = online_softmax_row(q, k, v, 0, block, mask=mask)
    allowed = torch.ones(k.shape[0], dtype=torch.bool) if mask is None else mask[0]
    scores = (k @ q[0]) * trace.scale
    for step in trace.steps:
        seen = slice(0, step.stop)
        finite = scores[seen][allowed[seen]]
        m = float(finite.max()) if finite.numel() else -math.inf
        assert step.m_after == m
        exps = torch.where(allowed[seen], torch.exp(scores[seen] - m), torch.zeros(step.stop, dtype=scores.dtype))
        assert step.l_after == pytest.approx(float(exps.sum()), rel=1e-12, abs=1e-300)
        torch.testing.assert_close(step.o_after, exps @ v[seen], rtol=1e-12, atol=1e-12)


def test_the_result_equals_torchs_own_attention_in_float32():
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(5, 8, generator=generator) for _ in range(3))
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    torch.testing.assert_close(flash_attention(q, k, v, 2, mask=causal), expected, rtol=1e-5, atol=1e-6)


def test_one_huge_logit_in_the_third_block_forces_a_rescale():
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [0.5, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 0.0], [40.0, 0.0]])
    v = torch.arange(12.0).reshape(6, 2)
    trace = online_softmax_row(q, k, v, 0, 2, scale=1.0)  # blocks {0, 1}, {2, 3}, {4, 5}
    assert [step.m_after for step in trace.steps] == [1.0, 2.0, 40.0]
    assert trace.rescales == 2
    assert trace.steps[2].rescale == pytest.approx(math.exp(2.0 - 40.0))
    _, expected = reference(q, k, v, None, 1.0)
    torch.testing.assert_close(trace.output, expected[0])


def test_a_row_with_every_key_masked_gives_zeros():
    q, k, v = torch.ones(2, 2), torch.ones(3, 2), torch.ones(3, 2)
    mask = torch.tensor([[False, False, False], [True, False, True]])
    trace = online_softmax_row(q, k, v, 0, 2, mask=mask)
    assert trace.output.tolist() == [0.0, 0.0] and trace.weights.tolist() == [0.0, 0.0, 0.0]
    assert all(step.m_after == -math.inf for step in trace.steps)


@pytest.mark.parametrize("size", [0, -1, 2.5, True, "2"])
def test_a_bad_block_size_is_named(size):
    with pytest.raises(AttnvizError) as bad:
        online_softmax_row(torch.ones(1, 2), torch.ones(3, 2), torch.ones(3, 2), 0, size)
    assert bad.value.code == "block_size" and str(size) in str(bad.value)


def test_memory_traffic_under_the_stated_model():
    # n = 1024 tokens of d = 64, blocks of 128 (worked by hand from the model in the docstring):
    # naive 4nd + 4n^2 = 262,144 + 4,194,304; tiled 2nd + 2nd * 8 query blocks + 2n = 131,072 + 1,048,576 + 2,048
    traffic = memory_traffic(1024, 64, 128)
    assert (traffic.naive, traffic.tiled, traffic.score_matrix) == (4_456_448, 1_181_696, 1_048_576)
    assert traffic.ratio == pytest.approx(3.771, abs=1e-3)
    # the tiled version never touches the n x n matrix: doubling n roughly quadruples naive but not 2x tiled's share
    assert memory_traffic(2048, 64, 128).ratio > traffic.ratio
    with pytest.raises(ValueError):
        memory_traffic(0, 64, 128)
