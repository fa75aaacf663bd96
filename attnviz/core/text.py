"""Text -> tokens -> deterministic embeddings, so sentence demos work offline."""

from __future__ import annotations

import functools
import hashlib
import re

import torch
from torch import Tensor

from attnviz.core.errors import AttnvizError, Name, short

MAX_TOKENS = 512

# One CJK character per token (Han, kana, Hangul, CJK punctuation); a word is letters/digits with
# inner apostrophes or hyphens; anything else that is not a space is a punctuation token of its own.
_CJK = (
    r"\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    r"\uff00-\uffef\uac00-\ud7af\U00020000-\U0002fa1f"
)
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+(?:['’\-](?:(?![{_CJK}])[^\W_])+)*|[^\s]")


def tokenize(sentence: str, max_tokens: int = MAX_TOKENS) -> list[str]:
    """Split a sentence into words, punctuation marks and single CJK characters."""
    if not isinstance(sentence, str):
        raise AttnvizError("text_type", name=Name("sentence"), type=type(sentence).__name__)
    tokens = _TOKEN.findall(sentence)
    if not tokens:
        raise AttnvizError("sentence_empty")
    if len(tokens) > max_tokens:
        raise AttnvizError("sentence_long", count=len(tokens), limit=max_tokens)
    return tokens


def _token_seed(token: str, seed: int) -> int:
    """A stable 63-bit seed from the token text and the user's seed (not Python's salted hash)."""
    digest = hashlib.blake2b(f"{seed}\x00{token.casefold()}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


@functools.lru_cache(maxsize=8192)
def _token_vector(token: str, dim: int, seed: int) -> Tensor:
    """One token's vector (dim,): drawn once, then served from the cache (callers only ever copy it)."""
    generator = torch.Generator().manual_seed(_token_seed(token, seed))
    return torch.randn(dim, generator=generator) / dim**0.5


def embed_tokens(tokens: list[str], dim: int = 8, seed: int = 0, normalize: bool = False) -> Tensor:
    """Deterministic N(0, 1/dim) vectors per token: same token, dim and seed -> same row. (n, dim)."""
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 4096:
        raise AttnvizError("whole_range", name="dim", low=1, high=4096, value=short(repr(dim)))
    if not tokens:
        raise AttnvizError("no_tokens")
    embeddings = torch.stack([_token_vector(str(token), dim, int(seed)) for token in tokens])  # (n, dim), a copy
    if normalize:
        embeddings = torch.nn.functional.normalize(embeddings, dim=-1)
    return embeddings
