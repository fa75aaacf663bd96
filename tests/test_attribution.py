"""Rollout, attention flow, norm-based attention, blank-out and Spearman's ρ against references written out here:
the matrix product step by step, the minimum cut found by trying every cut, loops over heads and tokens, and ρ from
its textbook formulas."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from attnviz.core import attribution
from attnviz.core.errors import AttnvizError


def random_layers(layers: int, heads: int, n: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(heads, n, n, generator=generator) * 2, dim=-1) for _ in range(layers)]


def mixed_by_hand(weights: torch.Tensor) -> list[list[float]]:
    """0.5·(head mean) + 0.5·I, each row divided by its sum, cell by cell."""
    heads, n, _ = weights.shape
    rows = []
    for i in range(n):
        row = [
            0.5 * sum(float(weights[h, i, j]) for h in range(heads)) / heads + (0.5 if i == j else 0.0)
            for j in range(n)
        ]
        total = sum(row)
        rows.append([value / total for value in row])
    return rows


def test_rollout_is_the_product_of_the_mixed_layers_from_the_last_down():
    layers = random_layers(3, 2, 4, seed=1)
    a1, a2, a3 = (mixed_by_hand(w) for w in layers)

    def product(x: list[list[float]], y: list[list[float]]) -> list[list[float]]:
        return [[sum(x[i][k] * y[k][j] for k in range(4)) for j in range(4)] for i in range(4)]

    expected = product(a3, product(a2, a1))
    got = attribution.rollout(layers)
    assert torch.allclose(got, torch.tensor(expected), atol=1e-6)
    assert torch.allclose(got.sum(dim=-1), torch.ones(4), atol=1e-6)  # every row still sums to 1
    assert torch.allclose(attribution.rollout(layers[:1]), torch.tensor(a1), atol=1e-6)
    with pytest.raises(AttnvizError):
        attribution.rollout([])


def min_cut(layers: list[torch.Tensor], source: int, readout: list[float]) -> float:
    """The smallest cut between input token `source` and the readout, trying every set of the other nodes."""
    n, depth = layers[0].shape[-1], len(layers)
    capacity: dict[tuple[object, object], float] = {}
    for level, weights in enumerate(layers, start=1):
        mixed = mixed_by_hand(weights)
        for i in range(n):
            for j in range(n):
                capacity[((level - 1, j), (level, i))] = mixed[i][j]
    for i in range(n):
        capacity[((depth, i), "readout")] = readout[i]
    nodes = [(level, j) for level in range(depth + 1) for j in range(n) if (level, j) != (0, source)]
    best = math.inf
    for size in range(len(nodes) + 1):
        for chosen in itertools.combinations(nodes, size):
            side = {(0, source), *chosen}  # the source's side of the cut
            cut = sum(c for (u, v), c in capacity.items() if u in side and v not in side)
            best = min(best, cut)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attention_flow_equals_the_minimum_cut_of_the_layered_graph(seed):
    layers = random_layers(2, 2, 3, seed=seed)
    for readout in (None, 2, torch.tensor([0.2, 0.0, 0.8])):
        weights = (
            {None: [1 / 3] * 3, 2: [0.0, 0.0, 1.0]}.get(readout) if not torch.is_tensor(readout) else readout.tolist()
        )
        got = attribution.attention_flow(layers, readout)
        expected = [min_cut(layers, j, weights) for j in range(3)]
        assert torch.allclose(got, torch.tensor(expected, dtype=torch.float64), atol=1e-9), (readout, got, expected)


def test_attention_flow_refuses_more_tokens_than_it_solves_exactly():
    n = attribution.FLOW_MAX_TOKENS + 1
    with pytest.raises(AttnvizError) as error:
        attribution.attention_flow([torch.full((n, n), 1.0 / n)])
    assert str(attribution.FLOW_MAX_TOKENS) in str(error.value) and str(n) in str(error.value)


def test_norm_based_attention_is_the_norm_of_each_weighted_vector():
    generator = torch.Generator().manual_seed(3)
    heads, n, d = 2, 3, 4
    x = torch.randn(n, d, generator=generator)
    W_v, W_o = torch.randn(d, d, generator=generator), torch.randn(d, d, generator=generator)
    weights = random_layers(1, heads, n, seed=4)[0]
    transformed = attribution.head_transformed(x, W_v, W_o, heads)
    got = attribution.norm_based(weights, transformed)
    per_head = d // heads
    for h in range(heads):
        rows = slice(h * per_head, (h + 1) * per_head)
        for i in range(n):
            for j in range(n):
                value = x[j] @ W_v[rows].T  # this head's value of token j, (d/h,)
                vector = weights[h, i, j] * (value @ W_o[:, rows].T)  # α_ij f_h(x_j), (d,)
                assert got[h, i, j] == pytest.approx(float(torch.linalg.vector_norm(vector)), rel=1e-5)
    # the heads' contributions add up to the layer's attention output (before its bias)
    out = sum(weights[h] @ transformed[h] for h in range(heads))
    values = (x @ W_v.T).reshape(n, heads, per_head).transpose(0, 1)  # (h, n, d/h)
    concat = torch.cat([weights[h] @ values[h] for h in range(heads)], dim=-1)  # (n, d)
    assert torch.allclose(out, concat @ W_o.T, atol=1e-5)


def test_blank_out_measures_one_forward_pass_per_position():
    table = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [0.0, 0.0]])
    calls = []

    def readout(tokens: list[int]) -> torch.Tensor:
        calls.append(list(tokens))
        return table[tokens].sum(dim=0)

    got = attribution.blank_out(readout, [0, 1, 2], lambda p: 3, [0, 2], lambda a, b: float((a - b).norm()))
    assert calls == [[0, 1, 2], [3, 1, 2], [0, 1, 3]]
    assert torch.allclose(got, torch.tensor([1.0, math.sqrt(10.0)], dtype=torch.float64))


def test_spearman_from_its_textbook_formulas():
    x = torch.tensor([3.0, 1.0, 4.0, 1.5, 5.0, 9.0])
    y = torch.tensor([2.0, 7.0, 1.0, 8.0, 2.5, 8.5])
    rx, ry = [3, 1, 4, 2, 5, 6], [2, 4, 1, 5, 3, 6]  # ranks by hand (no ties)
    d2 = sum((a - b) ** 2 for a, b in zip(rx, ry, strict=True))
    assert attribution.spearman(x, y) == pytest.approx(1 - 6 * d2 / (6 * (36 - 1)))
    # ties at their mean rank: y's ranks are 1, 2, 3.5, 5, 3.5; Pearson's r of the ranks is 8 / √95
    assert attribution.spearman(torch.arange(5.0), torch.tensor([5.0, 6.0, 7.0, 8.0, 7.0])) == pytest.approx(
        8 / math.sqrt(95)
    )
    assert attribution.spearman(torch.arange(4.0), -torch.arange(4.0)) == pytest.approx(-1.0)
    assert math.isnan(attribution.spearman(torch.ones(3), torch.arange(3.0)))
    with pytest.raises(AttnvizError):
        attribution.spearman(torch.ones(3), torch.ones(4))
