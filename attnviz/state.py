"""Page state as typed, validated values, and the URL codec that makes every demo a shareable link.

The URL is parsed, never evaluated: every field is read with its own parser, checked against caps,
and a bad field falls back to its default with a warning that names it. No pickle, no eval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from attnviz.kernel import KERNELS
from attnviz.presets import PRESETS
from attnviz.scores import HIDDENS, SCORES, SEED
from attnviz.text import MAX_TOKENS

MAX_ROWS = 64  # tokens or points typed as numbers
MAX_COLS = 256  # features per token (the notes' seq2seq example has 256)
MAX_TEXT = 2000  # characters of a sentence in a link
MAX_PARAM = 20_000  # characters of any one URL parameter
MAX_HEADS = 8
MAX_DIM = 64  # embedding size for sentences
EMBEDDINGS = ("seeded", "minilm")

Matrix = tuple[tuple[float, ...], ...]


def _matrix(rows: list[list[float]]) -> Matrix:
    return tuple(tuple(float(x) for x in row) for row in rows)


DEFAULT_X = _matrix([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])


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

    def score_params(self, score: str | None = None) -> dict[str, Any]:
        """Keyword parameters of the chosen (or given) score, taken from this state."""
        spec = SCORES[score or self.score]
        available = {"seed": self.score_seed, "num_hiddens": self.num_hiddens, "bandwidth": self.bandwidth}
        return {p.name: available[p.name] for p in spec.params}


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


# --- field parsers: text -> value, raising ValueError with a message for the user -----------------


def parse_number(text: str, name: str, low: float, high: float, *, integer: bool = False) -> float | int:
    """A finite number within [low, high]."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {_short(text)!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g}; got {_short(text)!r}")
    if integer:
        if value != int(value):
            raise ValueError(f"{name} must be a whole number; got {_short(text)!r}")
        return int(value)
    return value


def parse_matrix(text: str, name: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> Matrix:
    """Rows separated by ';', numbers by ','; rectangular, finite, within the size caps."""
    rows = [row for row in text.split(";")]
    if not text.strip():
        raise ValueError(f"{name} is empty")
    if len(rows) > max_rows:
        raise ValueError(f"{name} has {len(rows)} rows; the limit is {max_rows}")
    parsed: list[list[float]] = []
    for r, row in enumerate(rows, start=1):
        cells = row.split(",")
        if len(cells) > max_cols:
            raise ValueError(f"{name} row {r} has {len(cells)} numbers; the limit is {max_cols}")
        values = []
        for c, cell in enumerate(cells, start=1):
            try:
                value = float(cell)
            except ValueError:
                raise ValueError(f"{name} row {r}, column {c}: {_short(cell)!r} is not a number") from None
            if not math.isfinite(value) or abs(value) > 1e6:
                raise ValueError(f"{name} row {r}, column {c}: {_short(cell)!r} must be finite and within ±1e6")
            values.append(value)
        if parsed and len(values) != len(parsed[0]):
            raise ValueError(f"{name} row {r} has {len(values)} numbers but row 1 has {len(parsed[0])}")
        parsed.append(values)
    return _matrix(parsed)


def parse_vector(text: str, name: str, max_len: int = MAX_ROWS * 8) -> tuple[float, ...]:
    """Comma-separated finite numbers."""
    matrix = parse_matrix(text.replace(";", ","), name, max_rows=1, max_cols=max_len)
    return matrix[0]


def parse_lens(text: str) -> tuple[int, ...]:
    """Comma-separated whole numbers >= 0 (checked against the key count later)."""
    if not text.strip():
        return ()
    lens = []
    for i, cell in enumerate(text.split(","), start=1):
        lens.append(int(parse_number(cell, f"valid length {i}", 0, MAX_TOKENS, integer=True)))
    if len(lens) > MAX_TOKENS:
        raise ValueError(f"too many valid lengths ({len(lens)})")
    return tuple(lens)


def parse_choice(text: str, name: str, choices: Mapping[str, Any] | tuple[str, ...]) -> str:
    """One of the allowed names."""
    if text not in choices:
        raise ValueError(f"unknown {name} {_short(text)!r}; expected one of: {', '.join(choices)}")
    return text


def parse_flag(text: str, name: str) -> bool:
    """'1' or '0'."""
    if text not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1; got {_short(text)!r}")
    return text == "1"


def parse_text(text: str, name: str) -> str:
    """A sentence, capped in length."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"{name} is {len(text)} characters long; the limit is {MAX_TEXT}")
    return text


def format_number(value: float) -> str:
    """Shortest faithful text for a number (6 significant digits, no trailing zeros)."""
    return f"{value:.6g}"


def format_matrix(matrix: Matrix) -> str:
    """Inverse of `parse_matrix`."""
    return ";".join(",".join(format_number(x) for x in row) for row in matrix)


def _short(text: Any, limit: int = 40) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


# --- the codec ----------------------------------------------------------------------------------------

# URL key -> (state field, parser, formatter). Parsers get the raw text and raise ValueError.
Codec = dict[str, tuple[str, Callable[[str], Any], Callable[[Any], str]]]

_INT = str
_ATTENTION_CODEC: Codec = {
    "p": ("preset", lambda t: parse_choice(t, "preset", PRESETS), str),
    "b": ("batch", lambda t: parse_number(t, "batch row", 0, 1000, integer=True), _INT),
    "m": ("mode", lambda t: parse_choice(t, "input mode", ("sentence", "numbers")), str),
    "s": ("sentence", lambda t: parse_text(t, "sentence"), str),
    "src": ("source", lambda t: parse_text(t, "source sentence"), str),
    "emb": ("embed", lambda t: parse_choice(t, "embeddings", EMBEDDINGS), str),
    "dim": ("dim", lambda t: parse_number(t, "embedding size", 1, MAX_DIM, integer=True), _INT),
    "es": ("embed_seed", lambda t: parse_number(t, "embedding seed", 0, SEED.maximum, integer=True), _INT),
    "q": ("queries", lambda t: parse_matrix(t, "queries"), format_matrix),
    "k": ("keys", lambda t: parse_matrix(t, "keys"), format_matrix),
    "v": ("values", lambda t: parse_matrix(t, "values"), format_matrix),
    "sc": ("score", lambda t: parse_choice(t, "score", SCORES), str),
    "sd": ("score_seed", lambda t: parse_number(t, "score seed", 0, SEED.maximum, integer=True), _INT),
    "nh": (
        "num_hiddens",
        lambda t: parse_number(t, "hidden units", HIDDENS.minimum, HIDDENS.maximum, integer=True),
        _INT,
    ),
    "bw": ("bandwidth", lambda t: parse_number(t, "bandwidth", 1e-3, 1e3), format_number),
    "T": ("temperature", lambda t: parse_number(t, "temperature", 1e-3, 1e3), format_number),
    "c": ("causal", lambda t: parse_flag(t, "causal"), lambda v: "1" if v else "0"),
    "lm": ("lens_mode", lambda t: parse_choice(t, "valid-length mode", ("none", "all", "per_query")), str),
    "vl": ("lens", parse_lens, lambda v: ",".join(str(x) for x in v)),
    "pr": ("projections", lambda t: parse_choice(t, "projections", ("identity", "random")), str),
    "ps": ("proj_seed", lambda t: parse_number(t, "projection seed", 0, SEED.maximum, integer=True), _INT),
    "h": ("heads", lambda t: parse_number(t, "heads", 1, MAX_HEADS, integer=True), _INT),
    "res": ("residual", lambda t: parse_flag(t, "residual"), lambda v: "1" if v else "0"),
    "row": ("row", lambda t: parse_number(t, "selected row", 0, MAX_TOKENS, integer=True), _INT),
    "cmp": ("compare", lambda t: "" if t == "" else parse_choice(t, "comparison score", SCORES), str),
    "guess": ("predict", lambda t: parse_flag(t, "predict, then reveal"), lambda v: "1" if v else "0"),
}

_KERNEL_CODEC: Codec = {
    "p": ("preset", lambda t: "" if t == "" else parse_choice(t, "preset", PRESETS), str),
    "k": ("keys", lambda t: parse_vector(t, "keys"), lambda v: ",".join(map(format_number, v))),
    "v": ("values", lambda t: parse_vector(t, "values"), lambda v: ",".join(map(format_number, v))),
    "q": ("queries", lambda t: parse_vector(t, "queries"), lambda v: ",".join(map(format_number, v))),
    "kn": ("kernel", lambda t: parse_choice(t, "kernel", KERNELS), str),
    "bw": ("bandwidth", lambda t: parse_number(t, "bandwidth", 1e-3, 1e4), format_number),
    "row": ("row", lambda t: parse_number(t, "selected row", 0, MAX_ROWS * 8, integer=True), _INT),
    "ts": ("toy_seed", lambda t: parse_number(t, "data seed", 0, SEED.maximum, integer=True), _INT),
    "tn": ("toy_n", lambda t: parse_number(t, "number of points", 5, 200, integer=True), _INT),
}


@dataclass
class Decoded:
    """A state read from a URL, with one warning per field that fell back to its default."""

    state: Any
    warnings: list[str] = field(default_factory=list)


def _first(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = value[-1] if value else ""
    return str(value)


def _decode(params: Mapping[str, Any], codec: Codec, default: Any) -> Decoded:
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for key, raw in params.items():
        if key not in codec:
            continue  # unknown parameters (e.g. added by a proxy) are ignored, not fatal
        name, parse, _ = codec[key]
        text = _first(raw)
        if len(text) > MAX_PARAM:
            warnings.append(
                f"Link parameter '{key}' is {len(text)} characters long (limit {MAX_PARAM}); using the default {name}."
            )
            continue
        try:
            changes[name] = parse(text)
        except ValueError as exc:
            warnings.append(f"Link parameter '{key}': {exc}. Using the default {name}.")
    return Decoded(replace(default, **changes), warnings)


def _encode(state: Any, codec: Codec, default: Any, skip: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, (name, _, fmt) in codec.items():
        value = getattr(state, name)
        if name in skip or value == getattr(default, name):
            continue
        out[key] = fmt(value)
    return out


def default_attention_state(page: str) -> AttentionState:
    """The state a page shows when its link has no parameters."""
    if page == "cross":
        return AttentionState(
            page="cross",
            sentence="the cat sat on the mat",
            residual=False,
            queries=_matrix([[1, 0], [0, 1]]),
            keys=DEFAULT_X,
            values=DEFAULT_X,
            score="additive",
        )
    return AttentionState(page="self")


def _attention_base(page: str, preset: str, batch: int) -> AttentionState:
    """What a link's fields are relative to: the page default, or the preset as the notes define it."""
    default = default_attention_state(page)
    return apply_preset(default, preset, batch=batch) if preset else default


def decode_attention(params: Mapping[str, Any], page: str) -> Decoded:
    """Read an attention page's state from URL parameters (bad fields fall back with a warning)."""
    preset_part = _decode(
        {k: v for k, v in params.items() if k in ("p", "b")}, _ATTENTION_CODEC, default_attention_state(page)
    )
    base = _attention_base(page, preset_part.state.preset, preset_part.state.batch)
    decoded = _decode({k: v for k, v in params.items() if k not in ("p", "b")}, _ATTENTION_CODEC, base)
    state = decoded.state
    if state.page == "self":
        state = replace(state, keys=state.queries, values=state.queries)
    return Decoded(state, preset_part.warnings + decoded.warnings)


def encode_attention(state: AttentionState) -> dict[str, str]:
    """Compact URL parameters: only what differs from the page default or the chosen preset."""
    base = _attention_base(state.page, state.preset, state.batch)
    skip = {"page", "preset", "batch"}
    if state.mode == "numbers":
        skip |= {"sentence", "source", "embed", "dim", "embed_seed"}
    else:
        skip |= {"queries", "keys", "values"}
        if state.embed == "minilm":
            skip |= {"dim", "embed_seed"}
    if state.page == "self":
        skip |= {"keys", "values", "source", "residual"}
    params = {}
    if state.preset:
        params["p"] = state.preset
        if state.batch:
            params["b"] = str(state.batch)
    params.update(_encode(state, _ATTENTION_CODEC, base, skip))
    if state.page == "self" and state.mode == "numbers" and state.queries != base.queries:
        params["q"] = format_matrix(state.queries)
    return params


def _kernel_base(preset: str, toy_seed: int = 0, toy_n: int = 50) -> KernelState:
    default = replace(KernelState(), toy_seed=toy_seed, toy_n=toy_n)
    return apply_kernel_preset(default, preset) if preset else replace(default, preset="")


def decode_kernel(params: Mapping[str, Any]) -> Decoded:
    """Read the kernel page's state from URL parameters."""
    head = _decode({k: v for k, v in params.items() if k in ("p", "ts", "tn")}, _KERNEL_CODEC, KernelState())
    base = _kernel_base(head.state.preset, head.state.toy_seed, head.state.toy_n)
    decoded = _decode({k: v for k, v in params.items() if k not in ("p", "ts", "tn")}, _KERNEL_CODEC, base)
    return Decoded(decoded.state, head.warnings + decoded.warnings)


def encode_kernel(state: KernelState) -> dict[str, str]:
    """Compact URL parameters for the kernel page."""
    base = _kernel_base(state.preset, state.toy_seed, state.toy_n)
    params = {"p": state.preset} if state.preset != KernelState().preset else {}
    if state.preset == "d2l_toy_regression":
        params.update({k: str(v) for k, v in (("ts", state.toy_seed), ("tn", state.toy_n)) if v != (0, 50)[k == "tn"]})
    params.update(_encode(state, _KERNEL_CODEC, base, {"preset", "toy_seed", "toy_n"}))
    return params


# --- presets -> states ------------------------------------------------------------------------------------


def preset_batches(key: str) -> int:
    """How many batch rows a preset has (1 for unbatched)."""
    preset = PRESETS[key]
    return preset.queries.shape[0] if preset.queries.dim() == 3 else 1


def _rows(tensor: Any, batch: int) -> Matrix:
    if tensor.dim() == 3:
        tensor = tensor[min(batch, tensor.shape[0] - 1)]
    return _matrix(tensor.tolist())


def apply_preset(state: AttentionState, key: str, batch: int = 0, keep_controls: bool = False) -> AttentionState:
    """Load a preset's inputs and settings (one batch row of a batched preset) into a state."""
    preset = PRESETS[key]
    batch = max(0, min(batch, preset_batches(key) - 1))
    settings = preset.settings
    changes: dict[str, Any] = dict(
        preset=key,
        batch=batch,
        mode="numbers",
        queries=_rows(preset.queries, batch),
        keys=_rows(preset.keys, batch),
        values=_rows(preset.values, batch),
    )
    if not keep_controls:
        defaults = default_attention_state(state.page)
        changes.update(
            score=settings.get("score", "scaled_dot"),
            score_seed=settings.get("seed", 0) if "score" in settings and SCORES[settings["score"]].learned else 0,
            causal=settings.get("causal", False),
            temperature=1.0,
            projections=settings.get("projections", "identity"),
            proj_seed=settings.get("proj_seed", 0),
            heads=1,
            residual=settings.get("residual", False),
            row=0,
            compare="",
            lens_mode="none",
            lens=(),
            num_hiddens=defaults.num_hiddens,
            bandwidth=defaults.bandwidth,
        )
        lens = settings.get("valid_lens")
        if lens is not None:
            changes.update(lens_mode="all", lens=(int(lens[batch]),))
    return replace(state, **changes)


def apply_kernel_preset(state: KernelState, key: str, keep_controls: bool = False) -> KernelState:
    """Load a kernel preset (or regenerate the seeded toy data)."""
    from attnviz.kernel import make_toy_data

    if key == "d2l_toy_regression":
        data = make_toy_data(n_train=state.toy_n, seed=state.toy_seed)
        keys, values, queries = data.x_train.tolist(), data.y_train.tolist(), data.x_test.tolist()
    else:
        preset = PRESETS[key]
        keys, values, queries = preset.keys.tolist(), preset.values.tolist(), preset.queries.tolist()

    def short(xs: list[float]) -> tuple[float, ...]:  # 6 significant digits: what a link can carry exactly
        return tuple(float(format_number(x)) for x in xs)

    changes: dict[str, Any] = dict(preset=key, keys=short(keys), values=short(values), queries=short(queries))
    if not keep_controls:
        changes.update(kernel=PRESETS[key].settings["kernel"], bandwidth=PRESETS[key].settings["bandwidth"], row=0)
    return replace(state, **changes)


def state_fields(state: Any) -> list[str]:
    """Field names of a state dataclass."""
    return [f.name for f in fields(state)]
