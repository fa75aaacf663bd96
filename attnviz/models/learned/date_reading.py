"""Read a typed date as the dates model was taught to: with a pattern per trained format, checked by writing the date
back in that format.

The page then knows the true ISO date and compares the model's output with it, character by character; it can say
when a text is a date written in none of the trained formats (and how the nearest one writes it), a date in a year
the model never saw, no real date at all ("31 February 2023"), or nothing a trained format reads ("1 1 1").
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

from attnviz.models.learned.dates import (
    CHINESE_DIGITS,
    FIRST_DAY,
    FORMATS,
    FORMATS_BY_NAME,
    LAST_DAY,
    MONTHS,
    chinese_number,
)

# What each kind of reading means for the model's output
TRAINED = "trained"  # a trained format, a year it learned: the model should get it right
UNSEEN_YEAR = "years"  # a trained format, a year outside FIRST_DAY..LAST_DAY: never seen in training
OTHER_FORMAT = "format"  # a real date, written in none of the trained formats (e.g. "2024/04/19", zero-padded)
NOT_REAL = "not_real"  # read by a format's pattern, but no such day ("31 February 2023", month 13)
NOT_DATE = "not_date"  # no trained format's pattern reads it ("1 1 1")

_WORD_DAY = r"(?P<day>[0-9]{1,2})"
_MONTH_WORD = r"(?P<month>[A-Za-z]+)"
_YEAR = r"(?P<year>[0-9]{4})"
_ZH_NUMBER = f"[{CHINESE_DIGITS}十]{{1,3}}"

# Each trained format's pattern, looser than the format (leading zeros, spaces, a missing comma or 日): a text it
# reads is a date, and writing that date in the format says whether the text is in the format exactly.
PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        "day_month_year": rf"{_WORD_DAY} +{_MONTH_WORD} +{_YEAR}",
        "month_day_year": rf"{_MONTH_WORD} +{_WORD_DAY} *,? *{_YEAR}",
        "short_month_day_year": rf"{_MONTH_WORD} +{_WORD_DAY} *,? *{_YEAR}",
        "day_short_month_year": rf"{_WORD_DAY} +{_MONTH_WORD} +{_YEAR}",
        "ordinal_day_month_year": rf"{_WORD_DAY}(?:st|nd|rd|th) +{_MONTH_WORD} +{_YEAR}",
        "slashes": rf"(?P<day>[0-9]{{1,2}})/(?P<month>[0-9]{{1,2}})/{_YEAR}",
        "dots": rf"(?P<day>[0-9]{{1,2}})\.(?P<month>[0-9]{{1,2}})\.{_YEAR}",
        "chinese_digits": rf"{_YEAR} *年 *(?P<month>[0-9]{{1,2}}) *月 *(?P<day>[0-9]{{1,2}}) *日?",
        "chinese_numerals": rf"(?P<year>[{CHINESE_DIGITS}]{{4}})年(?P<month>{_ZH_NUMBER})月(?P<day>{_ZH_NUMBER})日?",
        "chinese_slashes": rf"{_YEAR}/(?P<month>[0-9]{{1,2}})/(?P<day>[0-9]{{1,2}})",
    }.items()
}
FIELDS = ("year", "month", "day")


@dataclass(frozen=True)
class DateReading:
    """What a text says as a date: the kind of reading, the format that read it (or the nearest one), the date, and
    where its year, month and day are in the text (field, start, stop)."""

    kind: str
    format: str | None = None
    date: dt.date | None = None
    spans: tuple[tuple[str, int, int], ...] = ()
    numbers: tuple[int, int, int] | None = None  # NOT_REAL: the year, month and day as read

    @property
    def expected(self) -> str | None:
        """The true ISO date ("2024-04-19"), when the text is a real date."""
        return None if self.date is None else self.date.isoformat()

    @property
    def written(self) -> str | None:
        """How the format that read the text writes its date (for OTHER_FORMAT: the way the model learned it)."""
        return None if self.date is None or self.format is None else FORMATS_BY_NAME[self.format].write(self.date)

    def field_at(self, position: int) -> str | None:
        """The field ("year", "month", "day") whose text holds input character `position`, None for any other."""
        return next((name for name, start, stop in self.spans if start <= position < stop), None)


def month_number(word: str) -> int | None:
    """A month's number from its English name or its first three letters, in any case ("apr" -> 4)."""
    lowered = word.lower()
    for number, name in enumerate(MONTHS, 1):
        if lowered in (name.lower(), name[:3].lower()):
            return number
    return None


_CHINESE_NUMBERS = {chinese_number(number): number for number in range(1, 100)}  # "十一" -> 11


def chinese_value(text: str) -> int | None:
    """A number in Chinese numerals as the dates write it ("十一" -> 11), or digit by digit ("〇四" -> 4)."""
    if text in _CHINESE_NUMBERS:
        return _CHINESE_NUMBERS[text]
    if text and all(character in CHINESE_DIGITS for character in text):
        return int("".join(str(CHINESE_DIGITS.index(character)) for character in text))
    return None


def _number(text: str) -> int | None:
    """A field's number: digits, Chinese numerals, or a month's name."""
    if text.isascii() and text.isdigit():
        return int(text)
    return chinese_value(text) if not text.isascii() else month_number(text)


def _read_with(name: str, text: str) -> DateReading | None:
    """`text` read by format `name`'s pattern: a TRAINED, UNSEEN_YEAR, OTHER_FORMAT or NOT_REAL reading, or None."""
    stripped = text.strip()
    match = PATTERNS[name].fullmatch(stripped)
    if match is None:
        return None
    offset = text.index(stripped) if stripped else 0
    spans = tuple((field, match.start(field) + offset, match.end(field) + offset) for field in FIELDS)
    year, month, day = (_number(match[field]) for field in FIELDS)
    if year is None or month is None or day is None or year < 1:
        return None  # a word that is no month, or year 0
    try:
        date = dt.date(year, month, day)
    except ValueError:
        return DateReading(NOT_REAL, name, None, spans, (year, month, day))
    if FORMATS_BY_NAME[name].write(date) != text:
        return DateReading(OTHER_FORMAT, name, date, spans)
    return DateReading(TRAINED if FIRST_DAY <= date <= LAST_DAY else UNSEEN_YEAR, name, date, spans)


_PREFERENCE = (TRAINED, UNSEEN_YEAR, OTHER_FORMAT, NOT_REAL)


def read_date(text: str) -> DateReading:
    """What `text` is as a date: in a trained format exactly, else the first format that reads it as a real date,
    else as no real date, else NOT_DATE."""
    readings = [reading for date_format in FORMATS if (reading := _read_with(date_format.name, text)) is not None]
    for kind in _PREFERENCE:
        found = next((reading for reading in readings if reading.kind == kind), None)
        if found is not None:
            return found
    return DateReading(NOT_DATE)


def days_in_month(year: int, month: int) -> int:
    """How many days `month` of `year` has (1 <= month <= 12)."""
    return calendar.monthrange(year, month)[1]
