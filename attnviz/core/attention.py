"""`attend`, the one function every page calls, and d2l's attention modules on top of it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from attnviz.core._validate import as_float_tensor, check_finite, check_nonempty, check_positive, common_dtype
from attnviz.core.errors import AttnvizError, short
from attnviz.core.masking import causal_mask, lens_to_mask, softmax_where
from attnviz.core.scores import LearnedScore, additive_scores, check_params, get_score, seeded_module
from attnviz.core.trace import AttentionTrace


def _input(data: Any, name: str) -> Tensor:
    """One of attend's inputs as a floating tensor, 2-D or 3-D, not empty, finite; else an AttnvizError."""
    tensor = as_float_tensor(data, name)
    if tensor.dim() not in (2, 3):
        axes = "(Q, d)" if name == "queries" else "(K, d)" if name == "keys" else "(K, v)"
        raise AttnvizError(
            "input_shape", name=name, axes=axes, rest=axes[1:-1], shape=tuple(tensor.shape), dims=tensor.dim()
        )
    check_nonempty(tensor, name)
    check_finite(tensor, name)
    return tensor


def prepare_inputs(queries: Any, keys: Any, values: Any) -> tuple[Tensor, Tensor, Tensor, bool]:
    """Validate (Q, d)/(K, d_k)/(K, v) or batched inputs; return 3-D tensors and whether they were batched."""
    q, k, v = _input(queries, "queries"), _input(keys, "keys"), _input(values, "values")
    return match_inputs(q, k, v)


def match_inputs(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor, bool]:
    """Inputs already read and checked one by one (2-D or 3-D, finite) as (B, Q, d), (B, K, d_k), (B, K, v) of
    one floating dtype, and whether they were batched; an AttnvizError when their sizes do not fit together."""
    if not q.dim() == k.dim() == v.dim():
        raise AttnvizError("input_dims", queries=tuple(q.shape), keys=tuple(k.shape), values=tuple(v.shape))
    batched = q.dim() == 3
    if not batched:
        q, k, v = q[None], k[None], v[None]  # (T, d) -> (1, T, d)
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        raise AttnvizError("batch_sizes", queries=q.shape[0], keys=k.shape[0], values=v.shape[0])
    if k.shape[1] != v.shape[1]:
        raise AttnvizError("kv_items", keys=k.shape[1], values=v.shape[1])
    dtype = common_dtype(q, k, v)
    return q.to(dtype), k.to(dtype), v.to(dtype), batched


def build_mask(
    valid_lens: Any, causal: bool, batch: int, num_queries: int, num_keys: int, batched: bool = True
) -> Tensor:
    """Combine valid lengths and the causal mask into one (B, Q, K) boolean mask."""
    mask = torch.ones(batch, num_queries, num_keys, dtype=torch.bool)
    if valid_lens is not None:
        lens = valid_lens
        if not batched:
            # Unbatched: an int applies to every query, a 1-D tensor gives one length per query.
            lens = torch.as_tensor(valid_lens)
            lens = lens.reshape(1) if lens.dim() == 0 else lens.unsqueeze(0)
        mask &= lens_to_mask(lens, batch, num_queries, num_keys)
    if causal:
        mask &= causal_mask(num_queries, num_keys)
    return mask


class Scored(NamedTuple):
    """What a score function made of (B, Q, d) queries and (B, K, d_k) keys."""

    name: str  # the score's name, as the trace shows it
    params: dict[str, Any]  # its checked parameters
    scores: Tensor  # (B, Q, K) raw a(q, k)
    scale: float  # 1/sqrt(d) for a scaled score, else 1
    features: dict[
        str, Tensor
    ]  # a learned score's intermediates for show-your-work (`LearnedScore.score_and_features`)


def score_pairs(score: Any, q: Tensor, k: Tensor, params: dict[str, Any]) -> Scored:
    """Score every query against every key with `score`: a registered name with its `params`, or a score module."""
    if isinstance(score, nn.Module):
        if params:
            raise AttnvizError("module_params", params=short(", ".join(sorted(params))))
        name = getattr(score, "score_name", None)
        if not hasattr(score, "score") or not name:
            raise AttnvizError("module_score", module=type(score).__name__)
        try:
            with torch.no_grad():
                if isinstance(score, LearnedScore):
                    scores, features = score.score_and_features(q, k)
                else:
                    scores, features = score.score(q, k), {}
        except RuntimeError as exc:
            raise AttnvizError("module_fit", score=name, query=q.shape[-1], key=k.shape[-1]) from exc
        return Scored(name, dict(getattr(score, "params", {})), scores, 1.0, features)
    spec = get_score(score)
    checked = check_params(params, spec.params, f"score {spec.name!r}")
    if spec.same_dim and q.shape[-1] != k.shape[-1]:
        raise AttnvizError("same_size", score=spec.name, query=q.shape[-1], key=k.shape[-1])
    if spec.module is not None:
        module = seeded_module(spec.name, q.shape[-1], k.shape[-1], checked, q.dtype)
        with torch.no_grad():
            scores, features = module.score_and_features(q, k)
    else:
        scores, features = spec.fn(q, k, **checked), {}
    return Scored(spec.name, checked, scores, spec.scale(q.shape[-1]), features)


def finite_logits(logits: Tensor) -> Tensor:
    """`logits` with ±inf clamped to the dtype's largest finite numbers, as the trace shows them."""
    big = torch.finfo(logits.dtype).max
    return torch.nan_to_num(logits, posinf=big, neginf=-big)


def lens_tensor(valid_lens: Any) -> Tensor | None:
    """Valid lengths as the trace keeps them: a tensor of whole numbers, or None."""
    return None if valid_lens is None else torch.as_tensor(valid_lens).to(torch.long)


def attend(
    queries: Any,
    keys: Any,
    values: Any,
    *,
    score: Any = "scaled_dot",
    valid_lens: Any = None,
    causal: bool = False,
    temperature: float = 1.0,
    mask: Any = None,
    bias: Any = None,
    **score_params: Any,
) -> AttentionTrace:
    """Attention pooling of `values` by how well each query scores against each key, fully traced.

    `mask` (Q, K) or (B, Q, K) bool, True where a query may attend, narrows what valid lengths and `causal` allow
    (a sliding window, a prefix); `bias` (Q, K) or (B, Q, K) is added to the scaled scores before the softmax
    (ALiBi's distance penalty)."""
    q, k, v, batched = prepare_inputs(queries, keys, values)  # (B, Q, d), (B, K, d_k), (B, K, v)
    temperature = check_positive(temperature, "temperature")
    allowed = allowed_pairs(valid_lens, causal, mask, q, k, batched)  # (B, Q, K)
    scored = score_pairs(score, q, k, score_params)
    scaled = scored.scores * scored.scale  # (B, Q, K)
    added = None if bias is None else pair_bias(bias, scaled)  # (B, Q, K)
    if added is not None:
        check_finite(added, "bias")
        scaled = scaled + added
    weights = softmax_where(scaled, allowed, temperature)  # (B, Q, K)
    output = weights @ v  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
    trace = AttentionTrace(
        queries=q,
        keys=k,
        values=v,
        scores=scored.scores,
        logits=finite_logits(scaled / temperature),
        mask=allowed,
        weights=weights,
        output=output,
        score=scored.name,
        score_params=scored.params,
        scale=scored.scale,
        temperature=temperature,
        causal=bool(causal),
        bias=added,
        features=scored.features,
    )
    if not batched:
        trace = trace.batch_row(0)  # (1, Q, K) -> (Q, K), and so on
    return replace(trace, valid_lens=lens_tensor(valid_lens))


def _pairwise(data: Any, name: str, batch: int, num_queries: int, num_keys: int) -> Tensor:
    """A (Q, K) or (B, Q, K) mask or bias, as (B, Q, K)."""
    tensor = torch.as_tensor(data)
    if tensor.dim() not in (2, 3) or tuple(tensor.shape[-2:]) != (num_queries, num_keys):
        raise AttnvizError("pair_shape_batch", name=name, queries=num_queries, keys=num_keys, shape=tuple(tensor.shape))
    if tensor.dim() == 3 and tensor.shape[0] not in (1, batch):
        raise AttnvizError("batch_rows", name=name, count=tensor.shape[0], batch=batch)
    return tensor.expand(batch, num_queries, num_keys)


def allowed_pairs(valid_lens: Any, causal: bool, mask: Any, q: Tensor, k: Tensor, batched: bool) -> Tensor:
    """(B, Q, K) bool, True where a query may attend: valid lengths, the causal mask and `mask` (or None) combined,
    for queries (B, Q, d) and keys (B, K, d_k)."""
    batch, num_queries, num_keys = q.shape[0], q.shape[1], k.shape[1]
    allowed = build_mask(valid_lens, bool(causal), batch, num_queries, num_keys, batched)
    if mask is not None:
        allowed = allowed & _pairwise(mask, "mask", batch, num_queries, num_keys).to(torch.bool)
    return allowed


def pair_bias(bias: Any, scores: Tensor) -> Tensor:
    """A (Q, K) or (B, Q, K) bias as (B, Q, K) in the dtype of the (B, Q, K) `scores` it is added to."""
    return _pairwise(bias, "bias", *scores.shape).to(scores.dtype)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention with d2l's interface (dropout on the weights in training)."""

    def __init__(self, dropout: float, num_heads: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)
        self.num_heads = num_heads  # accepted for d2l compatibility; heads are split by MultiHeadAttention

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        """(B, Q, d), (B, K, d), (B, K, v) -> (B, Q, v); stores `.attention_weights` (B, Q, K)."""
        q, k, v, _ = prepare_inputs(queries, keys, values)
        mask = build_mask(valid_lens, False, q.shape[0], q.shape[1], k.shape[1])
        scale = 1.0 / q.shape[-1] ** 0.5
        scores = q @ k.transpose(1, 2)  # (B, Q, K), differentiable
        self.attention_weights = softmax_where(scores * scale, mask)
        self.trace = _module_trace(q, k, v, scores, scale, mask, self.attention_weights, "scaled_dot", {}, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), v)


class AdditiveAttention(nn.Module):
    """Bahdanau's additive attention with d2l's constructor, attributes and forward."""

    score_name = "additive"

    def __init__(self, key_size: int, query_size: int, num_hiddens: int, dropout: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.params = {"num_hiddens": num_hiddens}

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        """Raw additive scores (B, Q, K) with this module's weights."""
        return additive_scores(queries, keys, self.W_q, self.W_k, self.w_v)

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        """(B, Q, d_q), (B, K, d_k), (B, K, v) -> (B, Q, v); stores `.attention_weights` (B, Q, K)."""
        q, k, v, _ = prepare_inputs(queries, keys, values)
        mask = build_mask(valid_lens, False, q.shape[0], q.shape[1], k.shape[1])
        scores = self.score(q, k)
        self.attention_weights = softmax_where(scores, mask)
        self.trace = _module_trace(
            q, k, v, scores, 1.0, mask, self.attention_weights, "additive", self.params, valid_lens
        )
        return torch.bmm(self.dropout(self.attention_weights), v)


def _module_trace(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scores: Tensor,
    scale: float,
    mask: Tensor,
    weights: Tensor,
    name: str,
    params: dict,
    valid_lens: Any,
) -> AttentionTrace:
    """A detached trace of a module's forward pass (without dropout)."""
    weights = weights.detach()
    return AttentionTrace(
        queries=q.detach(),
        keys=k.detach(),
        values=v.detach(),
        scores=scores.detach(),
        logits=(scores * scale).detach(),
        mask=mask,
        weights=weights,
        output=weights @ v.detach(),
        score=name,
        score_params=dict(params),
        scale=scale,
        valid_lens=lens_tensor(valid_lens),
    )


__all__ = [
    "AdditiveAttention",
    "DotProductAttention",
    "LearnedScore",
    "Scored",
    "allowed_pairs",
    "attend",
    "build_mask",
    "finite_logits",
    "lens_tensor",
    "match_inputs",
    "pair_bias",
    "prepare_inputs",
    "score_pairs",
]
