"""The maps of attnviz/core/attribution.py on the induction model, for one readout: the log-probability of the right
next symbol at the sequence's last position. Blank-out replaces one input token by a symbol the sequence does not
hold."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.core.attribution import attention_flow, blank_out, rollout
from attnviz.models.learned.induction import INDEX, SYMBOLS, InductionTransformer, RepeatExample


@dataclass(frozen=True)
class InductionMaps:
    """Each map ranks the input tokens (<s> and the symbols before the predicted one) for the readout."""

    tokens: list[str]  # the model's input: the example without its last symbol
    target: str  # the symbol it should predict next
    log_prob: float  # the readout: log p(target) at the last position
    raw: Tensor  # (n,) the last layer's head-mean attention of the last position
    rollout: Tensor  # (n,) rollout's row of the last position
    flow: Tensor | None  # (n,) attention flow into the last position (None when not asked for: ~0.5 s)
    blank_out: Tensor  # (n,) how much the readout drops with each token replaced


def _log_prob(model: InductionTransformer, ids: list[int], target: int) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([ids], dtype=torch.long))[0, -1]  # (vocab,)
    return float(torch.log_softmax(logits, dim=-1)[target])


def induction_maps(model: InductionTransformer, example: RepeatExample, flow: bool = True) -> InductionMaps:
    """Raw attention, rollout, flow (if `flow`) and blank-out for the prediction of `example`'s last symbol."""
    tokens = example.tokens[:-1]
    ids, target = [INDEX[token] for token in tokens], INDEX[example.tokens[-1]]
    with torch.no_grad():
        model(torch.tensor([ids], dtype=torch.long))
    layers = [weights[0] for weights in model.attention_weights()]  # each (h, n, n)
    unused = next(symbol for symbol in SYMBOLS if symbol not in example.half)  # a symbol not in the sequence
    importance = blank_out(
        lambda blanked: torch.tensor(_log_prob(model, blanked, target)),
        ids,
        lambda _: INDEX[unused],
        range(len(ids)),
        lambda original, blanked: float(original - blanked),
    )
    last = len(ids) - 1
    return InductionMaps(
        tokens=tokens,
        target=example.tokens[-1],
        log_prob=_log_prob(model, ids, target),
        raw=layers[-1].mean(dim=0)[last],
        rollout=rollout(layers)[last],
        flow=attention_flow(layers, readout=last).to(torch.float32) if flow else None,
        blank_out=importance,
    )
