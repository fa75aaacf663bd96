"""'Show your work': one query row of an attention trace, step by step, with its real numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from attnviz.core.errors import AttnvizError, short
from attnviz.core.multihead import head_rows
from attnviz.core.scores import SCORES
from attnviz.core.trace import AttentionTrace
from attnviz.i18n import DEFAULT_LANGUAGE, sentences, t
from attnviz.lessons.working import (
    LINE,
    MAX_TERMS,
    MAX_VECTOR,
    factor,
    number_tex,
    number_text,
    products,
    score_working,
    vector,
)


@dataclass(frozen=True)
class Step:
    """One step of the computation: a title, the formula (LaTeX) and a table of numbers."""

    title: str
    formula: str
    note: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[object]] = field(default_factory=list)
    note_is_latex: bool = False  # the note is app-made LaTeX that the temperature does not change (see work_panel)
    number: int = 0  # its place in the recipe, 1, 2, ...: data, never parsed out of the (translated) title


def _numbered(steps: list[Step]) -> list[Step]:
    return [replace(step, number=index) for index, step in enumerate(steps, start=1)]


_num = number_text


def _tex_label(text: str) -> str:
    """A token as LaTeX text: escape everything LaTeX would interpret."""
    specials = {
        "\\": r"\backslash{}",
        "{": r"\{",
        "}": r"\}",
        "$": r"\$",
        "&": r"\&",
        "#": r"\#",
        "%": r"\%",
        "_": r"\_",
        "^": r"\hat{}",
        "~": r"\sim{}",
    }
    return r"\text{" + "".join(specials.get(ch, ch) for ch in text[:20]) + "}"


class _QueryRow(NamedTuple):
    """One query row of an unbatched trace, as lists, and the labels and language its steps are written in."""

    trace: AttentionTrace
    row: int
    query_label: str
    key_labels: list[str]
    lang: str
    scores: list[float]
    logits: list[float]
    allowed: list[bool]
    weights: list[float]

    def tr(self, key: str, **params: object) -> str:
        """The message `key` in this row's language. Steps bind it as `tr = query.tr` and call `tr(...)`: the message
        extractor finds `tr(`, not `query.tr(`."""
        return t(key, self.lang, **params)


def _score_step(query: _QueryRow, score_module: Any) -> Step:
    """Step 1: each key's score a(q, k_j), the first one worked out."""
    tr = query.tr
    spec = SCORES.get(query.trace.score)
    working = score_working(query.trace, query.row, 0, score_module)  # its lines, each its own formula
    return Step(
        tr("explain.score", query=query.query_label),
        spec.formula if spec else r"a(\mathbf q, \mathbf k)",
        note=tr("explain.first_key") + "\n\n".join(f" ${line}$" for line in working.split(LINE)),
        columns=[tr("explain.key"), tr("explain.score_column")],
        rows=[[k, s] for k, s in zip(query.key_labels, query.scores, strict=True)],
        note_is_latex=True,
    )


def _scale_step(query: _QueryRow) -> Step:
    """Step 2: the logits z_j, the scores scaled and divided by the temperature (ALiBi's bias added first)."""
    trace, tr = query.trace, query.tr
    spec = SCORES.get(trace.score)
    scale_tex = r"\frac{1}{\sqrt{d}}" if spec and spec.scaled else "1"
    scale, temperature = _num(trace.scale), _num(trace.temperature)
    if trace.bias is not None:  # ALiBi: a penalty per key added before the softmax
        return Step(
            tr("explain.scale_bias"),
            rf"z_j = \left(a(\mathbf q, \mathbf k_j) \times {scale_tex} + b_j\right) \,/\, T",
            note=tr("explain.bias_note", scale=scale, temperature=temperature),
            columns=[tr("explain.key"), tr("explain.bias"), tr("explain.logit")],
            rows=[
                [k, b, z]
                for k, b, z in zip(query.key_labels, trace.bias[query.row].tolist(), query.logits, strict=True)
            ],
        )
    note = tr("explain.scale_note", scale=scale, temperature=temperature)
    if math.isfinite(query.logits[0]):  # the first key worked out, as step 1 worked out its score
        first = {"a": factor(query.scores[0], tex=False), "scale": scale, "temperature": temperature}
        note = sentences(note, tr("explain.scale_first", **first, z=_num(query.logits[0])))
    return Step(
        tr("explain.scale"),
        rf"z_j = a(\mathbf q, \mathbf k_j) \times {scale_tex} \,/\, T",
        note=note,
        columns=[tr("explain.key"), tr("explain.logit")],  # the score is step 1's column
        rows=[[k, z] for k, z in zip(query.key_labels, query.logits, strict=True)],
    )


def _mask_step(query: _QueryRow) -> Step:
    """Step 3: which keys the query may attend to."""
    tr = query.tr
    blocked = [k for k, ok in zip(query.key_labels, query.allowed, strict=True) if not ok]
    return Step(
        tr("explain.mask"),
        r"z_j \leftarrow -\infty \ \text{" + tr("explain.mask_formula") + r"} e^{z_j} = 0",
        note=tr("explain.masked", keys=", ".join(blocked)) if blocked else tr("explain.none_masked"),
        columns=[tr("explain.key"), tr("explain.allowed")],
        rows=[
            [k, tr("explain.yes") if ok else tr("explain.no_masked")]
            for k, ok in zip(query.key_labels, query.allowed, strict=True)
        ],
    )


def _softmax_step(query: _QueryRow) -> Step:
    """Step 4: the softmax over the allowed keys, its maximum subtracted first."""
    tr = query.tr
    finite = [z for z, ok in zip(query.logits, query.allowed, strict=True) if ok]
    top = max(finite) if finite else 0.0
    exps = [math.exp(z - top) if ok else 0.0 for z, ok in zip(query.logits, query.allowed, strict=True)]
    total = sum(exps)
    return Step(
        tr("explain.softmax"),
        r"\alpha_j = \frac{e^{z_j - m}}{\sum_{i} e^{z_i - m}}, \quad m = \max_i z_i",
        note=tr("explain.softmax_note", top=_num(top), total=_num(total)) if finite else tr("explain.all_masked"),
        columns=[tr("explain.key"), "e^(z − m)", tr("explain.weight")],
        rows=[[k, e, w] for k, e, w in zip(query.key_labels, exps, query.weights, strict=True)],
    )


def _sum_step(query: _QueryRow, value_columns: int = 8) -> Step:
    """Step 5: the output, the values weighted by the query's weights; the table shows the first `value_columns`
    components of each value."""
    tr = query.tr
    output, values, weights = query.trace.output[query.row].tolist(), query.trace.values.tolist(), query.weights
    terms = [f"{_num(w)} × v{j + 1}" for j, w in enumerate(weights) if w > 0][:MAX_TERMS]
    more = " + …" if sum(w > 0 for w in weights) > MAX_TERMS else ""
    shown = ", ".join(_num(x) for x in output[:16]) + (", …" if len(output) > 16 else "")
    return Step(
        tr("explain.weighted_sum"),
        rf"\mathbf o_{{{_tex_label(query.query_label)}}} = \sum_j \alpha_j \mathbf v_j",
        note=f"o = {' + '.join(terms) or '0'}{more} = [{shown}]",
        columns=[
            tr("explain.key"),
            tr("explain.weight"),
            *[f"v[{i + 1}]" for i in range(min(len(output), value_columns))],
        ],
        rows=[[k, w, *v[:value_columns]] for k, w, v in zip(query.key_labels, weights, values, strict=True)],
    )


def explain_row(
    trace: AttentionTrace,
    row: int,
    query_label: str,
    key_labels: list[str],
    lang: str = DEFAULT_LANGUAGE,
    score_module: Any = None,
    value_columns: int = 8,
) -> list[Step]:
    """Score, scale, mask, softmax and weighted sum of values for query `row` of an unbatched trace, in `lang`
    (a trained model's learned score passes its `score_module`, whose weights step 1 then uses). The last step's
    table shows the first `value_columns` components of each value (a narrow column holds fewer)."""
    if trace.batched:
        raise ValueError("explain_row takes an unbatched trace (one sequence, one head)")
    num_queries = trace.weights.shape[0]
    if not 0 <= row < num_queries:
        raise AttnvizError("index_range", name="row", high=num_queries - 1, value=short(row))
    rows = (trace.scores[row], trace.logits[row], trace.mask[row], trace.weights[row])
    query = _QueryRow(trace, row, query_label, key_labels, lang, *(tensor.tolist() for tensor in rows))
    steps = [
        _score_step(query, score_module),
        _scale_step(query),
        _mask_step(query),
        _softmax_step(query),
        _sum_step(query, value_columns),
    ]
    return _numbered(steps)


def explain_kernel_row(
    trace: AttentionTrace, row: int, key_labels: list[str], lang: str = DEFAULT_LANGUAGE
) -> list[Step]:
    """Nadaraya–Watson for one query: distances, kernel values, normalisation, weighted sum (in `lang`)."""
    from attnviz.core.kernel import KERNELS

    def tr(key: str, **params: object) -> str:
        return t(key, lang, **params)

    spec = KERNELS[trace.score]
    sigma = trace.score_params["bandwidth"]
    q = trace.queries[row].tolist()
    distances = trace.distances[row].tolist()
    kernel_values = trace.scores[row].tolist()
    weights = trace.weights[row].tolist()
    values = trace.values[:, 0].tolist()
    total = sum(kernel_values)
    query = _num(q[0]) if len(q) == 1 else "(" + ", ".join(_num(x) for x in q) + ")"
    steps = [
        Step(
            tr("explain.distance"),
            r"u_i = \frac{\lvert q - k_i \rvert}{\sigma}",
            note=tr("explain.distance_note", query=query, sigma=_num(sigma)),
            columns=[tr("explain.key"), "|q − k|", "u"],
            rows=[[k, d, d / sigma] for k, d in zip(key_labels, distances, strict=True)],
        ),
        Step(
            tr("explain.kernel_value", kernel=tr(f"kernel.{spec.name}.label")),
            spec.formula,
            columns=[tr("explain.key"), "K(u)"],
            rows=[[k, v] for k, v in zip(key_labels, kernel_values, strict=True)],
        ),
        Step(
            tr("explain.normalise"),
            r"\alpha_i = \frac{K(u_i)}{\sum_j K(u_j)}",
            note=tr("explain.kernel_sum", total=_num(total)) if total > 0 else tr("explain.no_support"),
            columns=[tr("explain.key"), tr("explain.weight")],
            rows=[[k, w] for k, w in zip(key_labels, weights, strict=True)],
        ),
    ]
    shown = [(w, v) for w, v in zip(weights, values, strict=True) if w > 1e-4][:MAX_TERMS]
    terms = [f"{_num(w)} × {factor(v, tex=False)}" for w, v in shown]
    prediction = float(trace.output[row].reshape(-1)[0])
    steps.append(
        Step(
            tr("explain.prediction"),
            r"f(q) = \sum_i \alpha_i v_i",
            note=(
                tr("explain.prediction_note", terms=" + ".join(terms), prediction=_num(prediction))
                if total > 0
                else tr("explain.undefined")
            ),
        )
    )
    return _numbered(steps)


def _plain_vector(values: list[float]) -> str:
    return vector(values, tex=False)  # the notes below are plain text


def _project_step(trace: Any, head: int, row: int, lang: str) -> Step:
    """Step 0: the query's and the first key's features of this head, W_q x, W_k x_1 and W_v x_1, the first one
    worked out."""
    projected = trace.heads[head]  # its inputs are this head's features of W_q x, W_k x_j and W_v x_j
    features = head_rows(trace.W_q.shape[0], head, trace.num_heads)
    start = features.start
    x = trace.queries[row].tolist()
    q, k, v = (projected.queries[row].tolist(), projected.keys[0].tolist(), projected.values[0].tolist())
    note = t(
        "explain.project_note",
        lang,
        x=_plain_vector(x),
        n=start + 1,
        first=products(trace.W_q[start].tolist(), x, tex=False),
        q1=number_text(q[0]),
        q=_plain_vector(q),
        k=_plain_vector(k),
        v=_plain_vector(v),
        key_x=_plain_vector(trace.keys[0].tolist()),
        value_x=_plain_vector(trace.values[0].tolist()),
        features=f"{start + 1}–{features.stop}",
    )
    formula = (
        r"\mathbf q = \mathbf W_q \mathbf x, \quad \mathbf k_j = \mathbf W_k \mathbf x_j, \quad "
        r"\mathbf v_j = \mathbf W_v \mathbf x_j"
    )
    return Step(t("explain.project", lang), formula, note=note)


def _combine_step(trace: Any, row: int, lang: str) -> Step:
    """The heads' outputs side by side, joined by W_o into ΔE."""
    concat, delta = trace.concat[row].tolist(), trace.delta[row].tolist()
    note = t("explain.combine_note", lang, concat=_plain_vector(concat), delta=_plain_vector(delta))
    formula = r"\Delta\mathbf e = \mathbf W_o [\mathbf o^{(1)}; \dots; \mathbf o^{(h)}]"
    return Step(t("explain.combine", lang), formula, note=note)


def _residual_step(trace: Any, row: int, lang: str) -> Step:
    """The residual: the query's own input plus ΔE."""
    own, delta, out = trace.queries[row].tolist(), trace.delta[row].tolist(), trace.output[row].tolist()
    terms = ", ".join(
        f"{number_text(a)} + {factor(b, tex=False)}" for a, b in zip(own[:MAX_VECTOR], delta, strict=False)
    )
    note = t(
        "explain.residual_note",
        lang,
        e=_plain_vector(own),
        delta=_plain_vector(delta),
        terms=terms,
        out=_plain_vector(out),
    )
    return Step(t("explain.residual", lang), r"\mathbf e' = \mathbf e + \Delta\mathbf e", note=note)


def explain_attention(
    trace: Any,
    head: int,
    row: int,
    query_label: str,
    key_labels: list[str],
    lang: str = DEFAULT_LANGUAGE,
    value_columns: int = 8,
) -> list[Step]:
    """Show-your-work for one query row of an unbatched multi-head trace (attnviz.core.multihead.MultiHeadTrace):
    step 0 projects the inputs with W_q, W_k, W_v (when they are not the identity, or there are several heads), the
    head's steps 1-5 follow, then the heads are joined by W_o and, when it is on, the residual is added. Step 5's
    table shows the first `value_columns` components of each value."""
    steps = explain_row(trace.heads[head], row, query_label, key_labels, lang, value_columns=value_columns)
    projected = trace.projections != "identity" or trace.num_heads > 1
    before = [replace(_project_step(trace, head, row, lang), number=0)] if projected else []
    after = [_combine_step(trace, row, lang)] if projected else []
    if trace.residual:
        after.append(_residual_step(trace, row, lang))
    return before + steps + [replace(step, number=len(steps) + i) for i, step in enumerate(after, start=1)]


# The number formats and the worked score line live in attnviz.lessons.working; pages and tests import them from here.
__all__ = [
    "LINE",
    "Step",
    "explain_attention",
    "explain_kernel_row",
    "explain_row",
    "factor",
    "number_tex",
    "number_text",
    "score_working",
]
