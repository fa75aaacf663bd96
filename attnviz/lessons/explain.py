"""'Show your work': one query row of an attention trace, step by step, with its real numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from attnviz.core._validate import small_numpy
from attnviz.core.errors import AttnvizError, short
from attnviz.core.multihead import head_rows
from attnviz.core.scores import SCORES, seeded_module
from attnviz.core.trace import AttentionTrace
from attnviz.i18n import DEFAULT_LANGUAGE, t

MAX_TERMS = 6  # coordinates written out in a worked sum before eliding with "…"
MAX_VECTOR = 8  # entries of an intermediate vector written out before "…"


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


def number_text(x: float, digits: int = 4) -> str:
    """A number as text, `digits` significant digits; never "-0"."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.{digits}g}"
    return "0" if float(text) == 0 else text


def number_tex(x: float, digits: int = 4) -> str:
    """A number as LaTeX: scientific notation as a × 10^{b} (LaTeX would set "1.3e-08" as "1.3e − 08")."""
    text = number_text(x, digits)
    mantissa, e, exponent = text.partition("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}" if e else text


def factor(x: float, tex: bool = True) -> str:
    """A factor in a product (LaTeX, or text), in brackets when negative: 0.5 × (-0.2), never 0.5 × -0.2."""
    text = number_tex(x) if tex else number_text(x)
    return f"({text})" if text.startswith("-") else text


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


def _products(a: list[float], b: list[float], tex: bool = True) -> str:
    """a_1 × b_1 + a_2 × b_2 + … written out (LaTeX, or text), negative factors in brackets, MAX_TERMS of them."""
    times, more = (r"\times", r"\dots") if tex else ("×", "…")
    terms = [f"{factor(x, tex)} {times} {factor(y, tex)}" for x, y in zip(a[:MAX_TERMS], b[:MAX_TERMS], strict=False)]
    if len(a) > MAX_TERMS:
        terms.append(more)
    return " + ".join(terms)


def _vector(values: list[float], tex: bool = True) -> str:
    """[v_1, v_2, …] (LaTeX, or text), MAX_VECTOR entries of it. In LaTeX, a line may break after each comma
    (`\allowbreak`): KaTeX breaks inline maths only after = and +, and eight numbers are wider than a phone."""
    number, comma = (number_tex, r",\allowbreak ") if tex else (number_text, ", ")
    more = (comma + r"\dots") if tex else ", …"
    return "[" + comma.join(number(x) for x in values[:MAX_VECTOR]) + (more if len(values) > MAX_VECTOR else "") + "]"


def score_working(trace: AttentionTrace, row: int, key: int, score_module: Any = None) -> str:
    """The score a(q, k_j) of one (query, key) pair written out with numbers (LaTeX): a is what the score function
    returns, before any scale or temperature, the same number as the tables' "score a(q, k)" column. A trained
    model's score passes its own `score_module`; else a learned score's weights are rebuilt from the trace's seed."""
    q, k = trace.queries[row].tolist(), trace.keys[key].tolist()
    s = number_tex(float(trace.scores[row, key]))
    j = key + 1
    a = rf"a(\mathbf q, \mathbf k_{{{j}}})"
    if trace.score in ("dot", "scaled_dot"):
        return rf"{a} = \mathbf q \cdot \mathbf k_{{{j}}} = {_products(q, k)} = {s}"
    if trace.score == "cosine":
        nq, nk = math.sqrt(sum(x * x for x in q)), math.sqrt(sum(x * x for x in k))
        dot = sum(x * y for x, y in zip(q, k, strict=True))
        return rf"{a} = \frac{{{number_tex(dot)}}}{{{number_tex(nq)} \times {number_tex(nk)}}} = {s}"
    if trace.score == "gaussian":
        sq = sum((x - y) ** 2 for x, y in zip(q, k, strict=True))
        sigma = trace.score_params.get("bandwidth", 1.0)
        lhs = rf"{a} = -\frac{{\lVert \mathbf q - \mathbf k_{{{j}}} \rVert^2}}{{2\sigma^2}}"
        return rf"{lhs} = -\frac{{{number_tex(sq)}}}{{2 \times {number_tex(sigma)}^2}} = {s}"
    spec = SCORES.get(trace.score)
    if spec is not None and spec.module is not None:  # its weights, rebuilt from the trace's seed, as attend built them
        module = score_module
        if module is None:
            sizes = trace.queries.shape[-1], trace.keys.shape[-1]
            module = seeded_module(trace.score, *sizes, trace.score_params, trace.queries.dtype)
        hidden = _summed(trace.features, "W_q q", row, "W_k k", key)
        worked = _learned_working(trace.score, module, trace.queries[row], trace.keys[key], j, hidden)
        return f"{worked}{LINE}{a} = {s}"
    return rf"{a} = {s}"


LINE = " \n "  # between the lines of a worked score (each becomes its own formula)


def _summed(features: dict[str, Any], first: str, row: int, second: str, key: int) -> list[float] | None:
    """features[first][row] + features[second][key] as the score computed them (in their float type), or None when
    the trace does not carry them. NumPy adds a few numbers without letting go of Python's lock; torch would."""
    if first not in features or second not in features:
        return None
    a, b = features[first][row], features[second][key]
    small_a, small_b = small_numpy(a), small_numpy(b)
    if small_a is not None and small_b is not None and a.dtype == b.dtype:
        return (small_a + small_b).tolist()
    return (a + b).tolist()


def _learned_working(name: str, module: Any, q: Any, k: Any, j: int, hidden: list[float] | None = None) -> str:
    """A learned score's intermediates for one pair (LaTeX lines joined by LINE), with the weights they use. The
    additive score's W_q q + W_k k is `hidden` when the trace carried it; else it is computed here."""
    with torch.no_grad():
        if name == "general":
            wk = module.W(k).tolist()
            return rf"\mathbf W \mathbf k_{{{j}}} = {_vector(wk)}"
        if name == "additive":
            if hidden is None:
                hidden = (module.W_q(q) + module.W_k(k)).tolist()
            squashed = [math.tanh(x) for x in hidden]
            w_v = module.w_v.weight[0].tolist()
            return (
                rf"\mathbf W_q \mathbf q + \mathbf W_k \mathbf k_{{{j}}} = {_vector(hidden)}{LINE}"
                rf"\tanh(\cdot) = {_vector(squashed)}{LINE}\mathbf w_v = {_vector(w_v)}"
            )
        if name == "concat":
            weights, bias = module.W.weight[0].tolist(), float(module.W.bias[0])
            return rf"\mathbf w = {_vector(weights)}, \quad b = {number_tex(bias)}"
        if name == "concat_tanh":
            hidden = module.W(torch.cat([q, k])).tolist()
            squashed = [math.tanh(x) for x in hidden]
            return rf"\tanh(\mathbf W [\mathbf q; \mathbf k_{{{j}}}] + \mathbf b) = {_vector(squashed)}"
    return ""


def explain_row(
    trace: AttentionTrace,
    row: int,
    query_label: str,
    key_labels: list[str],
    lang: str = DEFAULT_LANGUAGE,
    score_module: Any = None,
) -> list[Step]:
    """Score, scale, mask, softmax and weighted sum of values for query `row` of an unbatched trace, in `lang`
    (a trained model's learned score passes its `score_module`, whose weights step 1 then uses)."""

    def tr(key: str, **params: object) -> str:
        return t(key, lang, **params)

    if trace.batched:
        raise ValueError("explain_row takes an unbatched trace (one sequence, one head)")
    num_queries = trace.weights.shape[0]
    if not 0 <= row < num_queries:
        raise AttnvizError("index_range", name="row", high=num_queries - 1, value=short(row))
    spec = SCORES.get(trace.score)
    formula = spec.formula if spec else r"a(\mathbf q, \mathbf k)"
    scores = trace.scores[row].tolist()
    logits = trace.logits[row].tolist()
    allowed = trace.mask[row].tolist()
    weights = trace.weights[row].tolist()
    q_label = _tex_label(query_label)
    working = score_working(trace, row, 0, score_module)  # its lines, each its own formula
    steps = [
        Step(
            tr("explain.score", query=query_label),
            formula,
            note=tr("explain.first_key") + "\n\n".join(f" ${line}$" for line in working.split(LINE)),
            columns=[tr("explain.key"), tr("explain.score_column")],
            rows=[[k, s] for k, s in zip(key_labels, scores, strict=True)],
            note_is_latex=True,
        )
    ]
    scale_tex = r"\frac{1}{\sqrt{d}}" if spec and spec.scaled else "1"
    scale_note = tr("explain.scale_note", scale=_num(trace.scale), temperature=_num(trace.temperature))
    if math.isfinite(logits[0]):  # the first key worked out, as step 1 worked out its score
        numbers = {
            "a": factor(scores[0], tex=False),
            "scale": _num(trace.scale),
            "temperature": _num(trace.temperature),
        }
        scale_note += " " + tr("explain.scale_first", **numbers, z=_num(logits[0]))
    if trace.bias is None:
        scale_step = Step(
            tr("explain.scale"),
            rf"z_j = a(\mathbf q, \mathbf k_j) \times {scale_tex} \,/\, T",
            note=scale_note,
            columns=[tr("explain.key"), tr("explain.logit")],  # the score is step 1's column
            rows=[[k, z] for k, z in zip(key_labels, logits, strict=True)],
        )
    else:  # ALiBi: a penalty per key added before the softmax
        bias = trace.bias[row].tolist()
        scale_step = Step(
            tr("explain.scale_bias"),
            rf"z_j = \left(a(\mathbf q, \mathbf k_j) \times {scale_tex} + b_j\right) \,/\, T",
            note=tr("explain.bias_note", scale=_num(trace.scale), temperature=_num(trace.temperature)),
            columns=[tr("explain.key"), tr("explain.bias"), tr("explain.logit")],
            rows=[[k, b, z] for k, b, z in zip(key_labels, bias, logits, strict=True)],
        )
    steps.append(scale_step)
    blocked = [k for k, ok in zip(key_labels, allowed, strict=True) if not ok]
    steps.append(
        Step(
            tr("explain.mask"),
            r"z_j \leftarrow -\infty \ \text{" + tr("explain.mask_formula") + r"} e^{z_j} = 0",
            note=tr("explain.masked", keys=", ".join(blocked)) if blocked else tr("explain.none_masked"),
            columns=[tr("explain.key"), tr("explain.allowed")],
            rows=[
                [k, tr("explain.yes") if ok else tr("explain.no_masked")]
                for k, ok in zip(key_labels, allowed, strict=True)
            ],
        )
    )
    finite = [z for z, ok in zip(logits, allowed, strict=True) if ok]
    top = max(finite) if finite else 0.0
    exps = [math.exp(z - top) if ok else 0.0 for z, ok in zip(logits, allowed, strict=True)]
    total = sum(exps)
    steps.append(
        Step(
            tr("explain.softmax"),
            r"\alpha_j = \frac{e^{z_j - m}}{\sum_{i} e^{z_i - m}}, \quad m = \max_i z_i",
            note=tr("explain.softmax_note", top=_num(top), total=_num(total)) if finite else tr("explain.all_masked"),
            columns=[tr("explain.key"), "e^(z − m)", tr("explain.weight")],
            rows=[[k, e, w] for k, e, w in zip(key_labels, exps, weights, strict=True)],
        )
    )
    output = trace.output[row].tolist()
    values = trace.values.tolist()
    terms = [f"{_num(w)} × v{j + 1}" for j, w in enumerate(weights) if w > 0][:MAX_TERMS]
    more = " + …" if sum(w > 0 for w in weights) > MAX_TERMS else ""
    shown = ", ".join(_num(x) for x in output[:16]) + (", …" if len(output) > 16 else "")
    steps.append(
        Step(
            tr("explain.weighted_sum"),
            rf"\mathbf o_{{{q_label}}} = \sum_j \alpha_j \mathbf v_j",
            note=f"o = {' + '.join(terms) or '0'}{more} = [{shown}]",
            columns=[tr("explain.key"), tr("explain.weight"), *[f"v[{i + 1}]" for i in range(min(len(output), 8))]],
            rows=[[k, w, *v[:8]] for k, w, v in zip(key_labels, weights, values, strict=True)],
        )
    )
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


def explain_attention(
    trace: Any, head: int, row: int, query_label: str, key_labels: list[str], lang: str = DEFAULT_LANGUAGE
) -> list[Step]:
    """Show-your-work for one query row of an unbatched multi-head trace (attnviz.core.multihead.MultiHeadTrace):
    step 0 projects the inputs with W_q, W_k, W_v (when they are not the identity, or there are several heads), the
    head's steps 1-5 follow, then the heads are joined by W_o and, when it is on, the residual is added."""

    def tr(key: str, **params: object) -> str:
        return t(key, lang, **params)

    def vec(values: list[float]) -> str:  # the notes are plain text
        return _vector(values, tex=False)

    steps = explain_row(trace.heads[head], row, query_label, key_labels, lang)
    projected = trace.projections != "identity" or trace.num_heads > 1
    before: list[Step] = []
    if projected:
        projected_head = trace.heads[head]  # its inputs are this head's features of W_q x, W_k x_j and W_v x_j
        features = head_rows(trace.W_q.shape[0], head, trace.num_heads)
        start = features.start
        x, x_key, x_value = trace.queries[row].tolist(), trace.keys[0].tolist(), trace.values[0].tolist()
        w_q = trace.W_q[start].tolist()
        q, k, v = (
            projected_head.queries[row].tolist(),
            projected_head.keys[0].tolist(),
            projected_head.values[0].tolist(),
        )
        note = tr(
            "explain.project_note",
            x=vec(x),
            n=start + 1,
            first=_products(w_q, x, tex=False),
            q1=number_text(q[0]),
            q=vec(q),
            k=vec(k),
            v=vec(v),
            key_x=vec(x_key),
            value_x=vec(x_value),
            features=f"{start + 1}–{features.stop}",
        )
        formula = (
            r"\mathbf q = \mathbf W_q \mathbf x, \quad \mathbf k_j = \mathbf W_k \mathbf x_j, \quad "
            r"\mathbf v_j = \mathbf W_v \mathbf x_j"
        )
        before.append(Step(tr("explain.project"), formula, note=note))
    after: list[Step] = []
    if projected:
        concat, delta = trace.concat[row].tolist(), trace.delta[row].tolist()
        note = tr("explain.combine_note", concat=vec(concat), delta=vec(delta))
        formula = r"\Delta\mathbf e = \mathbf W_o [\mathbf o^{(1)}; \dots; \mathbf o^{(h)}]"
        after.append(Step(tr("explain.combine"), formula, note=note))
    if trace.residual:
        own, delta, out = trace.queries[row].tolist(), trace.delta[row].tolist(), trace.output[row].tolist()
        terms = ", ".join(
            f"{number_text(a)} + {factor(b, tex=False)}" for a, b in zip(own[:MAX_VECTOR], delta, strict=False)
        )
        note = tr(
            "explain.residual_note",
            e=vec(own),
            delta=vec(delta),
            terms=terms,
            out=vec(out),
        )
        after.append(Step(tr("explain.residual"), r"\mathbf e' = \mathbf e + \Delta\mathbf e", note=note))
    numbered = [replace(step, number=0) for step in before] + steps
    return numbered + [replace(step, number=len(steps) + i) for i, step in enumerate(after, start=1)]
