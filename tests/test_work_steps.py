"""Show your work: steps numbered 1, 2, 3, ... on every page, the number as data; every column always there.

Before: the numbers section took each step's number from the first word of its translated title, and listed only
the steps with a text note (2, 3, 4, 5 on the attention pages; 1, 3, 4 on the kernel page). The merged table left
out any column whose values repeated another's, so with one allowed key (causal mask, query 1) "weight α" (1)
vanished beside e^(z - m) (1).
"""

from __future__ import annotations

import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.ui.work import merged_table
from attnviz.core.attention import attend
from attnviz.core.kernel import nadaraya_watson
from attnviz.i18n import LANGUAGES, t
from attnviz.lessons.explain import explain_kernel_row, explain_row
from tests.test_app import KERNEL, ROOT, SELF

STEP_IDS = [
    "explain." + name
    for name in ("score", "scale", "mask", "softmax", "weighted_sum", "distance", "kernel_value", "normalise")
] + ["explain.prediction"]


def test_step_titles_carry_no_number_in_any_language():
    for lang in LANGUAGES:
        for key in STEP_IDS:
            assert not re.match(r"\s*\d", t(key, lang, query="q", kernel="k")), (lang, key)


def test_the_attention_and_kernel_steps_are_numbered_from_one():
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    steps = explain_row(attend(x, x, x), 1, "b", list("abcd"))
    assert [s.number for s in steps] == [1, 2, 3, 4, 5]
    kernel = nadaraya_watson(torch.tensor([57.0]), torch.tensor([51.0, 56.0, 58.0]), torch.tensor([40.0, 43.0, 48.0]))
    assert [s.number for s in explain_kernel_row(kernel, 0, ["51", "56", "58"])] == [1, 2, 3, 4]


def test_with_one_allowed_key_the_weight_column_is_still_there():
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    trace = attend(x, x, x, causal=True)
    steps = explain_row(trace, 0, "a", list("abc"))  # query 1 sees only key 1: e^(z - m) = 1 and weight = 1
    columns, rows = merged_table(steps)
    assert t("explain.weight", "en") in columns
    assert "e^(z − m)" in columns
    weight = columns.index(t("explain.weight", "en"))
    assert [row[weight] for row in rows] == pytest.approx([1.0, 0.0, 0.0])


def numbers_section(at: AppTest, heading: str) -> list[int]:
    text = next(m.value for m in at.markdown if heading in m.value)
    return [int(n) for n in re.findall(r"^\*\*(\d+)\.\*\*", text, flags=re.MULTILINE)]


def recipe_numbers(at: AppTest, first_title: str) -> list[int]:
    text = next(m.value for m in at.markdown if first_title in m.value and "$$" in m.value)
    return [int(n) for n in re.findall(r"^\*\*(\d+)\. ", text, flags=re.MULTILINE)]


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
@pytest.mark.parametrize(("path", "count", "first"), [(SELF, 5, "explain.score"), (KERNEL, 4, "explain.distance")])
def test_every_page_numbers_its_steps_one_to_n_in_the_recipe_and_with_the_numbers(path, count, first, lang):
    at = AppTest.from_file(str(ROOT / path), default_timeout=90)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    expected = list(range(1, count + 1))
    title = t(first, lang, query="the", kernel="")[:4]
    assert recipe_numbers(at, title) == expected
    heading = t("widget.with_numbers", lang).split("**")[1]
    assert numbers_section(at, heading) == expected


def test_the_self_pages_worked_table_names_repeated_tokens_as_the_chart_does_and_fits_a_projector():
    """A sentence with "the" twice: the worked steps' heading and table rows say "the·1" and "the·7", as the heatmap's
    ticks do (they said "the" twice), and step 5's table shows four components of each value, not eight (the table
    ran off a projector's right edge)."""
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=90)
    at.query_params["s"] = "the quick brown fox jumps over the dog"
    at.run()
    assert not at.exception
    heading = t("widget.with_numbers", "en").split("**")[1]
    numbers = next(m.value for m in at.markdown if heading in m.value)
    table = [line for line in numbers.splitlines() if line.startswith("|")]
    header, rows = table[0], table[2:]
    assert [row.split("|")[1].strip() for row in rows] == [
        "the·1", "quick", "brown", "fox", "jumps", "over", "the·7", "dog",
    ]  # fmt: skip
    assert r"v\[4\]" in header and r"v\[5\]" not in header  # escaped Markdown


def test_the_chinese_steps_have_no_english_header_and_no_space_after_a_full_stop():
    """Step 2 in Chinese: "温度 T = 1。 第一个键" had a space after the full stop, and its table's header read
    "logit z"."""
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    for lang in ("zh-Hans", "zh-Hant"):
        scale = explain_row(attend(x, x, x), 1, "b", list("abc"), lang)[1]
        assert "。 " not in scale.note and "。" in scale.note, scale.note
        assert "logit" not in " ".join(scale.columns), scale.columns
    english = explain_row(attend(x, x, x), 1, "b", list("abc"), "en")[1]
    assert ". First key" in english.note, english.note
