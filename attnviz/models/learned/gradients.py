"""Gradient maps of the induction model's readout (log p of the right next symbol at the last position), by Captum:
gradient × input and integrated gradients on the token embeddings, summed over each token's embedding to one number
per input token. Integrated gradients start from a sequence of the same length made of one symbol the sequence does
not hold (the blank-out's replacement), with the positions kept."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor

from attnviz.models.learned.induction import INDEX, SYMBOLS, InductionTransformer, RepeatExample

IG_STEPS = 32  # integral steps (Gauss-Legendre): the completeness gap is reported with the map


@dataclass(frozen=True)
class GradientMaps:
    """Per input token: gradient × input, integrated gradients, and IG's completeness gap (how far the map's sum is
    from the readout's change between the baseline and the input)."""

    gradient_x_input: Tensor  # (n,)
    integrated: Tensor  # (n,)
    completeness_gap: float


def gradient_maps(model: InductionTransformer, example: RepeatExample) -> GradientMaps:
    """Gradient × input and integrated gradients for the prediction of `example`'s last symbol."""
    tokens = example.tokens[:-1]
    ids = torch.tensor([[INDEX[token] for token in tokens]], dtype=torch.long)  # (1, n)
    target = INDEX[example.tokens[-1]]
    unused = next(symbol for symbol in SYMBOLS if symbol not in example.half)
    baseline = torch.full_like(ids, INDEX[unused])

    def readout(batch: Tensor) -> Tensor:
        return torch.log_softmax(model(batch)[:, -1], dim=-1)[:, target]  # (B,)

    times_input = LayerGradientXActivation(readout, model.token_embedding).attribute(ids)  # (1, n, d)
    integrated, gap = LayerIntegratedGradients(readout, model.token_embedding).attribute(
        ids, baselines=baseline, n_steps=IG_STEPS, return_convergence_delta=True
    )  # (1, n, d), (1,)
    return GradientMaps(
        gradient_x_input=times_input.sum(dim=-1)[0].detach(),
        integrated=integrated.sum(dim=-1)[0].detach(),
        completeness_gap=float(gap.abs().max()),
    )
