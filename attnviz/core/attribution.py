"""Which input tokens an output drew on, read from a model's attention: rollout and flow (Abnar & Zuidema, 2020),
norm-based attention (Kobayashi et al., 2020), blank-out importance as the reference, and Spearman's ρ to compare
any of them with it.

Shapes: `n` tokens, `h` heads, `L` layers. A layer's attention is (h, n, n) or (n, n), rows are queries (they sum to
1), columns keys. Maps rank the input tokens: a map is (n,) for one readout, or (n, n) with a row per output position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import networkx as nx
import torch
from networkx.algorithms import flow
from torch import Tensor

from attnviz.core.errors import AttnvizError

# Attention flow is solved exactly up to this many tokens: one maximum flow per token on L·n² edges. Measured with
# networkx's preflow-push on MiniLM's 6 layers (2 cores): ~2 s for 32 tokens, ~50 s for 64.
FLOW_MAX_TOKENS = 32


def head_mean(weights: Tensor) -> Tensor:
    """(h, n, n) -> (n, n): the heads' mean; an (n, n) map is returned as it is."""
    return weights.mean(dim=0) if weights.dim() == 3 else weights


def residual_mix(weights: Tensor, residual: float = 0.5) -> Tensor:
    """Abnar & Zuidema's Ã = 0.5·A + 0.5·I (with `residual` = 0.5): the residual connection as attention to oneself,
    rows renormalised to sum to 1. (n, n) -> (n, n)."""
    mean = head_mean(weights)
    mixed = (1.0 - residual) * mean + residual * torch.eye(mean.shape[-1], dtype=mean.dtype)  # (n, n)
    return mixed / mixed.sum(dim=-1, keepdim=True)


def rollout(layers: Sequence[Tensor], residual: float = 0.5) -> Tensor:
    """Attention rollout (Abnar & Zuidema, eq. 1): Ã_L · … · Ã_2 · Ã_1. Row i: how much output position i draws on
    each input token. (n, n)."""
    if not layers:
        raise AttnvizError("no_layers")
    result = torch.eye(layers[0].shape[-1], dtype=layers[0].dtype)  # (n, n)
    for weights in layers:
        result = residual_mix(weights, residual) @ result  # (n, n): this layer's mix of the rollout below
    return result


def _readout(readout: Tensor | int | None, n: int) -> Tensor:
    """The readout as weights over the last layer's positions: an index (one position), weights, or the mean."""
    if readout is None:
        return torch.full((n,), 1.0 / n, dtype=torch.float64)
    if isinstance(readout, int):
        return torch.nn.functional.one_hot(torch.tensor(readout), n).to(torch.float64)
    return readout.to(torch.float64)


def attention_flow(layers: Sequence[Tensor], readout: Tensor | int | None = None, residual: float = 0.5) -> Tensor:
    """Attention flow (Abnar & Zuidema): for each input token j, the maximum flow from it to the readout through
    the layered graph whose edge from token j below to position i above layer l has capacity Ã_l[i, j]. The readout
    is one output position (an index), weights over the last layer's positions, or their mean (None, as a
    mean-pooled embedding reads them): each top position passes on at most its weight. Exact; (n,) float64.

    Up to FLOW_MAX_TOKENS tokens (n maximum flows on L·n² edges); more raises AttnvizError."""
    if not layers:
        raise AttnvizError("no_layers")
    n, depth = layers[0].shape[-1], len(layers)
    if n > FLOW_MAX_TOKENS:
        raise AttnvizError("flow_too_long", tokens=n, limit=FLOW_MAX_TOKENS)
    graph = nx.DiGraph()
    for level, weights in enumerate(layers, start=1):
        mixed = residual_mix(weights, residual).to(torch.float64).tolist()  # (n, n), rows: the positions above
        for i in range(n):
            for j in range(n):
                if mixed[i][j] > 0.0:
                    graph.add_edge((level - 1, j), (level, i), capacity=mixed[i][j])
    for i, weight in enumerate(_readout(readout, n).tolist()):
        if weight > 0.0:
            graph.add_edge((depth, i), "readout", capacity=weight)
    residual_network = flow.build_residual_network(graph, "capacity")  # built once, reset by each flow
    flows = [
        nx.maximum_flow_value(graph, (0, j), "readout", flow_func=flow.preflow_push, residual=residual_network)
        if graph.has_node((0, j))
        else 0.0
        for j in range(n)
    ]
    return torch.tensor(flows, dtype=torch.float64)


def norm_based(weights: Tensor, transformed: Tensor) -> Tensor:
    """Norm-based attention (Kobayashi et al., eq. 6): ‖α_ij f(x_j)‖, how large a vector key j adds to query i's
    output, not only how much weight it gets. `weights` α (h, n, n); `transformed` f(x_j) per head (h, n, d): the
    token's value through the head's value projection and its slice of W_O (biases left out). (h, n, n)."""
    return weighted_lengths(weights, torch.linalg.vector_norm(transformed, dim=-1))


def weighted_lengths(weights: Tensor, lengths: Tensor) -> Tensor:
    """Norm-based attention from the lengths ‖f_h(x_j)‖ (h, n) of the transformed vectors: α_ij ‖f_h(x_j)‖, which is
    ‖α_ij f_h(x_j)‖ since α ≥ 0. `weights` (h, n, n) -> (h, n, n)."""
    return weights * lengths[:, None, :]


def head_transformed(inputs: Tensor, W_v: Tensor, W_o: Tensor, heads: int) -> Tensor:
    """f_h(x_j) = x_j W_vᵀ[h] W_oᵀ[h] for every head: the layer's input (n, d) through the value projection
    (W_v: (d, d), rows are outputs, like nn.Linear.weight) and each head's slice of the output projection (W_o: (d,
    d)). (h, n, d)."""
    n, d = inputs.shape
    per_head = d // heads
    values = (inputs @ W_v.T).reshape(n, heads, per_head).transpose(0, 1)  # (h, n, d/h)
    slices = W_o.T.reshape(heads, per_head, d)  # (h, d/h, d): the rows of W_oᵀ that head h's output meets
    return values @ slices  # (h, n, d)


def blank_out(
    readout: Callable[[list[int]], Tensor],
    tokens: list[int],
    replacement: Callable[[int], int],
    positions: Sequence[int],
    change: Callable[[Tensor, Tensor], float],
) -> Tensor:
    """Blank-out importance: for each position p of `positions`, the readout's change (`change(original, blanked)`)
    when token p is replaced by `replacement(p)`, one forward pass each. (len(positions),) float64."""
    original = readout(tokens)
    scores = []
    for position in positions:
        blanked = list(tokens)
        blanked[position] = replacement(position)
        scores.append(float(change(original, readout(blanked))))
    return torch.tensor(scores, dtype=torch.float64)


def ranks(values: Tensor) -> Tensor:
    """Each value's rank from 1, ties sharing their mean rank. (n,) float64."""
    flat = values.to(torch.float64).flatten()
    order = torch.argsort(flat, stable=True)
    sorted_values = flat[order]
    result = torch.empty_like(flat)
    start = 0
    while start < len(flat):
        end = start
        while end + 1 < len(flat) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        result[order[start : end + 1]] = (start + end) / 2.0 + 1.0  # the tie's mean rank
        start = end + 1
    return result


def spearman(a: Tensor, b: Tensor) -> float:
    """Spearman's ρ: Pearson's correlation of the ranks (ties at their mean rank). NaN when either is constant."""
    if a.numel() != b.numel():
        raise AttnvizError("lengths_differ", first=a.numel(), second=b.numel())
    x, y = ranks(a), ranks(b)
    x, y = x - x.mean(), y - y.mean()
    denominator = torch.sqrt((x * x).sum() * (y * y).sum())
    if denominator == 0:
        return float("nan")
    return float((x * y).sum() / denominator)
