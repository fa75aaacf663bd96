"""'Show your work': one query row of an attention trace, step by step, with its real numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from attnviz.scores import SCORES
from attnviz.trace import AttentionTrace

MAX_TERMS = 6  # coordinates written out in a worked sum before eliding with "…"


@dataclass(frozen=True)
class Step:
    """One step of the computation: a title, the formula (LaTeX) and a table of numbers."""

    title: str
    formula: str
    note: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[object]] = field(default_factory=list)


def _num(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


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


def _sum_terms(a: list[float], b: list[float], op: str = r"\times") -> str:
    terms = [f"{_num(x)} {op} {_num(y)}" for x, y in zip(a[:MAX_TERMS], b[:MAX_TERMS], strict=False)]
    if len(a) > MAX_TERMS:
        terms.append(r"\dots")
    return " + ".join(terms)


def score_working(trace: AttentionTrace, row: int, key: int) -> str:
    """The score of one (query, key) pair written out with numbers (LaTeX)."""
    q, k = trace.queries[row].tolist(), trace.keys[key].tolist()
    s = _num(float(trace.scores[row, key]))
    j = key + 1
    if trace.score in ("dot", "scaled_dot"):
        return rf"\mathbf q \cdot \mathbf k_{{{j}}} = {_sum_terms(q, k)} = {s}"
    if trace.score == "cosine":
        nq, nk = math.sqrt(sum(x * x for x in q)), math.sqrt(sum(x * x for x in k))
        dot = sum(x * y for x, y in zip(q, k, strict=True))
        return rf"\frac{{{_num(dot)}}}{{{_num(nq)} \times {_num(nk)}}} = {s}"
    if trace.score == "gaussian":
        sq = sum((x - y) ** 2 for x, y in zip(q, k, strict=True))
        sigma = trace.score_params.get("bandwidth", 1.0)
        lhs = rf"-\frac{{\lVert \mathbf q - \mathbf k_{{{j}}} \rVert^2}}{{2\sigma^2}}"
        return rf"{lhs} = -\frac{{{_num(sq)}}}{{2 \times {_num(sigma)}^2}} = {s}"
    return rf"a(\mathbf q, \mathbf k_{{{j}}}) = {s}"


def explain_row(trace: AttentionTrace, row: int, query_label: str, key_labels: list[str]) -> list[Step]:
    """Score, scale, mask, softmax and weighted sum of values for query `row` of an unbatched trace."""
    if trace.batched:
        raise ValueError("explain_row takes an unbatched trace (one sequence, one head)")
    num_queries = trace.weights.shape[0]
    if not 0 <= row < num_queries:
        raise ValueError(f"row must be between 0 and {num_queries - 1}; got {row}")
    spec = SCORES.get(trace.score)
    formula = spec.formula if spec else r"a(\mathbf q, \mathbf k)"
    scores = trace.scores[row].tolist()
    logits = trace.logits[row].tolist()
    allowed = trace.mask[row].tolist()
    weights = trace.weights[row].tolist()
    q_label = _tex_label(query_label)
    steps = [
        Step(
            f"1. Score the query '{query_label}' against every key",
            formula,
            note=f"First key worked out: ${score_working(trace, row, 0)}$",
            columns=["key", "score a(q, k)"],
            rows=[[k, s] for k, s in zip(key_labels, scores, strict=True)],
        )
    ]
    scale_tex = r"\frac{1}{\sqrt{d}}" if spec and spec.scaled else "1"
    steps.append(
        Step(
            "2. Scale and apply the temperature",
            rf"z_j = a(\mathbf q, \mathbf k_j) \times {scale_tex} \,/\, T",
            note=f"Scale = {_num(trace.scale)}, temperature T = {_num(trace.temperature)}.",
            columns=["key", "score", "logit z"],
            rows=[[k, s, z] for k, s, z in zip(key_labels, scores, logits, strict=True)],
        )
    )
    blocked = [k for k, ok in zip(key_labels, allowed, strict=True) if not ok]
    steps.append(
        Step(
            "3. Mask the keys this query may not see",
            r"z_j \leftarrow -\infty \ \text{for masked keys, so } e^{z_j} = 0",
            note=("Masked: " + ", ".join(blocked)) if blocked else "No key is masked for this query.",
            columns=["key", "allowed"],
            rows=[[k, "yes" if ok else "no (masked)"] for k, ok in zip(key_labels, allowed, strict=True)],
        )
    )
    finite = [z for z, ok in zip(logits, allowed, strict=True) if ok]
    top = max(finite) if finite else 0.0
    exps = [math.exp(z - top) if ok else 0.0 for z, ok in zip(logits, allowed, strict=True)]
    total = sum(exps)
    steps.append(
        Step(
            "4. Softmax: exponentiate and normalise",
            r"\alpha_j = \frac{e^{z_j - m}}{\sum_{i} e^{z_i - m}}, \quad m = \max_i z_i",
            note=(
                f"m = {_num(top)}; sum of the exponentials: {_num(total)}. Subtracting the maximum m changes "
                "nothing in the result but keeps the exponentials from overflowing."
            )
            if finite
            else "Every key is masked: the query attends to nothing, all weights are 0 and its output is the "
            "zero vector.",
            columns=["key", "e^(z − m)", "weight α"],
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
            "5. Weighted sum of the values",
            rf"\mathbf o_{{{q_label}}} = \sum_j \alpha_j \mathbf v_j",
            note=f"o = {' + '.join(terms) or '0'}{more} = [{shown}]",
            columns=["key", "weight α", *[f"v[{i + 1}]" for i in range(min(len(output), 8))]],
            rows=[[k, w, *v[:8]] for k, w, v in zip(key_labels, weights, values, strict=True)],
        )
    )
    return steps


def explain_kernel_row(trace: AttentionTrace, row: int, key_labels: list[str]) -> list[Step]:
    """Nadaraya–Watson for one query: distances, kernel values, normalisation, weighted sum."""
    from attnviz.kernel import KERNELS

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
            "1. Distance from the query to every key, scaled by the bandwidth σ",
            r"u_i = \frac{\lvert q - k_i \rvert}{\sigma}",
            note=f"Query q = {query}, σ = {_num(sigma)}.",
            columns=["key", "|q − k|", "u"],
            rows=[[k, d, d / sigma] for k, d in zip(key_labels, distances, strict=True)],
        ),
        Step(
            f"2. Kernel value of each key ({spec.label})",
            spec.formula,
            columns=["key", "K(u)"],
            rows=[[k, v] for k, v in zip(key_labels, kernel_values, strict=True)],
        ),
        Step(
            "3. Normalise: the weights sum to 1",
            r"\alpha_i = \frac{K(u_i)}{\sum_j K(u_j)}",
            note=f"Sum of the kernel values: {_num(total)}."
            if total > 0
            else "No key lies inside the kernel window: there is nothing to average, so no prediction here.",
            columns=["key", "weight α"],
            rows=[[k, w] for k, w in zip(key_labels, weights, strict=True)],
        ),
    ]
    terms = [f"{_num(w)} × {_num(v)}" for w, v in zip(weights, values, strict=True) if w > 1e-4][:MAX_TERMS]
    prediction = float(trace.output[row].reshape(-1)[0])
    steps.append(
        Step(
            "4. Prediction: weighted average of the values",
            r"f(q) = \sum_i \alpha_i v_i",
            note=(
                f"f(q) = {' + '.join(terms)} = {_num(prediction)} (terms with weight below 0.0001 left out)."
                if total > 0
                else "Undefined: no key has any weight."
            ),
        )
    )
    return steps
