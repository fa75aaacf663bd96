"""Where a token is: sinusoidal encodings added to the inputs, rotary positions (RoPE) turning q and k, and
ALiBi's distance penalty added to the scores."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import as_float_tensor
from attnviz.core.errors import AttnvizError, Name, short

ROPE_BASE = 10000.0  # RoFormer's and Llama's base; the sinusoidal encoding's too (Vaswani et al., 2017)


def _check_size(name: str | Name, value: Any, even: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (even and value % 2):
        if even:
            raise AttnvizError("even_from", name=name, value=short(repr(value)))
        raise AttnvizError("whole_from", name=name, low=1, value=short(repr(value)))
    return value


def sinusoidal_encoding(num_positions: int, dim: int, base: float = ROPE_BASE) -> Tensor:
    """d2l's positional encoding P (n, d): P[i, 2j] = sin(i / base^(2j/d)), P[i, 2j+1] = cos(i / base^(2j/d))."""
    _check_size("num_positions", num_positions)
    _check_size("dim", dim)
    positions = torch.arange(num_positions, dtype=torch.float64)[:, None]  # (n, 1)
    rates = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (ceil(d/2),)
    angles = positions / rates  # (n, ceil(d/2))
    encoding = torch.zeros(num_positions, dim, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : dim // 2])
    return encoding.to(torch.float32)


def rope_frequencies(dim: int, base: float = ROPE_BASE) -> Tensor:
    """θ_i = base^(-2i/d) for the d/2 pairs (d,) -> (d/2,): pair i turns by m θ_i at position m."""
    _check_size("dim", dim, even=True)
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def rope_angles(num_positions: int, dim: int, base: float = ROPE_BASE) -> Tensor:
    """(n, d/2): the angle m θ_i that pair i of a vector at position m is turned by."""
    _check_size("num_positions", num_positions)
    return torch.arange(num_positions, dtype=torch.float64)[:, None] * rope_frequencies(dim, base)[None, :]


def apply_rope(x: Any, positions: Any = None, base: float = ROPE_BASE) -> Tensor:
    """Rotary positions (Su et al., 2021): each pair (x_2i, x_2i+1) of the row at position m, turned by m θ_i.

    x (..., T, d) with d even; `positions` (T,) whole numbers, 0..T-1 by default. A query at m and a key at n
    then score q_mᵀ k_n = qᵀ R(n - m) k: only the offset between them counts. (The paper's pairing of neighbours;
    Llama's code pairs x_i with x_(i + d/2), the same rotation on reordered features.)"""
    tensor = as_float_tensor(x, "x")
    if tensor.dim() < 2:
        raise AttnvizError("shape", name="x", expected="(..., T, d)", shape=tuple(tensor.shape))
    length, dim = tensor.shape[-2], tensor.shape[-1]
    _check_size(Name("vector_size"), dim, even=True)
    if positions is None:
        positions = torch.arange(length)
    positions = torch.as_tensor(positions, dtype=torch.float64)
    if positions.shape != (length,):
        raise AttnvizError("shape", name="positions", expected=f"({length},)", shape=tuple(positions.shape))
    angles = positions[:, None] * rope_frequencies(dim, base)[None, :]  # (T, d/2)
    cos, sin = torch.cos(angles).to(tensor.dtype), torch.sin(angles).to(tensor.dtype)
    even, odd = tensor[..., 0::2], tensor[..., 1::2]  # (..., T, d/2) each
    rotated = torch.empty_like(tensor)
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def alibi_slopes(num_heads: int) -> Tensor:
    """ALiBi's slope per head (Press et al., 2022): 2^(-8/n), 2^(-16/n), ... for n a power of 2; otherwise those
    of the power of 2 below n, then every other slope of the power above (the paper's code)."""
    _check_size("num_heads", num_heads)

    def powers_of_two(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start**i for i in range(1, n + 1)]

    if math.log2(num_heads).is_integer():
        slopes = powers_of_two(num_heads)
    else:
        below = 2 ** math.floor(math.log2(num_heads))
        slopes = powers_of_two(below) + alibi_slopes(2 * below).tolist()[0::2][: num_heads - below]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(num_heads: int, num_queries: int, num_keys: int | None = None) -> Tensor:
    """(H, Q, K): -slope_h × |i - j|, added to the scaled scores. For a key at or before the query, j <= i, this is
    the paper's -slope × (i - j); a model without a causal mask sees the same penalty on both sides."""
    num_keys = num_queries if num_keys is None else num_keys
    _check_size("num_queries", num_queries)
    _check_size("num_keys", num_keys)
    distance = (torch.arange(num_queries)[:, None] - torch.arange(num_keys)[None, :]).abs().to(torch.float32)
    return 0.0 - alibi_slopes(num_heads)[:, None, None] * distance[None]  # (H, 1, 1) * (1, Q, K); 0 - x: never -0
