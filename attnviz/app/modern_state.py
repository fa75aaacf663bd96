"""The modern-attention page's state, its fields and its presets (parsed, validated, capped: never evaluated)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from attnviz.app.state import Decoded, as_matrix
from attnviz.core.fields import Field, Matrix, decode_fields, encode_fields
from attnviz.core.modern import POSITIONS
from attnviz.core.sparse import MASK_KINDS

TOPICS = ("positions", "masks", "heads", "kv_cache", "flash")
SOURCES = ("sentence", "numbers")
PROJECTIONS = ("random", "identity")
VALUE_BYTES = ("1", "2", "4")  # int8, fp16/bf16, fp32
MAX_TOKENS = 32  # the steppers' tables show every key
MAX_FEATURES = 32
MAX_HEADS = 8
MAX_HEAD_DIM = 16
MODEL_DIM = 16  # a sentence's vectors (seeded, of length 1)
MAX_TEXT = 400
MAX_CONTEXT = 1_048_576
STEP_END = MAX_TOKENS  # a stepper past its last step shows the last one


# Six tokens of 4 features: with identity projections and 2 heads of 2, each head's q = k = v is a pair of columns
DEFAULT_X = as_matrix([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [2, 0, 0, 2], [0, 2, 2, 0]])


@dataclass(frozen=True)
class ModernState:
    """Everything the modern-attention page shows."""

    topic: str = "positions"
    preset: str = ""
    source: str = "sentence"
    sentence: str = "a b c d a b c d a b c d"
    x: Matrix = DEFAULT_X
    projections: str = "random"
    seed: int = 0
    positions: str = "rope"
    mask: str = "causal"
    window: int = 3
    global_tokens: tuple[int, ...] = (1,)  # 1-based, as the page numbers tokens
    prefix: int = 4
    block: int = 4
    valid: int = 0  # keys from this one on are padding; 0: none
    heads: int = 2
    kv_heads: int = 2
    head_dim: int = 4
    head: int = 1  # the query head shown and worked out, 1-based
    row: int = 0  # the query row worked out (and the online softmax's)
    block_size: int = 4  # FlashAttention's B
    block_step: int = STEP_END  # the online softmax's stepper: blocks done
    decode_step: int = STEP_END  # the KV cache's stepper: tokens decoded
    context: int = 8192  # the memory calculator's context length
    value_bytes: str = "2"


MODERN_FIELDS: tuple[Field, ...] = (
    Field("topic", "tp", "choice", choices=TOPICS, label="modern.topic"),
    Field("preset", "pr", "choice", choices=("",), label="modern.preset"),  # choices set below, from PRESETS
    Field("source", "in", "choice", choices=SOURCES, label="modern.source"),
    Field("sentence", "s", "text", max_len=MAX_TEXT, label="modern.sentence", help="modern.sentence_help"),
    Field("x", "x", "matrix", max_len=MAX_TOKENS, max_cols=MAX_FEATURES),
    Field(
        "projections", "pj", "choice", choices=PROJECTIONS, label="modern.projections", help="modern.projections_help"
    ),
    Field("seed", "sd", "int", low=0, high=9999, label="modern.seed"),
    Field("positions", "p", "choice", choices=POSITIONS, label="modern.positions"),
    Field("mask", "m", "choice", choices=MASK_KINDS, label="modern.mask"),
    Field("window", "w", "int", low=1, high=MAX_TOKENS, label="modern.window", help="modern.window_help"),
    Field("global_tokens", "gl", "ints", low=1, high=MAX_TOKENS, max_len=MAX_TOKENS, label="modern.global_tokens"),
    Field("prefix", "pf", "int", low=0, high=MAX_TOKENS, label="modern.prefix", help="modern.prefix_help"),
    Field("block", "b", "int", low=1, high=MAX_TOKENS, label="modern.block", help="modern.block_help"),
    Field("valid", "vl", "int", low=0, high=MAX_TOKENS, label="modern.valid", help="modern.valid_help"),
    Field("heads", "h", "int", low=1, high=MAX_HEADS, label="modern.heads"),
    Field("kv_heads", "g", "int", low=1, high=MAX_HEADS, label="modern.kv_heads", help="modern.kv_heads_help"),
    Field("head_dim", "dh", "int", low=1, high=MAX_HEAD_DIM, label="modern.head_dim"),
    Field("head", "hd", "int", low=1, high=MAX_HEADS, label="modern.head"),
    Field("row", "r", "int", low=0, high=MAX_TOKENS - 1, label="modern.row"),
    Field("block_size", "bs", "int", low=1, high=MAX_TOKENS, label="modern.block_size", help="modern.block_size_help"),
    Field("block_step", "bk", "int", low=1, high=STEP_END, label="modern.block_step"),
    Field("decode_step", "t", "int", low=1, high=STEP_END, label="modern.decode_step"),
    Field("context", "ctx", "int", low=1, high=MAX_CONTEXT, label="modern.context"),
    Field("value_bytes", "vb", "choice", choices=VALUE_BYTES, label="modern.value_bytes"),
)

SIXTEEN = "the cat sat on the mat and the dog lay on the rug by the door"  # 16 tokens

# Each preset makes one idea visible at once; its message ids are "modern.preset_<key>" (title) and "..._note".
PRESETS: dict[str, dict[str, Any]] = {
    "rope_repeat": {"topic": "positions", "positions": "rope", "sentence": "a b c d a b c d a b c d", "mask": "causal"},
    "alibi_heads": {"topic": "positions", "positions": "alibi", "sentence": SIXTEEN, "heads": 8, "kv_heads": 8},
    "sinusoidal": {"topic": "positions", "positions": "sinusoidal", "sentence": SIXTEEN, "heads": 1, "kv_heads": 1},
    "sliding_3": {"topic": "masks", "mask": "sliding", "window": 3, "sentence": SIXTEEN, "positions": "none"},
    "longformer": {"topic": "masks", "mask": "local_global", "window": 2, "global_tokens": (1,), "sentence": SIXTEEN},
    "prefix_lm": {"topic": "masks", "mask": "prefix", "prefix": 6, "sentence": SIXTEEN},
    # Blocks of 2 on 16 tokens: 76 of the 136 causal pairs scored (blocks of 4 would score 120, too close to causal)
    "block_sparse": {"topic": "masks", "mask": "block_sparse", "block": 2, "sentence": SIXTEEN},
    "gqa_8_2": {"topic": "heads", "heads": 8, "kv_heads": 2, "sentence": SIXTEEN},
    "mqa": {"topic": "heads", "heads": 8, "kv_heads": 1, "sentence": SIXTEEN},
    "kv_decode": {"topic": "kv_cache", "sentence": "the cat sat on the mat .", "heads": 1, "kv_heads": 1},
    "flash_rescale": {  # query 1 over 6 keys in blocks of 2; key 5 scores 20/sqrt(2) and forces a rescale
        "topic": "flash",
        "source": "numbers",
        "x": as_matrix([[1, 0], [0, 1], [0.5, 0.5], [-1, 0], [20, 0], [0, -1]]),
        "projections": "identity",
        "positions": "none",
        "mask": "full",
        "heads": 1,
        "kv_heads": 1,
        "head_dim": 2,
        "block_size": 2,
        "row": 0,
    },
}

MODERN_FIELDS = tuple(
    replace(f, choices=("", *PRESETS)) if f.name == "preset" else f for f in MODERN_FIELDS
)  # the preset picker lists every preset, "" for none


def apply_modern_preset(key: str) -> ModernState:
    """The default state with the preset's settings (its steppers at their last step)."""
    return replace(ModernState(), preset=key, **PRESETS[key]) if key else ModernState()


def decode_modern(params: Mapping[str, Any]) -> Decoded:
    """Read the page's state from link parameters, on top of the link's preset (bad ones fall back with a warning)."""
    values, warnings = decode_fields(params, MODERN_FIELDS)
    base = apply_modern_preset(values.get("preset", ""))
    return Decoded(replace(base, **values), warnings)


def encode_modern(state: ModernState) -> dict[str, str]:
    """Compact link parameters: the preset and what differs from it."""
    params = encode_fields(state, apply_modern_preset(state.preset), MODERN_FIELDS, set())
    if state.preset:
        params["pr"] = state.preset
    return params
