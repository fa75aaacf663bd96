"""Multi-head attention: project, split into heads, attend per head, concatenate, project back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor, nn

from attnviz.core._validate import check_finite
from attnviz.core.attention import DotProductAttention, attend, prepare_inputs
from attnviz.core.errors import AttnvizError, Name, short
from attnviz.core.scores import _init_linear
from attnviz.core.trace import AttentionTrace


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every step of multi-head attention (batched shapes; unbatched inputs drop the B axis)."""

    queries: Tensor  # (B, Q, d)
    keys: Tensor  # (B, K, d_k)
    values: Tensor  # (B, K, v)
    W_q: Tensor  # (d, d) — rows are outputs, like nn.Linear.weight
    W_k: Tensor  # (d, d_k)
    W_v: Tensor  # (v, v)
    W_o: Tensor  # (v, v)
    heads: list[AttentionTrace]  # one per head, on the projected, split inputs
    weights: Tensor  # (B, h, Q, K)
    mean_weights: Tensor  # (B, Q, K)
    concat: Tensor  # (B, Q, v) heads' outputs side by side
    delta: Tensor  # (B, Q, v) concat @ W_oᵀ, the attention result ΔE
    output: Tensor  # (B, Q, v) delta, plus the queries when residual
    residual: bool = False
    projections: str = "identity"

    @property
    def num_heads(self) -> int:
        """Number of heads."""
        return len(self.heads)

    def batch_row(self, index: int) -> MultiHeadTrace:
        """Batch row `index` of a batched trace, as an unbatched trace (every tensor with its batch axis taken)."""
        tensors = ("queries", "keys", "values", "weights", "mean_weights", "concat", "delta", "output")
        taken = {name: getattr(self, name)[index] for name in tensors}
        return replace(self, **taken, heads=[head.batch_row(index) for head in self.heads])


def _identity(size: int, dtype: torch.dtype) -> Tensor:
    """I of `size`: each trace gets its own, so a student who edits one trace's W_q changes no other trace."""
    return torch.eye(size, dtype=dtype)


def projection_matrices(
    d_q: int,
    d_k: int,
    d_v: int,
    projections: str | Mapping[str, Tensor],
    seed: int,
    dtype: torch.dtype = torch.float32,
) -> dict[str, Tensor]:
    """W_q, W_k, W_v, W_o (nn.Linear's layout: out × in) as identity or seeded random matrices, or the ones given
    (a trained model's: the caller loads them), in `dtype`, new for each call."""
    if projections == "identity":
        return {name: _identity(size, dtype) for name, size in (("W_q", d_q), ("W_k", d_k), ("W_v", d_v), ("W_o", d_v))}
    sizes = {"W_q": (d_q, d_q), "W_k": (d_k, d_q), "W_v": (d_v, d_v), "W_o": (d_v, d_v)}  # (in, out)
    if projections == "random":
        generator = torch.Generator().manual_seed(seed)
        mats = {
            name: _init_linear(nn.Linear(n_in, n_out, bias=False), generator).weight.detach()
            for name, (n_in, n_out) in sizes.items()
        }
    elif isinstance(projections, Mapping):
        mats = {name: torch.as_tensor(projections[name]).detach().clone() for name in sizes if name in projections}
        shapes = {name: tuple(m.shape) for name, m in mats.items()}
        if shapes != {name: (n_out, n_in) for name, (n_in, n_out) in sizes.items()}:
            raise AttnvizError("given_projections", sizes=sizes, shapes=short(shapes, 200))
    else:
        raise AttnvizError("projections_kind", value=short(repr(projections)))
    return {name: m.to(dtype) for name, m in mats.items()}


def head_counts(*sizes: int, limit: int) -> list[int]:
    """The numbers of heads, up to `limit`, that split every one of `sizes` evenly."""
    return [h for h in range(1, limit + 1) if all(size % h == 0 for size in sizes)]


def head_rows(rows: int, head: int, heads: int) -> range:
    """The rows of a projection matrix (W_q, W_k or W_v, `rows` of them) that make head `head`'s features: the
    heads split each matrix into equal blocks of rows, in order (as `split_heads` splits the features)."""
    width = rows // heads
    return range(head * width, (head + 1) * width)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(B, T, h * s) -> (B, h, T, s)."""
    batch, length, width = x.shape
    return x.reshape(batch, length, num_heads, width // num_heads).transpose(1, 2)


def check_heads(num_heads: Any, *sizes: tuple[str, int]) -> None:
    """Raise an AttnvizError unless `num_heads` is a whole number >= 1 that splits each (name, size) evenly."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise AttnvizError("whole_from", name="num_heads", low=1, value=short(repr(num_heads)))
    for name, size in sizes:
        if size % num_heads:
            raise AttnvizError("heads", heads=num_heads, name=Name(name), size=size)


def project(x: Tensor, W: Tensor, name: str) -> Tensor:
    """x @ Wᵀ, (B, T, in) -> (B, T, out), checked finite: large inputs can overflow."""
    projected = x @ W.T  # (B, T, in) @ (in, out) -> (B, T, out)
    check_finite(projected, f"projected {name}")
    return projected


def batched_lens(valid_lens: Any, batched: bool) -> Any:
    """Valid lengths of one sequence with the batch axis added, (1,) or (1, Q), as the heads' batched inputs take
    them; batched inputs' lengths as they are."""
    if valid_lens is None or batched:
        return valid_lens
    lens = torch.as_tensor(valid_lens)
    return lens.reshape(1) if lens.dim() == 0 else lens[None]


def join_heads(
    inputs: tuple[Tensor, Tensor, Tensor],
    mats: dict[str, Tensor],
    heads: list[AttentionTrace],
    *,
    weights: Tensor,
    mean_weights: Tensor,
    concat: Tensor,
    delta: Tensor,
    residual: bool,
    projections: str | Mapping[str, Tensor],
) -> MultiHeadTrace:
    """The batched trace of multi-head attention on `inputs` (B, Q, d), (B, K, d_k), (B, K, v), from the heads'
    traces, their weights (B, h, Q, K) and mean (B, Q, K), their outputs side by side `concat` (B, Q, v) and
    `delta` = concat @ W_oᵀ (B, Q, v); the queries are added to delta when `residual` (their widths must match)."""
    q, k, v = inputs
    if residual and delta.shape[-1] != q.shape[-1]:
        raise AttnvizError("residual", query=q.shape[-1], value=v.shape[-1])
    return MultiHeadTrace(
        queries=q,
        keys=k,
        values=v,
        heads=heads,
        weights=weights,
        mean_weights=mean_weights,
        concat=concat,
        delta=delta,
        output=q + delta if residual else delta,  # (B, Q, d) + (B, Q, v), d == v
        residual=bool(residual),
        projections=projections if isinstance(projections, str) else "given",
        **mats,
    )


def multi_head_attend(
    queries: Any,
    keys: Any,
    values: Any,
    *,
    num_heads: int = 1,
    projections: str | Mapping[str, Tensor] = "identity",
    proj_seed: int = 0,
    score: Any = "scaled_dot",
    valid_lens: Any = None,
    causal: bool = False,
    temperature: float = 1.0,
    residual: bool = False,
    **score_params: Any,
) -> MultiHeadTrace:
    """Multi-head attention with identity or seeded random projections, every head traced."""
    q, k, v, batched = prepare_inputs(queries, keys, values)  # (B, Q, d), (B, K, d_k), (B, K, v)
    d_q, d_k, d_v = q.shape[-1], k.shape[-1], v.shape[-1]
    check_heads(num_heads, ("query_size", d_q), ("key_size", d_k), ("value_size", d_v))
    mats = projection_matrices(d_q, d_k, d_v, projections, proj_seed, dtype=q.dtype)
    q_proj, k_proj, v_proj = (
        project(q, mats["W_q"], "queries"),
        project(k, mats["W_k"], "keys"),
        project(v, mats["W_v"], "values"),
    )
    q_heads, k_heads, v_heads = (split_heads(t, num_heads) for t in (q_proj, k_proj, v_proj))  # (B, h, T, s)
    lens = batched_lens(valid_lens, batched)
    heads = [
        attend(
            q_heads[:, h],  # (B, Q, s): head h's features
            k_heads[:, h],
            v_heads[:, h],
            score=score,
            valid_lens=lens,
            causal=causal,
            temperature=temperature,
            **score_params,
        )
        for h in range(num_heads)
    ]
    weights = torch.stack([head.weights for head in heads], dim=1)  # h × (B, Q, K) -> (B, h, Q, K)
    concat = torch.cat([head.output for head in heads], dim=-1)  # h × (B, Q, s) -> (B, Q, v)
    trace = join_heads(
        (q, k, v),
        mats,
        heads,
        weights=weights,
        mean_weights=weights.mean(dim=1),  # (B, h, Q, K) -> (B, Q, K)
        concat=concat,
        delta=concat @ mats["W_o"].T,  # (B, Q, v) @ (v, v) -> (B, Q, v)
        residual=residual,
        projections=projections,
    )
    return trace if batched else trace.batch_row(0)


def self_attention(x: Any, **kwargs: Any) -> MultiHeadTrace:
    """Self-attention: queries, keys and values are all the sequence `x`."""
    return multi_head_attend(x, x, x, **kwargs)


def cross_attention(queries: Any, source: Any, *, residual: bool = False, **kwargs: Any) -> MultiHeadTrace:
    """Cross-attention: `queries` (e.g. a target sentence) attend over `source`, which gives keys and values."""
    return multi_head_attend(queries, source, source, residual=residual, **kwargs)


class MultiHeadAttention(nn.Module):
    """d2l's multi-head attention: W_q, W_k, W_v, W_o and scaled dot-product attention per head."""

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = False,
        *,
        query_size: int | None = None,
        key_size: int | None = None,
        value_size: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if num_hiddens % num_heads:
            raise AttnvizError("heads_hiddens", heads=num_heads, hiddens=num_hiddens)
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)

        def linear(size: int | None) -> nn.Module:
            return nn.LazyLinear(num_hiddens, bias=bias) if size is None else nn.Linear(size, num_hiddens, bias=bias)

        self.W_q, self.W_k, self.W_v = linear(query_size), linear(key_size), linear(value_size)
        self.W_o = (
            nn.LazyLinear(num_hiddens, bias=bias)
            if value_size is None
            else nn.Linear(num_hiddens, num_hiddens, bias=bias)
        )

    def transpose_qkv(self, X: Tensor) -> Tensor:
        """(B, T, num_hiddens) -> (B * h, T, num_hiddens / h), as in d2l."""
        X = split_heads(X, self.num_heads)  # (B, h, T, s)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X: Tensor) -> Tensor:
        """(B * h, T, s) -> (B, T, h * s), as in d2l."""
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2]).transpose(1, 2)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def forward(
        self,
        queries: Tensor,
        keys: Tensor,
        values: Tensor,
        valid_lens: Tensor | None = None,
        head_mask: Tensor | None = None,
    ) -> Tensor:
        """(B, Q, d_q), (B, K, d_k), (B, K, d_v) -> (B, Q, num_hiddens). `head_mask` (h,) of 0/1 switches heads
        off: a head's weights are still computed, its output is not used (ablation)."""
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            # One copy of each batch row's lengths per head, matching the (B * h) layout.
            valid_lens = torch.repeat_interleave(torch.as_tensor(valid_lens), repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)  # (B * h, Q, s)
        if head_mask is not None:
            rows, width = output.shape[1], output.shape[2]
            heads = output.reshape(-1, self.num_heads, rows, width) * head_mask[None, :, None, None]  # (B, h, Q, s)
            output = heads.reshape(-1, rows, width)
        return self.W_o(self.transpose_output(output))

    @property
    def attention_weights(self) -> Tensor:
        """Per-head weights of the last forward pass: (B, h, Q, K)."""
        weights = self.attention.attention_weights
        return weights.reshape(-1, self.num_heads, weights.shape[1], weights.shape[2])
