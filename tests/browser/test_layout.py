"""Layout a class can read, in Chromium at the sizes of issue 14: 1400×1000, a 390×844 phone and a 1280×720
projector. Nothing pushes the page sideways; show-your-work's table fits the page at 1400 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from .helpers import StreamlitServer, exceptions, goto, screenshot, wait_for_plotly

DESK, PHONE = {"width": 1400, "height": 1000}, {"width": 390, "height": 844}
PAGES = [
    ("Self_attention", ""),  # 8 value columns in the work table
    ("Self_attention", "h=2&pr=random&cmp=dot"),  # heads, projections and the comparison
    ("Cross_attention", ""),
    ("Kernel_attention", ""),
]

_WIDTHS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const tables = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] table')];
  return {
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    main: [main.scrollWidth, main.clientWidth],
    tables: tables.map((t) => [t.scrollWidth, t.clientWidth]),
  };
}"""


@pytest.mark.parametrize(("path", "query"), PAGES)
@pytest.mark.parametrize("size", ["desk", "phone"])
def test_no_page_scrolls_sideways_and_the_work_table_fits_at_1400(
    new_page, server: StreamlitServer, path: str, query: str, size: str
) -> None:
    page: Page = new_page(viewport=DESK if size == "desk" else PHONE)
    goto(page, server.url_for(path) + (f"?{query}" if query else ""))
    wait_for_plotly(page, count=1)
    widths = page.evaluate(_WIDTHS_JS)
    screenshot(page, f"layout_{path}_{query}_{size}")
    assert widths["page"][0] <= widths["page"][1], widths  # no horizontal page scroll
    assert widths["main"][0] <= widths["main"][1], widths
    assert widths["tables"], "show-your-work's table is on the page"
    if size == "desk":  # every column of the work table visible, no scrolling inside its box
        assert all(scroll <= client for scroll, client in widths["tables"]), widths
    assert exceptions(page) == []
