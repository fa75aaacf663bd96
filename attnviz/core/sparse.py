"""Masks beyond causal: which pairs a long-context model scores at all. Each is (n, n) bool, True where query i
may attend to key j, and combines with valid lengths through `attend(..., mask=...)`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.core.errors import AttnvizError, short
from attnviz.core.masking import causal_mask

MASK_KINDS = ("causal", "full", "sliding", "local_global", "prefix", "block_sparse")


def _positions(n: int) -> tuple[Tensor, Tensor]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AttnvizError("whole_from", name="n", low=1, value=short(repr(n)))
    return torch.arange(n)[:, None], torch.arange(n)[None, :]  # queries i (n, 1), keys j (1, n)


def _at_least_one(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AttnvizError("whole_from", name=name, low=1, value=short(repr(value)))
    return value


def sliding_window_mask(n: int, window: int) -> Tensor:
    """Causal, and only the last `window` keys: 0 <= i - j < window (Mistral's sliding window)."""
    i, j = _positions(n)
    window = _at_least_one("window", window)
    return (i - j >= 0) & (i - j < window)


def local_global_mask(n: int, window: int, global_tokens: tuple[int, ...] = (0,)) -> Tensor:
    """Longformer's pattern: every token sees its neighbours, |i - j| < window, and the global tokens see and are
    seen by every token (no causal mask: an encoder's)."""
    i, j = _positions(n)
    window = _at_least_one("window", window)
    mask = (i - j).abs() < window
    for token in global_tokens:
        if not 0 <= token < n:
            raise AttnvizError("global_token", token=short(token), last=n - 1)
        mask[token, :] = True
        mask[:, token] = True
    return mask


def prefix_lm_mask(n: int, prefix: int) -> Tensor:
    """A prefix language model's: the first `prefix` tokens see each other both ways, the rest are causal."""
    i, j = _positions(n)
    if isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 0:
        raise AttnvizError("whole_from", name="prefix", low=0, value=short(repr(prefix)))
    return (j <= i) | (j < prefix)


def block_sparse_mask(n: int, block: int) -> Tensor:
    """Causal over blocks of `block` tokens: a query sees keys of its own block, of the block before, and of the
    first block (a global one, as in BigBird and the Sparse Transformer's fixed pattern), never a later key."""
    i, j = _positions(n)
    block = _at_least_one("block", block)
    query_block, key_block = i // block, j // block
    near = (key_block == query_block) | (key_block == query_block - 1) | (key_block == 0)
    return near & (j <= i)


def scheme_mask(
    kind: str, n: int, *, window: int = 3, prefix: int = 0, block: int = 4, global_tokens: tuple[int, ...] = (0,)
) -> Tensor:
    """The (n, n) mask of one of MASK_KINDS with its parameter."""
    _positions(n)  # n checked once, for every kind
    if kind == "causal":
        return causal_mask(n, n)
    if kind == "full":
        return torch.ones(n, n, dtype=torch.bool)
    if kind == "sliding":
        return sliding_window_mask(n, window)
    if kind == "local_global":
        return local_global_mask(n, window, global_tokens)
    if kind == "prefix":
        return prefix_lm_mask(n, prefix)
    if kind == "block_sparse":
        return block_sparse_mask(n, block)
    raise AttnvizError("choice", name="mask", choices=", ".join(MASK_KINDS), value=short(repr(kind)))


@dataclass(frozen=True)
class PairCount:
    """How many (query, key) pairs a mask scores, against all n² and against a causal mask's n(n + 1)/2."""

    scored: int
    total: int
    causal: int

    @property
    def share(self) -> float:
        """scored / n²."""
        return self.scored / self.total


def scored_pairs(mask: Tensor) -> PairCount:
    """The pairs a (n, n) mask (or a mask already narrowed by valid lengths) lets through."""
    n = mask.shape[-1]
    return PairCount(int(mask.sum()), n * n, n * (n + 1) // 2)
