"""Gradient maps of the pretrained model's sentence embedding, by Captum: gradient × input and integrated gradients
on the word-piece embeddings, summed over each piece's embedding to one number per token.

The embedding is a vector; a gradient needs one number. The readout is:
- with a second sentence, the cosine similarity of the two sentences' embeddings (the number sentence-transformers
  reports), attributed to the first sentence's pieces;
- alone, the embedding's length along its own direction, e(x) · ê(x₀) with ê(x₀) fixed at the sentence as typed. The
  blank-out's 1 − cos has zero gradient at the sentence itself (a cosine with itself is at its maximum), so it cannot
  be the gradient's readout; this one moves with each piece as the embedding does.

Integrated gradients start from the sentence with every word piece replaced by [MASK] ([CLS] and [SEP] kept), the
blank-out's replacement. Only word pieces are ranked, never [CLS] or [SEP]."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from captum.attr import InputXGradient, IntegratedGradients
from torch import Tensor

from attnviz.models.bert import BertEncoder, BertTrace
from attnviz.models.bert_attribution import MASK_TOKEN, content_positions, pooled

IG_STEPS = 32  # integral steps (Gauss-Legendre), as for the trained models: the completeness gap is reported


@dataclass(frozen=True)
class SentenceGradients:
    """Per word piece (`content_positions`): gradient × input, integrated gradients, and IG's completeness gap (how
    far the whole map's sum is from the readout's change between the [MASK] baseline and the sentence)."""

    gradient_x_input: Tensor  # (number of word pieces,)
    integrated: Tensor  # (number of word pieces,)
    completeness_gap: float
    readout: float  # the readout at the sentence: a cosine with the second sentence, or the embedding's length


def sentence_gradients(
    model: BertEncoder, trace: BertTrace, ids: Tensor, type_ids: Tensor, other: Tensor | None = None
) -> SentenceGradients:
    """Gradient × input and integrated gradients of the readout (the module's docstring) for the sentence `ids` (T,)
    whose trace is `trace`; `other` is the second sentence's embedding (d,) to compare with, or None."""
    positions = content_positions(trace.tokens)
    direction = other if other is not None else pooled(trace)
    direction = (direction / direction.norm()).detach()

    def readout(words: Tensor) -> Tensor:  # (B, T, d) -> (B,)
        embedding = model.pooled_from_words(words, type_ids)
        if other is not None:
            return torch.nn.functional.cosine_similarity(embedding, direction.unsqueeze(0), dim=-1)
        return embedding @ direction

    words = model.word_vectors_of(ids).unsqueeze(0).clone().requires_grad_(True)  # (1, T, d)
    baseline = words.detach().clone()
    baseline[0, positions] = model.word_vectors_of(torch.tensor(model.tokenizer.token_to_id(MASK_TOKEN)))
    with torch.enable_grad():
        times_input = InputXGradient(readout).attribute(words)  # (1, T, d)
        integrated, gap = IntegratedGradients(readout).attribute(
            words, baselines=baseline, n_steps=IG_STEPS, internal_batch_size=IG_STEPS, return_convergence_delta=True
        )
        value = float(readout(words.detach())[0])
    return SentenceGradients(
        gradient_x_input=times_input.sum(dim=-1)[0, positions].detach().to(torch.float64),
        integrated=integrated.sum(dim=-1)[0, positions].detach().to(torch.float64),
        completeness_gap=float(gap.abs().max()),
        readout=value,
    )
