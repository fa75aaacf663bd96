"""From a page state to what the page draws: inputs, traces, exports. Pure: no Streamlit, no Plotly."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor

from attnviz.kernel import nadaraya_watson
from attnviz.multihead import MultiHeadTrace, multi_head_attend
from attnviz.state import AttentionState, KernelState, Matrix
from attnviz.text import MAX_TOKENS, embed_tokens, tokenize
from attnviz.trace import AttentionTrace


@dataclass(frozen=True)
class AttentionInputs:
    """The tensors and labels an attention page computes with (unbatched)."""

    queries: Tensor  # (Q, d)
    keys: Tensor  # (K, d_k)
    values: Tensor  # (K, v)
    query_labels: list[str]
    key_labels: list[str]
    valid_lens: int | list[int] | None


def _labels(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i + 1}" for i in range(count)]


def _tensor(matrix: Matrix) -> Tensor:
    return torch.tensor(matrix, dtype=torch.float32)


def sentence_inputs(sentence: str, dim: int, seed: int, what: str) -> tuple[list[str], Tensor]:
    """Tokens and their seeded embeddings, with errors that say which sentence is wrong."""
    try:
        tokens = tokenize(sentence, max_tokens=MAX_TOKENS)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    return tokens, embed_tokens(tokens, dim=dim, seed=seed)


WordVectors = Callable[[str], tuple[list[str], Tensor]]  # sentence -> (tokens, (n, d) vectors)


def model_inputs(sentence: str, word_vectors: WordVectors | None, what: str) -> tuple[list[str], Tensor]:
    """WordPiece tokens and the pretrained model's input embeddings, with errors that say which sentence is wrong."""
    if word_vectors is None:
        raise ValueError("The model's embeddings need the pretrained model, which is not available here.")
    try:
        return word_vectors(sentence)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def resolve_inputs(state: AttentionState, word_vectors: WordVectors | None = None) -> AttentionInputs:
    """Queries, keys, values and labels for a state; ValueError with a message for the page.

    `word_vectors` embeds a sentence with the pretrained model (for `state.embed == "minilm"`); the page passes
    the cached model's, so that this module never loads it."""
    if state.mode == "sentence":

        def embed(sentence: str, what: str) -> tuple[list[str], Tensor]:
            if state.embed == "minilm":
                return model_inputs(sentence, word_vectors, what)
            return sentence_inputs(sentence, state.dim, state.embed_seed, what)

        q_tokens, queries = embed(state.sentence, "Sentence")
        if state.page == "self":
            k_tokens, keys = q_tokens, queries
        else:
            k_tokens, keys = embed(state.source, "Source sentence")
        values = keys
    else:
        queries = _tensor(state.queries)
        keys, values = (queries, queries) if state.page == "self" else (_tensor(state.keys), _tensor(state.values))
        q_tokens = _labels("q" if state.page == "cross" else "t", queries.shape[0])
        k_tokens = q_tokens if state.page == "self" else _labels("k", keys.shape[0])
    if keys.shape[0] != values.shape[0]:
        raise ValueError(
            f"Keys and values need the same number of rows (one value per key); "
            f"keys have {keys.shape[0]}, values have {values.shape[0]}."
        )
    return AttentionInputs(
        queries, keys, values, q_tokens, k_tokens, valid_lens_for(state, queries.shape[0], keys.shape[0])
    )


def valid_lens_for(state: AttentionState, num_queries: int, num_keys: int) -> int | list[int] | None:
    """The valid lengths of a state, checked against the actual sizes."""
    if state.lens_mode == "none" or not state.lens:
        return None
    if state.lens_mode == "all":
        length = state.lens[0]
        if length > num_keys:
            raise ValueError(f"Valid length {length} is more than the {num_keys} keys.")
        return length
    if len(state.lens) != num_queries:
        raise ValueError(f"Give one valid length per query: {num_queries} queries but {len(state.lens)} lengths.")
    for i, length in enumerate(state.lens, start=1):
        if length > num_keys:
            raise ValueError(f"Valid length {length} for query {i} is more than the {num_keys} keys.")
    return list(state.lens)


def run_attention(state: AttentionState, inputs: AttentionInputs, score: str | None = None) -> MultiHeadTrace:
    """Multi-head attention for a state (the chosen score, or `score` for the comparison view)."""
    name = score or state.score
    return multi_head_attend(
        inputs.queries,
        inputs.keys,
        inputs.values,
        num_heads=state.heads,
        projections=state.projections,
        proj_seed=state.proj_seed,
        score=name,
        valid_lens=inputs.valid_lens,
        causal=state.causal,
        temperature=state.temperature,
        residual=state.residual and state.page == "cross",
        **state.score_params(name),
    )


def run_kernel(state: KernelState) -> AttentionTrace:
    """Nadaraya–Watson at the state's query points."""
    return nadaraya_watson(
        list(state.queries), list(state.keys), list(state.values), kernel=state.kernel, bandwidth=state.bandwidth
    )


def curve_points(state: KernelState, count: int = 200) -> Tensor:
    """Query points for the prediction curve: the span of keys and queries, with a margin."""
    points = list(state.keys) + list(state.queries)
    low, high = min(points), max(points)
    margin = max((high - low) * 0.1, state.bandwidth, 1e-3)
    return torch.linspace(low - margin, high + margin, count)


def prediction_curve(state: KernelState, bandwidth: float | None = None) -> AttentionTrace:
    """Nadaraya–Watson along `curve_points` (with the state's σ, or another one such as a learned σ)."""
    return nadaraya_watson(
        curve_points(state),
        list(state.keys),
        list(state.values),
        kernel=state.kernel,
        bandwidth=state.bandwidth if bandwidth is None else bandwidth,
    )


def weights_csv(trace: AttentionTrace, query_labels: list[str], key_labels: list[str]) -> str:
    """One row per query-key pair: raw score, logit, whether it was masked, and the weight."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query", "key", "score", "logit", "allowed", "weight"])
    scores, logits, mask, weights = (t.tolist() for t in (trace.scores, trace.logits, trace.mask, trace.weights))
    for i, q in enumerate(query_labels):
        for j, k in enumerate(key_labels):
            writer.writerow(
                [
                    csv_safe(q),
                    csv_safe(k),
                    f"{scores[i][j]:.8g}",
                    f"{logits[i][j]:.8g}",
                    int(mask[i][j]),
                    f"{weights[i][j]:.8g}",
                ]
            )
    return buffer.getvalue()


class Guess(NamedTuple):
    """A student's typed guess: the weights (rescaled to sum to 1) or what is wrong with it."""

    weights: list[float] | None
    problem: str  # "", "count" (wrong number of values) or "values" (not numbers, negative, infinite, all 0)
    typed: int  # how many values were typed


def parse_guess(text: str, count: int) -> Guess:
    """A student's typed weights for `count` keys ("0.5, 0.3, 0.2"; Chinese commas too)."""
    cells = [cell.strip() for cell in text.replace("，", ",").replace("、", ",").split(",") if cell.strip()]
    try:
        values = [float(cell) for cell in cells]
    except ValueError:
        return Guess(None, "values", len(cells))
    if len(values) != count:
        return Guess(None, "count", len(values))
    if not all(0 <= v < math.inf for v in values) or sum(values) <= 0:  # NaN fails 0 <= v
        return Guess(None, "values", len(values))
    total = sum(values)
    return Guess([v / total for v in values], "", len(values))


def total_variation(p: Any, q: Any) -> float:
    """Half the L1 distance of two weight vectors: 0 when equal, 1 when they share no mass."""
    return float((torch.as_tensor(p, dtype=torch.float64) - torch.as_tensor(q, dtype=torch.float64)).abs().sum() / 2)


def csv_safe(text: str) -> str:
    """Keep spreadsheet programs from reading a token such as '=1+1' as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def python_snippet(state: AttentionState) -> str:
    """A short script that recomputes the page's figure with attnviz."""
    lines = ["import torch", "import attnviz", ""]
    if state.mode == "sentence" and state.embed == "minilm":
        lines += [
            "from attnviz.bert import load_minilm",
            "",
            "model = load_minilm()  # all-MiniLM-L6-v2's input embeddings (384 numbers a token)",
            f"tokens, x = model.word_vectors({state.sentence!r})",
        ]
        if state.page == "cross":
            lines.append(f"source_tokens, source = model.word_vectors({state.source!r})")
    elif state.mode == "sentence":
        lines += [
            f"tokens = attnviz.tokenize({state.sentence!r})",
            f"x = attnviz.embed_tokens(tokens, dim={state.dim}, seed={state.embed_seed})",
        ]
        if state.page == "cross":
            lines += [
                f"source_tokens = attnviz.tokenize({state.source!r})",
                f"source = attnviz.embed_tokens(source_tokens, dim={state.dim}, seed={state.embed_seed})",
            ]
    else:
        lines.append(f"x = torch.tensor({_matrix_literal(state.queries)})")
        if state.page == "cross":
            lines += [
                f"keys = torch.tensor({_matrix_literal(state.keys)})",
                f"values = torch.tensor({_matrix_literal(state.values)})",
            ]
    args = [
        f"num_heads={state.heads}",
        f"projections={state.projections!r}",
        f"proj_seed={state.proj_seed}",
        f"score={state.score!r}",
    ]
    args += [f"{k}={v!r}" for k, v in state.score_params().items()]
    if state.lens_mode != "none" and state.lens:
        args.append(f"valid_lens={state.lens[0] if state.lens_mode == 'all' else list(state.lens)}")
    if state.causal:
        args.append("causal=True")
    if state.temperature != 1.0:
        args.append(f"temperature={state.temperature!r}")
    if state.page == "self":
        call = "attnviz.self_attention(x, " + ", ".join(args) + ")"
    else:
        kv = "source, source" if state.mode == "sentence" else "keys, values"
        residual = ", residual=True" if state.residual else ""
        call = f"attnviz.multi_head_attend(x, {kv}, " + ", ".join(args) + residual + ")"
    lines += [f"trace = {call}", "print(trace.weights)  # (heads, queries, keys)", "print(trace.output)"]
    return "\n".join(lines) + "\n"


def _matrix_literal(matrix: Matrix) -> str:
    return "[" + ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]" for row in matrix) + "]"


def matrix_from_cells(cells: list[list[Any]], name: str, col_names: list[str] | None = None) -> Matrix:
    """Rows of editor cells -> a matrix, or ValueError naming the first bad cell."""
    if not cells:
        raise ValueError(f"{name} has no rows; add at least one row.")
    rows: list[list[float]] = []
    width = len(cells[0])
    if width == 0:
        raise ValueError(f"{name} has no columns; add at least one column.")
    for r, row in enumerate(cells, start=1):
        if len(row) != width:
            raise ValueError(f"{name} row {r} has {len(row)} numbers but row 1 has {width}.")
        values = []
        for c, cell in enumerate(row):
            column = col_names[c] if col_names and c < len(col_names) else str(c + 1)
            where = f"{name}, row {r}, column {column}"
            if cell is None or (isinstance(cell, str) and not cell.strip()):
                raise ValueError(f"{where} is empty; type a number.")
            try:
                value = float(cell)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: {str(cell)[:40]!r} is not a number.") from None
            if value != value:  # NaN: an empty cell in a numeric column
                raise ValueError(f"{where} is empty; type a number.")
            if value in (float("inf"), float("-inf")) or abs(value) > 1e6:
                raise ValueError(f"{where}: {value} is too large; use finite numbers within ±1e6.")
            values.append(value)
        rows.append(values)
    return tuple(tuple(row) for row in rows)
