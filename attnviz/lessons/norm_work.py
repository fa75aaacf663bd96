"""Show-your-work for "Is attention an explanation?": one entry of norm-based attention ‖α_ij f(x_j)‖ (Kobayashi et
al., eq. 6) as a weight times a vector's length, for one head or as the mean of every head's product, beside the key
that gets the most weight in the row.

Shapes: `T` tokens, `h` heads. A layer's attention and norm-based attention are (h, T, T), rows are queries; `lengths`
‖f_h(x_j)‖ are (h, T). Layers and heads are counted from 1, as on the page. Pure: no Streamlit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import Tensor

from attnviz.i18n import DEFAULT_LANGUAGE, sentences, t
from attnviz.lessons.explain import Step
from attnviz.lessons.explanation_work import chart_step, largest_terms, numbered, quoted
from attnviz.lessons.working import number_text

NORM_TERM = r"\lVert \alpha_{ij} f(\mathbf x_j) \rVert"  # what the norm-based chart averages over the rows


@dataclass(frozen=True)
class NormCell:
    """‖α_ij f(x_j)‖ of one head (or the heads' mean) and row i of its parts: the weights α, the lengths ‖f_h(x_k)‖
    and the norm-based entries, one row per head used (one head, or every head for their mean)."""

    layer: int  # from 1
    head: int | None  # from 1; None: the heads' mean
    row: int  # i
    key: int  # j
    weights: list[list[float]]  # α_h[i, :] per head used
    lengths: list[list[float]]  # ‖f_h(x_k)‖ per head used
    entries: list[list[float]]  # ‖α_h[i, k] f_h(x_k)‖ per head used, from the norm-based maps
    chart: float  # the chart's value for j: the mean of column j of the (head's, or mean) norm-based map

    def mean(self, table: list[list[float]]) -> list[float]:
        """A per-head table's mean over the heads used (the one head's row for one head)."""
        return [sum(column) / len(column) for column in zip(*table, strict=True)]

    def other(self) -> int:
        """The key, besides j, with the most weight in row i (the heads' mean weight for their mean)."""
        weights = self.mean(self.weights)
        keys = [k for k in range(len(weights)) if k != self.key] or [self.key]
        return max(keys, key=lambda k: weights[k])


def norm_cell(
    attentions: Sequence[Tensor], norms: Sequence[Tensor], lengths: Sequence[Tensor], layer: int, head: int | None,
    row: int, key: int,
) -> NormCell:  # fmt: skip
    """Row `row` of `layer`'s norm-based attention (per layer (h, T, T)) with its weights (h, T, T) and lengths
    (h, T), for one head (from 1) or every head (None)."""
    used = slice(None) if head is None else slice(head - 1, head)
    chosen = norms[layer - 1][used]  # (h', T, T)
    return NormCell(
        layer=layer,
        head=head,
        row=row,
        key=key,
        weights=attentions[layer - 1][used, row].tolist(),
        lengths=lengths[layer - 1][used].tolist(),
        entries=chosen[:, row].tolist(),
        chart=float(chosen.mean(dim=0)[:, key].mean()),
    )


def _weight_step(cell: NormCell, labels: list[str], lang: str) -> Step:
    """α_ij: the raw attention of the head (or the heads' mean)."""
    params = {"query": quoted(labels[cell.row]), "key": quoted(labels[cell.key]), "layer": cell.layer}
    weights = cell.mean(cell.weights)
    if cell.head is None:
        note = t(
            "faithful.work_weight_mean", lang, **params, heads=len(cell.weights), weight=number_text(weights[cell.key])
        )
    else:
        note = t("faithful.work_weight_note", lang, **params, head=cell.head, weight=number_text(weights[cell.key]))
    return Step(
        t("faithful.work_weight", lang),
        r"\alpha_{ij} = \operatorname{softmax}_j\!\left(\frac{\mathbf q_i \cdot \mathbf k_j}{\sqrt{d_h}}\right)",
        note=note,
        columns=[t("faithful.work_token", lang), "α[i, k]"],
        rows=[[label, w] for label, w in zip(labels, weights, strict=True)],
    )


def _length_step(cell: NormCell, labels: list[str], lang: str) -> Step:
    """‖f_h(x_j)‖: the length of the vector key j's token adds, through the value projection and W_O."""
    key, j = quoted(labels[cell.key]), cell.key
    formula = (
        r"f_h(\mathbf x_j) = \mathbf x_j\, W_V^{h}\, W_O^{h} \quad \text{(" + t("faithful.work_no_bias", lang) + ")}"
    )
    if cell.head is None:
        listed = ", ".join(number_text(lengths[j]) for lengths in cell.lengths)
        note = t("faithful.work_length_mean", lang, key=key, layer=cell.layer, heads=len(cell.lengths), lengths=listed)
        return Step(t("faithful.work_length", lang), formula, note=note)  # no one length per key: no column
    note = t(
        "faithful.work_length_note",
        lang,
        key=key,
        layer=cell.layer,
        head=cell.head,
        length=number_text(cell.lengths[0][j]),
    )
    return Step(
        t("faithful.work_length", lang),
        formula,
        note=note,
        columns=[t("faithful.work_token", lang), "‖f(x_k)‖"],
        rows=[[label, length] for label, length in zip(labels, cell.lengths[0], strict=True)],
    )


def _times_step(cell: NormCell, labels: list[str], lang: str) -> Step:
    """α_ij × ‖f(x_j)‖, the norm-based entry; for the heads' mean, the mean of the heads' products."""
    j = cell.key
    params = {
        "query": quoted(labels[cell.row]),
        "key": quoted(labels[j]),
        "entry": number_text(cell.mean(cell.entries)[j]),
    }
    if cell.head is None:
        pairs = [(weights[j], lengths[j]) for weights, lengths in zip(cell.weights, cell.lengths, strict=True)]
        heads = [t("faithful.head_n", lang, head=h) for h in range(1, len(pairs) + 1)]
        written = largest_terms(
            pairs, heads, lambda count, rest: t("faithful.work_more_heads", lang, count=count, sum=rest)
        )
        product = sum(a * b for a, b in pairs) / len(pairs)
        note = t(
            "faithful.work_times_mean", lang, **params, terms=written, heads=len(pairs), product=number_text(product)
        )
    else:
        weight, length = cell.weights[0][j], cell.lengths[0][j]
        factors = {
            "weight": number_text(weight),
            "length": number_text(length),
            "product": number_text(weight * length),
        }
        note = t("faithful.work_times_note", lang, **params, **factors)
    return Step(
        t("faithful.work_times", lang),
        r"\lVert \alpha_{ij} f_h(\mathbf x_j) \rVert = \alpha_{ij}\, \lVert f_h(\mathbf x_j) \rVert"
        r" \quad (\alpha_{ij} \ge 0)",
        note=note,
        columns=[t("faithful.work_token", lang), "‖α f(x_k)‖"],
        rows=[[label, entry] for label, entry in zip(labels, cell.mean(cell.entries), strict=True)],
    )


def _differs_step(cell: NormCell, labels: list[str], lang: str) -> Step:
    """The key with the most weight besides j, against j: by weight, by length, and by ‖α f(x)‖."""
    j, k = cell.key, cell.other()
    weights, entries = cell.mean(cell.weights), cell.mean(cell.entries)
    n = number_text
    names = {"query": quoted(labels[cell.row]), "key": quoted(labels[j]), "other": quoted(labels[k])}
    params = {"weight": n(weights[j]), "other_weight": n(weights[k])}
    params |= {"product": n(entries[j]), "other_product": n(entries[k])}
    if cell.head is None:
        note = t("faithful.work_differs_mean", lang, **names, **params)
    else:
        lengths = {"length": n(cell.lengths[0][j]), "other_length": n(cell.lengths[0][k])}
        note = t("faithful.work_differs_note", lang, **names, **params, **lengths)
    flips = (weights[k] - weights[j]) * (entries[k] - entries[j]) < 0
    pair = {"key": names["key"], "other": names["other"]}
    verdict = t("faithful.work_flips", lang, **pair) if flips else t("faithful.work_agrees", lang, **pair)
    return Step(
        t("faithful.work_differs", lang),
        r"\alpha_{ik} > \alpha_{ij} \;\not\Rightarrow\; \lVert \alpha_{ik} f(\mathbf x_k) \rVert > "
        r"\lVert \alpha_{ij} f(\mathbf x_j) \rVert",
        note=sentences(note, verdict),
    )


def norm_steps(cell: NormCell, labels: list[str], lang: str = DEFAULT_LANGUAGE) -> list[Step]:
    """The worked norm-based entry in `lang`, then the chart's value and why the map differs from α."""
    steps = [_weight_step(cell, labels, lang), _length_step(cell, labels, lang), _times_step(cell, labels, lang)]
    method = t("faithful.method_norm", lang)
    steps.append(chart_step(method, quoted(labels[cell.key]), len(labels), cell.chart, lang, NORM_TERM))
    steps.append(_differs_step(cell, labels, lang))
    return numbered(steps)
