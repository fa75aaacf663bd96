"""The server's fast path: the attention, kernel and modern pages' computations with fewer torch calls, the same
results.

Why. Each tensor operation lets go of Python's lock (the GIL), and under a class's load (30 sessions on two cores)
every hand-over between threads costs the server more than the arithmetic of eight tokens: the self page's attention
took 2.7 ms of server CPU a rerun at 30 users against 0.3 ms alone (CHANGELOG.md, Performance history, 2026-11-24).
So here the pages' computations make the calls the maths needs and no other.

`attnviz.core` is the reference, written to read like the maths; library users and notebooks get it. The app calls
this module instead (attnviz/app/pipeline.py, and the modern page's attnviz/app/ui/modern_compute.py). Each function
takes the core namesake's arguments, returns what it returns, field for field and bit for bit, and raises the same
errors: tests/test_fastpath.py compares the two over 2,592 multi-head cases (both dtypes, nine scores, one and two
heads, identity and random projections, no mask, valid lengths and a causal mask, three temperatures, with the
residual or not, batched or not), `attend` with masks and biases, the modern layer in every position scheme, and
64 kernel cases. (One difference `torch.equal` does not see: where an input holds -0.0, the core's x @ I gives +0.0
and this path keeps -0.0.)

What is spared, each against the core's plain step:
- inputs are checked finite once, not again in each head's `attend`; up to 500 numbers by NumPy, which keeps
  Python's lock for so few (it lets go above 500). Anything unusual (not floating point, a wrong shape, empty, not
  finite) goes to the core, which says what is wrong;
- identity projections leave the inputs as they are (x @ I is x), and one head is the whole width: no split, stack,
  concatenation or mean over one head;
- a scale or a temperature of 1 multiplies or divides nothing.
Tensor operations a computation makes, the core's and this path's (tests/torchcalls.py; indexing and getters left
out): the self page's default trace 58 and 22, the kernel page's query points and curve 34 and 28, the modern page's
grouped-query layer (4 heads over 2, RoPE, a window) 190 and 158.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from attnviz.core import attention as plain_attention
from attnviz.core import kernel as plain_kernel
from attnviz.core import modern as plain_modern
from attnviz.core import multihead as plain_multihead
from attnviz.core._validate import as_float_tensor, check_finite, check_positive
from attnviz.core.attention import (
    allowed_pairs,
    finite_logits,
    lens_tensor,
    match_inputs,
    pair_bias,
    prepare_inputs,
    score_pairs,
)
from attnviz.core.errors import AttnvizError
from attnviz.core.kernel import get_kernel, kernel_regression
from attnviz.core.modern import ModernTrace, layer_inputs, layer_trace
from attnviz.core.multihead import (
    MultiHeadTrace,
    batched_lens,
    check_heads,
    join_heads,
    projection_matrices,
    split_heads,
)
from attnviz.core.trace import AttentionTrace

# NumPy computes on up to this many numbers without letting go of Python's lock (measured: it lets go above 500).
NUMPY_KEEPS_LOCK = 500


def _finite(tensor: Tensor) -> bool:
    """Whether every entry is finite: by NumPy on a small float32 or float64 CPU tensor, else by torch."""
    small = tensor.numel() <= NUMPY_KEEPS_LOCK and tensor.dtype in (torch.float32, torch.float64)
    if small and tensor.device.type == "cpu" and not tensor.is_neg():
        return bool(np.isfinite(tensor.detach().numpy()).all())
    return bool(torch.isfinite(tensor).all())


def _check_finite(tensor: Tensor, name: str) -> None:
    """The core's `check_finite`, which names the first bad entry, asked only when `_finite` finds one."""
    if not _finite(tensor):
        check_finite(tensor, name)


def _checked(data: Any, dims: tuple[int, ...]) -> Tensor | None:
    """`data` as the core reads it (a floating tensor), when it has `dims` axes, is not empty and is finite; None
    when anything is wrong with it, for the core to say what."""
    try:
        tensor = as_float_tensor(data, "")
    except AttnvizError:
        return None
    if tensor.dim() not in dims or tensor.numel() == 0 or not _finite(tensor):
        return None
    return tensor


def _prepare(queries: Any, keys: Any, values: Any) -> tuple[Tensor, Tensor, Tensor, bool]:
    """The core's `prepare_inputs`, its inputs checked finite by `_finite`."""
    tensors = [_checked(data, (2, 3)) for data in (queries, keys, values)]
    if any(tensor is None for tensor in tensors):
        return prepare_inputs(queries, keys, values)  # raises the error the core gives
    return match_inputs(*tensors)


class _Head(NamedTuple):
    """What one attention is asked, as `attend` takes it."""

    score: Any
    valid_lens: Any
    causal: bool
    temperature: Any
    score_params: dict[str, Any]
    mask: Any = None
    bias: Any = None
    batched: bool = True  # False: the inputs were one sequence, given the batch axis by `_prepare`


def _softmax(logits: Tensor, mask: Tensor, temperature: float) -> Tensor:
    """The core's `softmax_where` with a mask, dividing by the temperature only when it is not 1."""
    filled = torch.where(mask, logits, torch.finfo(logits.dtype).min)  # (B, Q, K)
    shifted = filled - filled.amax(dim=-1, keepdim=True)
    if temperature != 1.0:
        shifted = shifted / temperature
    exps = torch.where(mask, torch.exp(shifted), 0.0)
    return torch.nan_to_num(exps / exps.sum(dim=-1, keepdim=True).clamp_min(1.0), nan=0.0)


def _attend_head(q: Tensor, k: Tensor, v: Tensor, head: _Head) -> AttentionTrace:
    """The core's `attend` on (B, Q, d), (B, K, d_k), (B, K, v) already checked: no check again, a bias checked by
    `_finite`, and a scale or temperature of 1 multiplies or divides nothing."""
    temperature = check_positive(head.temperature, "temperature")
    allowed = allowed_pairs(head.valid_lens, head.causal, head.mask, q, k, head.batched)  # (B, Q, K)
    scored = score_pairs(head.score, q, k, head.score_params)
    scaled = scored.scores if scored.scale == 1.0 else scored.scores * scored.scale
    added = None if head.bias is None else pair_bias(head.bias, scaled)
    if added is not None:
        _check_finite(added, "bias")
        scaled = scaled + added
    weights = _softmax(scaled, allowed, temperature)
    trace = AttentionTrace(
        queries=q,
        keys=k,
        values=v,
        scores=scored.scores,
        logits=finite_logits(scaled if temperature == 1.0 else scaled / temperature),
        mask=allowed,
        weights=weights,
        output=weights @ v,  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
        score=scored.name,
        score_params=scored.params,
        scale=scored.scale,
        temperature=temperature,
        causal=bool(head.causal),
        bias=added,
        features=scored.features,
    )
    return replace(trace if head.batched else trace.batch_row(0), valid_lens=lens_tensor(head.valid_lens))


_ATTEND = inspect.signature(plain_attention.attend)


def attend(queries: Any, keys: Any, values: Any, **options: Any) -> AttentionTrace:
    """The core's `attend` (attnviz.core.attention), the same trace with fewer torch calls; the core's arguments,
    bound to its signature."""
    call = _ATTEND.bind(queries, keys, values, **options)
    call.apply_defaults()
    given = call.arguments
    q, k, v, batched = _prepare(queries, keys, values)
    asked = {name: given[name] for name in ("valid_lens", "causal", "temperature", "score_params", "mask", "bias")}
    return _attend_head(q, k, v, _Head(given["score"], **asked, batched=batched))


class _Joined(NamedTuple):
    """The heads' traces and what multi-head attention joins of them."""

    heads: list[AttentionTrace]
    weights: Tensor  # (B, h, Q, K)
    mean: Tensor  # (B, Q, K)
    concat: Tensor  # (B, Q, v) the heads' outputs side by side


def _heads(projected: tuple[Tensor, Tensor, Tensor], num_heads: int, head: _Head) -> _Joined:
    """Each head's attention on its features of the projected inputs, and the heads joined."""
    if num_heads == 1:  # the whole width: its weights are their mean, its output the concatenation
        trace = _attend_head(*projected, head)
        return _Joined([trace], trace.weights[:, None], trace.weights, trace.output)
    q_heads, k_heads, v_heads = (split_heads(t, num_heads) for t in projected)  # (B, h, T, s)
    heads = [_attend_head(q_heads[:, h], k_heads[:, h], v_heads[:, h], head) for h in range(num_heads)]
    weights = torch.stack([trace.weights for trace in heads], dim=1)
    return _Joined(heads, weights, weights.mean(dim=1), torch.cat([trace.output for trace in heads], dim=-1))


_MULTI_HEAD = inspect.signature(plain_multihead.multi_head_attend)


def multi_head_attend(queries: Any, keys: Any, values: Any, **options: Any) -> MultiHeadTrace:
    """The core's `multi_head_attend` (attnviz.core.multihead), the same trace with fewer torch calls. It takes the
    core's arguments: they are bound to its signature, so that the two cannot drift apart."""
    call = _MULTI_HEAD.bind(queries, keys, values, **options)
    call.apply_defaults()
    given = call.arguments
    num_heads, projections = given["num_heads"], given["projections"]
    q, k, v, batched = _prepare(queries, keys, values)
    d_q, d_k, d_v = q.shape[-1], k.shape[-1], v.shape[-1]
    check_heads(num_heads, ("query_size", d_q), ("key_size", d_k), ("value_size", d_v))
    mats = projection_matrices(d_q, d_k, d_v, projections, given["proj_seed"], dtype=q.dtype)
    identity = isinstance(projections, str) and projections == "identity"
    projected = (q, k, v)  # x @ I is x
    if not identity:
        projected = tuple(x @ mats[name].T for x, name in zip(projected, ("W_q", "W_k", "W_v"), strict=True))
        for tensor, name in zip(projected, ("queries", "keys", "values"), strict=True):
            _check_finite(tensor, f"projected {name}")
    lens = batched_lens(given["valid_lens"], batched)
    head = _Head(given["score"], lens, bool(given["causal"]), given["temperature"], given["score_params"])
    joined = _heads(projected, num_heads, head)
    trace = join_heads(
        (q, k, v),
        mats,
        joined.heads,
        weights=joined.weights,
        mean_weights=joined.mean,
        concat=joined.concat,
        delta=joined.concat if identity else joined.concat @ mats["W_o"].T,
        residual=given["residual"],
        projections=projections,
    )
    return trace if batched else trace.batch_row(0)


def _points(data: Any) -> tuple[Tensor, bool] | None:
    """Kernel points as the core's `nadaraya_watson` reads them, (n, d), and whether they were 1-D; None when
    anything is wrong with them."""
    tensor = _checked(data, (1, 2))
    if tensor is None:
        return None
    return (tensor[:, None], True) if tensor.dim() == 1 else (tensor, False)


def nadaraya_watson(
    queries: Any, keys: Any, values: Any, *, kernel: str = "gaussian", bandwidth: float = 1.0
) -> AttentionTrace:
    """The core's `nadaraya_watson` (attnviz.core.kernel), its points checked finite by `_finite`."""
    points = [_points(data) for data in (queries, keys, values)]
    if any(p is None for p in points):
        return plain_kernel.nadaraya_watson(queries, keys, values, kernel=kernel, bandwidth=bandwidth)
    spec, sigma = get_kernel(kernel), check_positive(bandwidth, "bandwidth")
    (q, _), (k, _), (v, values_1d) = points
    return kernel_regression(q, k, v, spec, sigma, values_1d)


_MODERN = inspect.signature(plain_modern.modern_attention)


def modern_attention(x: Any, **options: Any) -> ModernTrace:
    """The core's `modern_attention` (attnviz.core.modern), each query head through `attend` above; the core's
    arguments, bound to its signature."""
    call = _MODERN.bind(x, **options)
    call.apply_defaults()
    given = dict(call.arguments)
    valid_len, positions = given.pop("valid_len"), given["positions"]
    layer = layer_inputs(**given)
    heads = [
        attend(
            layer.queries[h],  # (T, d_h)
            layer.keys[g],
            layer.values[g],
            mask=layer.mask,
            bias=None if layer.bias is None else layer.bias[h],
            valid_lens=valid_len,
        )
        for h, g in enumerate(layer.groups)
    ]
    weights = torch.stack([trace.weights for trace in heads])  # (H, T, T)
    return layer_trace(layer, heads, weights, torch.stack([trace.output for trace in heads]), positions)
