"""From a page state to what the page draws: inputs, traces, exports. Pure: no Streamlit, no Plotly."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import torch
from torch import Tensor

from attnviz.app.budget import Request
from attnviz.app.fastpath import multi_head_attend, nadaraya_watson
from attnviz.app.state import AttentionState, KernelState, Matrix
from attnviz.core.errors import AttnvizError, Name
from attnviz.core.fields import MAX_CELL
from attnviz.core.multihead import MultiHeadTrace
from attnviz.core.text import MAX_TOKENS, embed_tokens, tokenize
from attnviz.core.trace import AttentionTrace


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


def _preset_labels(state: AttentionState, num_queries: int, num_keys: int) -> tuple[list[str], list[str]] | None:
    """The token labels of the state's preset ("the cat sat on the mat", not q1...q6), while its rows still
    match them (numbers edited in place keep them; added or removed rows go back to q1, k1, ...)."""
    if not state.preset or state.mode != "numbers":
        return None
    from attnviz.lessons.presets import PRESET_PAGES, PRESETS

    if PRESET_PAGES.get(state.preset) != state.page:
        return None
    preset = PRESETS[state.preset]
    if preset.query_labels is None or len(preset.query_labels) != num_queries:
        return None
    if state.page == "self":
        return list(preset.query_labels), list(preset.query_labels)
    if preset.key_labels is None or len(preset.key_labels) != num_keys:
        return None
    return list(preset.query_labels), list(preset.key_labels)


def _tensor(matrix: Matrix) -> Tensor:
    return torch.tensor(matrix, dtype=torch.float32)


@contextmanager
def _in_sentence(what: str) -> Iterator[None]:
    """An error about a sentence says which one ("in the source sentence: ...")."""
    try:
        yield
    except AttnvizError as exc:
        raise AttnvizError("in_sentence", what=Name(what), error=exc) from None


def sentence_inputs(sentence: str, dim: int, seed: int, what: str) -> tuple[list[str], Tensor]:
    """Tokens and their seeded embeddings, with errors that say which sentence is wrong."""
    with _in_sentence(what):
        tokens = tokenize(sentence, max_tokens=MAX_TOKENS)
    return tokens, embed_tokens(tokens, dim=dim, seed=seed)


def trained_inputs(sentence: str, what: str) -> tuple[list[str], Tensor]:
    """<s> and a sentence of symbols A-T, embedded as the trained sequence model's first layer reads them."""
    from attnviz.models.learned.inputs import trained_embeddings

    with _in_sentence(what):
        return trained_embeddings(tokenize(sentence, max_tokens=MAX_TOKENS))


WordVectors = Callable[[str], tuple[list[str], Tensor]]  # sentence -> (tokens, (n, d) vectors)


def model_inputs(sentence: str, word_vectors: WordVectors | None, what: str) -> tuple[list[str], Tensor]:
    """WordPiece tokens and the pretrained model's input embeddings, with errors that say which sentence is wrong."""
    if word_vectors is None:
        raise AttnvizError("no_model_vectors")
    with _in_sentence(what):
        return word_vectors(sentence)


def resolve_inputs(state: AttentionState, word_vectors: WordVectors | None = None) -> AttentionInputs:
    """Queries, keys, values and labels for a state; ValueError with a message for the page.

    `word_vectors` embeds a sentence with the pretrained model (for `state.embed == "minilm"`); the page passes
    the cached model's, so that this module never loads it."""
    if state.mode == "sentence":

        def embed(sentence: str, what: str) -> tuple[list[str], Tensor]:
            if state.embed == "minilm":
                return model_inputs(sentence, word_vectors, what)
            if state.embed == "trained":
                return trained_inputs(sentence, what)
            return sentence_inputs(sentence, state.dim, state.embed_seed, what)

        q_tokens, queries = embed(state.sentence, "sentence")
        if state.page == "self":
            k_tokens, keys = q_tokens, queries
        else:
            k_tokens, keys = embed(state.source, "source")
        values = keys
    else:
        queries = _tensor(state.queries)
        keys, values = (queries, queries) if state.page == "self" else (_tensor(state.keys), _tensor(state.values))
        q_tokens = _labels("q" if state.page == "cross" else "t", queries.shape[0])
        k_tokens = q_tokens if state.page == "self" else _labels("k", keys.shape[0])
        named = _preset_labels(state, queries.shape[0], keys.shape[0])
        if named is not None:
            q_tokens, k_tokens = named
    if keys.shape[0] != values.shape[0]:
        raise AttnvizError("kv_rows", keys=keys.shape[0], values=values.shape[0])
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
            raise AttnvizError("len_over", length=length, keys=num_keys)
        return length
    if len(state.lens) != num_queries:
        raise AttnvizError("lens_count", queries=num_queries, count=len(state.lens))
    for i, length in enumerate(state.lens, start=1):
        if length > num_keys:
            raise AttnvizError("len_q", length=length, query=i, keys=num_keys)
    return list(state.lens)


def _projections(state: AttentionState, inputs: AttentionInputs) -> str | dict[str, Tensor]:
    """The state's projections as the core takes them: a name, or the trained model's matrices (loaded here: the core
    knows no model)."""
    if state.projections != "trained":
        return state.projections
    from attnviz.models.learned.inputs import trained_projections

    sizes = (inputs.queries.shape[-1], inputs.keys.shape[-1], inputs.values.shape[-1])
    return trained_projections(*sizes)


def run_attention(state: AttentionState, inputs: AttentionInputs, score: str | None = None) -> MultiHeadTrace:
    """Multi-head attention for a state (the chosen score, or `score` for the comparison view)."""
    name = score or state.score
    return multi_head_attend(
        inputs.queries,
        inputs.keys,
        inputs.values,
        num_heads=state.heads,
        projections=_projections(state, inputs),
        proj_seed=state.proj_seed,
        score=name,
        valid_lens=inputs.valid_lens,
        causal=state.causal,
        temperature=state.temperature,
        residual=state.residual and state.page == "cross",
        **state.score_params(name),
    )


class BatchRows(NamedTuple):
    """Every batch row of a batched preset in one matrix, as d2l's show_heatmaps draws its (2, 10) weights."""

    weights: Tensor  # (rows × queries, K), the heads' mean
    mask: Tensor  # (rows × queries, K), True where a query may attend
    batches: list[int]  # the batch row of each matrix row
    queries: list[str]  # the query label of each matrix row
    keys: list[str]  # the key labels (every batch row of a preset has the same keys)


def batch_rows(state: AttentionState) -> BatchRows:
    """The state's scoring controls on every batch row of its preset: each row's own inputs and valid lengths
    (ValueError as for one row)."""
    from attnviz.app.state import apply_preset, preset_batches

    weights, masks, batches, queries = [], [], [], []
    for batch in range(preset_batches(state.preset)):
        row_state = apply_preset(state, state.preset, batch=batch, keep_controls=True)
        inputs = resolve_inputs(replace(row_state, lens_mode="none"))
        lens = valid_lens_for(row_state, inputs.queries.shape[0], inputs.keys.shape[0])
        trace = run_attention(row_state, replace(inputs, valid_lens=lens))
        weights.append(trace.mean_weights)
        masks.append(trace.heads[0].mask)
        batches += [batch] * len(inputs.query_labels)
        queries += inputs.query_labels
    return BatchRows(torch.cat(weights), torch.cat(masks), batches, queries, inputs.key_labels)


def attention_request(state: AttentionState, inputs: AttentionInputs) -> Request:
    """The sizes that price a rerun of `state` on `inputs` (attnviz/app/budget.py)."""
    heads = max(1, state.heads)
    width = max(inputs.queries.shape[-1], inputs.keys.shape[-1])
    return Request(
        score=state.score,
        num_queries=inputs.queries.shape[0],
        num_keys=inputs.keys.shape[0],
        heads=heads,
        head_dim=max(1, width // heads),
        num_hiddens=int(state.score_params(state.score).get("num_hiddens", 0)),
        compare=state.compare,
        compare_hiddens=int(state.score_params(state.compare).get("num_hiddens", 0)) if state.compare else 0,
    )


def first_rows(state: AttentionState, inputs: AttentionInputs, rows: int) -> tuple[AttentionState, AttentionInputs]:
    """The state and inputs of the first `rows` queries alone, with the same weights as the full request's rows.

    Only the rows' masks need care: the causal mask of row i (keys up to i) is carried as a valid length of i + 1,
    combined with the row's own valid length, since a causal mask over fewer queries would start again at row 1."""
    if rows >= inputs.queries.shape[0]:
        return state, inputs
    lens = inputs.valid_lens
    per_row = [lens] * rows if isinstance(lens, int) else (list(lens[:rows]) if lens is not None else None)
    if state.causal:
        keys = inputs.keys.shape[0]
        per_row = [min(i + 1, keys if per_row is None else per_row[i]) for i in range(rows)]
    part = AttentionInputs(
        queries=inputs.queries[:rows],
        keys=inputs.keys,
        values=inputs.values,
        query_labels=inputs.query_labels[:rows],
        key_labels=inputs.key_labels,
        valid_lens=per_row,
    )
    return replace(state, causal=False), part


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


def run_kernel_and_curve(state: KernelState) -> tuple[AttentionTrace, AttentionTrace]:
    """Nadaraya–Watson at the state's query points and along `curve_points`, in one call (each row is computed on its
    own, so the numbers are those of two calls): the keys and values are read, checked and converted once."""
    grid = curve_points(state)
    queries = torch.as_tensor(list(state.queries), dtype=grid.dtype)
    both = nadaraya_watson(
        torch.cat((queries, grid)), list(state.keys), list(state.values), kernel=state.kernel, bandwidth=state.bandwidth
    )
    n = len(state.queries)
    per_query = ("queries", "scores", "logits", "mask", "weights", "output", "no_support", "distances")
    trace = replace(both, **{name: getattr(both, name)[:n] for name in per_query})
    curve = replace(both, **{name: getattr(both, name)[n:] for name in per_query})
    return trace, curve


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


class Cells(NamedTuple):
    """An editor's rows read as numbers: the complete rows, and the (1-based) rows left out as incomplete."""

    matrix: Matrix
    incomplete: list[int]


def _empty(cell: Any) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip()) or (isinstance(cell, float) and cell != cell)


def matrix_from_cells(cells: list[list[Any]], name: str, col_names: list[str] | None = None) -> Cells:
    """Rows of editor cells -> a matrix, or AttnvizError naming the first bad cell.

    A row with an empty cell is still being typed: it is left out (and reported) until it is complete, so that
    adding a row does not blank the page before its last number is in."""
    if not cells or not cells[0]:
        raise AttnvizError("no_rows" if not cells else "no_cols", name=Name(name))
    width = len(cells[0])
    rows: list[tuple[float, ...]] = []
    incomplete: list[int] = []
    for r, row in enumerate(cells, start=1):
        if len(row) != width:
            raise AttnvizError("ragged", name=Name(name), row=r, count=len(row), width=width)
        if any(_empty(cell) for cell in row):
            incomplete.append(r)
            continue
        values = []
        for c, cell in enumerate(row):
            column = col_names[c] if col_names and c < len(col_names) else str(c + 1)
            try:
                value = float(cell)
            except (TypeError, ValueError):
                raise AttnvizError("cell_text", name=Name(name), row=r, col=column, value=str(cell)[:40]) from None
            if not math.isfinite(value) or abs(value) > MAX_CELL:
                raise AttnvizError("cell_large", name=Name(name), row=r, col=column, value=f"{value:g}")
            values.append(value)
        rows.append(tuple(values))
    if not rows:
        raise AttnvizError("no_complete_rows", name=Name(name))
    return Cells(tuple(rows), incomplete)
