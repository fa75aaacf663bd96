"""Dates written by people, in English and in Chinese, and their ISO form: a translation task with a known answer.

Every example is made from a date and a format, so the data is generated, never downloaded, and the alignment a
model should learn is known: the year's output characters come from the year's input characters, and so on.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
CHINESE_DIGITS = "〇一二三四五六七八九"

FIRST_DAY = dt.date(1950, 1, 1)
LAST_DAY = dt.date(2049, 12, 31)
OUTPUT_LENGTH = 10  # "2026-11-22"


def ordinal(day: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 22 -> "22nd"."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def chinese_number(number: int) -> str:
    """A month or day (1-31) in Chinese numerals: 10 -> "十", 11 -> "十一", 22 -> "二十二", 30 -> "三十"."""
    if not 1 <= number <= 99:
        raise ValueError(f"chinese_number reads 1 to 99; got {number}")
    tens, units = divmod(number, 10)
    head = "" if tens == 0 else "十" if tens == 1 else CHINESE_DIGITS[tens] + "十"
    return head + (CHINESE_DIGITS[units] if units else "")


def chinese_year(year: int) -> str:
    """A year digit by digit, as it is read: 2026 -> "二〇二六"."""
    return "".join(CHINESE_DIGITS[int(digit)] for digit in str(year))


@dataclass(frozen=True)
class DateFormat:
    """One way of writing a date: a name, its language, an example and the function that writes it."""

    name: str
    language: str  # "en" or "zh"
    write: Callable[[dt.date], str]

    @property
    def example(self) -> str:
        """The format applied to 22 November 2026."""
        return self.write(dt.date(2026, 11, 22))


FORMATS: tuple[DateFormat, ...] = (
    DateFormat("day_month_year", "en", lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}"),
    DateFormat("month_day_year", "en", lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}"),
    DateFormat("short_month_day_year", "en", lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}"),
    DateFormat("day_short_month_year", "en", lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}"),
    DateFormat("ordinal_day_month_year", "en", lambda d: f"{ordinal(d.day)} {MONTHS[d.month - 1]} {d.year}"),
    DateFormat("slashes", "en", lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}"),
    DateFormat("dots", "en", lambda d: f"{d.day}.{d.month}.{d.year}"),
    DateFormat("chinese_digits", "zh", lambda d: f"{d.year}年{d.month}月{d.day}日"),
    DateFormat(
        "chinese_numerals",
        "zh",
        lambda d: f"{chinese_year(d.year)}年{chinese_number(d.month)}月{chinese_number(d.day)}日",
    ),
    DateFormat("chinese_slashes", "zh", lambda d: f"{d.year}/{d.month}/{d.day}"),
)
FORMATS_BY_NAME = {date_format.name: date_format for date_format in FORMATS}

PAD, UNKNOWN = "<pad>", "<unk>"
BOS = "<s>"


def _input_characters() -> list[str]:
    """Every character any format writes, found by writing every month and day (sorted, so the vocabulary is fixed)."""
    characters: set[str] = set()
    for month in range(1, 13):
        for day in (1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 28):
            for date_format in FORMATS:
                characters.update(date_format.write(dt.date(2026, month, day)))
    characters.update("0123456789")
    characters.update(chinese_year(1950) + chinese_year(2049) + CHINESE_DIGITS)
    return sorted(characters)


INPUT_VOCAB: tuple[str, ...] = (PAD, UNKNOWN, *_input_characters())
OUTPUT_VOCAB: tuple[str, ...] = (BOS, *"0123456789-")
INPUT_INDEX = {token: index for index, token in enumerate(INPUT_VOCAB)}
OUTPUT_INDEX = {token: index for index, token in enumerate(OUTPUT_VOCAB)}
MAX_PROBE_LENGTH = 40  # characters a student may type: the model reads longer text, but learned up to 19
MAX_INPUT_LENGTH = max(len(f.write(dt.date(2026, 9, 28))) for f in FORMATS)  # "28th September 2026": 19 characters


@dataclass(frozen=True)
class DateExample:
    """One translation pair: what a person wrote, in which format, and the ISO date."""

    text: str
    target: str
    format: str


def example(date: dt.date, format_name: str) -> DateExample:
    """The pair for `date` written in the format named `format_name`."""
    return DateExample(FORMATS_BY_NAME[format_name].write(date), date.isoformat(), format_name)


def all_days() -> list[dt.date]:
    """Every day from FIRST_DAY to LAST_DAY."""
    return [FIRST_DAY + dt.timedelta(days=offset) for offset in range((LAST_DAY - FIRST_DAY).days + 1)]


def is_held_out(date: dt.date) -> bool:
    """One day in ten is kept out of training (by its ordinal number, so the split never changes)."""
    return date.toordinal() % 10 == 3


def training_days() -> list[dt.date]:
    """The days training may draw from."""
    return [day for day in all_days() if not is_held_out(day)]


def held_out_days() -> list[dt.date]:
    """The days only the evaluation sees."""
    return [day for day in all_days() if is_held_out(day)]


def sample_examples(days: list[dt.date], count: int, rng: random.Random) -> list[DateExample]:
    """`count` examples, each a day drawn from `days` in a format drawn uniformly."""
    return [example(rng.choice(days), rng.choice(FORMATS).name) for _ in range(count)]


def held_out_examples(count: int = 2000, seed: int = 12345) -> list[DateExample]:
    """A fixed evaluation set of days no training run sees, every format equally often."""
    return list(_held_out_examples(count, seed))


@functools.lru_cache(maxsize=8)
def _held_out_examples(count: int, seed: int) -> tuple[DateExample, ...]:
    """Made once per (count, seed): a training evaluates the same set at every snapshot."""
    rng = random.Random(seed)
    days = held_out_days()
    return tuple(example(rng.choice(days), FORMATS[index % len(FORMATS)].name) for index in range(count))


def unknown_characters(text: str) -> list[str]:
    """The characters of `text` the model has no token for, in order of first appearance."""
    return list(dict.fromkeys(character for character in text if character not in INPUT_INDEX))


def encode_inputs(texts: list[str]) -> tuple[list[list[int]], list[int]]:
    """Token ids of each text padded to the longest, and each text's length (its valid length)."""
    lengths = [len(text) for text in texts]
    width = max(lengths, default=0)
    rows = [
        [INPUT_INDEX.get(character, INPUT_INDEX[UNKNOWN]) for character in text]
        + [INPUT_INDEX[PAD]] * (width - len(text))
        for text in texts
    ]
    return rows, lengths


def encode_targets(targets: list[str]) -> list[list[int]]:
    """Output ids of each ISO date (ten characters each)."""
    return [[OUTPUT_INDEX[character] for character in target] for target in targets]
