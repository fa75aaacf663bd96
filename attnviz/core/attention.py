"""`attend`, the one function every page calls, and d2l's attention modules on top of it."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from attnviz.core._validate import (
    as_float_tensor,
    check_finite,
    check_nonempty,
    check_positive,
    common_dtype,
    in_dtype,
)
from attnviz.core.errors import AttnvizError, short
from attnviz.core.masking import causal_mask, lens_to_mask, softmax_where
from attnviz.core.scores import LearnedScore, additive_scores, check_params, get_score, seeded_module
from attnviz.core.trace import AttentionTrace


def prepare_inputs(queries: Any, keys: Any, values: Any) -> tuple[Tensor, Tensor, Tensor, bool]:
    """Validate (Q, d)/(K, d_k)/(K, v) or batched inputs; return 3-D tensors and whether they were batched."""
    tensors = []
    for name, data in (("queries", queries), ("keys", keys), ("values", values)):
        tensor = as_float_tensor(data, name)
        if tensor.dim() not in (2, 3):
            axes = "(Q, d)" if name == "queries" else "(K, d)" if name == "keys" else "(K, v)"
            raise AttnvizError(
                "input_shape", name=name, axes=axes, rest=axes[1:-1], shape=tuple(tensor.shape), dims=tensor.dim()
            )
        check_nonempty(tensor, name)
        check_finite(tensor, name)
        tensors.append(tensor)
    q, k, v = tensors
    if not q.dim() == k.dim() == v.dim():
        raise AttnvizError("input_dims", queries=tuple(q.shape), keys=tuple(k.shape), values=tuple(v.shape))
    batched = q.dim() == 3
    if not batched:
        q, k, v = q[None], k[None], v[None]  # indexing keeps Python's lock; unsqueeze lets it go (item 27)
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        raise AttnvizError("batch_sizes", queries=q.shape[0], keys=k.shape[0], values=v.shape[0])
    if k.shape[1] != v.shape[1]:
        raise AttnvizError("kv_items", keys=k.shape[1], values=v.shape[1])
    dtype = common_dtype(q, k, v)
    return in_dtype(q, dtype), in_dtype(k, dtype), in_dtype(v, dtype), batched


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


def _resolve_score(
    score: Any, q: Tensor, k: Tensor, params: dict[str, Any]
) -> tuple[str, dict, Tensor, float, dict[str, Tensor]]:
    """Compute raw scores (B, Q, K); return the score name, its parameters, the scores, the scale and a learned
    score's intermediates for show-your-work (`LearnedScore.score_and_features`)."""
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
        return name, dict(getattr(score, "params", {})), scores, 1.0, features
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
    return spec.name, checked, scores, spec.scale(q.shape[-1]), features


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
    q, k, v, batched = prepare_inputs(queries, keys, values)
    return attend_prepared(
        q,
        k,
        v,
        batched,
        score=score,
        valid_lens=valid_lens,
        causal=causal,
        temperature=temperature,
        mask=mask,
        bias=bias,
        **score_params,
    )


def attend_prepared(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    batched: bool,
    *,
    score: Any = "scaled_dot",
    valid_lens: Any = None,
    causal: bool = False,
    temperature: float = 1.0,
    mask: Any = None,
    bias: Any = None,
    **score_params: Any,
) -> AttentionTrace:
    """`attend` for inputs that `prepare_inputs` has already made (B, Q, d), (B, K, d_k), (B, K, v) of one floating
    dtype and checked finite: `multi_head_attend` checks its inputs once, not once more per head. Every torch call
    lets another thread take Python's lock, and under a class's load each costs the server far more than its
    arithmetic (bench/README.md, item 19)."""
    temperature = check_positive(temperature, "temperature")
    batch, num_queries, num_keys = q.shape[0], q.shape[1], k.shape[1]
    allowed = build_mask(valid_lens, bool(causal), batch, num_queries, num_keys, batched)
    if mask is not None:
        allowed = allowed & _pairwise(mask, "mask", batch, num_queries, num_keys).to(torch.bool)
    name, params, scores, scale, features = _resolve_score(score, q, k, score_params)
    scaled = scores * scale if scale != 1.0 else scores  # (B, Q, K); x * 1 is x, and a torch call spared (item 27)
    added = None
    if bias is not None:
        added = _pairwise(bias, "bias", batch, num_queries, num_keys).to(scaled.dtype)
        check_finite(added, "bias")
        scaled = scaled + added  # (B, Q, K) + (B, Q, K)
    mask = allowed
    big = torch.finfo(scaled.dtype).max
    logits = torch.nan_to_num(scaled / temperature if temperature != 1.0 else scaled, posinf=big, neginf=-big)
    weights = softmax_where(scaled, mask, temperature)  # (B, Q, K)
    output = weights @ v  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
    lens = None if valid_lens is None else torch.as_tensor(valid_lens).to(torch.long)
    unbatch = (lambda t: t) if batched else (lambda t: t[0])  # the batch axis of one row, without a torch call
    return AttentionTrace(
        queries=unbatch(q),
        keys=unbatch(k),
        values=unbatch(v),
        scores=unbatch(scores),
        logits=unbatch(logits),
        mask=unbatch(mask),
        weights=unbatch(weights),
        output=unbatch(output),
        score=name,
        score_params=params,
        scale=scale,
        temperature=temperature,
        causal=bool(causal),
        valid_lens=lens,
        bias=None if added is None else unbatch(added),
        features={key: unbatch(tensor) for key, tensor in features.items()},
    )


def _pairwise(data: Any, name: str, batch: int, num_queries: int, num_keys: int) -> Tensor:
    """A (Q, K) or (B, Q, K) mask or bias, as (B, Q, K)."""
    tensor = torch.as_tensor(data)
    if tensor.dim() not in (2, 3) or tuple(tensor.shape[-2:]) != (num_queries, num_keys):
        raise AttnvizError("pair_shape_batch", name=name, queries=num_queries, keys=num_keys, shape=tuple(tensor.shape))
    if tensor.dim() == 3 and tensor.shape[0] not in (1, batch):
        raise AttnvizError("batch_rows", name=name, count=tensor.shape[0], batch=batch)
    return tensor.expand(batch, num_queries, num_keys)


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
        valid_lens=None if valid_lens is None else torch.as_tensor(valid_lens).to(torch.long),
    )


__all__ = [
    "AdditiveAttention",
    "DotProductAttention",
    "LearnedScore",
    "attend",
    "attend_prepared",
    "build_mask",
    "prepare_inputs",
]
