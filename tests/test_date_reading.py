"""Reading a typed date as the dates model's trained formats write it, and the model's mistakes measured against it."""

from __future__ import annotations

import datetime as dt

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.figures.learned import mark_rows
from attnviz.models.learned import dates
from attnviz.models.learned.date_mistakes import (
    OTHER_YEARS,
    format_accuracy,
    other_years_examples,
    source_positions,
    wrong_positions,
    wrong_rows,
)
from attnviz.models.learned.date_reading import (
    NOT_DATE,
    NOT_REAL,
    OTHER_FORMAT,
    TRAINED,
    UNSEEN_YEAR,
    chinese_value,
    month_number,
    read_date,
)

# Dates written by hand in each trained format, with the ISO date a person reads in them
HAND_WRITTEN = [
    ("22 November 2026", "day_month_year", "2026-11-22"),
    ("March 3, 2027", "month_day_year", "2027-03-03"),
    ("Sep 30, 1951", "short_month_day_year", "1951-09-30"),
    ("1 Jan 2000", "day_short_month_year", "2000-01-01"),
    ("23rd July 1988", "ordinal_day_month_year", "1988-07-23"),
    ("05/06/2049", "slashes", "2049-06-05"),
    ("31.12.1950", "dots", "1950-12-31"),
    ("2024年2月29日", "chinese_digits", "2024-02-29"),
    ("二〇二六年十一月二十二日", "chinese_numerals", "2026-11-22"),
    ("一九九九年十二月三十一日", "chinese_numerals", "1999-12-31"),
    ("2024/4/19", "chinese_slashes", "2024-04-19"),
]


@pytest.mark.parametrize(("text", "name", "iso"), HAND_WRITTEN)
def test_a_date_in_a_trained_format_is_read_to_its_iso_date(text, name, iso):
    reading = read_date(text)
    assert reading.kind == TRAINED
    assert reading.expected == iso
    assert reading.format == name or dates.FORMATS_BY_NAME[reading.format].write(reading.date) == text


@pytest.mark.parametrize(
    ("text", "iso", "written"),
    [
        ("2024/04/19", "2024-04-19", "2024/4/19"),  # zero-padded: the trained format does not pad
        ("19/4/2024", "2024-04-19", "19/04/2024"),  # and this one always pads
        ("april 19 2024", "2024-04-19", "April 19, 2024"),
        ("2024年04月19日", "2024-04-19", "2024年4月19日"),
        (" 22 November 2026", "2026-11-22", "22 November 2026"),  # a leading space is a character the model reads
    ],
)
def test_a_date_in_no_trained_format_is_read_with_the_way_the_nearest_format_writes_it(text, iso, written):
    reading = read_date(text)
    assert (reading.kind, reading.expected, reading.written) == (OTHER_FORMAT, iso, written)


def test_a_year_outside_the_trained_ones_is_said_apart():
    for text, iso in (
        ("2055/12/1", "2055-12-01"),
        ("December 2, 1904", "1904-12-02"),
        ("一九三五年一月一日", "1935-01-01"),
    ):
        reading = read_date(text)
        assert (reading.kind, reading.expected) == (UNSEEN_YEAR, iso)


@pytest.mark.parametrize(
    ("text", "numbers"),
    [("31 February 2023", (2023, 2, 31)), ("29 February 2023", (2023, 2, 29)), ("4/19/2024", (2024, 19, 4))],
)
def test_no_real_date_is_read_as_such(text, numbers):
    reading = read_date(text)
    assert (reading.kind, reading.numbers, reading.expected) == (NOT_REAL, numbers, None)


@pytest.mark.parametrize("text", ["1 1 1", "", "hello", "2024", "19/4/24", "Smarch 3, 2027", "11111"])
def test_text_no_trained_format_reads_is_not_a_date(text):
    assert read_date(text).kind == NOT_DATE


def test_month_names_and_chinese_numbers():
    assert [month_number(word) for word in ("April", "apr", "SEPTEMBER", "Sept", "Foo")] == [4, 4, 9, None, None]
    assert [chinese_value(text) for text in ("十", "十一", "二十二", "三十一", "〇四", "二〇二六", "年")] == [
        10,
        11,
        22,
        31,
        4,
        2026,
        None,
    ]


@settings(max_examples=60, deadline=None)
@given(st.dates(dates.FIRST_DAY, dates.LAST_DAY), st.sampled_from(dates.FORMATS))
def test_every_format_reads_back_what_it_writes(day, date_format):
    reading = read_date(date_format.write(day))
    assert (reading.kind, reading.date) == (TRAINED, day)


def test_spans_name_each_field_of_the_text():
    reading = read_date("22 November 2026")
    assert reading.spans == (("year", 12, 16), ("month", 3, 11), ("day", 0, 2))
    assert [reading.field_at(i) for i in (0, 2, 3, 12)] == ["day", None, "month", "year"]


def test_wrong_positions_compare_character_by_character():
    assert wrong_positions("2029-04-19", "2024-04-19") == [3]
    assert wrong_positions("2024-04-19", "2024-04-19") == []
    assert wrong_positions("11111-11-1", "2011-11-01") == [0, 1, 4, 5, 7, 8]  # 1 vs 2, 1 vs 0, then the dashes


def test_the_source_of_an_output_character_is_its_digit_or_its_fields_text():
    padded = read_date("2024/04/19")
    assert source_positions(padded, "2024/04/19", 3) == (3,)  # the year's 4
    assert source_positions(padded, "2024/04/19", 5) == (5,)  # the month's 0 of "04"
    assert source_positions(padded, "2024/04/19", 4) == ()  # a separator
    short = read_date("2024/4/19")
    assert source_positions(short, "2024/4/19", 6) == (5,)  # the 4 of "4" is the month's second digit
    assert source_positions(short, "2024/4/19", 5) == (5,)  # "0" has no digit of its own: the field, "4"
    words = read_date("22 November 2026")
    assert source_positions(words, "22 November 2026", 5) == tuple(range(3, 11))  # "November"
    chinese = read_date("二〇二六年十一月二十二日")
    assert source_positions(chinese, "二〇二六年十一月二十二日", 2) == (2,)  # the year's 二, digit by digit


def test_a_wrong_row_names_its_weight_on_the_right_character_and_its_largest():
    text = "2024/04/19"
    weights = torch.full((10, len(text)), 0.01)
    weights[3, 9], weights[3, 3] = 0.45, 0.28  # the "9·4" row looks at the day's 9 more than at the year's 4
    [row] = wrong_rows(read_date(text), text, "2029-04-19", weights)
    assert (row.row, row.want, row.got, row.field, row.sources, row.top, row.digit) == (
        3,
        "4",
        "9",
        "year",
        (3,),
        9,
        True,
    )
    assert row.source_weight == pytest.approx(0.28) and row.top_weight == pytest.approx(0.45)
    assert wrong_rows(read_date("1 1 1"), "1 1 1", "11111-11-1", weights) == []  # no true date to compare with


def test_other_years_examples_are_outside_the_trained_years_and_in_every_format_alike():
    examples = other_years_examples(200)
    years = {dt.date.fromisoformat(example.target).year for example in examples}
    assert all(any(low <= year <= high for low, high in OTHER_YEARS) for year in years)
    assert not any(dates.FIRST_DAY.year <= year <= dates.LAST_DAY.year for year in years)
    assert {example.format for example in examples} == {f.name for f in dates.FORMATS}
    assert all(sum(e.format == f.name for e in examples) == 20 for f in dates.FORMATS)
    assert examples == other_years_examples(200)  # a fixed set


def test_format_accuracy_counts_exact_matches_per_format(monkeypatch):
    """With a stand-in translator that is right on every other held-out date only, the counts follow."""
    from types import SimpleNamespace

    from attnviz.models.learned import date_mistakes

    right_texts = {example.text for example in dates.held_out_examples(20)[::2]}

    def translate(model, texts):
        return [SimpleNamespace(output=read_date(t).expected if t in right_texts else "0000-00-00") for t in texts]

    monkeypatch.setattr(date_mistakes, "translate_texts", translate)
    rows = format_accuracy(torch.nn.Module(), per_format=2)
    # held_out_examples cycles through the formats: the even-numbered examples are the even-numbered formats' dates
    assert [(row.format, row.count, row.held_out, row.other_years) for row in rows] == [
        (f.name, 2, 2 if index % 2 == 0 else 0, 0) for index, f in enumerate(dates.FORMATS)
    ]


def test_mark_rows_outlines_each_row_across_the_chart():
    import plotly.graph_objects as go

    fig = mark_rows(go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.5], [1, 0]])), [0, 2])
    shapes = fig.layout.shapes
    assert [(s.y0, s.y1, s.x0, s.x1, s.xref) for s in shapes] == [
        (-0.5, 0.5, 0, 1, "x domain"),
        (1.5, 2.5, 0, 1, "x domain"),
    ]
