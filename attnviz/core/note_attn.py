"""Note 000's `Attn` module, as the note writes it, with its typos fixed, and its shapes step by step.

The note's module does not score each key: it maps one [q; k] vector to all `value_size1` logits at once with a
linear layer, turns them into weights over the rows of V with a softmax, applies them with `torch.bmm`, and mixes
the result with the query in `attn_combine`. Fixed (the note's code does not run as printed):

- `self.outpu_size` -> `self.output_size` (an AttributeError in `__init__`);
- `k[0]` -> `K[0]` (a NameError in `forward`: the argument is `K`);
- V must be (1, value_size1, value_size2) = (1, 32, 64) for the bmm; the note's `torch.randn(1, 1, 64)` fails there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnviz.core.errors import AttnvizError
from attnviz.core.scores import _init_linear


class Attn(nn.Module):
    """The note's module: Softmax(Linear([Q, K])) over V's rows, then `attn_combine` on [Q; applied]."""

    def __init__(self, query_size: int, key_size: int, value_size1: int, value_size2: int, output_size: int,
                 seed: int = 0) -> None:  # fmt: skip
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.value_size1, self.value_size2, self.output_size = value_size1, value_size2, output_size
        generator = torch.Generator().manual_seed(seed)  # seeded, like every learned weight in attnviz
        self.attn = _init_linear(nn.Linear(self.query_size + self.key_size, self.value_size1), generator)
        self.attn_combine = _init_linear(nn.Linear(self.query_size + self.value_size2, self.output_size), generator)

    def forward(self, Q: Tensor, K: Tensor, V: Tensor) -> tuple[Tensor, Tensor]:
        attn_weights = F.softmax(self.attn(torch.cat((Q[0], K[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), V)
        output = torch.cat((Q[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        return output, attn_weights


@dataclass(frozen=True)
class ShapeStep:
    """One line of the forward pass: the code, the shapes going in, the shape coming out, and the tensor."""

    code: str
    shapes_in: tuple[tuple[int, ...], ...]
    shape_out: tuple[int, ...]
    value: Tensor


def shape_steps(module: Attn, Q: Tensor, K: Tensor, V: Tensor) -> list[ShapeStep]:
    """The forward pass of `module` one operation at a time, each with its real shapes (computed, not written)."""
    with torch.no_grad():
        pair = torch.cat((Q[0], K[0]), 1)
        logits = module.attn(pair)
        weights = F.softmax(logits, dim=1)
        lifted = weights.unsqueeze(0)
        applied = torch.bmm(lifted, V)
        joined = torch.cat((Q[0], applied[0]), 1)
        output = module.attn_combine(joined).unsqueeze(0)
    shape = lambda t: tuple(t.shape)  # noqa: E731
    return [
        ShapeStep("torch.cat((Q[0], K[0]), 1)", (shape(Q[0]), shape(K[0])), shape(pair), pair),
        ShapeStep("self.attn(·)", (shape(pair),), shape(logits), logits),
        ShapeStep("F.softmax(·, dim=1)", (shape(logits),), shape(weights), weights),
        ShapeStep("attn_weights.unsqueeze(0)", (shape(weights),), shape(lifted), lifted),
        ShapeStep("torch.bmm(·, V)", (shape(lifted), shape(V)), shape(applied), applied),
        ShapeStep("torch.cat((Q[0], attn_applied[0]), 1)", (shape(Q[0]), shape(applied[0])), shape(joined), joined),
        ShapeStep("self.attn_combine(·).unsqueeze(0)", (shape(joined),), shape(output), output),
    ]


def bmm_rule(a: tuple[int, ...], b: tuple[int, ...]) -> dict[str, int]:
    """The letters of torch.bmm's rule (b, n, m) · (b, m, p) -> (b, n, p) for two shapes; ValueError if they do
    not fit it (the note's V of (1, 1, 64) against weights of (1, 1, 32))."""
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        raise AttnvizError("bmm_shapes", first=a, second=b)
    return {"b": a[0], "n": a[1], "m": a[2], "p": b[2]}


def note_attn_steps(queries: Tensor, keys: Tensor, values: Tensor, seed: int = 0) -> list[ShapeStep]:
    """The note's module, seeded, on a page's inputs: its first query and first key as the note's Q and K
    (1, 1, d), and the values (K, p) as V (1, K, p), so value_size1 = K and value_size2 = output_size = p."""
    q, k, v = queries[:1].unsqueeze(0), keys[:1].unsqueeze(0), values.unsqueeze(0)
    module = Attn(q.shape[-1], k.shape[-1], v.shape[1], v.shape[2], v.shape[2], seed=seed)
    return shape_steps(module, q, k, v)
