"""The pretrained-model page's state and its URL codec (parsed, validated, capped: never evaluated)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.state import Codec, Decoded, _decode, _encode, parse_choice, parse_flag, parse_number, parse_text

NUM_LAYERS = 6  # all-MiniLM-L6-v2: 6 layers of 12 heads
NUM_HEADS = 12
PARTS = ("all", "ab", "ba")  # a sentence pair: every token, or sentence A's queries on B's keys, or B's on A's


@dataclass(frozen=True)
class ModelState:
    """Everything the pretrained-model page shows. Layers and heads are counted from 1, as on the page."""

    sentence: str = "The cat sat on the mat because it was tired."
    pair: str = ""  # a second sentence: the model reads "[CLS] A [SEP] B [SEP]"
    layer: int = 6
    heads: tuple[int, ...] = (12,)  # one head, or several whose weights are averaged
    hide_special: bool = False
    renormalise: bool = False
    part: str = "all"
    token: int = 8  # the query followed in the neuron view: index into the tokens, [CLS] = 0 ("it" by default)


def parse_heads(text: str) -> tuple[int, ...]:
    """Comma-separated head numbers from 1 to 12, at least one, no repeats."""
    heads = []
    for cell in text.split(","):
        head = int(parse_number(cell, "head", 1, NUM_HEADS, integer=True))
        if head not in heads:
            heads.append(head)
    if not heads:
        raise ValueError("choose at least one head")
    return tuple(sorted(heads))


_MODEL_CODEC: Codec = {
    "s": ("sentence", lambda t: parse_text(t, "sentence"), str),
    "s2": ("pair", lambda t: parse_text(t, "second sentence"), str),
    "l": ("layer", lambda t: parse_number(t, "layer", 1, NUM_LAYERS, integer=True), str),
    "hd": ("heads", parse_heads, lambda v: ",".join(str(h) for h in v)),
    "hs": ("hide_special", lambda t: parse_flag(t, "hide [CLS]/[SEP]"), lambda v: "1" if v else "0"),
    "rn": ("renormalise", lambda t: parse_flag(t, "renormalise"), lambda v: "1" if v else "0"),
    "pt": ("part", lambda t: parse_choice(t, "sentence part", PARTS), str),
    "tk": ("token", lambda t: parse_number(t, "followed token", 0, 511, integer=True), str),
}


def decode_model(params: Mapping[str, Any]) -> Decoded:
    """Read the model page's state from URL parameters (bad fields fall back with a warning)."""
    return _decode(params, _MODEL_CODEC, ModelState())


def encode_model(state: ModelState) -> dict[str, str]:
    """Compact URL parameters: only what differs from the default."""
    return _encode(state, _MODEL_CODEC, ModelState(), set())
