"""The teacher's projector during a question: the answer count is read from the back of the room, so its digits are
much larger than the sentence above them (presentation mode enlarges the page's text; the count must stay larger)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_live_class import (
    STUDENT_QUESTION,
    TEACHER_QUESTION,
    Room,
    ask,
    join,
    sqlite_server,  # noqa: F401 (a fixture)
    start_class,
)
from tests.browser.test_live_follow_runs import one_server_room  # noqa: F401 (a fixture)

FONT_PX_JS = "(e) => parseFloat(getComputedStyle(e).fontSize)"


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_the_answer_count_is_in_large_digits_on_the_projector_and_a_phones_answer_box_has_no_form_hint(
    request: pytest.FixtureRequest, lang: str
) -> None:
    """The count's digits at least twice the size of its sentence. On the student's phone (390x844), Streamlit wrote
    "Press Enter to submit form" (in English, on every language) over the right end of a form's text box, covering
    the number being typed; the form has its own Send button: no hint."""
    room: Room = request.getfixturevalue("one_server_room")  # a class of its own on the module's one server
    room.lang = lang
    start_class(room, f"Kernel_attention?pm=1&lang={lang}")
    phone = room.students[0]
    join(room, phone)
    ask(room, "number")
    box = room.teacher.locator(TEACHER_QUESTION)
    expect(box).to_contain_text(room.t("live.answered", answered=0, joined=1))
    sentence = box.locator('[data-testid="stMetricLabel"]').get_by_text(room.t("live.answered", answered=0, joined=1))
    digits = box.locator('[data-testid="stMetricValue"]').get_by_text("0 / 1", exact=True)
    sentence_px, digits_px = sentence.evaluate(FONT_PX_JS), digits.evaluate(FONT_PX_JS)
    assert sentence_px >= 20, sentence_px  # presentation mode's text (1.3rem)
    assert digits_px >= 2 * sentence_px, (digits_px, sentence_px)

    form = phone.locator(STUDENT_QUESTION)
    expect(form).to_be_visible(timeout=30_000)
    answer = form.get_by_role("textbox").first
    answer.click()
    answer.type("45.5")
    phone.wait_for_timeout(500)  # the hint appears as the student types
    assert form.locator('[data-testid="InputInstructions"]').filter(visible=True).count() == 0
