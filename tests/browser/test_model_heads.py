"""Issue 14, point 19: a head's thumbnail in the model view opens that head when clicked (in Chromium)."""

from __future__ import annotations

from playwright.sync_api import Page

from testkit.browser import exceptions, goto, plotly_figures, wait_for_plotly, wait_rerun
from testkit.server import StreamlitServer
from tests.messages import message

_THUMBNAIL_JS = """([layer, head]) => {
  const gd = document.querySelector('.js-plotly-plot');
  const targets = gd.data.find((trace) => trace.name === 'heads');
  const i = (layer - 1) * 12 + (head - 1);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.l2p(xa.d2l(targets.x[i])), box.top + ya._offset + ya.l2p(ya.d2l(targets.y[i]))];
}"""


def _head_view(layer: int, head: int) -> str:
    return message("model.head_view_title", layer=layer, which=message("model.which_one", head=head))


def test_clicking_a_thumbnail_opens_that_head(new_page, server: StreamlitServer) -> None:
    page: Page = new_page(viewport={"width": 1400, "height": 1000})
    goto(page, server.url_for("Pretrained_model"), timeout=90000)
    assert wait_for_plotly(page, count=3)[1]["title"] == _head_view(6, 12)
    for layer, head in ((2, 3), (5, 1)):
        x, y = page.evaluate(_THUMBNAIL_JS, [layer, head])
        page.mouse.click(x, y)
        assert wait_rerun(page)
        page.wait_for_function(
            "(title) => [...document.querySelectorAll('.js-plotly-plot')].some((gd) => gd.layout.title.text"
            " .includes(title))",
            arg=_head_view(layer, head),
        )
        assert f"l={layer}" in page.url and f"hd={head}" in page.url
        titles = [figure["title"] for figure in plotly_figures(page)]
        assert _head_view(layer, head) in titles
    assert exceptions(page) == []


_FITS_JS = """() => {
  const group = document.querySelector('[data-testid="stButtonGroup"]');
  const row = [...group.querySelectorAll('div')].find((div) => div.querySelector(':scope > button'));
  const box = group.getBoundingClientRect();
  const pills = [...row.querySelectorAll(':scope > button')].map((b) => b.getBoundingClientRect());
  const labels = [...document.querySelectorAll('[data-testid="stButton"] [data-testid="stMarkdownContainer"]')];
  return {
    pills: pills.length,
    outside: pills.filter((p) => p.right > box.right + 1 || p.left < box.left - 1).length,
    scrolls: row.scrollWidth > row.clientWidth,
    cut: labels.filter((label) => label.scrollWidth > label.clientWidth + 1).map((label) => label.textContent),
  };
}"""


def test_all_twelve_heads_and_every_finder_button_are_readable_in_the_narrow_column(
    new_page, server: StreamlitServer
) -> None:
    """Issue 14, point 20: the chosen heads' chips were cut off ("ad 12 ×"); the finder's buttons must not be."""
    for viewport in ({"width": 1400, "height": 1000}, {"width": 390, "height": 844}):
        page: Page = new_page(viewport=viewport)
        goto(page, server.url_for("Pretrained_model") + "?hd=1,3,5,7,12", timeout=90000)
        fits = page.evaluate(_FITS_JS)
        assert fits == {"pills": 12, "outside": 0, "scrolls": False, "cut": []}, (viewport, fits)
