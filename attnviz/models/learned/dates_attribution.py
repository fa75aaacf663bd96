"""The maps of attnviz/core/attribution.py on the dates model, for one readout: the log-probability of one output
character the model wrote, its earlier output characters given (teacher forcing with its own output). The model
reads its input through one additive (cross-)attention over a recurrent encoder's states, so there is one attention
map per output character; rollout, flow and norm-based attention need a stack of self-attention layers and do not
apply. Blank-out replaces one input character by another of the same class (a digit by a digit, a letter by a
letter, a Chinese numeral by a Chinese numeral, a separator by a separator)."""

from __future__ import annotations

import string
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.core.attribution import blank_out
from attnviz.models.learned.dates import CHINESE_DIGITS, INPUT_INDEX, OUTPUT_INDEX
from attnviz.models.learned.seq2seq import DateTranslator, translate_texts

SEPARATORS = " /-.,"


def same_class(character: str) -> str:
    """Another character of the same class that the model can read (the character itself when it has no class)."""
    for group in (string.digits, CHINESE_DIGITS, string.ascii_lowercase, string.ascii_uppercase, SEPARATORS):
        if character in group:
            candidates = [c for c in group if c != character and c in INPUT_INDEX]
            if candidates:
                return candidates[(group.index(character) + len(group) // 2) % len(candidates)]
    return character


@dataclass(frozen=True)
class DatesMaps:
    """For output character `step` (0-based) of what the model wrote for `text`."""

    text: str
    output: str
    step: int
    log_prob: float  # the readout: log p(output[step])
    raw: Tensor  # (len(text),) that step's attention over the input characters
    blank_out: Tensor  # (len(text),) how much the readout drops with each character replaced


def _log_prob(model: DateTranslator, ids: list[int], output: Tensor, step: int) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([ids]), torch.tensor([len(ids)]), output[None])[0, step]  # (vocab,)
    return float(torch.log_softmax(logits, dim=-1)[output[step]])


def dates_maps(model: DateTranslator, text: str, step: int) -> DatesMaps:
    """Raw attention and blank-out for output character `step` of the model's translation of `text`."""
    translation = translate_texts(model, [text])[0]
    output = torch.tensor([OUTPUT_INDEX[c] for c in translation.output])  # (10,)
    ids = [INPUT_INDEX[c] for c in text]
    importance = blank_out(
        lambda blanked: torch.tensor(_log_prob(model, blanked, output, step)),
        ids,
        lambda position: INPUT_INDEX[same_class(text[position])],
        range(len(ids)),
        lambda original, blanked: float(original - blanked),
    )
    return DatesMaps(
        text=text,
        output=translation.output,
        step=step,
        log_prob=_log_prob(model, ids, output, step),
        raw=translation.trace.weights[step],
        blank_out=importance,
    )
