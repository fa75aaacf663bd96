"""Show-your-work for "Is attention an explanation?": one entry of attention rollout (Abnar & Zuidema, eq. 1) worked
from one layer's residual mix and the rollout below it, the cell the panel opens on, and what the worked entries of
this module and of attnviz/lessons/norm_work.py (norm-based attention) share: the largest terms of a sum written out,
and the chart's value as a column mean.

Shapes: `T` tokens, `h` heads. A layer's attention and its norm-based attention are (h, T, T), rows are queries.
Layers and heads are counted from 1, as on the page. Pure: no Streamlit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from attnviz.core.attribution import head_mean, residual_mix, rollout
from attnviz.i18n import DEFAULT_LANGUAGE, sentences, t
from attnviz.lessons.explain import Step
from attnviz.lessons.working import factor, number_text

TOP_TERMS = 3  # the largest terms of a worked sum written out; the others are summed in one "… (n more terms)"
RESIDUAL = 0.5  # Abnar & Zuidema's mix: Ã = 0.5·A + 0.5·I, the rollout's default (attnviz.core.attribution)
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def subscript(number: int) -> str:
    """A layer number as a subscript in plain text: 5 -> "₅"."""
    return str(number).translate(_SUBSCRIPTS)


def quoted(label: str) -> str:
    """A token as the notes name it: «mat», «.» (a bare "." or "," would read as punctuation of the sentence)."""
    return f"«{label}»"


def default_cell(norms: Tensor, head: int | None, words: Sequence[int]) -> tuple[int, int]:
    """The (query, key) the panel opens on: the key of `words` (positions of word pieces, punctuation left out)
    that the norm-based chart ranks first (its column mean), and the other row with the largest entry in that
    column. `norms` is the layer's ‖α f(x)‖ (h, T, T), `head` counted from 1 (None: the heads' mean)."""
    chosen = head_mean(norms) if head is None else norms[head - 1]  # (T, T)
    columns = chosen.mean(dim=0)  # (T,): the chart's values
    candidates = list(words) or list(range(chosen.shape[-1]))
    key = max(candidates, key=lambda j: float(columns[j]))
    rows = [i for i in range(chosen.shape[0]) if i != key] or [key]
    return max(rows, key=lambda i: float(chosen[i, key])), key


def largest_terms(terms: list[tuple[float, float]], labels: list[str], more: Callable[[int, str], str]) -> str:
    """a × b (label) + … for the TOP_TERMS largest products a·b of `terms`, then `more(count, sum)` for the rest."""
    order = sorted(range(len(terms)), key=lambda index: -abs(terms[index][0] * terms[index][1]))
    shown = [f"{factor(terms[k][0], tex=False)} × {factor(terms[k][1], tex=False)} ({labels[k]})" for k in order]
    written = shown[:TOP_TERMS]
    rest = order[TOP_TERMS:]
    if rest:
        written.append(more(len(rest), number_text(sum(terms[k][0] * terms[k][1] for k in rest))))
    return " + ".join(written)


# ----- rollout -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RolloutCell:
    """rollout_l[i, j] and what it is made of: row i of layer l's residual mix and column j of the rollout below."""

    layer: int  # l, from 1
    layers: int  # L, how many the model has
    heads: int
    row: int  # i
    key: int  # j
    mean: list[float]  # Ā_l[i, :], the heads' mean
    mixed: list[float]  # Ã_l[i, :]
    total: float  # the row sum of 0.5·Ā + 0.5·I before it is renormalised
    below: list[float]  # rollout_{l-1}[:, j]
    entry: float  # rollout_l[i, j], from the matrices (attnviz.core.attribution.rollout)
    chart: float | None  # the chart's value for j, the mean of column j of rollout_L: only when l = L

    @property
    def terms(self) -> list[float]:
        """Ã_l[i, k] · rollout_{l-1}[k, j] for every k."""
        return [a * b for a, b in zip(self.mixed, self.below, strict=True)]


def rollout_cell(attentions: Sequence[Tensor], layer: int, row: int, key: int) -> RolloutCell:
    """One entry of the rollout after `layer` (from 1) of the per-layer attentions (h, T, T), with its parts."""
    weights = attentions[layer - 1]
    size = weights.shape[-1]
    mean = head_mean(weights)[row]  # (T,)
    below = rollout(attentions[: layer - 1], RESIDUAL) if layer > 1 else torch.eye(size, dtype=weights.dtype)
    result = rollout(attentions[:layer], RESIDUAL)  # (T, T)
    return RolloutCell(
        layer=layer,
        layers=len(attentions),
        heads=weights.shape[0],
        row=row,
        key=key,
        mean=mean.tolist(),
        mixed=residual_mix(weights, RESIDUAL)[row].tolist(),
        total=float((1.0 - RESIDUAL) * mean.sum() + RESIDUAL),
        below=below[:, key].tolist(),
        entry=float(result[row, key]),
        chart=float(result[:, key].mean()) if layer == len(attentions) else None,
    )


def _mix_step(cell: RolloutCell, labels: list[str], lang: str) -> Step:
    """Row i of the layer's heads' mean, the residual mixed in and the row renormalised."""
    i, j, n = cell.row, cell.key, number_text
    params = {
        "query": quoted(labels[i]),
        "key": quoted(labels[j]),
        "layer": cell.layer,
        "heads": cell.heads,
        "total": n(cell.total),
    }
    own = {"own": n(cell.mean[i]), "own_mixed": n(cell.mixed[i])}
    if i == j:
        note = t("faithful.work_mix_note_diagonal", lang, **params, **own)
    else:
        note = t("faithful.work_mix_note", lang, **params, **own, weight=n(cell.mean[j]), mixed=n(cell.mixed[j]))
    return Step(
        t("faithful.work_mix", lang),
        r"\begin{aligned} \bar A_l &= \tfrac{1}{H} \textstyle\sum_{h=1}^{H} A_l^{h} \\ "
        r"M_l &= 0.5\,\bar A_l + 0.5\,I \\ \tilde A_l[i, k] &= \frac{M_l[i, k]}{\sum_{k'} M_l[i, k']} \end{aligned}",
        note=note,
        columns=[t("faithful.work_token", lang), "Ā[i, k]", "Ã[i, k]"],
        rows=[[label, a, m] for label, a, m in zip(labels, cell.mean, cell.mixed, strict=True)],
    )


def _product_step(cell: RolloutCell, labels: list[str], lang: str) -> Step:
    """rollout_l[i, j] as the sum over k, its largest terms written out, checked against the matrix's entry."""
    i, j, layer = cell.row, cell.key, cell.layer
    params = {"query": quoted(labels[i]), "key": quoted(labels[j]), "entry": number_text(cell.entry)}
    if layer == 1:
        note = t("faithful.work_product_first", lang, **params)
    else:
        pairs = list(zip(cell.mixed, cell.below, strict=True))
        names = [quoted(label) for label in labels]
        written = largest_terms(
            pairs, names, lambda count, rest: t("faithful.work_more_terms", lang, count=count, sum=rest)
        )
        total = number_text(sum(cell.terms))
        note = t("faithful.work_product_note", lang, **params, l=subscript(layer), terms=written, total=total)
    if cell.chart is None:
        note = sentences(note, t("faithful.work_other_layer", lang, last=cell.layers, L=subscript(cell.layers)))
    below = f"rollout{subscript(layer - 1)}[k, j]"
    return Step(
        t("faithful.work_product", lang),
        r"\begin{aligned} \operatorname{rollout}_l[i, j] &= \sum_k \tilde A_l[i, k] \\ "
        r"&\qquad \times \operatorname{rollout}_{l-1}[k, j] \\ \operatorname{rollout}_0 &= I \end{aligned}",
        note=note,
        columns=[t("faithful.work_token", lang), below, t("faithful.work_term", lang)],
        rows=[[label, b, term] for label, b, term in zip(labels, cell.below, cell.terms, strict=True)],
    )


ROLLOUT_TERM = r"\operatorname{rollout}_L[i, j]"  # what the rollout chart averages over the rows (the last layer's)


def chart_step(method: str, key: str, count: int, value: float, lang: str, term: str) -> Step:
    """The chart's value for key j: the mean over the query rows i of `term` (LaTeX of the entry (i, j) of the matrix
    the steps above worked one entry of)."""
    return Step(
        t("faithful.work_chart", lang),
        r"\operatorname{map}[j] = \frac{1}{T} \sum_{i=1}^{T} " + term,
        note=t("faithful.work_chart_note", lang, method=method, key=key, count=count, value=number_text(value)),
    )


def rollout_steps(cell: RolloutCell, labels: list[str], lang: str = DEFAULT_LANGUAGE) -> list[Step]:
    """The worked rollout entry in `lang`; `labels` name the tokens (unique, as the charts name them)."""
    steps = [_mix_step(cell, labels, lang), _product_step(cell, labels, lang)]
    if cell.chart is not None:
        method = t("faithful.method_rollout", lang)
        steps.append(chart_step(method, quoted(labels[cell.key]), len(labels), cell.chart, lang, ROLLOUT_TERM))
    return numbered(steps)


def numbered(steps: list[Step]) -> list[Step]:
    return [replace(step, number=index) for index, step in enumerate(steps, start=1)]
