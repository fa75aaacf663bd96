"""The dates model's mistakes: which output characters are wrong, where each wrong row looked and where the right
character was, and the held-out accuracy of each trained format (where the model is weak)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from torch import Tensor, nn

from attnviz.models.learned import dates
from attnviz.models.learned.date_reading import CHINESE_DIGITS, DateReading
from attnviz.models.learned.seq2seq import translate_texts

# The field of each ISO output character: "2024-04-19"
OUTPUT_FIELDS: tuple[str | None, ...] = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2
CHUNK = 250  # dates per forward pass when measuring accuracy
OTHER_YEARS = ((1900, 1949), (2050, 2099))  # years no training saw, on both sides of FIRST_DAY..LAST_DAY


def wrong_positions(output: str, expected: str) -> list[int]:
    """The 0-based positions where `output` differs from `expected` (a missing or extra character is wrong too)."""
    length = max(len(output), len(expected))
    return [i for i in range(length) if output[i : i + 1] != expected[i : i + 1]]


@dataclass(frozen=True)
class WrongRow:
    """One wrong output character and its attention: where the right character is in the input (`sources`, 0-based;
    () for a separator), the row's weight there, and the input character with the row's largest weight."""

    row: int
    want: str
    got: str
    field: str | None  # "year", "month", "day"; None for a separator
    sources: tuple[int, ...]
    source_weight: float
    top: int
    top_weight: float
    digit: bool = False  # the source is the right digit itself ("4" of "2024"), not the field's whole text


def _digit(character: str) -> int | None:
    """A digit's value, Arabic or Chinese ("4", "四" -> 4)."""
    if character.isascii() and character.isdigit():
        return int(character)
    return CHINESE_DIGITS.index(character) if character in CHINESE_DIGITS else None


def source_positions(reading: DateReading, text: str, row: int) -> tuple[int, ...]:
    """Where output character `row`'s right value is in `text`: its own digit when the field is written digit by
    digit ("2024", "04", "二〇二四"; right-aligned, so "4" is the 4 of "04"), else the field's whole text ("April",
    "十一"); () for a separator."""
    field = OUTPUT_FIELDS[row]
    if field is None or reading.expected is None:
        return ()
    _, start, stop = next(span for span in reading.spans if span[0] == field)
    first = OUTPUT_FIELDS.index(field)
    width = OUTPUT_FIELDS.count(field)
    digits = [_digit(character) for character in text[start:stop]]
    at = stop - start - width + (row - first)  # right-aligned: the digit in the same place from the right
    if None not in digits and at >= 0 and digits[at] == int(reading.expected[row]):
        return (start + at,)
    return tuple(range(start, stop))


def wrong_rows(reading: DateReading, text: str, output: str, weights: Tensor) -> list[WrongRow]:
    """Each wrong output character of a read date, with its row of `weights` (10 outputs, input characters)."""
    expected = reading.expected
    if expected is None:
        return []
    rows = []
    for row in wrong_positions(output, expected):
        if row >= min(len(output), weights.shape[0]):
            continue
        sources = source_positions(reading, text, row)
        weight = weights[row]
        top = int(weight.argmax())
        source_weight = float(weight[list(sources)].sum()) if sources else 0.0
        field, want = OUTPUT_FIELDS[row], expected[row]
        digit = len(sources) == 1 and _digit(text[sources[0]]) == int(want) if want.isdigit() else False
        rows.append(WrongRow(row, want, output[row], field, sources, source_weight, top, float(weight[top]), digit))
    return rows


# ------------------------------------------------------------------ held-out accuracy per format


def other_years_examples(count: int, seed: int = 54321) -> list[dates.DateExample]:
    """`count` examples of days in years training never saw (OTHER_YEARS), every format equally often."""
    rng = random.Random(seed)
    spans = [(dt.date(low, 1, 1).toordinal(), dt.date(high, 12, 31).toordinal()) for low, high in OTHER_YEARS]
    examples = []
    for index in range(count):
        low, high = spans[rng.randrange(len(spans))]
        day = dt.date.fromordinal(rng.randint(low, high))
        examples.append(dates.example(day, dates.FORMATS[index % len(dates.FORMATS)].name))
    return examples


@dataclass(frozen=True)
class FormatAccuracy:
    """How many of `count` dates in one format come out exactly right: held-out days (years the model learned),
    and days in years it never saw."""

    format: str
    count: int
    held_out: int
    other_years: int


def _right_by_format(model: nn.Module, examples: list[dates.DateExample]) -> dict[str, int]:
    right = {date_format.name: 0 for date_format in dates.FORMATS}
    for start in range(0, len(examples), CHUNK):
        chunk = examples[start : start + CHUNK]
        for result, example in zip(translate_texts(model, [e.text for e in chunk]), chunk, strict=True):
            right[example.format] += result.output == example.target
    return right


def format_accuracy(model: nn.Module, per_format: int = 100) -> list[FormatAccuracy]:
    """Each trained format's exact-match count on `per_format` held-out days and on `per_format` days of years no
    training saw (a fixed set: the same numbers every time for one model)."""
    total = per_format * len(dates.FORMATS)
    held_out = _right_by_format(model, dates.held_out_examples(total))
    other = _right_by_format(model, other_years_examples(total))
    return [
        FormatAccuracy(date_format.name, per_format, held_out[date_format.name], other[date_format.name])
        for date_format in dates.FORMATS
    ]
