"""Real-browser tests of the classroom features: the keyboard alone, the language switched, presentation mode (every
page in every language: test_navigation.py)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from attnviz.i18n import LANGUAGES, t
from testkit.browser import ConsoleRecorder, exceptions, screenshot, wait_for_figures, wait_rerun
from testkit.server import StreamlitServer

from .test_pages import assert_clean, open_app, query_of, weights_z


def _tab_to(page: Page, selector: str, text: str = "", limit: int = 80) -> None:
    """Press Tab until the focused element matches `selector` (and shows `text`): the keyboard's way there."""
    check = """([sel, text]) => {
        const el = document.activeElement;
        return !!el && el.matches(sel) && el.textContent.includes(text);
    }"""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(check, [selector, text]):
            return
    raise AssertionError(f"Tab never reached {selector} {text!r}")


def test_the_self_attention_page_works_from_the_keyboard(
    page: Page, server: StreamlitServer, console_errors: ConsoleRecorder
) -> None:
    """Without a mouse: Tab to the temperature, type a value, Enter; Tab to the causal switch, Space; Tab to the
    chart's table and open it with Enter. The heatmap and the URL follow each step."""
    before = weights_z(open_app(page, server.url_for("Self_attention"), 1))
    _tab_to(page, 'input[aria-label="Temperature T"]')
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("0.25")
    page.keyboard.press("Enter")
    assert wait_rerun(page)
    sharper = weights_z(wait_for_figures(page, lambda figs: weights_z(figs) != before))
    assert max(sharper[-1]) > max(before[-1])
    _tab_to(page, 'input[role="switch"]')
    page.keyboard.press("Space")
    assert wait_rerun(page)
    masked = weights_z(wait_for_figures(page, lambda figs: weights_z(figs)[0][1] is None))
    assert all(row[j] is None for i, row in enumerate(masked) for j in range(i + 1, len(row)))
    assert query_of(page)["T"] == ["0.25"] and query_of(page)["c"] == ["1"]
    _tab_to(page, '[data-testid="stExpander"] summary', t("attention.raw", "en"))
    page.keyboard.press("Enter")
    assert wait_rerun(page)
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    screenshot(page, "keyboard_self_attention")
    assert exceptions(page) == []
    assert_clean(console_errors)


def test_switching_the_language_keeps_every_control(
    page: Page, server: StreamlitServer, console_errors: ConsoleRecorder
) -> None:
    """Choose cosine and the causal mask, then switch to Traditional Chinese in the sidebar: the same score (now
    labelled in Chinese), the same heatmap, and a link that carries all of it."""
    from .test_pages import CAUSAL_LABEL, SCORING, choose, toggle

    open_app(page, server.url_for("Self_attention"), 1)
    choose(page, SCORING, t("score.cosine.label", "en"))
    toggle(page, CAUSAL_LABEL)
    before = weights_z(wait_for_figures(page, lambda figs: weights_z(figs)[0][1] is None))
    page.get_by_role("combobox", name=t("frame.language", "en"), exact=True).click()
    page.get_by_role("option", name=LANGUAGES["zh-Hant"], exact=True).click()
    assert wait_rerun(page)
    expect(page.locator("h1").first).to_have_text(t("self.title", "zh-Hant"))
    score_box = page.get_by_role("combobox", name=t("widget.scoring_function", "zh-Hant"), exact=True)
    expect(score_box).to_have_value(t("score.cosine.label", "zh-Hant"))
    expect(page.get_by_role("switch", name=t("attention.causal", "zh-Hant"), exact=True)).to_be_checked()
    after = weights_z(wait_for_figures(page, lambda figs: "權重" in figs[0]["title"]))
    assert after == before
    assert query_of(page) == {"sc": ["cosine"], "c": ["1"], "lang": ["zh-Hant"]}
    screenshot(page, "language_switched")
    assert exceptions(page) == []
    assert_clean(console_errors)


def test_presentation_mode_from_a_link(page: Page, server: StreamlitServer, console_errors: ConsoleRecorder) -> None:
    """?pm=1: the sidebar starts collapsed, the controls are folded above the results, the figure's type is large."""
    figures = open_app(page, server.url_for("Self_attention?pm=1&lang=zh-Hans"), 1)
    expect(page.locator('[data-testid="stSidebar"]')).to_have_attribute("data-collapsed", "true")
    expect(page.locator('[data-testid="stExpander"] summary', has_text=t("frame.controls", "zh-Hans"))).to_be_visible()
    assert page.get_by_role("combobox", name=t("widget.scoring_function", "zh-Hans"), exact=True).is_hidden()
    font = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullLayout.font.size")
    assert font == 20 and figures
    screenshot(page, "presentation_mode")
    assert_clean(console_errors)
