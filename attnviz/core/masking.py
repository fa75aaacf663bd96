"""Masks and the masked softmax: which keys a query may look at, and how weights are normalised."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import as_float_tensor, check_finite
from attnviz.core.errors import AttnvizError, short


def _lens_tensor(valid_lens: Any) -> Tensor:
    """Read valid lengths as a tensor, rejecting non-numbers and non-integers with their index."""
    try:
        lens = torch.as_tensor(valid_lens)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise AttnvizError("lens_unreadable", value=short(repr(valid_lens))) from exc
    if lens.dtype == torch.bool or lens.is_complex():
        raise AttnvizError("lens_dtype", dtype=lens.dtype)
    if lens.is_floating_point():
        bad = ~torch.isfinite(lens) | (lens != torch.round(lens))
        if bool(bad.any()):
            index = tuple(int(i) for i in bad.nonzero()[0])
            where = list(index) if len(index) != 1 else index[0]
            raise AttnvizError("lens_whole", value=lens[index].item(), index=where)
    return lens.to(torch.long)


def lens_to_mask(valid_lens: Any, batch: int, num_queries: int, num_keys: int) -> Tensor:
    """Boolean mask (B, Q, K), True where key index < valid length; validates `valid_lens`."""
    lens = _lens_tensor(valid_lens)
    per_query = lens.dim() == 2
    if lens.dim() == 1:
        if lens.shape[0] != batch:
            raise AttnvizError("lens_batch", count=lens.shape[0], batch=batch, queries=num_queries)
        lens = lens[:, None].expand(batch, num_queries)  # (B, Q)
    elif lens.dim() == 2:
        if tuple(lens.shape) != (batch, num_queries):
            raise AttnvizError("lens_shape", shape=tuple(lens.shape), batch=batch, queries=num_queries)
    else:
        raise AttnvizError("lens_dims", shape=tuple(lens.shape))
    below = lens < 0
    for bad in (below, lens > num_keys):
        if bool(bad.any()):
            index = tuple(int(i) for i in bad.nonzero()[0])
            where = list(index) if per_query else index[0]
            raise AttnvizError(
                "len_negative" if bad is below else "len_keys", length=lens[index].item(), index=where, keys=num_keys
            )
    positions = torch.arange(num_keys)  # (K,)
    return positions[None, None, :] < lens[:, :, None]  # (B, Q, K)


def causal_mask(num_queries: int, num_keys: int) -> Tensor:
    """(Q, K) mask, True where key j <= query i (top-left aligned, like `is_causal=True`)."""
    return torch.ones(num_queries, num_keys, dtype=torch.bool).tril()


def softmax_where(logits: Tensor, mask: Tensor | None, temperature: float = 1.0) -> Tensor:
    """Softmax of `logits / temperature` over allowed positions; rows with none allowed are all 0.

    The row maximum is subtracted *before* dividing by the temperature, so huge scores and tiny
    temperatures never overflow: the largest allowed entry always becomes exp(0) = 1.
    """
    lowest = torch.finfo(logits.dtype).min
    filled = logits if mask is None else torch.where(mask, logits, lowest)  # (..., Q, K)
    shifted = (filled - filled.amax(dim=-1, keepdim=True)) / temperature  # <= 0 on allowed entries
    exps = torch.exp(shifted)
    if mask is not None:
        exps = torch.where(mask, exps, 0.0)  # masked keys get no weight
    # totals >= 1 on any row with an allowed key (its largest entry is exp(0)); a row with none sums to 0 and
    # stays 0 (0 / 1), and a row made NaN by infinite scores becomes 0 too.
    totals = exps.sum(dim=-1, keepdim=True)  # (..., Q, 1)
    return torch.nan_to_num(exps / totals.clamp_min(1.0), nan=0.0)


def masked_softmax(scores: Any, valid_lens: Any = None) -> Tensor:
    """Softmax over the last axis, keeping only the first `valid_lens` keys (d2l's signature)."""
    scores = as_float_tensor(scores, "scores")
    check_finite(scores, "scores")
    if valid_lens is None:
        return softmax_where(scores, None)
    if scores.dim() != 3:
        raise AttnvizError("scores_3d", shape=tuple(scores.shape))
    batch, num_queries, num_keys = scores.shape
    mask = lens_to_mask(valid_lens, batch, num_queries, num_keys)
    return softmax_where(scores, mask)


def sequence_mask(X: Tensor, valid_len: Tensor, value: float = 0.0) -> Tensor:
    """d2l's helper: set entries of X (N, K) at positions >= valid_len (N,) to `value`."""
    maxlen = X.size(1)
    keep = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X = X.clone()
    X[~keep] = value
    return X
