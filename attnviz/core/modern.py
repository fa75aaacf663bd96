"""Attention as current LLMs compute it, on the student's numbers: positions (sinusoidal, RoPE, ALiBi), masks beyond
causal, and grouped-query attention, where several query heads share one key/value head (MHA -> GQA -> MQA).
Every query head is an AttentionTrace, so the page's heatmaps and show-your-work draw it like any other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import as_float_tensor, check_finite
from attnviz.core.attention import attend
from attnviz.core.errors import AttnvizError, short
from attnviz.core.positions import alibi_bias, alibi_slopes, apply_rope, sinusoidal_encoding
from attnviz.core.trace import AttentionTrace

POSITIONS = ("none", "sinusoidal", "rope", "alibi")


def kv_groups(num_heads: int, kv_heads: int) -> tuple[int, ...]:
    """The key/value head each query head reads: query heads 0..H/G-1 share head 0, the next H/G head 1, ... (as
    `repeat_interleave` and torch's `enable_gqa` pair them)."""
    if min(num_heads, kv_heads) < 1 or num_heads % kv_heads:
        raise AttnvizError("kv_heads", heads=num_heads, kv_heads=kv_heads)
    per_group = num_heads // kv_heads
    return tuple(h // per_group for h in range(num_heads))


@dataclass(frozen=True)
class ModernTrace:
    """Every step of one layer of attention with a positional scheme, a mask and H query / G key-value heads."""

    inputs: Tensor  # (T, d_model) the tokens' vectors, as given
    encoding: Tensor | None  # (T, d_model) the sinusoidal P added to them, or None
    W_q: Tensor  # (H * d_h, d_model), nn.Linear layout
    W_k: Tensor  # (G * d_h, d_model)
    W_v: Tensor  # (G * d_h, d_model)
    queries: Tensor  # (H, T, d_h) after RoPE, when it is on
    keys: Tensor  # (G, T, d_h) after RoPE: what a KV cache holds
    values: Tensor  # (G, T, d_h)
    heads: list[AttentionTrace]  # one per query head, over its group's keys and values
    groups: tuple[int, ...]  # query head -> key/value head
    slopes: Tensor | None  # (H,) ALiBi's, or None
    mask: Tensor  # (T, T) the scheme's mask, before valid lengths
    weights: Tensor  # (H, T, T)
    output: Tensor  # (T, H * d_h) the heads' outputs side by side
    positions: str = "none"

    @property
    def num_heads(self) -> int:
        """H, the query heads."""
        return len(self.heads)

    @property
    def kv_heads(self) -> int:
        """G, the key/value heads."""
        return self.keys.shape[0]


def grouped_query_attention(
    queries: Tensor, keys: Tensor, values: Tensor, *, mask: Any = None, bias: Any = None, valid_lens: Any = None
) -> tuple[list[AttentionTrace], Tensor, Tensor]:
    """Scaled dot-product attention of H query heads (H, Q, d) over G key/value heads (G, K, d) and (G, K, v), G
    dividing H; `bias` (H, Q, K). Returns each query head's trace, the weights (H, Q, K) and the outputs (H, Q, v)."""
    groups = kv_groups(queries.shape[0], keys.shape[0])
    traces = [
        attend(
            queries[h],
            keys[g],
            values[g],
            mask=mask,
            bias=None if bias is None else bias[h],
            valid_lens=valid_lens,
        )
        for h, g in enumerate(groups)
    ]
    weights = torch.stack([trace.weights for trace in traces])  # (H, Q, K)
    return traces, weights, torch.stack([trace.output for trace in traces])  # (H, Q, v)


def projections(d_model: int, num_heads: int, kv_heads: int, head_dim: int, seed: int) -> dict[str, Tensor]:
    """Seeded N(0, 1) W_q (H d_h, d_model), W_k and W_v (G d_h, d_model): inputs of length about 1 (a sentence's
    vectors) give queries and keys whose scores spread enough to see."""
    generator = torch.Generator().manual_seed(seed)
    sizes = {"W_q": num_heads * head_dim, "W_k": kv_heads * head_dim, "W_v": kv_heads * head_dim}
    return {name: torch.randn(rows, d_model, generator=generator) for name, rows in sizes.items()}


@dataclass(frozen=True)
class Layer:
    """One layer's inputs to its heads' attention: tokens, positions and projections applied."""

    tokens: Tensor  # (T, d_model) as given
    encoding: Tensor | None  # (T, d_model) the sinusoidal P added to them, or None
    mats: dict[str, Tensor]  # W_q (H * d_h, d_model), W_k and W_v (G * d_h, d_model)
    queries: Tensor  # (H, T, d_h) after RoPE, when it is on
    keys: Tensor  # (G, T, d_h)
    values: Tensor  # (G, T, d_h)
    groups: tuple[int, ...]  # query head -> key/value head
    slopes: Tensor | None  # (H,) ALiBi's, or None
    bias: Tensor | None  # (H, T, T) ALiBi's, or None
    mask: Tensor  # (T, T) bool


def layer_inputs(
    x: Any,
    *,
    num_heads: int,
    kv_heads: int | None,
    head_dim: int,
    positions: str,
    mask: Any,
    seed: int,
    weights: dict[str, Tensor] | None,
) -> Layer:
    """`modern_attention`'s first half, with its arguments but the valid length (their defaults are its): the tokens
    x (T, d_model) checked, their positions encoded, projected and split into H query heads and G key/value heads,
    with the (T, T) mask (causal when None) and ALiBi's bias."""
    tokens = as_float_tensor(x, "x").to(torch.float32)
    if tokens.dim() != 2 or 0 in tokens.shape:
        raise AttnvizError("shape", name="x", expected="(T, d_model)", shape=tuple(tokens.shape))
    check_finite(tokens, "x")
    if positions not in POSITIONS:
        raise AttnvizError("choice", name="positions", choices=", ".join(POSITIONS), value=short(repr(positions)))
    kv_heads = num_heads if kv_heads is None else kv_heads
    groups = kv_groups(num_heads, kv_heads)
    length, d_model = tokens.shape
    if positions == "rope" and head_dim % 2:
        raise AttnvizError("rope_odd", size=head_dim)
    allowed = torch.ones(length, length, dtype=torch.bool).tril() if mask is None else torch.as_tensor(mask).bool()
    if allowed.shape != (length, length):
        raise AttnvizError("pair_shape", name="mask", queries=length, keys=length, shape=tuple(allowed.shape))
    mats = weights if weights is not None else projections(d_model, num_heads, kv_heads, head_dim, seed)
    encoding = sinusoidal_encoding(length, d_model) if positions == "sinusoidal" else None
    encoded = tokens if encoding is None else tokens + encoding  # (T, d_model)

    def heads_of(matrix: Tensor, count: int) -> Tensor:  # (T, count * d_h) -> (count, T, d_h)
        return (encoded @ matrix.T).reshape(length, count, head_dim).transpose(0, 1)

    q, k, v = heads_of(mats["W_q"], num_heads), heads_of(mats["W_k"], kv_heads), heads_of(mats["W_v"], kv_heads)
    if positions == "rope":
        q, k = apply_rope(q), apply_rope(k)  # values are not turned: they carry content, not position
    slopes = alibi_slopes(num_heads) if positions == "alibi" else None
    bias = alibi_bias(num_heads, length) if positions == "alibi" else None
    return Layer(tokens, encoding, mats, q, k, v, groups, slopes, bias, allowed)


def layer_trace(
    layer: Layer, heads: list[AttentionTrace], weights: Tensor, outputs: Tensor, positions: str
) -> ModernTrace:
    """The layer's trace from each query head's trace, their weights (H, T, T) and outputs (H, T, d_h):
    `modern_attention`'s second half."""
    length = layer.tokens.shape[0]
    return ModernTrace(
        inputs=layer.tokens,
        encoding=layer.encoding,
        W_q=layer.mats["W_q"],
        W_k=layer.mats["W_k"],
        W_v=layer.mats["W_v"],
        queries=layer.queries,
        keys=layer.keys,
        values=layer.values,
        heads=heads,
        groups=layer.groups,
        slopes=layer.slopes,
        mask=layer.mask,
        weights=weights,
        output=outputs.transpose(0, 1).reshape(length, -1),  # (H, T, d_h) -> (T, H d_h)
        positions=positions,
    )


def modern_attention(
    x: Any,
    *,
    num_heads: int = 1,
    kv_heads: int | None = None,
    head_dim: int = 4,
    positions: str = "none",
    mask: Any = None,
    valid_len: int | None = None,
    seed: int = 0,
    weights: dict[str, Tensor] | None = None,
) -> ModernTrace:
    """Self-attention of the tokens x (T, d_model) with `positions` (one of POSITIONS), a (T, T) `mask` (causal when
    None), a valid length (keys from it on are padding), and H query heads over G key/value heads (G = H: MHA)."""
    layer = layer_inputs(
        x,
        num_heads=num_heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        positions=positions,
        mask=mask,
        seed=seed,
        weights=weights,
    )
    heads, stacked, outputs = grouped_query_attention(
        layer.queries, layer.keys, layer.values, mask=layer.mask, bias=layer.bias, valid_lens=valid_len
    )
    return layer_trace(layer, heads, stacked, outputs, positions)
