"""The maps of attnviz/core/attribution.py on the pretrained model: its sentence embedding (mean-pooled over every
token, as sentence-transformers pools all-MiniLM-L6-v2), blank-out importance of each word piece against it, every
layer's norm-based attention, and how much of the attention and of the norm-based contribution lands on [CLS] and
[SEP]."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.core.attribution import head_transformed, weighted_lengths
from attnviz.models.bert import SPECIAL_TOKENS, BertEncoder, BertTrace

MASK_TOKEN = "[MASK]"


def pooled(trace: BertTrace) -> Tensor:
    """The sentence embedding: the last layer's output averaged over every token, [CLS] and [SEP] included. (d,)"""
    return trace.hidden_states[-1].mean(dim=0)


def content_positions(tokens: list[str]) -> list[int]:
    """The positions of the word pieces, not of [CLS] and [SEP]."""
    return [i for i, token in enumerate(tokens) if token not in SPECIAL_TOKENS]


BLANK_BATCH = 16  # blanked sentences run together: 64 tokens' 62 blank-outs in 4 batched passes


def blank_out_importance(model: BertEncoder, trace: BertTrace, ids: Tensor, type_ids: Tensor) -> Tensor:
    """For each word piece (`content_positions`), 1 − cos(embedding, embedding with that piece replaced by [MASK]).
    The same numbers as attnviz.core.attribution.blank_out's one forward pass each (tests/test_bert_attribution.py
    checks them against that), with the blanked sentences run BLANK_BATCH at a time. (number of word pieces,)
    float64."""
    positions = content_positions(trace.tokens)
    mask_id = model.tokenizer.token_to_id(MASK_TOKEN)
    original = pooled(trace).to(torch.float64)
    changes = []
    with torch.no_grad():
        for start in range(0, len(positions), BLANK_BATCH):
            chunk = torch.tensor(positions[start : start + BLANK_BATCH])
            blanked = ids.repeat(len(chunk), 1)  # (b, T)
            blanked[torch.arange(len(chunk)), chunk] = mask_id
            embeddings = model.pooled_from_words(model.word_vectors_of(blanked), type_ids).to(torch.float64)
            changes.append(1.0 - torch.nn.functional.cosine_similarity(embeddings, original.unsqueeze(0), dim=-1))
    return torch.cat(changes) if changes else torch.zeros(0, dtype=torch.float64)


def transformed_lengths(model: BertEncoder, trace: BertTrace) -> list[Tensor]:
    """Each layer's ‖f_h(x_j)‖ (Kobayashi et al.): every token's input to the layer through each head's value
    projection and its slice of the output projection, biases left out, and its length. A list of (h, T)."""
    lengths = []
    for index in range(len(trace.layers)):
        prefix = f"encoder.layer.{index}.attention."
        transformed = head_transformed(
            trace.hidden_states[index],
            model.weights[prefix + "self.value.weight"],
            model.weights[prefix + "output.dense.weight"],
            model.config.num_heads,
        )  # (h, T, d)
        lengths.append(torch.linalg.vector_norm(transformed, dim=-1))  # (h, T)
    return lengths


def norm_based_layers(model: BertEncoder, trace: BertTrace, lengths: list[Tensor] | None = None) -> list[Tensor]:
    """Each layer's norm-based attention ‖α_ij f(x_j)‖ (Kobayashi et al., eq. 6), from the layer's input and its
    value and output projections: a list of (h, T, T). `lengths` are `transformed_lengths` when already known."""
    lengths = transformed_lengths(model, trace) if lengths is None else lengths
    return [weighted_lengths(layer.weights, length) for layer, length in zip(trace.layers, lengths, strict=True)]


@dataclass(frozen=True)
class SinkShare:
    """How much of one layer lands on [CLS] and [SEP]: of the attention weights, and of the norm-based contribution."""

    layer: int  # 0-based
    weight: float  # share of α on the special tokens' columns (every head and query)
    norm: float  # share of ‖α f(x)‖ on them


def sink_shares(trace: BertTrace, norm_maps: list[Tensor]) -> list[SinkShare]:
    """Per layer, the share of the attention weight and of the norm-based contribution on [CLS] and [SEP]."""
    special = torch.tensor([token in SPECIAL_TOKENS for token in trace.tokens])  # (T,)
    shares = []
    for index, (layer, norms) in enumerate(zip(trace.layers, norm_maps, strict=True)):
        weight = float(layer.weights[..., special].sum() / layer.weights.sum())
        norm = float(norms[..., special].sum() / norms.sum())
        shares.append(SinkShare(index, weight, norm))
    return shares
