"""A student's answer to a class question: read from what was typed or clicked, checked, stored as JSON, read back
and marked. Pure: no Streamlit.

An answer is stored as one JSON value: an option's index (top_key, head, best_map), a list of K numbers (row) or a
number (number). What the store gives back is read with the same checks, so that a malformed stored answer is counted
as unreadable instead of crashing the teacher's page.

Tolerances (kept in each question's spec, so that a question is marked by the rule it was asked with):

- **row**: right when every typed weight is within 0.05 of the true one. A student works a row out by hand with
  two decimals (at most 0.005 of rounding a weight), and may round the exponentials on the way; 0.05 leaves room for
  that, and still refuses the usual wrong rows: the uniform row where the weights are not uniform (0.33 against
  0.42 / 0.16), the weight of a masked key, a row that forgets the scaling by √d. The numbers need not add up to 1
  exactly (0.33, 0.33, 0.33 is a fine answer for a uniform row).
- **number**: right when within 2 % of the true value, or 0.01 of it when the truth is near 0 (within
  max(0.02 |truth|, 0.01)). The number is a weighted mean of values (f(x), or one value of an output row); with
  weights rounded to two decimals by hand it moves by a percent or so on the notes' examples (the waist example:
  45.5, so 44.6 to 46.4 count, while the plain mean of the values, 43.7, does not). The absolute floor keeps a truth
  of 0.001 from asking for five decimals.
- **top_key**: every key whose weight is the row's largest (within 1e-6: two equal scores can differ in float32's
  last digit) counts, so a tie has several right answers.
- **best_map**: every map whose Spearman ρ against blank-out is within 0.005 of the largest counts. The page shows ρ
  with two decimals: maps within half its last digit of each other read alike (0.618 and 0.622 both as +0.62), and
  a class cannot be asked to tell them apart. A map whose ρ is NaN (a constant map: it ranks nothing) is never right.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from attnviz.app.classroom.store import MAX_ANSWER_BYTES, Question
from attnviz.core.errors import AttnvizError, short
from attnviz.core.fields import format_number

CHOICE_KINDS = ("top_key", "head", "best_map")
KINDS = ("top_key", "row", "number", "head", "best_map")
ROW_TOLERANCE = 0.05  # |typed - true| for each weight of a row
NUMBER_RELATIVE, NUMBER_ABSOLUTE = 0.02, 0.01  # |typed - true| <= max(2 % of |true|, 0.01)
TIE = 1e-6  # weights this close to a row's largest count as largest too
RHO_TIE = 0.005  # best_map: a ρ this close to the largest counts as largest too
MAX_ANSWER_TEXT = 1000  # characters of a typed answer (a row of 16 weights takes ~100)
MAX_NUMBER = 1e12  # |a typed number|: far beyond any output the pages make (their inputs are capped at 1e6)
_SLACK = 1e-9  # float rounding at a tolerance's edge (45.5 * 1.02)
_SEPARATORS = re.compile(r"[\s,，、;；]+")  # between a row's numbers: commas (Chinese ones too), spaces, semicolons


def _too_long(raw: Any) -> None:
    if isinstance(raw, str) and len(raw) > MAX_ANSWER_TEXT:
        raise AttnvizError("answer_long", count=len(raw), limit=MAX_ANSWER_TEXT)


def _option(raw: Any, count: int) -> int:
    """An option's index (as a number or its text), checked against the `count` options."""
    text = str(raw).strip()
    if isinstance(raw, bool) or not (isinstance(raw, int) or (text.isascii() and text.isdigit())):
        raise AttnvizError("answer_option", count=count, value=short(text))
    index = int(text)
    if not 0 <= index < count:
        raise AttnvizError("answer_option", count=count, value=short(text))
    return index


def _number(raw: Any) -> float:
    """A finite number of at most MAX_NUMBER in size (a number, or its text)."""
    text = str(raw).strip()
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw) if isinstance(raw, int | float) else float(text)
    except (TypeError, ValueError, OverflowError):
        raise AttnvizError("answer_number", value=short(text)) from None
    if not math.isfinite(value):
        raise AttnvizError("answer_number", value=short(text))
    if abs(value) > MAX_NUMBER:
        raise AttnvizError("answer_number_range", value=short(text), limit=f"{MAX_NUMBER:g}")
    return value


def _row(raw: Any, count: int) -> list[float]:
    """`count` weights, each a number from 0 to 1: a list, or text with commas or spaces between them."""
    cells = list(raw) if isinstance(raw, list | tuple) else [c for c in _SEPARATORS.split(str(raw).strip()) if c]
    if len(cells) != count:
        raise AttnvizError("answer_row_count", count=len(cells), keys=count)
    values = []
    for cell in cells:
        try:
            value = _number(cell)
        except AttnvizError:
            value = math.nan
        if not 0.0 <= value <= 1.0:  # NaN fails too
            raise AttnvizError("answer_row", value=short(str(cell).strip()))
        values.append(value)
    return values


def checked(question: Question, raw: Any) -> Any:
    """The answer's value (index, row or number) for `question`; AttnvizError saying what is wrong with it."""
    _too_long(raw)
    options = question.spec.get("options", [])
    if question.kind in CHOICE_KINDS:
        return _option(raw, len(options))
    if question.kind == "row":
        return _row(raw, len(options))
    if question.kind == "number":
        return _number(raw)
    raise AttnvizError("question_kind", kind=short(question.kind))


def parse_answer(question: Question, raw: Any) -> str:
    """What a student typed or chose, checked, as the JSON text to store; AttnvizError naming what is wrong."""
    return json.dumps(checked(question, raw), separators=(",", ":"))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_answer(question: Question, stored: Any) -> Any:
    """A stored answer's value, checked as `parse_answer` checks it; None when it cannot be read."""
    if not isinstance(stored, str) or len(stored.encode()) > MAX_ANSWER_BYTES:
        return None
    try:
        value = json.loads(stored)
        numbers = value if question.kind == "row" and isinstance(value, list) else [value]
        if question.kind in CHOICE_KINDS and not isinstance(value, int):
            return None  # 1.0 or "1" were never stored by parse_answer
        if question.kind == "row" and not isinstance(value, list):
            return None
        if question.kind in ("row", "number") and not all(_is_number(x) for x in numbers):
            return None  # "0.5" was never stored by parse_answer
        return checked(question, value)
    except (ValueError, RecursionError):  # JSON errors and AttnvizError are ValueErrors
        return None


def marked(question: Question, value: Any) -> bool:
    """Whether a checked answer's value is right."""
    spec, truth = question.spec, question.spec.get("truth")
    if question.kind in CHOICE_KINDS:
        return value in truth
    if question.kind == "row":
        limit = spec.get("tolerance", {}).get("absolute", ROW_TOLERANCE) + _SLACK
        return len(value) == len(truth) and all(abs(a - b) <= limit for a, b in zip(value, truth, strict=True))
    return abs(value - truth) <= number_tolerance(question) + _SLACK


def number_tolerance(question: Question) -> float:
    """How far from the truth a number question's answer may be and still be right: max(2 % of |truth|, 0.01) by
    default, or the spec's own."""
    tolerance, truth = question.spec.get("tolerance", {}), question.spec.get("truth")
    return max(tolerance.get("relative", NUMBER_RELATIVE) * abs(truth), tolerance.get("absolute", NUMBER_ABSOLUTE))


def is_correct(question: Question, answer_json: str) -> bool:
    """Whether a stored answer is right (an unreadable one is not)."""
    value = read_answer(question, answer_json)
    return value is not None and marked(question, value)


def rounded(value: float, digits: int = 3) -> str:
    """A number to `digits` significant digits, written plainly (1230, not 1.23e+03)."""
    return format_number(float(f"{value:.{digits}g}"))


def value_text(question: Question, value: Any, labels: list[str], decimals: int | None = None) -> str:
    """An answer's (or the truth's) value as text: option labels, a row's numbers, a number. `decimals` rounds a
    row's numbers (and 3 significant digits a number); None writes them as they are."""
    if question.kind in CHOICE_KINDS:
        indices = value if isinstance(value, list) else [value]
        return " / ".join(labels[i] for i in indices)
    if question.kind == "row":
        return ", ".join(format_number(x) if decimals is None else f"{x:.{decimals}f}" for x in value)
    return format_number(value) if decimals is None else rounded(value)
