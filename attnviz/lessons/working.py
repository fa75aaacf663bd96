"""A score a(q, k_j) written out with its numbers, one worked line per score function, and the number formats
show-your-work writes them in."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from attnviz.core.scores import seeded_module
from attnviz.core.trace import AttentionTrace

MAX_TERMS = 6  # coordinates written out in a worked sum before eliding with "…"
MAX_VECTOR = 8  # entries of an intermediate vector written out before "…"


def number_text(x: float, digits: int = 4) -> str:
    """A number as text, `digits` significant digits; never "-0"."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.{digits}g}"
    return "0" if float(text) == 0 else text


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def number_prose(x: float, digits: int = 4) -> str:
    """A number for running text: scientific notation as 1.5×10⁻⁶, with no space or hyphen a line could break at
    (a browser breaks "1.5e-6" after its "-", leaving "1.5e-" at the end of one line and "6" on the next)."""
    text = number_text(x, digits)
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}×10{str(int(exponent)).translate(SUPERSCRIPT)}" if e else text


def number_tex(x: float, digits: int = 4) -> str:
    """A number as LaTeX: scientific notation as a × 10^{b} (LaTeX would set "1.3e-08" as "1.3e − 08")."""
    text = number_text(x, digits)
    mantissa, e, exponent = text.partition("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}" if e else text


def factor(x: float, tex: bool = True) -> str:
    """A factor in a product (LaTeX, or text), in brackets when negative: 0.5 × (-0.2), never 0.5 × -0.2."""
    text = number_tex(x) if tex else number_text(x)
    return f"({text})" if text.startswith("-") else text


def products(a: list[float], b: list[float], tex: bool = True) -> str:
    """a_1 × b_1 + a_2 × b_2 + … written out (LaTeX, or text), negative factors in brackets, MAX_TERMS of them."""
    times, more = (r"\times", r"\dots") if tex else ("×", "…")
    terms = [f"{factor(x, tex)} {times} {factor(y, tex)}" for x, y in zip(a[:MAX_TERMS], b[:MAX_TERMS], strict=False)]
    if len(a) > MAX_TERMS:
        terms.append(more)
    return " + ".join(terms)


def vector(values: list[float], tex: bool = True) -> str:
    """[v_1, v_2, …] (LaTeX, or text), MAX_VECTOR entries of it. In LaTeX, a line may break after each comma
    (`\allowbreak`): KaTeX breaks inline maths only after = and +, and eight numbers are wider than a phone."""
    number, comma = (number_tex, r",\allowbreak ") if tex else (number_text, ", ")
    more = (comma + r"\dots") if tex else ", …"
    return "[" + comma.join(number(x) for x in values[:MAX_VECTOR]) + (more if len(values) > MAX_VECTOR else "") + "]"


class _Pair(NamedTuple):
    """One (query, key) pair of a trace, whose score a worked line writes out."""

    trace: AttentionTrace
    row: int
    key: int
    a: str  # a(q, k_j) in LaTeX
    score: str  # the trace's score of the pair, in LaTeX
    module: Any  # a trained model's score module, or None

    @property
    def q(self) -> list[float]:
        return self.trace.queries[self.row].tolist()

    @property
    def k(self) -> list[float]:
        return self.trace.keys[self.key].tolist()

    @property
    def j(self) -> int:
        return self.key + 1


def _dot_working(pair: _Pair) -> str:
    return rf"{pair.a} = \mathbf q \cdot \mathbf k_{{{pair.j}}} = {products(pair.q, pair.k)} = {pair.score}"


def _cosine_working(pair: _Pair) -> str:
    q, k = pair.q, pair.k
    nq, nk = math.sqrt(sum(x * x for x in q)), math.sqrt(sum(x * x for x in k))
    dot = sum(x * y for x, y in zip(q, k, strict=True))
    return rf"{pair.a} = \frac{{{number_tex(dot)}}}{{{number_tex(nq)} \times {number_tex(nk)}}} = {pair.score}"


def _gaussian_working(pair: _Pair) -> str:
    sq = sum((x - y) ** 2 for x, y in zip(pair.q, pair.k, strict=True))
    sigma = pair.trace.score_params.get("bandwidth", 1.0)
    lhs = rf"{pair.a} = -\frac{{\lVert \mathbf q - \mathbf k_{{{pair.j}}} \rVert^2}}{{2\sigma^2}}"
    return rf"{lhs} = -\frac{{{number_tex(sq)}}}{{2 \times {number_tex(sigma)}^2}} = {pair.score}"


def _score_module(pair: _Pair) -> Any:
    """The pair's learned score module: the trained model's, or rebuilt from the trace's seed as attend built it."""
    if pair.module is not None:
        return pair.module
    trace = pair.trace
    sizes = trace.queries.shape[-1], trace.keys.shape[-1]
    return seeded_module(trace.score, *sizes, trace.score_params, trace.queries.dtype)


def _general_working(pair: _Pair) -> str:
    wk = _score_module(pair).W(pair.trace.keys[pair.key]).tolist()
    return rf"\mathbf W \mathbf k_{{{pair.j}}} = {vector(wk)}"


def _additive_working(pair: _Pair) -> str:
    """W_q q + W_k k_j as the score computed them when the trace carries them (features "W_q q", "W_k k"), else
    computed here; then its tanh and w_v."""
    module, features = _score_module(pair), pair.trace.features
    if "W_q q" in features and "W_k k" in features:
        hidden = (features["W_q q"][pair.row] + features["W_k k"][pair.key]).tolist()
    else:
        hidden = (module.W_q(pair.trace.queries[pair.row]) + module.W_k(pair.trace.keys[pair.key])).tolist()
    squashed = [math.tanh(x) for x in hidden]
    w_v = module.w_v.weight[0].tolist()
    return (
        rf"\mathbf W_q \mathbf q + \mathbf W_k \mathbf k_{{{pair.j}}} = {vector(hidden)}{LINE}"
        rf"\tanh(\cdot) = {vector(squashed)}{LINE}\mathbf w_v = {vector(w_v)}"
    )


def _concat_working(pair: _Pair) -> str:
    module = _score_module(pair)
    weights, bias = module.W.weight[0].tolist(), float(module.W.bias[0])
    return rf"\mathbf w = {vector(weights)}, \quad b = {number_tex(bias)}"


def _concat_tanh_working(pair: _Pair) -> str:
    both = torch.cat([pair.trace.queries[pair.row], pair.trace.keys[pair.key]])
    squashed = [math.tanh(x) for x in _score_module(pair).W(both).tolist()]
    return rf"\tanh(\mathbf W [\mathbf q; \mathbf k_{{{pair.j}}}] + \mathbf b) = {vector(squashed)}"


def _learned(working: Callable[[_Pair], str]) -> Callable[[_Pair], str]:
    """A learned score's worked line: its intermediates (with the weights they use), then a(q, k_j)."""

    def worked(pair: _Pair) -> str:
        with torch.no_grad():
            return f"{working(pair)}{LINE}{pair.a} = {pair.score}"

    return worked


LINE = " \n "  # between the lines of a worked score (each becomes its own formula)

# Each score's worked line for one pair, by the score's name; a score without one (typed scores, a model's own
# module) shows a(q, k_j) alone.
WORKINGS: dict[str, Callable[[_Pair], str]] = {
    "dot": _dot_working,
    "scaled_dot": _dot_working,
    "cosine": _cosine_working,
    "gaussian": _gaussian_working,
    "general": _learned(_general_working),
    "additive": _learned(_additive_working),
    "concat": _learned(_concat_working),
    "concat_tanh": _learned(_concat_tanh_working),
}


def score_working(trace: AttentionTrace, row: int, key: int, score_module: Any = None) -> str:
    """The score a(q, k_j) of one (query, key) pair written out with numbers (LaTeX): a is what the score function
    returns, before any scale or temperature, the same number as the tables' "score a(q, k)" column. A trained
    model's score passes its own `score_module`; else a learned score's weights are rebuilt from the trace's seed."""
    a = rf"a(\mathbf q, \mathbf k_{{{key + 1}}})"
    pair = _Pair(trace, row, key, a, number_tex(float(trace.scores[row, key])), score_module)
    working = WORKINGS.get(trace.score)
    return working(pair) if working is not None else f"{a} = {pair.score}"
