"""What the pretrained-model page shows, computed from a BertTrace: which tokens, one head or an average, the
thumbnails of every head and a head finder. Pure: no Streamlit, no Plotly. (Its exports: attnviz/app/exports.py.)"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from attnviz.models.bert import SPECIAL_TOKENS

if TYPE_CHECKING:
    from attnviz.models.bert import BertTrace

# Cells per side of a model-view thumbnail; longer inputs are max-pooled down to this. A thumbnail is ~65 px wide on a
# laptop screen, so 64 cells lose nothing visible, and a 128-token model view sends a quarter of the data.
MAX_THUMBNAIL = 64

# Head finder: what a head may attend to, for every word token (rows without [CLS]/[SEP]).
PATTERNS = {
    "previous": "the previous token",
    "next": "the next token",
    "self": "itself",
    "cls": "[CLS]",
    "sep": "[SEP]",
}


def token_labels(tokens: list[str], mark: str = "·", start: int = 0) -> list[str]:
    """Tokens as axis labels: a repeated token is marked with its position (from `start`: [CLS] = 0, as the token
    picker counts)."""
    counts = Counter(tokens)
    return [f"{token}{mark}{i + start}" if counts[token] > 1 else token for i, token in enumerate(tokens)]


def token_selection(
    tokens: list[str], type_ids: Tensor, hide_special: bool, part: str = "all"
) -> tuple[list[int], list[int]]:
    """Indices of the query rows and key columns to show.

    `part` only matters for a sentence pair: "ab" keeps sentence A's queries against sentence B's keys, "ba" the
    reverse. [SEP] belongs to the sentence it closes; with `hide_special` [CLS] and [SEP] are left out.
    """
    kept = [i for i, token in enumerate(tokens) if not (hide_special and token in SPECIAL_TOKENS)]
    if part == "all" or int(type_ids.max()) == 0:
        return kept, kept
    first = [i for i in kept if int(type_ids[i]) == 0]
    second = [i for i in kept if int(type_ids[i]) == 1]
    return (first, second) if part == "ab" else (second, first)


def head_weights(trace: BertTrace, layer: int, heads: tuple[int, ...]) -> Tensor:
    """The weights of one head, or the average of several, (T, T). Layer and heads count from 1."""
    chosen = [head - 1 for head in heads]
    return trace.layers[layer - 1].weights[chosen].mean(dim=0)


def head_view(weights: Tensor, rows: list[int], cols: list[int], renormalise: bool = False) -> Tensor:
    """The (rows, cols) block of a weight matrix (..., T, T); with `renormalise`, each row rescaled to sum to 1.

    A row whose shown weights are all 0 stays 0 (nothing to rescale). Every row and column: `weights` itself, not a
    copy (at 1,024 tokens the copy of a model's 72 heads took 0.25 s)."""
    block = weights if rows == list(range(weights.shape[-2])) else weights[..., rows, :]
    block = block if cols == list(range(weights.shape[-1])) else block[..., cols]
    if renormalise:
        total = block.sum(dim=-1, keepdim=True)
        block = torch.where(total > 0, block / total.clamp_min(torch.finfo(block.dtype).tiny), block)
    return block


def thumbnails(
    attentions: Tensor, rows: list[int], cols: list[int], renormalise: bool = False, size: int = MAX_THUMBNAIL
) -> tuple[Tensor, bool]:
    """Every head's (rows, cols) view, (L, h, r, c), max-pooled to at most `size` per side; and whether pooled.

    Max-pooling keeps a sharp pattern (a diagonal, one column) visible where averaging would wash it out."""
    views = head_view(attentions, rows, cols, renormalise)  # (L, h, r, c)
    layers, heads, r, c = views.shape
    if r <= size and c <= size:
        return views, False
    pooled = F.adaptive_max_pool2d(views.reshape(layers * heads, r, c), (min(r, size), min(c, size)))
    return pooled.reshape(layers, heads, *pooled.shape[-2:]), True


def pooled_labels(labels: list[str], size: int) -> list[str]:
    """Labels for `size` max-pooled bins over `labels`, as adaptive pooling cuts them ("cat … mat" for a bin)."""
    count = len(labels)
    if count <= size:
        return list(labels)
    bins = []
    for i in range(size):
        start, end = (i * count) // size, -(-((i + 1) * count) // size)  # floor and ceiling, as PyTorch does
        bins.append(labels[start] if end - start == 1 else f"{labels[start]} … {labels[end - 1]}")
    return bins


def find_heads(trace: BertTrace) -> list[tuple[str, int, int, float]]:
    """For each pattern, the head that gives it the most weight on average over the word tokens.

    Returns (pattern, layer, head, mean weight) with layer and head counted from 1."""
    attentions = trace.attentions  # (L, h, T, T)
    tokens, length = trace.tokens, len(trace.tokens)
    words = [i for i, token in enumerate(tokens) if token not in SPECIAL_TOKENS]
    if not words:
        return []
    index = torch.tensor(words)
    targets = {
        "previous": [(i, i - 1) for i in words if i >= 1],
        "next": [(i, i + 1) for i in words if i + 1 < length],
        "self": [(i, i) for i in words],
    }
    found = []
    for pattern in PATTERNS:
        if pattern in targets:
            pairs = targets[pattern]
            rows, cols = torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])
            score = attentions[..., rows, cols].mean(dim=-1)  # (L, h)
        else:
            special = "[CLS]" if pattern == "cls" else "[SEP]"
            columns = [j for j, token in enumerate(tokens) if token == special]
            score = attentions[..., index, :][..., columns].sum(dim=-1).mean(dim=-1)  # (L, h)
        best = int(score.argmax())
        layer, head = divmod(best, score.shape[1])
        found.append((pattern, layer + 1, head + 1, float(score.flatten()[best])))
    return found
