"""Numbers as a student reads them: no "-0", no "1.3e − 08" in LaTeX, negative factors in brackets, no float32 noise
in the Python export, no "f(57) = nan", and a one-line list's bad number named by its item."""

from __future__ import annotations

import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.exports import python_snippet
from attnviz.app.state import KERNEL_FIELDS, AttentionState
from attnviz.core.attention import attend
from attnviz.core.errors import AttnvizError, render
from attnviz.core.fields import field
from attnviz.lessons.explain import explain_row, number_tex, number_text, score_working
from tests.test_app import KERNEL, ROOT


def test_negative_zero_is_written_0():
    assert number_text(-0.0) == "0"
    assert number_text(-0.00001) == "-1e-05"  # small is not zero
    assert number_text(-0.5) == "-0.5"


def test_scientific_numbers_in_latex_are_written_times_ten_to_the():
    assert number_tex(1.2664165549e-08, 2) == r"1.3 \times 10^{-8}"
    assert number_tex(2.5e12) == r"2.5 \times 10^{12}"
    assert number_tex(0.25) == "0.25"


def test_negative_factors_of_the_worked_score_are_in_brackets():
    q = torch.tensor([[-0.2127, 0.5]])
    k = torch.tensor([[-0.2127, -0.1], [1.0, 2.0]])
    trace = attend(q, k, k, score="dot")
    worked = score_working(trace, 0, 0)
    assert r"(-0.2127) \times (-0.2127) + 0.5 \times (-0.1)" in worked
    assert "+ -" not in worked and r"\times -" not in worked


def test_a_zero_score_is_not_shown_as_minus_zero():
    q = torch.tensor([[-1.0, 0.0]])
    k = torch.tensor([[0.0, 1.0]])
    trace = attend(q, k, k, score="dot")  # -1 * 0 + 0 * 1 = -0.0 in floating point
    steps = explain_row(trace, 0, "q", ["k"])
    assert "= 0" in steps[0].note and "-0$" not in steps[0].note and "= -0" not in steps[0].note


def test_the_home_page_writes_the_tiny_weight_as_latex_scientific_notation():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    assert not at.exception
    example = next(x.value for x in at.latex if r"\alpha(57, 51)" in x.value)
    assert r"1.3 \times 10^{-8}" in example
    assert "e-" not in example


def test_the_python_export_prints_float32_numbers_as_they_were_typed():
    state = AttentionState(page="self", mode="numbers", queries=((0.16959999501705170, -0.5), (1.0, 2.0)))
    snippet = python_snippet(state)
    assert "[[0.1696, -0.5], [1.0, 2.0]]" in snippet
    assert "0.16959999" not in snippet


def test_a_query_outside_every_boxcar_window_has_no_prediction_not_nan():
    at = AppTest.from_file(str(ROOT / KERNEL), default_timeout=90)
    at.query_params["kn"] = "boxcar"
    at.query_params["bw"] = "0.01"
    at.run()
    assert not at.exception
    line = next(m.value for m in at.markdown if "f(57)" in m.value)
    assert "f(57): no prediction" in line
    assert "nan" not in line.lower()


def test_a_bad_number_in_a_one_line_list_is_named_by_its_item():
    queries = field(KERNEL_FIELDS, "queries")
    for text, message in (
        ("1, x", "queries, item 2: ' x' is not a number"),
        ("1, 2, 1e999", "queries, item 3: ' 1e999' must be finite and within ±1e6"),
    ):
        try:
            queries.parse(text)
        except AttnvizError as exc:
            assert render(exc, "en").lower() == message
            assert "第 2 项" in render(exc, "zh-Hans") or "第 3 项" in render(exc, "zh-Hans")
        else:
            raise AssertionError(f"{text!r} was accepted")
