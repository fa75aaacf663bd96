"""The navigation menu (st.navigation, app.py): every page at the URL path that links have always used, titled in the
interface language; old links with their query strings; the menu on a phone and in presentation mode."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from attnviz.app.ui.navigation import PAGES as APP_PAGES
from attnviz.i18n import LANGUAGES, t
from testkit.browser import ConsoleRecorder, exceptions, goto, screenshot, wait_for_plotly, wait_ready
from testkit.server import StreamlitServer

from .test_layout import DESK, assert_fits
from .test_pages import assert_clean, query_of, wait_for_params, weights_z

# (URL path, English title, Simplified Chinese title), as a reader sees them: the paths are those of the pages/ folder
# the app had before its router, which every link written since carries
PAGES = [
    ("", "attnviz", "attnviz"),
    ("Self_attention", "Self-attention", "自注意力"),
    ("Cross_attention", "Cross-attention", "交叉注意力"),
    ("Kernel_attention", "Kernel attention", "核注意力"),
    ("Pretrained_model", "Pretrained model", "预训练模型"),
    ("Is_attention_an_explanation", "Is attention an explanation?", "注意力是解释吗？"),
    ("Learned_attention", "Watch attention learn", "看注意力学会"),
    ("Modern_attention", "Modern attention", "现代注意力"),
]
TITLES = {"en": [en for _, en, _ in PAGES], "zh-Hans": [zh for _, _, zh in PAGES]}
MENU = '[data-testid="stSidebarNav"] [data-testid="stSidebarNavLink"]'
ICONS = "🔍🔁🔀📈🧠🔬🌱🚀"


def menu_titles(page: Page) -> list[str]:
    """The titles of the navigation menu's links, in order (without their icons)."""
    return [text.strip(ICONS + " \n") for text in page.locator(MENU).all_inner_texts()]


# Plotly charts each page draws at least on its first screen (the self and cross pages' other charts sit in a folded
# expander until opened; the explanation page: its maps and the share of [CLS] and [SEP])
# Pages whose show-your-work table is open at their defaults
WORK_TABLES = ("Self_attention", "Cross_attention", "Kernel_attention")
CHARTS = {"": 1, "Pretrained_model": 3, "Kernel_attention": 2, "Is_attention_an_explanation": 2}


@pytest.mark.parametrize("lang", list(LANGUAGES))
@pytest.mark.parametrize(("path", "en", "zh"), PAGES, ids=[en for _, en, _ in PAGES])
def test_every_page_path_opens_its_page_in_every_language(
    new_page: Callable[..., Page],
    server: StreamlitServer,
    console_errors: ConsoleRecorder,
    path: str,
    en: str,
    zh: str,
    lang: str,
) -> None:
    """`/<path>` (and `?lang=`) opens that page: its heading, the browser tab's title and the menu in the language,
    the menu marking this page, every link of the sidebar translated; its charts drawn with data; the address keeps
    its path and language; at 1400 × 1000 nothing scrolls sideways or is cut off, and on the pages with
    show-your-work's table it fits (tests/browser/test_layout.py); no exception and no console error. A screenshot of
    each to look at."""
    page = new_page(viewport=DESK)
    name = next(p.name for p in APP_PAGES if p.url_path == path)
    title = t(f"{name}.title", lang)
    assert title == {"en": en, "zh-Hans": zh}.get(lang, title)  # the menu's titles are the catalogue's
    goto(page, server.url_for(path + (f"?lang={lang}" if lang != "en" else "")), timeout=90_000)
    figures = wait_for_plotly(page, count=CHARTS.get(path, 1))
    assert any(trace["z"] or trace["y"] for figure in figures for trace in figure["data"]), "charts have no data"
    expect(page.locator("h1").first).to_have_text(title)
    assert page.title() == f"{title} · attnviz"
    assert urlsplit(page.url).path == urlsplit(server.url_for(path)).path
    assert menu_titles(page) == [t(p.title, lang) for p in APP_PAGES]
    current = page.locator(MENU + '[aria-current="page"]')
    expect(current).to_have_count(1)
    expect(current).to_contain_text(title)
    if lang != "en":
        assert query_of(page).get("lang") == [lang]
    screenshot(page, f"lang_{lang}_{name}")
    assert_fits(page, desk=path in WORK_TABLES, tables=path in WORK_TABLES)
    assert exceptions(page) == []
    assert_clean(console_errors)


def test_a_cold_servers_first_visitor_opens_a_shared_link_with_its_state(
    fresh_server: Callable[..., StreamlitServer], new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """A share link written before the router, opened first on a server that has run nothing: the page in its
    language, with the preset's batch row (uniform 1/6 weights, four masked keys), and the link kept."""
    cold = fresh_server()
    page = new_page()
    goto(page, cold.url_for("Cross_attention?lang=zh-Hans&p=d2l_additive&b=1"), timeout=90_000)
    expect(page.locator("h1").first).to_have_text("交叉注意力")
    z = weights_z(wait_for_plotly(page, count=1))
    assert z[0][:6] == pytest.approx([1 / 6] * 6, abs=1e-4) and z[0][6:] == [None] * 4, z
    assert urlsplit(page.url).path.endswith("/Cross_attention")
    assert wait_for_params(page, {"lang": "zh-Hans", "p": "d2l_additive", "b": "1"})
    assert menu_titles(page) == TITLES["zh-Hans"]
    assert exceptions(page) == []
    assert_clean(console_errors)


def test_a_home_card_opens_its_page_in_the_same_language(
    new_page: Callable[..., Page], server: StreamlitServer, console_errors: ConsoleRecorder
) -> None:
    page = new_page()
    goto(page, server.url_for("?lang=zh-Hans"))
    page.locator('[data-testid="stPageLink"] a').nth(2).click()  # the third card: kernel attention
    page.wait_for_function("() => window.location.pathname.endsWith('/Kernel_attention')")
    wait_ready(page)
    expect(page.locator("h1").first).to_have_text("核注意力")
    assert wait_for_params(page, {"lang": "zh-Hans"})
    assert exceptions(page) == []
    assert_clean(console_errors)


def test_switching_the_language_retitles_the_menu(
    new_page: Callable[..., Page], server: StreamlitServer, console_errors: ConsoleRecorder
) -> None:
    page = new_page()
    goto(page, server.url_for("Kernel_attention"))
    assert menu_titles(page) == TITLES["en"]
    page.get_by_role("combobox", name="Language (语言 · 語言)", exact=True).click()
    page.get_by_role("option", name="简体中文", exact=True).click()
    page.wait_for_function("(title) => document.querySelector('h1')?.textContent === title", arg="核注意力")
    wait_ready(page)
    expect(page.locator(MENU)).to_contain_text(TITLES["zh-Hans"])
    assert wait_for_params(page, {"lang": "zh-Hans"})
    page.locator(MENU, has_text="交叉注意力").click()  # the menu's link keeps the language
    page.wait_for_function("() => window.location.pathname.endsWith('/Cross_attention')")
    wait_ready(page)
    expect(page.locator("h1").first).to_have_text("交叉注意力")
    assert exceptions(page) == []
    assert_clean(console_errors)


@pytest.mark.parametrize(
    ("viewport", "query"),
    [({"width": 390, "height": 844}, ""), ({"width": 1280, "height": 720}, "?pm=1")],
    ids=["phone", "projector"],
)
def test_the_menu_is_reached_from_a_collapsed_sidebar(
    new_page: Callable[..., Page], server: StreamlitServer, console_errors: ConsoleRecorder, viewport, query: str
) -> None:
    """On a phone (390 px) and in presentation mode the sidebar starts closed; its button opens the menu, and the
    menu opens another page (presentation mode kept)."""
    page = new_page(viewport=viewport)
    goto(page, server.url_for("Self_attention" + query))
    expect(page.locator('[data-testid="stSidebar"]')).to_have_attribute("data-collapsed", "true")
    page.locator('[data-testid="stExpandSidebarButton"]').click()
    link = page.locator(MENU, has_text="Cross-attention")
    expect(link).to_be_visible()
    link.click()
    page.wait_for_function("() => window.location.pathname.endsWith('/Cross_attention')")
    wait_ready(page)
    expect(page.locator("h1").first).to_have_text("Cross-attention")
    if query:
        assert wait_for_params(page, {"pm": "1"})
    assert exceptions(page) == []
    assert_clean(console_errors)
