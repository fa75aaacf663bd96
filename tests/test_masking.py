"""attnviz.masked_softmax and sequence_mask against docs/api.md and a numpy reference."""

import math

import numpy as np
import pytest
import reference as ref
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnviz
from attnviz.core.masking import softmax_where

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def scores_and_lens(draw, lens_rank):
    B = draw(st.integers(1, 3))
    Q = draw(st.integers(1, 4))
    K = draw(st.integers(1, 6))
    scores = draw(arrays(np.float64, (B, Q, K), elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)))
    lens_shape = (B,) if lens_rank == 1 else (B, Q)
    lens = draw(arrays(np.int64, lens_shape, elements=st.integers(0, K)))
    return scores, lens


def _per_query_lens(lens, B, Q):
    lens = np.asarray(lens)
    return np.repeat(lens[:, None], Q, axis=1) if lens.ndim == 1 else lens


def _check_masked_properties(weights, lens, shape):
    B, Q, _K = shape
    w = ref.to_np(weights)
    assert w.shape == shape
    assert np.all(w >= 0)
    per_query = _per_query_lens(lens, B, Q)
    for b in range(B):
        for q in range(Q):
            n = int(per_query[b, q])
            assert np.all(w[b, q, n:] == 0.0), (b, q, n, w[b, q])  # exactly zero, not approx
            if n >= 1:
                assert w[b, q, :n].sum() == pytest.approx(1.0, abs=1e-9)
            else:
                assert np.all(w[b, q] == 0.0)


# ------------------------------------------------------------------ properties


@SETTINGS
@given(scores_and_lens(lens_rank=1))
def test_masked_softmax_1d_lens_properties(data):
    scores, lens = data
    weights = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(lens))
    _check_masked_properties(weights, lens, scores.shape)


@SETTINGS
@given(scores_and_lens(lens_rank=2))
def test_masked_softmax_2d_lens_properties(data):
    scores, lens = data
    weights = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(lens))
    _check_masked_properties(weights, lens, scores.shape)


@SETTINGS
@given(scores_and_lens(lens_rank=1))
def test_masked_softmax_1d_lens_matches_reference(data):
    scores, lens = data
    got = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(lens))
    np.testing.assert_allclose(ref.to_np(got), ref.masked_softmax(scores, lens), rtol=1e-9, atol=1e-12)


@SETTINGS
@given(scores_and_lens(lens_rank=2))
def test_masked_softmax_2d_lens_matches_reference(data):
    scores, lens = data
    got = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(lens))
    np.testing.assert_allclose(ref.to_np(got), ref.masked_softmax(scores, lens), rtol=1e-9, atol=1e-12)


@SETTINGS
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6)),
        elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    )
)
def test_masked_softmax_without_lens_is_plain_softmax(scores):
    got = attnviz.masked_softmax(torch.tensor(scores))
    np.testing.assert_allclose(ref.to_np(got), ref.masked_softmax(scores), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ref.to_np(got).sum(-1), 1.0, atol=1e-9)


@SETTINGS
@given(scores_and_lens(lens_rank=1))
def test_1d_lens_applies_to_every_query(data):
    scores, lens = data
    _B, Q, _ = scores.shape
    one_d = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(lens))
    two_d = attnviz.masked_softmax(torch.tensor(scores), torch.tensor(np.repeat(lens[:, None], Q, axis=1)))
    np.testing.assert_array_equal(ref.to_np(one_d), ref.to_np(two_d))


# ------------------------------------------------------------------ d2l's examples


def test_d2l_example_1d_lens_shape_and_zeros():
    torch.manual_seed(0)
    scores = torch.rand(2, 2, 4)
    weights = attnviz.masked_softmax(scores, torch.tensor([2, 3]))
    assert tuple(weights.shape) == (2, 2, 4)
    w = ref.to_np(weights)
    assert np.all(w[0, :, 2:] == 0) and np.all(w[1, :, 3:] == 0)
    np.testing.assert_allclose(w, ref.masked_softmax(scores, [2, 3]), atol=1e-6)


def test_d2l_example_2d_lens_shape_and_zeros():
    torch.manual_seed(1)
    scores = torch.rand(2, 2, 4)
    weights = attnviz.masked_softmax(scores, torch.tensor([[1, 3], [2, 4]]))
    assert tuple(weights.shape) == (2, 2, 4)
    w = ref.to_np(weights)
    assert np.all(w[0, 0, 1:] == 0) and w[0, 0, 0] == pytest.approx(1.0, abs=1e-6)
    assert np.all(w[0, 1, 3:] == 0)
    assert np.all(w[1, 0, 2:] == 0)
    assert np.all(w[1, 1] > 0)
    np.testing.assert_allclose(w, ref.masked_softmax(scores, [[1, 3], [2, 4]]), atol=1e-6)


def test_zero_length_gives_all_zero_row():
    scores = torch.randn(2, 3, 4, dtype=torch.float64)
    w = ref.to_np(attnviz.masked_softmax(scores, torch.tensor([0, 4])))
    assert np.all(w[0] == 0)
    np.testing.assert_allclose(w[1].sum(-1), 1.0, atol=1e-12)


def test_integral_float_lengths_are_accepted():
    scores = torch.randn(2, 2, 4, dtype=torch.float64)
    as_float = attnviz.masked_softmax(scores, torch.tensor([2.0, 3.0]))
    as_int = attnviz.masked_softmax(scores, torch.tensor([2, 3]))
    np.testing.assert_array_equal(ref.to_np(as_float), ref.to_np(as_int))


def test_masked_keys_are_exactly_zero_even_below_minus_1e6():
    # a d2l-style fill value of -1e6 would give the masked key all the weight here
    scores = torch.tensor([[[-1e7, 0.0]]], dtype=torch.float64)
    w = ref.to_np(attnviz.masked_softmax(scores, torch.tensor([1])))
    assert w[0, 0, 1] == 0.0
    assert w[0, 0, 0] == pytest.approx(1.0, abs=1e-12)


def test_huge_scores_give_finite_weights_summing_to_one():
    scores = torch.tensor([[[1e30, -1e30, 0.0, 5.0], [-1e30, -1e30, 1e30, 1e30]]])
    for lens in (None, torch.tensor([3])):
        w = ref.to_np(attnviz.masked_softmax(scores, lens))
        assert np.all(np.isfinite(w))
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
        assert w[0, 0, 0] == pytest.approx(1.0, abs=1e-6)
    w = ref.to_np(attnviz.masked_softmax(scores))
    np.testing.assert_allclose(w[0, 1], [0.0, 0.0, 0.5, 0.5], atol=1e-6)


def test_huge_negative_scores_only_still_sum_to_one():
    scores = torch.full((1, 1, 3), -1e30)
    w = ref.to_np(attnviz.masked_softmax(scores, torch.tensor([2])))
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w[0, 0], [0.5, 0.5, 0.0], atol=1e-6)


# ------------------------------------------------------------------ errors


def _scores():
    return torch.zeros(2, 2, 4)


def test_negative_length_raises_naming_value():
    with pytest.raises(ValueError, match="-1"):
        attnviz.masked_softmax(_scores(), torch.tensor([2, -1]))


def test_length_above_k_raises_naming_value():
    with pytest.raises(ValueError, match=r"\b7\b"):
        attnviz.masked_softmax(_scores(), torch.tensor([7, 1]))


def test_length_above_k_in_2d_lens_raises():
    with pytest.raises(ValueError, match=r"\b9\b"):
        attnviz.masked_softmax(_scores(), torch.tensor([[1, 2], [9, 1]]))


def test_non_integer_length_raises_naming_value():
    with pytest.raises(ValueError, match=r"2\.5"):
        attnviz.masked_softmax(_scores(), torch.tensor([2.5, 1.0]))


def test_nan_length_raises():
    with pytest.raises(ValueError, match=r"(?i)nan"):
        attnviz.masked_softmax(_scores(), torch.tensor([1.0, math.nan]))


def test_1d_lens_of_wrong_length_raises_naming_count():
    with pytest.raises(ValueError, match=r"\b3\b"):
        attnviz.masked_softmax(_scores(), torch.tensor([1, 2, 3]))


def test_2d_lens_of_wrong_shape_raises_naming_shape():
    with pytest.raises(ValueError, match=r"3,\s*5"):
        attnviz.masked_softmax(_scores(), torch.ones(3, 5, dtype=torch.long))


def test_nan_in_scores_raises():
    scores = _scores()
    scores[1, 0, 2] = math.nan
    with pytest.raises(ValueError, match=r"(?i)nan"):
        attnviz.masked_softmax(scores, torch.tensor([4, 4]))
    with pytest.raises(ValueError, match=r"(?i)nan"):
        attnviz.masked_softmax(scores)


def test_inf_in_scores_raises():
    scores = _scores()
    scores[0, 1, 0] = math.inf
    with pytest.raises(ValueError, match=r"(?i)inf|finite"):
        attnviz.masked_softmax(scores, torch.tensor([4, 4]))


# ------------------------------------------------------------------ sequence_mask (d2l)


def test_sequence_mask_d2l_example():
    X = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = attnviz.sequence_mask(X.clone(), torch.tensor([1, 2]))
    np.testing.assert_array_equal(ref.to_np(got), [[1, 0, 0], [4, 5, 0]])


def test_sequence_mask_custom_value():
    X = torch.ones(2, 3)
    got = attnviz.sequence_mask(X.clone(), torch.tensor([2, 0]), value=-7.0)
    np.testing.assert_array_equal(ref.to_np(got), [[1, 1, -7], [-7, -7, -7]])


# ------------------------------------------------------------------ fewer torch calls, the same numbers (item 27)


def _softmax_where_before(logits, mask, temperature=1.0):
    """softmax_where as it was before the cut in tensor operations (CHANGELOG.md, Performance history): `~mask`, two
    `masked_fill`s, and a `where` for rows with no key allowed."""
    if mask is None:
        mask = torch.ones_like(logits, dtype=torch.bool)
    lowest = torch.finfo(logits.dtype).min
    blocked = ~mask
    filled = logits.masked_fill(blocked, lowest)
    row_max = filled.amax(dim=-1, keepdim=True)
    shifted = (filled - row_max) / temperature
    exps = torch.exp(shifted).masked_fill(blocked, 0.0)
    totals = exps.sum(dim=-1, keepdim=True)
    return torch.where(totals > 0, exps / totals.clamp_min(1.0), torch.zeros_like(exps))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("temperature", [1.0, 0.37, 2.5, 1e-3])
def test_softmax_where_gives_the_same_numbers_and_gradients_as_before(dtype, temperature):
    """Bit for bit, with rows that allow no key, huge and infinite scores (whose rows become 0 rather than NaN), and
    no mask; the gradients too, since the learned models train through it."""
    generator = torch.Generator().manual_seed(11)
    for case in range(40):
        logits = (torch.randn(3, 5, 6, generator=generator, dtype=dtype) * 10 ** (case % 5)).requires_grad_(True)
        mask = torch.rand(3, 5, 6, generator=generator) > 0.4
        mask[0, 0] = False  # a row with no key allowed
        special = logits.detach().clone()
        special[1, 1, 2], special[2, 3, 0] = math.inf, 1e38  # an infinite score, and one that overflows when scaled
        for data, m in ((logits, mask), (logits, None), (special, mask), (special, None)):
            x = data.detach().clone().requires_grad_(True)
            y = data.detach().clone().requires_grad_(True)
            now, before = softmax_where(x, m, temperature), _softmax_where_before(y, m, temperature)
            assert torch.equal(now, before), (case, m is None)
            weight = torch.randn(now.shape, generator=generator, dtype=dtype)
            (now * weight).sum().backward()
            (before * weight).sum().backward()
            assert torch.equal(x.grad.nan_to_num(7.0), y.grad.nan_to_num(7.0)), (case, m is None)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.zeros(4, 5),
        lambda: torch.zeros(2, 3, 4, dtype=torch.float64),
        lambda: torch.zeros(30, 30),
        lambda: torch.zeros(4, 5, dtype=torch.float16),
        lambda: torch.zeros(4, 5, requires_grad=True),  # part of a graph
    ],
)
def test_check_finite_names_the_first_bad_entry(make):
    from attnviz.core._validate import check_finite

    check_finite(make(), "keys")  # all finite: no error
    for bad, shown in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        tensor = make().detach().clone()
        index = (1, 2) if tensor.dim() == 2 else (1, 0, 3)
        tensor[index] = bad
        tensor[-1, -1] = math.nan  # a later bad entry: the first is named
        where = list(index) if len(index) > 1 else index[0]
        with pytest.raises(
            ValueError, match=rf"^keys must be finite numbers; found {shown} at index {where}$".replace("[", r"\[")
        ):
            check_finite(tensor, "keys")


def test_check_finite_passes_large_numbers_whose_sum_overflows_and_catches_infinities_that_cancel():
    from attnviz.core._validate import check_finite

    for dtype in (torch.float16, torch.float32):
        big = torch.full((3, 4), torch.finfo(dtype).max, dtype=dtype)  # every entry finite, their sum is not
        check_finite(big, "values")
        check_finite(-big, "values")
    both = torch.zeros(2, 3)
    both[0, 1], both[1, 2] = math.inf, -math.inf  # the sum is NaN, not infinite
    with pytest.raises(ValueError, match=r"^keys must be finite numbers; found inf at index \[0, 1\]$"):
        check_finite(both, "keys")
