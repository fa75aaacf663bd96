"""The state of "Is attention an explanation?" and its fields (parsed, validated, capped: never evaluated)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.app.learned_state import MAX_SEQUENCE_TEXT
from attnviz.app.model_state import NUM_HEADS, NUM_LAYERS
from attnviz.app.state import MAX_TEXT, Decoded
from attnviz.core.fields import Field, decode_fields, encode_fields
from attnviz.models.learned.dates import MAX_PROBE_LENGTH, OUTPUT_LENGTH

MEAN_OF_HEADS = 0  # the head field's value for the heads' mean; heads are counted from 1
# The models the page explains: the pretrained MiniLM on a sentence, the induction model on a repeat, the dates model
# on a date (attnviz/models/learned/explanation.py)
MODELS = ("minilm", "induction", "dates")
LAYERS = {"minilm": NUM_LAYERS, "induction": 2, "dates": 1}  # a link's layer and head beyond these are capped
HEADS = {"minilm": NUM_HEADS, "induction": 2, "dates": 1}


@dataclass(frozen=True)
class ExplanationState:
    """Everything the page shows. Layer and head are counted from 1, as on the page; head 0 is the heads' mean."""

    model: str = "minilm"
    sentence: str = "The cat sat on the mat because it was tired."
    pair: str = ""  # a second sentence: the gradients' readout is then the cosine of the two embeddings
    layer: int = NUM_LAYERS
    head: int = MEAN_OF_HEADS
    sequence: str = "D H A Q K D H A Q K"  # induction: the readout is its last symbol
    date: str = "22 November 2026"
    character: int = 9  # dates: the output character explained, counted from 1 (9: the day's first digit)


EXPLANATION_FIELDS: tuple[Field, ...] = (
    Field("model", "m", "choice", choices=MODELS, label="faithful.model"),
    Field("sentence", "s", "text", max_len=MAX_TEXT, label="attention.sentence"),
    Field("pair", "s2", "text", max_len=MAX_TEXT, label="faithful.pair"),
    Field("layer", "l", "int", low=1, high=NUM_LAYERS, label="model.layer"),
    Field("head", "hd", "int", low=MEAN_OF_HEADS, high=NUM_HEADS, label="faithful.head"),
    Field("sequence", "q", "text", max_len=MAX_SEQUENCE_TEXT, label="learned.sequence"),
    Field("date", "d", "text", max_len=MAX_PROBE_LENGTH, label="learned.date"),
    Field("character", "c", "int", low=1, high=OUTPUT_LENGTH, label="faithful.character"),
)


def shown_layer_head(state: ExplanationState) -> tuple[int, int]:
    """The layer and head (from 1; head 0 the heads' mean) the page shows for the state's model: a link's layer beyond
    the model's own is its last, a head beyond its own the heads' mean."""
    layer = min(state.layer, LAYERS[state.model])
    head = state.head if state.head <= HEADS[state.model] else MEAN_OF_HEADS
    return layer, head


def decode_explanation(params: Mapping[str, Any]) -> Decoded:
    """Read the page's state from link parameters (bad ones fall back, each with a warning)."""
    values, warnings = decode_fields(params, EXPLANATION_FIELDS)
    return Decoded(ExplanationState(**values), warnings)


def encode_explanation(state: ExplanationState) -> dict[str, str]:
    """Compact link parameters: only what differs from the default."""
    return encode_fields(state, ExplanationState(), EXPLANATION_FIELDS, set())
