"""Does attention matter here? Replace what a trained model's attention layer computed by a uniform spread over the
keys each query may see, or by its own weights shuffled along each row, and measure the model again.

The replacement hooks the layer's attention module (attnviz.core.attention's DotProductAttention, as
MultiHeadAttention uses it, or AdditiveAttention, the dates model's): the module's output is recomputed from the new
weights and the same values. The
model's parameters are untouched, and the hook is removed on leaving the `with` block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn

from attnviz.core.attention import AdditiveAttention, DotProductAttention, build_mask
from attnviz.core.errors import AttnvizError, short

HOW = ("uniform", "permute")


def replaced_weights(weights: Tensor, mask: Tensor, how: str, generator: torch.Generator | None = None) -> Tensor:
    """(B, Q, K) weights -> the same shape: `uniform`, each query's weight spread evenly over the keys it may see
    (`mask`); `permute`, each query's own weights on the keys it may see, shuffled among them."""
    if how == "uniform":
        allowed = mask.to(weights.dtype)  # (B, Q, K)
        return allowed / allowed.sum(dim=-1, keepdim=True).clamp_min(1.0)
    if how != "permute":
        raise AttnvizError("ablation_how", how=short(how))
    result = torch.zeros_like(weights)
    for b in range(weights.shape[0]):
        for q in range(weights.shape[1]):
            keys = torch.nonzero(mask[b, q]).flatten()  # the keys this query may see
            order = keys[torch.randperm(len(keys), generator=generator)]
            result[b, q, keys] = weights[b, q, order]
    return result


@contextlib.contextmanager
def attention_replaced(layer: nn.Module, how: str, seed: int = 0) -> Iterator[None]:
    """Within the block, every attention module inside `layer` (a model, or one of its layers) outputs
    `replaced_weights(...) @ values`."""
    generator = torch.Generator().manual_seed(seed)

    def hook(module: nn.Module, inputs: tuple[Any, ...], _output: Tensor) -> Tensor:
        queries, keys, values = inputs[:3]
        valid_lens = inputs[3] if len(inputs) > 3 else None
        mask = build_mask(valid_lens, False, queries.shape[0], queries.shape[1], keys.shape[1])  # (B, Q, K)
        weights = replaced_weights(module.attention_weights, mask, how, generator)
        module.attention_weights = weights
        return torch.bmm(weights, values)  # (B, Q, v)

    modules = [m for m in layer.modules() if isinstance(m, DotProductAttention | AdditiveAttention)]
    if not modules:
        raise AttnvizError("ablation_no_attention")
    handles = [m.register_forward_hook(hook) for m in modules]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
