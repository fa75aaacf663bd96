"""Masks beyond causal against brute-force loops over (i, j) written from their definitions (attnviz/core/sparse.py),
and `attend(..., mask=...)` combined with valid lengths."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.attention import attend
from attnviz.core.sparse import (
    MASK_KINDS,
    block_sparse_mask,
    local_global_mask,
    prefix_lm_mask,
    scheme_mask,
    scored_pairs,
    sliding_window_mask,
)


def brute(n: int, allowed) -> torch.Tensor:
    """(n, n) bool from a predicate allowed(i, j), one pair at a time."""
    return torch.tensor([[bool(allowed(i, j)) for j in range(n)] for i in range(n)], dtype=torch.bool).reshape(n, n)


def sliding_reference(n: int, window: int) -> torch.Tensor:
    # key j at or before query i, and among the last `window` keys: i - window < j <= i
    return brute(n, lambda i, j: j <= i and i - j < window)


def local_global_reference(n: int, window: int, global_tokens: tuple[int, ...]) -> torch.Tensor:
    # neighbours within distance window - 1 either side; a global token sees every key and every query sees it
    return brute(n, lambda i, j: abs(i - j) < window or i in global_tokens or j in global_tokens)


def prefix_reference(n: int, prefix: int) -> torch.Tensor:
    # inside the prefix: both ways; otherwise causal (every later token also sees the whole prefix)
    return brute(n, lambda i, j: (i < prefix and j < prefix) or j <= i)


def block_sparse_reference(n: int, block: int) -> torch.Tensor:
    # never a later key; the key's block is the query's own, the one before it, or the first
    def allowed(i: int, j: int) -> bool:
        bi, bj = i // block, j // block
        return j <= i and (bj == bi or bj == bi - 1 or bj == 0)

    return brute(n, allowed)


def causal_reference(n: int) -> torch.Tensor:
    return brute(n, lambda i, j: j <= i)


sizes = st.integers(1, 40)
params = st.integers(1, 45)


@settings(max_examples=80, deadline=None)
@given(sizes, params)
def test_sliding_window_mask_is_the_last_window_keys(n, window):
    mask = sliding_window_mask(n, window)
    assert mask.dtype == torch.bool and mask.shape == (n, n)
    assert torch.equal(mask, sliding_reference(n, window))
    assert torch.equal(scheme_mask("sliding", n, window=window), mask)


@settings(max_examples=80, deadline=None)
@given(sizes, params, st.data())
def test_local_global_mask_is_neighbours_plus_global_tokens(n, window, data):
    global_tokens = tuple(data.draw(st.lists(st.integers(0, n - 1), max_size=4, unique=True)))
    mask = local_global_mask(n, window, global_tokens)
    assert torch.equal(mask, local_global_reference(n, window, global_tokens))
    assert torch.equal(mask, mask.T)  # an encoder's pattern: symmetric
    assert torch.equal(scheme_mask("local_global", n, window=window, global_tokens=global_tokens), mask)
    assert torch.equal(local_global_mask(n, window), local_global_reference(n, window, (0,)))  # token 0 by default


@settings(max_examples=80, deadline=None)
@given(sizes, st.integers(0, 45))
def test_prefix_lm_mask_is_bidirectional_over_the_prefix_then_causal(n, prefix):
    mask = prefix_lm_mask(n, prefix)
    assert torch.equal(mask, prefix_reference(n, prefix))
    assert torch.equal(scheme_mask("prefix", n, prefix=prefix), mask)
    if prefix <= 1:
        assert torch.equal(mask, causal_reference(n))


@settings(max_examples=80, deadline=None)
@given(sizes, params)
def test_block_sparse_mask_is_own_previous_and_first_block_never_later(n, block):
    mask = block_sparse_mask(n, block)
    assert torch.equal(mask, block_sparse_reference(n, block))
    assert torch.equal(scheme_mask("block_sparse", n, block=block), mask)


@settings(max_examples=60, deadline=None)
@given(sizes, params, params)
def test_causal_kinds_never_allow_a_later_key_and_always_allow_the_token_itself(n, window, block):
    later = brute(n, lambda i, j: j > i)
    for mask in (
        scheme_mask("causal", n),
        sliding_window_mask(n, window),
        block_sparse_mask(n, block),
        prefix_lm_mask(n, 1),
    ):
        assert not bool((mask & later).any())
        assert bool(mask.diagonal().all())


@settings(max_examples=60, deadline=None)
@given(sizes)
def test_scheme_mask_causal_and_full(n):
    assert torch.equal(scheme_mask("causal", n), causal_reference(n))
    assert torch.equal(scheme_mask("full", n), brute(n, lambda i, j: True))


def test_scheme_mask_knows_every_kind_and_rejects_others():
    assert set(MASK_KINDS) == {"causal", "full", "sliding", "local_global", "prefix", "block_sparse"}
    for kind in MASK_KINDS:
        assert scheme_mask(kind, 5).shape == (5, 5)
    for kind in ("dilated", "", "Causal"):
        with pytest.raises(ValueError, match="mask must be one of"):
            scheme_mask(kind, 5)


@settings(max_examples=60, deadline=None)
@given(sizes, st.sampled_from(MASK_KINDS), st.integers(1, 8), st.integers(0, 8), st.integers(1, 8))
def test_scored_pairs_counts_what_the_mask_lets_through(n, kind, window, prefix, block):
    mask = scheme_mask(kind, n, window=window, prefix=prefix, block=block)
    counts = scored_pairs(mask)
    scored = sum(1 for i in range(n) for j in range(n) if mask[i, j])
    causal = sum(1 for i in range(n) for j in range(n) if j <= i)
    assert (counts.scored, counts.total, counts.causal) == (scored, n * n, causal)
    assert counts.share == pytest.approx(scored / (n * n))


def test_a_window_of_three_on_sixteen_tokens_scores_45_pairs():
    # token 0 sees 1 key, token 1 sees 2, tokens 2..15 (14 of them) see 3 each: 1 + 2 + 3 * 14 = 45
    counts = scored_pairs(sliding_window_mask(16, 3))
    assert (counts.scored, counts.total, counts.causal) == (45, 256, 136)  # causal: 16 * 17 / 2
    assert counts.share == pytest.approx(45 / 256)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3"])
def test_bad_parameters_are_rejected(bad):
    for make in (
        lambda: sliding_window_mask(bad, 2),
        lambda: sliding_window_mask(4, bad),
        lambda: local_global_mask(4, bad),
        lambda: block_sparse_mask(4, bad),
        lambda: prefix_lm_mask(bad, 1),
        lambda: scheme_mask("causal", bad),  # the kinds without a parameter of their own check n too
        lambda: scheme_mask("full", bad),
    ):
        with pytest.raises(ValueError):
            make()
    with pytest.raises(ValueError, match="outside"):
        local_global_mask(4, 2, (4,))
    with pytest.raises(ValueError, match="prefix"):
        prefix_lm_mask(4, -1)


# --- a mask together with valid lengths in `attend` --------------------------------------------------------------


def reference_attention(q, k, v, allowed):
    """softmax(q kᵀ / sqrt(d)) over the allowed keys only, row by row; a row with none allowed is all zeros."""
    num_queries, num_keys = allowed.shape
    scores = q @ k.T / math.sqrt(q.shape[-1])
    weights = torch.zeros(num_queries, num_keys, dtype=q.dtype)
    for i in range(num_queries):
        keep = [j for j in range(num_keys) if allowed[i, j]]
        if keep:
            exps = torch.exp(scores[i, keep] - scores[i, keep].max())
            weights[i, keep] = exps / exps.sum()
    return weights, weights @ v


@st.composite
def masked_problems(draw):
    n = draw(st.integers(1, 12))
    kind = draw(st.sampled_from(MASK_KINDS))
    mask = scheme_mask(
        kind,
        n,
        window=draw(st.integers(1, 5)),
        prefix=draw(st.integers(0, n)),
        block=draw(st.integers(1, 4)),
        global_tokens=(draw(st.integers(0, n - 1)),),
    )
    length = draw(st.integers(0, n))
    d, width = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q, k = (torch.randn(n, d, generator=generator, dtype=torch.float64) * 3 for _ in range(2))
    v = torch.randn(n, width, generator=generator, dtype=torch.float64)
    return q, k, v, mask, length


@settings(max_examples=100, deadline=None)
@given(masked_problems())
def test_a_mask_and_a_valid_length_together_mask_both(problem):
    q, k, v, mask, length = problem
    n = q.shape[0]
    trace = attend(q, k, v, mask=mask, valid_lens=length)
    allowed = brute(n, lambda i, j: bool(mask[i, j]) and j < length)
    assert torch.equal(trace.mask, allowed)
    assert bool((trace.weights[~allowed] == 0).all())  # exactly zero on every forbidden pair
    rows = allowed.any(dim=1)
    torch.testing.assert_close(trace.weights.sum(dim=1)[rows], torch.ones(int(rows.sum()), dtype=torch.float64))
    assert bool((trace.weights[~rows] == 0).all()) and bool((trace.output[~rows] == 0).all())
    weights, output = reference_attention(q, k, v, allowed)
    torch.testing.assert_close(trace.weights, weights, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(trace.output, output, rtol=1e-12, atol=1e-12)


def test_a_batch_with_a_length_per_sequence_and_one_shared_mask():
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 6, 3, generator=generator, dtype=torch.float64) for _ in range(3))
    mask = sliding_window_mask(6, 2)
    trace = attend(q, k, v, mask=mask, valid_lens=torch.tensor([6, 3]))
    for b, length in enumerate((6, 3)):
        allowed = brute(6, lambda i, j, length=length: bool(mask[i, j]) and j < length)
        assert torch.equal(trace.mask[b], allowed)
        weights, output = reference_attention(q[b], k[b], v[b], allowed)
        torch.testing.assert_close(trace.weights[b], weights, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(trace.output[b], output, rtol=1e-12, atol=1e-12)


def test_a_mask_of_the_wrong_shape_is_named():
    q = torch.ones(3, 2)
    with pytest.raises(ValueError, match="mask must have shape"):
        attend(q, q, q, mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="bias must have shape"):
        attend(q, q, q, bias=torch.zeros(2, 3))
    with pytest.raises(ValueError):
        attend(q, q, q, bias=torch.full((3, 3), -math.inf))  # -inf belongs in the mask, not the bias
