"""The pretrained-model page's state and its fields (parsed, validated, capped: never evaluated)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.app.state import MAX_TEXT, Decoded
from attnviz.core.errors import AttnvizError, Name
from attnviz.core.fields import Field, decode_fields, encode_fields

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


MODEL_FIELDS: tuple[Field, ...] = (
    Field("sentence", "s", "text", max_len=MAX_TEXT, label="attention.sentence"),
    Field("pair", "s2", "text", max_len=MAX_TEXT, label="model.pair"),
    Field("layer", "l", "int", low=1, high=NUM_LAYERS, label="model.layer"),
    Field("heads", "hd", "ints", low=1, high=NUM_HEADS, max_len=NUM_HEADS, label="model.heads"),
    Field("hide_special", "hs", "bool", label="model.hide_special"),
    Field("renormalise", "rn", "bool", label="model.renormalise"),
    Field("part", "pt", "choice", choices=PARTS, label="model.between"),
    Field("token", "tk", "int", low=0, high=511, label="model.token"),
)


def decode_model(params: Mapping[str, Any]) -> Decoded:
    """Read the model page's state from link parameters (bad ones fall back, each with a warning)."""
    values, warnings = decode_fields(params, MODEL_FIELDS)
    if "heads" in values:
        heads = tuple(sorted(set(values["heads"])))
        if heads:
            values["heads"] = heads
        else:
            del values["heads"]
            warnings.append(AttnvizError("link", param="hd", error=AttnvizError("no_head"), name=Name("heads")))
    return Decoded(ModelState(**values), warnings)


def encode_model(state: ModelState) -> dict[str, str]:
    """Compact link parameters: only what differs from the default."""
    return encode_fields(state, ModelState(), MODEL_FIELDS, set())
