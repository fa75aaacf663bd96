"""Where a token is: sinusoidal encodings, RoPE and ALiBi against references written here
(attnviz/core/positions.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.modern import grouped_query_attention
from attnviz.core.positions import alibi_bias, alibi_slopes, apply_rope, rope_frequencies, sinusoidal_encoding


def d2l_encoding(n: int, d: int) -> torch.Tensor:
    """d2l's P, entry by entry: P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d))."""
    P = torch.zeros(n, d, dtype=torch.float64)
    for i in range(n):
        for col in range(d):
            j = col // 2
            angle = i / 10000 ** (2 * j / d)
            P[i, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return P


def rotation_matrix(m: float, d: int) -> torch.Tensor:
    """RoFormer's R_m (d, d): 2x2 blocks [[cos mθ_i, -sin mθ_i], [sin mθ_i, cos mθ_i]] on pairs (2i, 2i+1),
    θ_i = 10000^(-2i/d)."""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        angle = m * 10000 ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, -s
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = s, c
    return R


def rope_by_matrices(x: torch.Tensor, positions: list[int]) -> torch.Tensor:
    """(T, d): row t turned by R_(positions[t])."""
    return torch.stack([rotation_matrix(m, x.shape[-1]) @ row for m, row in zip(positions, x, strict=True)])


def rope_by_complex_numbers(x: torch.Tensor, positions: list[int]) -> torch.Tensor:
    """(T, d): each pair (x_2i, x_2i+1) read as x_2i + i x_2i+1 and multiplied by exp(i m θ_i)."""
    length, d = x.shape
    theta = torch.tensor([10000 ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    angles = torch.tensor(positions, dtype=torch.float64)[:, None] * theta[None, :]  # (T, d/2)
    pairs = torch.view_as_complex(x.reshape(length, d // 2, 2).contiguous())
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).reshape(length, d)


def get_slopes(n: int) -> list[float]:
    """ALiBi's slopes as the paper's repository computes them (ofirpress/attention_with_linear_biases,
    fairseq/models/transformer.py)."""

    def get_slopes_power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


def randn(generator: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator, dtype=torch.float64)


# --- sinusoidal -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "d"), [(1, 1), (7, 4), (9, 5), (12, 8), (5, 3), (50, 16)])
def test_sinusoidal_encoding_is_d2ls_P_for_even_and_odd_sizes(n, d):
    P = sinusoidal_encoding(n, d)
    assert P.shape == (n, d)
    torch.testing.assert_close(P.to(torch.float64), d2l_encoding(n, d), rtol=0, atol=1e-6)  # float32 entries


def test_sinusoidal_encoding_of_position_zero_is_zeros_and_ones():
    assert sinusoidal_encoding(3, 5)[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]  # sin 0, cos 0, ...


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "4"])
def test_sinusoidal_encoding_rejects_bad_sizes(bad):
    with pytest.raises(ValueError):
        sinusoidal_encoding(3, bad)
    with pytest.raises(ValueError):
        sinusoidal_encoding(bad, 4)


# --- RoPE -------------------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(-200, 200),
    st.integers(-200, 200),
    st.integers(-500, 500),
    st.integers(0, 2**16),
)
def test_rope_scores_depend_only_on_the_offset_between_query_and_key(half, m, n, shift, seed):
    d = 2 * half
    generator = torch.Generator().manual_seed(seed)
    q, k = randn(generator, 1, d), randn(generator, 1, d)

    def score(at_q: int, at_k: int) -> float:
        return float(apply_rope(q, positions=[at_q])[0] @ apply_rope(k, positions=[at_k])[0])

    assert score(m, n) == pytest.approx(score(m + shift, n + shift), rel=1e-9, abs=1e-9)
    # and it is qᵀ R(n - m) k: the query left where it is, the key turned by the offset
    assert score(m, n) == pytest.approx(float(q[0] @ rotation_matrix(n - m, d) @ k[0]), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 6), st.integers(0, 2**16))
def test_rope_keeps_lengths_and_position_zero_is_the_identity(half, length, seed):
    d = 2 * half
    generator = torch.Generator().manual_seed(seed)
    x = randn(generator, length, d)
    turned = apply_rope(x)
    torch.testing.assert_close(turned.norm(dim=-1), x.norm(dim=-1), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(turned[0], x[0], rtol=0, atol=0)  # position 0: no turn at all
    assert torch.equal(apply_rope(x, positions=[0] * length), x)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 7),
    st.one_of(st.none(), st.lists(st.integers(0, 300), min_size=7, max_size=7)),
    st.integers(0, 2**16),
)
def test_rope_equals_the_block_diagonal_rotation_and_the_complex_product(half, length, drawn, seed):
    d = 2 * half
    generator = torch.Generator().manual_seed(seed)
    x = randn(generator, length, d)
    positions = list(range(length)) if drawn is None else drawn[:length]
    turned = apply_rope(x) if drawn is None else apply_rope(x, positions=positions)
    torch.testing.assert_close(turned, rope_by_matrices(x, positions), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(turned, rope_by_complex_numbers(x, positions), rtol=1e-10, atol=1e-10)


def test_rope_turns_each_head_of_a_batch_alike_and_float32_stays_float32():
    generator = torch.Generator().manual_seed(1)
    x = randn(generator, 3, 5, 4)  # (H, T, d)
    turned = apply_rope(x)
    for h in range(3):
        torch.testing.assert_close(turned[h], rope_by_matrices(x[h], list(range(5))), rtol=1e-12, atol=1e-12)
    single = apply_rope(x[0].to(torch.float32))
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), rope_by_matrices(x[0], list(range(5))), rtol=1e-5, atol=1e-5)


def test_rope_frequencies_by_hand():
    # d = 4: θ_0 = 10000^0 = 1, θ_1 = 10000^(-2/4) = 1/100
    assert rope_frequencies(4).tolist() == pytest.approx([1.0, 0.01])


def test_rope_rejects_odd_sizes_and_wrong_positions():
    with pytest.raises(ValueError, match="even"):
        apply_rope(torch.ones(2, 3))
    with pytest.raises(ValueError, match="positions"):
        apply_rope(torch.ones(2, 4), positions=[0, 1, 2])
    with pytest.raises(ValueError):
        apply_rope(torch.ones(4))


# --- ALiBi ------------------------------------------------------------------------------------------------------


def test_alibi_slopes_of_powers_of_two_by_hand():
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]  # 1/2, 1/4, ..., 1/256
    assert alibi_slopes(4).tolist() == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]
    assert alibi_slopes(1).tolist() == [2.0**-8]
    # 6 heads: the 4 of n = 4, then every other slope of n = 8 (1/2, 1/8)
    assert alibi_slopes(6).tolist() == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]


@pytest.mark.parametrize("heads", [1, 2, 3, 5, 6, 7, 8, 12, 16, 20, 24, 32])
def test_alibi_slopes_equal_the_papers_get_slopes(heads):
    expected = torch.tensor(get_slopes(heads), dtype=torch.float64)
    torch.testing.assert_close(alibi_slopes(heads).to(torch.float64), expected, rtol=1e-6, atol=0)


@pytest.mark.parametrize(("heads", "queries", "keys"), [(4, 5, None), (3, 2, 6), (6, 7, 3)])
def test_alibi_bias_is_minus_slope_times_distance(heads, queries, keys):
    bias = alibi_bias(heads, queries, keys)
    keys = queries if keys is None else keys
    slopes = get_slopes(heads)
    assert bias.shape == (heads, queries, keys)
    expected = torch.tensor(
        [[[-slopes[h] * abs(i - j) for j in range(keys)] for i in range(queries)] for h in range(heads)],
        dtype=torch.float64,
    )
    torch.testing.assert_close(bias.to(torch.float64), expected, rtol=1e-6, atol=0)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 8), st.integers(1, 7), st.integers(1, 5), st.booleans(), st.integers(0, 2**16))
def test_causal_alibi_attention_equals_torchs_sdpa_with_a_float_mask(heads, length, d, double, seed):
    dtype = torch.float64 if double else torch.float32
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(heads, length, d, generator=generator, dtype=dtype) * 2 for _ in range(3))
    bias = alibi_bias(heads, length)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    _, weights, outputs = grouped_query_attention(q, k, v, mask=causal, bias=bias)
    float_mask = bias.to(dtype) + torch.zeros(length, length, dtype=dtype).masked_fill(~causal, -math.inf)
    expected = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=float_mask[None])[0]
    tolerance = 1e-12 if double else 1e-5  # float32: scores of a few units, a few ulps of the output
    torch.testing.assert_close(outputs, expected, rtol=tolerance, atol=tolerance)
    reference = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d) + float_mask, dim=-1)
    torch.testing.assert_close(weights, reference, rtol=tolerance, atol=tolerance)
