"""Page state as typed values, each control declared once as a `Field`, and the link codec built on those fields.

A link is parsed, never evaluated: every parameter is read by its field, checked against the field's range and
caps, and a bad one falls back with a warning that names it. No pickle, no eval. Decoding builds no preset's
tensors unless the link names that preset.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from attnviz.core.errors import AttnvizError, Name
from attnviz.core.fields import (
    MAX_COLS,
    MAX_POINTS,
    MAX_ROWS,
    Field,
    Matrix,
    decode_fields,
    encode_fields,
    format_number,
    last,
    shortest32,
)
from attnviz.core.kernel import KERNELS
from attnviz.core.scores import BANDWIDTH, SCORES, SEED
from attnviz.core.text import MAX_TOKENS
from attnviz.figures.style import COLOUR_RANGES
from attnviz.lessons.presets import PRESET_PAGES, presets_for

__all__ = ["MAX_COLS", "MAX_ROWS", "Matrix", "format_number"]

MAX_TEXT = 2000  # characters of a sentence
MAX_VECTOR_TEXT = 12_000  # characters of typed query points (512 numbers of up to ~20 characters)
MAX_HEADS = 8
MAX_DIM = 64  # embedding size for sentences
EMBEDDINGS = ("seeded", "minilm", "trained")


def as_matrix(rows: list[list[float]]) -> Matrix:
    """Rows of numbers as a state's matrix (tuples of floats)."""
    return tuple(tuple(float(x) for x in row) for row in rows)


DEFAULT_X = as_matrix([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])


@dataclass(frozen=True)
class AttentionState:
    """Everything the self- and cross-attention pages show, as plain values."""

    page: str = "self"  # "self" or "cross"
    preset: str = ""
    batch: int = 0
    mode: str = "sentence"  # "sentence" or "numbers"
    sentence: str = "the quick brown fox jumps over the dog"  # self page; cross: the query (target) sentence
    source: str = "猫坐在垫子上"  # cross page: the key/value sentence
    embed: str = "seeded"  # sentence mode: seeded random vectors of size dim, or "minilm" (the model's 384-d ones)
    dim: int = 8
    embed_seed: int = 0
    queries: Matrix = DEFAULT_X  # numbers mode; the self page uses this as x
    keys: Matrix = DEFAULT_X
    values: Matrix = DEFAULT_X
    score: str = "scaled_dot"
    score_seed: int = 0
    score_matrix: Matrix = ((0.0,),)  # the typed scores (score "given"): one row per query, one column per key
    num_hiddens: int = 8
    bandwidth: float = 1.0
    temperature: float = 1.0
    causal: bool = False
    lens_mode: str = "none"  # "none", "all" (one length for every query) or "per_query"
    lens: tuple[int, ...] = ()
    projections: str = "identity"
    proj_seed: int = 0
    heads: int = 1
    residual: bool = False
    row: int = 0
    compare: str = ""  # second score for the side-by-side view; "" = off
    predict: bool = False  # predict, then reveal: the weights stay hidden until a guess for one query row is in
    crange: str = "data"  # the weights charts' colour range: "data", "unit" (0-1) or "row" (style.COLOUR_RANGES)

    def score_params(self, score: str | None = None) -> dict[str, Any]:
        """Keyword parameters of the chosen (or given) score, taken from this state."""
        spec = SCORES[score or self.score]
        return {p.name: getattr(self, SCORE_PARAM_ATTRS.get(p.name, p.name)) for p in spec.params}


@dataclass(frozen=True)
class KernelState:
    """Everything the kernel-regression page shows."""

    preset: str = "waist_weight"
    keys: tuple[float, ...] = (51.0, 56.0, 58.0)
    values: tuple[float, ...] = (40.0, 43.0, 48.0)
    queries: tuple[float, ...] = (57.0,)
    kernel: str = "gaussian"
    bandwidth: float = 1.0
    row: int = 0
    toy_seed: int = 0
    toy_n: int = 50
    crange: str = "data"  # the weights chart's colour range, as on the attention pages


# --- the fields of each page: link key, type, range, message ids (one declaration per control) ----------------

_SEED_RANGE = {"low": SEED.low, "high": SEED.high}
TEMPERATURE = Field(
    "temperature",
    "T",
    "float",
    low=0.001,
    high=1000.0,
    label="attention.temperature",
    help="attention.temperature_help",
    step=0.1,
    fmt="%.3g",
)

COLOUR_RANGE = Field(
    "crange", "cr", "choice", choices=COLOUR_RANGES, label="widget.colour_range", help="widget.colour_range_help"
)

# The scores' parameters are declared once, in attnviz.core.scores; the page state keeps each under its own name, except
# a score's seed, kept as `score_seed` beside the embedding and projection seeds.
SCORE_PARAM_ATTRS = {"seed": "score_seed", "scores": "score_matrix"}


@functools.cache
def score_param_fields() -> tuple[Field, ...]:
    """Every parameter of every score, once (by link key), named as the page state names it."""
    unique: dict[str, Field] = {}
    for spec in SCORES.values():
        for param in spec.params:
            unique.setdefault(param.key, param)
    return tuple(
        replace(p, name=SCORE_PARAM_ATTRS[p.name]) if p.name in SCORE_PARAM_ATTRS else p for p in unique.values()
    )


def _preset_field(page: str) -> Field:
    choices = ("", *presets_for(page))
    return Field(
        "preset", "p", "choice", choices=choices, label="kernel.preset" if page == "kernel" else "attention.preset"
    )


@functools.cache  # immutable; every rerun asks for it several times
def attention_fields(page: str) -> tuple[Field, ...]:
    """The self- or cross-attention page's controls."""
    return (
        _preset_field(page),
        Field("batch", "b", "int", low=0, high=1000, label="widget.batch_row", help="widget.batch_help"),
        Field("mode", "m", "choice", choices=("sentence", "numbers"), label="attention.input"),
        Field("sentence", "s", "text", max_len=MAX_TEXT, help="attention.sentence_help"),
        Field("source", "src", "text", max_len=MAX_TEXT, label="attention.source_sentence"),
        Field(
            "embed", "emb", "choice", choices=EMBEDDINGS, label="attention.embeddings", help="attention.embeddings_help"
        ),
        Field("dim", "dim", "int", low=1, high=MAX_DIM, label="attention.embedding_size"),
        Field("embed_seed", "es", "int", **_SEED_RANGE, label="attention.embedding_seed"),
        Field("queries", "q", "matrix", max_len=MAX_ROWS),
        Field("keys", "k", "matrix", max_len=MAX_ROWS),
        Field("values", "v", "matrix", max_len=MAX_ROWS),
        Field("score", "sc", "choice", choices=tuple(SCORES), label="widget.scoring_function"),
        *score_param_fields(),
        TEMPERATURE,
        Field("causal", "c", "bool", label="attention.causal"),
        Field(
            "lens_mode",
            "lm",
            "choice",
            choices=("none", "all", "per_query"),
            label="widget.valid_lengths",
            help="widget.lens_help",
        ),
        Field("lens", "vl", "ints", low=0, high=MAX_TOKENS, max_len=MAX_TOKENS),
        Field("projections", "pr", "choice", choices=("identity", "random", "trained")),
        Field("proj_seed", "ps", "int", **_SEED_RANGE, label="attention.projection_seed"),
        Field("heads", "h", "int", low=1, high=MAX_HEADS, label="attention.heads", help="attention.heads_help"),
        Field("residual", "res", "bool", label="attention.residual"),
        Field("row", "row", "int", low=0, high=MAX_TOKENS, label="widget.query_row"),
        Field("compare", "cmp", "choice", choices=("", *SCORES), label="attention.compare"),
        Field("predict", "guess", "bool", label="attention.predict", help="attention.predict_help"),
        COLOUR_RANGE,
    )


KERNEL_FIELDS: tuple[Field, ...] = (
    _preset_field("kernel"),
    Field("keys", "k", "vector", max_len=MAX_POINTS),
    Field("values", "v", "vector", max_len=MAX_POINTS),
    Field("queries", "q", "vector", max_len=MAX_POINTS, label="kernel.queries"),
    Field("kernel", "kn", "choice", choices=tuple(KERNELS), label="kernel.kernel"),
    BANDWIDTH,
    Field("row", "row", "int", low=0, high=MAX_POINTS - 1, label="kernel.query_to_explain"),
    Field("toy_seed", "ts", "int", **_SEED_RANGE, label="kernel.data_seed"),
    Field("toy_n", "tn", "int", low=5, high=200, label="kernel.training_count"),
    COLOUR_RANGE,
)


@dataclass
class Decoded:
    """A state read from a link, with one warning per parameter that fell back."""

    state: Any
    warnings: list[AttnvizError] = field(default_factory=list)


# --- the attention pages' codec ----------------------------------------------------------------------------------


def default_attention_state(page: str) -> AttentionState:
    """The state a page shows when its link has no parameters."""
    if page == "cross":
        return AttentionState(
            page="cross",
            sentence="the cat sat on the mat",
            queries=as_matrix([[1, 0], [0, 1]]),
            score="additive",
        )
    return AttentionState(page="self")


def _preset_params(params: Mapping[str, Any], page: str, fields: tuple[Field, ...]) -> tuple[str, int, list]:
    """The link's preset and batch row; a preset of another page is refused with a warning that says where it
    belongs (its inputs have another shape)."""
    text = last(params.get("p", ""))
    warnings: list[AttnvizError] = []
    if text and text in PRESET_PAGES and text not in presets_for(page):
        warnings.append(
            AttnvizError("preset_other_page", param="p", value=text, page=Name(f"page_{PRESET_PAGES[text]}"))
        )
        params = {k: v for k, v in params.items() if k not in ("p", "b")}
    values, more = decode_fields({k: v for k, v in params.items() if k in ("p", "b")}, fields)
    return values.get("preset", ""), values.get("batch", 0), warnings + more


def decode_attention(params: Mapping[str, Any], page: str) -> Decoded:
    """Read an attention page's state from link parameters (bad ones fall back, each with a warning)."""
    fields = attention_fields(page)
    preset, batch, warnings = _preset_params(params, page, fields)
    base = _attention_base(page, preset, batch)
    values, more = decode_fields(params, fields, skip=("p", "b"))
    state = replace(base, **values)
    if state.page == "self":
        state = replace(state, keys=state.queries, values=state.queries, source=base.source, residual=False)
    return Decoded(state, warnings + more)


def encode_attention(state: AttentionState) -> dict[str, str]:
    """Compact link parameters: only what differs from the page default or the chosen preset."""
    base = _attention_base(state.page, state.preset, state.batch)
    skip = {"preset", "batch"}  # every other field is written when it differs, shown or not: nothing is lost
    if state.page == "self":
        skip |= {"keys", "values", "source", "residual"}  # the self page has none of its own: keys = values = x
    params = {}
    if state.preset:
        params["p"] = state.preset
        if state.batch:
            params["b"] = str(state.batch)
    params.update(encode_fields(state, base, attention_fields(state.page), skip))
    return params


@functools.lru_cache(maxsize=64)  # every rerun encodes its link against it: a preset is thousands of numbers
def _attention_base(page: str, preset: str, batch: int) -> AttentionState:
    """What a link's fields are relative to: the page default, or the preset as the notes define it."""
    default = default_attention_state(page)
    return apply_preset(default, preset, batch=batch) if preset else default


# --- the kernel page's codec -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)  # the toy data are regenerated otherwise, on every rerun
def _kernel_base(preset: str, toy_seed: int = 0, toy_n: int = 50) -> KernelState:
    default = replace(KernelState(), toy_seed=toy_seed, toy_n=toy_n)
    return apply_kernel_preset(default, preset) if preset else replace(default, preset="")


def decode_kernel(params: Mapping[str, Any]) -> Decoded:
    """Read the kernel page's state from link parameters; keys and values of different lengths fall back together."""
    preset, _, warnings = _preset_params(params, "kernel", KERNEL_FIELDS)
    if "p" not in params or (warnings and not preset):
        preset = KernelState().preset  # no preset named (or a bad one): the page's default example
    head, more = decode_fields({k: v for k, v in params.items() if k in ("ts", "tn")}, KERNEL_FIELDS)
    base = _kernel_base(preset, head.get("toy_seed", 0), head.get("toy_n", 50))
    values, rest = decode_fields(params, KERNEL_FIELDS, skip=("p", "ts", "tn"))
    keys, vals = values.get("keys", base.keys), values.get("values", base.values)
    if len(keys) != len(vals):
        rest.append(AttnvizError("points_mismatch", keys=len(keys), values=len(vals)))
        values.pop("keys", None)
        values.pop("values", None)
    return Decoded(replace(base, **values), warnings + more + rest)


def encode_kernel(state: KernelState) -> dict[str, str]:
    """Compact link parameters for the kernel page."""
    base = _kernel_base(state.preset, state.toy_seed, state.toy_n)
    params = {"p": state.preset} if state.preset != KernelState().preset else {}
    skip = {"preset", "toy_seed", "toy_n"}
    if state.preset == "d2l_toy_regression":
        skip = {"preset"}
        base = replace(base, toy_seed=0, toy_n=50)
    params.update(encode_fields(state, base, KERNEL_FIELDS, skip))
    return params


# --- presets -> states ------------------------------------------------------------------------------------


def preset_batches(key: str) -> int:
    """How many batch rows a preset has (1 for unbatched)."""
    from attnviz.lessons.presets import PRESETS

    preset = PRESETS[key]
    return preset.queries.shape[0] if preset.queries.dim() == 3 else 1


def _rows(tensor: Any, batch: int) -> Matrix:
    """One batch row of a preset's float32 tensor, each number as the shortest decimal of its float32."""
    if tensor.dim() == 3:
        tensor = tensor[min(batch, tensor.shape[0] - 1)]
    return tuple(tuple(shortest32(x) for x in row) for row in tensor.tolist())


def preset_lens(key: str, batch: int) -> tuple[str, tuple[int, ...]]:
    """A preset's valid lengths for one batch row: each row has its own (d2l's valid_lens = [2, 6])."""
    from attnviz.lessons.presets import PRESETS

    lens = PRESETS[key].settings.get("valid_lens")
    if lens is None:
        return "none", ()
    row = lens[min(batch, len(lens) - 1)]
    if isinstance(row, list | tuple):  # one length per query of the row (note 004's [[1, 3], [2, 4]])
        return "per_query", tuple(int(n) for n in row)
    return "all", (int(row),)


def apply_preset(state: AttentionState, key: str, batch: int = 0, keep_controls: bool = False) -> AttentionState:
    """Load a preset's inputs and settings (one batch row of a batched preset) into a state.

    `keep_controls` keeps the user's scoring controls (when only the batch row changes); the valid lengths always
    follow the batch row, because they belong to it."""
    from attnviz.lessons.presets import PRESETS

    preset = PRESETS[key]
    batch = max(0, min(batch, preset_batches(key) - 1))
    settings = preset.settings
    lens_mode, lens = preset_lens(key, batch)
    changes: dict[str, Any] = dict(
        preset=key,
        batch=batch,
        mode="numbers",
        queries=_rows(preset.queries, batch),
        keys=_rows(preset.keys, batch),
        values=_rows(preset.values, batch),
        lens_mode=lens_mode,
        lens=lens,
    )
    if "scores" in settings:  # typed scores belong to the batch row, like its inputs
        changes["score_matrix"] = _rows(settings["scores"], batch)
    if not keep_controls:
        defaults = default_attention_state(state.page)
        changes.update(
            score=settings.get("score", "scaled_dot"),
            score_seed=settings.get("seed", 0) if "score" in settings and SCORES[settings["score"]].learned else 0,
            causal=settings.get("causal", False),
            temperature=defaults.temperature,
            projections=settings.get("projections", "identity"),
            proj_seed=settings.get("proj_seed", 0),
            heads=1,
            residual=settings.get("residual", False),
            row=0,
            compare="",
            num_hiddens=defaults.num_hiddens,
            bandwidth=defaults.bandwidth,
        )
    return replace(state, **changes)


def apply_kernel_preset(state: KernelState, key: str, keep_controls: bool = False) -> KernelState:
    """Load a kernel preset (or regenerate the seeded toy data)."""
    from attnviz.core.kernel import make_toy_data
    from attnviz.lessons.presets import PRESETS

    if key == "d2l_toy_regression":
        data = make_toy_data(n_train=state.toy_n, seed=state.toy_seed)
        keys, values, queries = data.x_train.tolist(), data.y_train.tolist(), data.x_test.tolist()
    else:
        preset = PRESETS[key]
        keys, values, queries = preset.keys.tolist(), preset.values.tolist(), preset.queries.tolist()

    def short_numbers(xs: list[float]) -> tuple[float, ...]:  # 6 significant digits: short links, tidy editors
        return tuple(float(f"{x:.6g}") for x in xs)

    changes: dict[str, Any] = dict(
        preset=key, keys=short_numbers(keys), values=short_numbers(values), queries=short_numbers(queries)
    )
    if not keep_controls:
        changes.update(kernel=PRESETS[key].settings["kernel"], bandwidth=PRESETS[key].settings["bandwidth"], row=0)
    return replace(state, **changes)
