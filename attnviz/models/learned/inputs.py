"""The trained sequence model's embeddings and first layer's projections, as inputs of the attention pages.

With them, the self- and cross-attention pages compute, with attnviz's own multi-head attention, what the shipped
model's first layer computes: type a sequence of the symbols A-T, choose the trained embeddings and the trained
W_q, W_k, W_v, two heads and the causal mask, and the first head is the model's previous-token head.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from attnviz.core.errors import AttnvizError, short
from attnviz.models.learned.induction import BOS, INDEX, MAX_LENGTH, SYMBOLS, InductionTransformer

TRAINED_DIM = 64  # numbers per token of the sequence model


@functools.cache
def sequence_model() -> InductionTransformer:
    """The shipped sequence model (loaded once per process)."""
    from attnviz.models.learned.train import checkpoint_path, load_run

    return load_run(checkpoint_path("induction")).model


def trained_symbols(tokens: list[str]) -> list[str]:
    """A sentence's tokens as the model's symbols (upper case); AttnvizError naming any other token."""
    symbols = [token.upper() for token in tokens]
    unknown = [token for token, symbol in zip(tokens, symbols, strict=True) if symbol not in SYMBOLS]
    if unknown:
        shown = " ".join(dict.fromkeys(unknown))
        raise AttnvizError("trained_symbols", tokens=short(shown), first=SYMBOLS[0], last=SYMBOLS[-1])
    if len(symbols) > MAX_LENGTH - 1:
        raise AttnvizError("trained_length", count=len(symbols), most=MAX_LENGTH - 1)
    return symbols


def trained_embeddings(tokens: list[str]) -> tuple[list[str], Tensor]:
    """<s> and the symbols, and their vectors as the model's first layer reads them: token plus position embedding,
    through the layer's norm, (T, 64)."""
    labels = [BOS, *trained_symbols(tokens)]
    model = sequence_model()
    ids = torch.tensor([INDEX[label] for label in labels], dtype=torch.long)  # (T,)
    with torch.no_grad():
        x = model.token_embedding(ids) + model.position_embedding(torch.arange(len(labels)))  # (T, d)
        return labels, model.layers[0].norm(x).clone()


def trained_projections(d_q: int, d_k: int, d_v: int) -> dict[str, Tensor]:
    """W_q, W_k, W_v and W_o of the model's first layer (out x in, as nn.Linear.weight); the inputs must have 64
    numbers each."""
    for size in (d_q, d_k, d_v):
        if size != TRAINED_DIM:
            raise AttnvizError("trained_size", size=size, dim=TRAINED_DIM)
    attention = sequence_model().layers[0].attention
    return {name: getattr(attention, name).weight.detach().clone() for name in ("W_q", "W_k", "W_v", "W_o")}
