"""Modern attention in Chromium: both steppers moved with the keyboard, each with its check on screen, and the page's
link opened on a fresh server showing the same step."""

from __future__ import annotations

from playwright.sync_api import Page

from testkit.browser import exceptions, goto, slider_thumb, wait_for_plotly, wait_rerun
from tests.messages import message, says, text_pattern

EQUAL = text_pattern("modern.check_equal")


def _press(page: Page, label: str, key: str, times: int) -> None:
    """Move the stepper `label` by `times` presses of `key`, one rerun each."""
    thumb = slider_thumb(page, label)
    for _ in range(times):
        thumb.focus()
        page.keyboard.press(key)
        wait_rerun(page)


def test_both_steppers_and_a_link_on_a_fresh_server(new_page, fresh_server) -> None:
    first = fresh_server(log_name="modern-a")
    page: Page = new_page(viewport={"width": 1400, "height": 1000})
    goto(page, first.url_for("Modern_attention") + "?pr=kv_decode", timeout=90000)  # a cold link: the page's own frame
    page.get_by_text(text_pattern("modern.kv_step", step=7, token=".")).wait_for(timeout=30000)
    assert page.get_by_text(EQUAL).count() == 1
    _press(page, message("modern.decode_step"), "ArrowLeft", 2)
    page.get_by_text(text_pattern("modern.kv_step", step=5, token="the·5")).wait_for(timeout=30000)
    assert says(page.inner_text("body"), "modern.kv_step", rows=5)
    assert page.get_by_text(EQUAL).count() == 1  # the check is made again at every step
    assert "t=5" in page.url
    figures = wait_for_plotly(page)
    assert figures[0]["title"] == message("modern.kv_chart", step=5)
    rows = figures[0]["data"][0]["z"]
    assert len(rows) == 7 and all(cell is None for cell in rows[6])  # rows not decoded yet are masked (empty)
    link = page.url.split("?", 1)[1]

    goto(page, first.url_for("Modern_attention") + "?pr=flash_rescale&bk=1")
    page.get_by_text(text_pattern("modern.flash_to_go", left=2)).wait_for(timeout=30000)
    assert page.get_by_text(EQUAL).count() == 0  # no result before the last block
    _press(page, message("modern.block_step"), "ArrowRight", 2)
    page.get_by_text(EQUAL).wait_for(timeout=30000)
    assert says(page.inner_text("body"), "modern.flash_check_once")
    assert "bk=" not in page.url  # the last block is the preset's own step
    assert exceptions(page) == []

    fresh = fresh_server(log_name="modern-b")
    other: Page = new_page(viewport={"width": 390, "height": 844})
    goto(other, fresh.url_for("Modern_attention") + "?" + link, timeout=90000)
    other.get_by_text(text_pattern("modern.kv_step", step=5, token="the·5")).wait_for(timeout=30000)
    assert other.get_by_text(EQUAL).count() == 1
    assert exceptions(other) == []
