"""FlashAttention's idea on the student's numbers: keys in blocks, and a softmax computed online.

For one query row, the keys are taken `block_size` at a time. After each block the row keeps three things: the
largest scaled score seen so far m, the sum of exponentials so far l (each taken relative to m), and the output so
far o (the values weighted by those exponentials, not yet divided by l). When a block brings a larger score, the old
l and o are rescaled by exp(m_old - m_new). After the last block, o / l is exactly softmax attention, without the
row's whole score vector ever being held at once (Dao et al., 2022; Milakov and Gimelshein, 2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import check_finite
from attnviz.core.attention import prepare_inputs
from attnviz.core.errors import AttnvizError, short


@dataclass(frozen=True)
class BlockStep:
    """What one block of keys does to a query row's running maximum, sum and output."""

    block: int  # 0-based
    start: int  # the block's first key
    stop: int  # one past its last key
    scores: Tensor  # (stop - start,) scaled scores; -inf where the mask forbids the key
    block_max: float  # the block's largest score (-inf if every key is masked)
    m_before: float
    m_after: float  # max(m_before, block_max)
    rescale: float  # exp(m_before - m_after): what the old l and o are multiplied by (1 when m did not change)
    exps: Tensor  # (stop - start,) exp(score - m_after); 0 where masked
    l_before: float
    l_after: float  # l_before * rescale + sum(exps)
    o_before: Tensor  # (v,)
    o_after: Tensor  # (v,) o_before * rescale + exps @ V[start:stop]


@dataclass(frozen=True)
class OnlineSoftmaxTrace:
    """A query row's online softmax, block by block, and its result."""

    row: int
    block_size: int
    scale: float
    steps: list[BlockStep]
    output: Tensor  # (v,) o / l after the last block (0 when every key is masked)
    weights: Tensor  # (K,) exp(score - m) / l with the final m and l: the ordinary softmax's weights

    @property
    def rescales(self) -> int:
        """How many blocks raised the running maximum after the first (each rescaled l and o)."""
        return sum(1 for step in self.steps[1:] if step.rescale != 1.0)


def _check_block_size(block_size: Any, num_keys: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise AttnvizError("block_size", size=block_size, keys=num_keys)
    return block_size


def _one_sequence(queries: Any, keys: Any, values: Any, block_size: Any) -> tuple[Tensor, Tensor, Tensor, int]:
    """Checked (Q, d), (K, d), (K, v) tensors of one sequence and the block size."""
    q, k, v, batched = prepare_inputs(queries, keys, values)
    if batched and q.shape[0] != 1:
        raise AttnvizError("one_sequence", batch=q.shape[0])
    return q[0], k[0], v[0], _check_block_size(block_size, k.shape[1])


def _online_row(
    q: Tensor, k: Tensor, v: Tensor, allowed: Tensor, row: int, block_size: int, scale: float, bias: Tensor | None
) -> OnlineSoftmaxTrace:
    """The block-by-block softmax of checked inputs' query `row`, `allowed` (K,) its mask row, `bias` (K,) or None."""
    num_keys = k.shape[0]
    scores = (k @ q[row]) * scale  # (K,)
    if bias is not None:
        scores = scores + bias
    scores = scores.masked_fill(~allowed, -math.inf)
    m, total = -math.inf, 0.0
    out = torch.zeros(v.shape[-1], dtype=v.dtype)
    steps = []
    for index, start in enumerate(range(0, num_keys, block_size)):
        stop = min(start + block_size, num_keys)
        block = scores[start:stop]
        block_max = float(block.max())
        m_new = max(m, block_max)
        rescale = math.exp(m - m_new) if math.isfinite(m_new) else 1.0  # exp(-inf) = 0 on the first real block
        exps = torch.exp(block - m_new) if math.isfinite(m_new) else torch.zeros_like(block)
        new_total = total * rescale + float(exps.sum())
        new_out = out * rescale + exps @ v[start:stop]  # (B,) @ (B, v) -> (v,)
        steps.append(
            BlockStep(index, start, stop, block, block_max, m, m_new, rescale, exps, total, new_total, out, new_out)
        )
        m, total, out = m_new, new_total, new_out
    if total > 0:
        output, weights = out / total, torch.exp(scores - m) / total
    else:  # every key masked: no weights, as attnviz's masked softmax gives
        output, weights = torch.zeros_like(out), torch.zeros_like(scores)
    return OnlineSoftmaxTrace(row, block_size, scale, steps, output, weights)


def _mask_rows(mask: Any, num_queries: int, num_keys: int) -> Tensor:
    """(Q, K) bool, all True when there is no mask."""
    if mask is None:
        return torch.ones(num_queries, num_keys, dtype=torch.bool)
    return torch.as_tensor(mask, dtype=torch.bool).expand(num_queries, num_keys)


def _bias_rows(bias: Any, like: Tensor, num_queries: int, num_keys: int) -> Tensor | None:
    """(Q, K) in the inputs' dtype, or None."""
    if bias is None:
        return None
    tensor = torch.as_tensor(bias).to(like.dtype)
    if tuple(tensor.shape) != (num_queries, num_keys):
        raise AttnvizError("pair_shape", name="bias", queries=num_queries, keys=num_keys, shape=tuple(tensor.shape))
    check_finite(tensor, "bias")
    return tensor


def online_softmax_row(
    queries: Any,
    keys: Any,
    values: Any,
    row: int,
    block_size: int,
    *,
    mask: Any = None,
    scale: float | None = None,
    bias: Any = None,
) -> OnlineSoftmaxTrace:
    """Query `row` of (Q, d) queries over (K, d) keys and (K, v) values, keys taken `block_size` at a time; `mask`
    (Q, K) bool, True where a query may attend; `scale` 1/sqrt(d) by default; `bias` (Q, K) added to the scaled
    scores (ALiBi)."""
    q, k, v, block_size = _one_sequence(queries, keys, values, block_size)
    if not 0 <= row < q.shape[0]:
        raise AttnvizError("index_range", name="row", high=q.shape[0] - 1, value=short(row))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    allowed = _mask_rows(mask, q.shape[0], k.shape[0])[row]
    added = _bias_rows(bias, q, q.shape[0], k.shape[0])
    return _online_row(q, k, v, allowed, row, block_size, scale, None if added is None else added[row])


def flash_attention(
    queries: Any,
    keys: Any,
    values: Any,
    block_size: int,
    *,
    mask: Any = None,
    scale: float | None = None,
    bias: Any = None,
) -> Tensor:
    """Softmax attention (Q, v) computed with keys in blocks and an online softmax, every row (see the module)."""
    q, k, v, block_size = _one_sequence(queries, keys, values, block_size)  # checked once for every row
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    allowed = _mask_rows(mask, q.shape[0], k.shape[0])
    added = _bias_rows(bias, q, q.shape[0], k.shape[0])
    rows = [
        _online_row(q, k, v, allowed[row], row, block_size, scale, None if added is None else added[row]).output
        for row in range(q.shape[0])
    ]
    return torch.stack(rows) if rows else torch.zeros(0, v.shape[-1])


@dataclass(frozen=True)
class Traffic:
    """Numbers read from and written to slow memory (a GPU's HBM) under the simple model of `memory_traffic`."""

    naive: int
    tiled: int
    score_matrix: int  # n x n: what the naive version writes and reads twice, and the tiled one never stores

    @property
    def ratio(self) -> float:
        """naive / tiled."""
        return self.naive / self.tiled


def memory_traffic(n: int, d: int, block_size: int) -> Traffic:
    """Slow-memory traffic of attention over n tokens of size d, counted in numbers, under a simple stated model.

    Naive: read Q and K (2nd), write the scores S (n^2), read S and write the weights P (2n^2), read P and V
    (n^2 + nd), write O (nd): 4nd + 4n^2. Tiled (queries and keys in blocks of `block_size`): each query block is
    read once (nd in all) and reads every key and value block (2nd per query block, ceil(n / B) query blocks);
    O is written once (nd) with each row's m and l (2n): 2nd + 2nd * ceil(n / B) + 2n. Fast memory is assumed to
    hold a block of Q, K, V and O; anything else (caches, recomputation in the backward pass) is left out."""
    if min(n, d, block_size) < 1:
        raise AttnvizError("traffic_sizes", n=n, d=d, block_size=block_size)
    query_blocks = -(-n // block_size)
    naive = 4 * n * d + 4 * n * n
    tiled = 2 * n * d + 2 * n * d * query_blocks + 2 * n
    return Traffic(naive, tiled, n * n)
