"""Layout a class can read, in Chromium at the sizes of issue 14: 1400×1000, a 390×844 phone and a 1280×720
projector. Nothing pushes the page sideways; show-your-work's table fits the page at 1400 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from attnviz.i18n import t
from testkit.browser import exceptions, goto, screenshot, wait_for_figures, wait_for_plotly
from testkit.server import StreamlitServer

from .test_pages import set_number

DESK, PHONE, PROJECTOR = {"width": 1400, "height": 1000}, {"width": 390, "height": 844}, {"width": 1280, "height": 720}
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
    // text wider than its box (a formula with a long vector): it must scroll inside its box, not be cut off
    cut: [...document.querySelectorAll(
      '[data-testid="stMain"] [data-testid="stMarkdownContainer"] p, [data-testid="stMain"] .katex-display')]
      .filter((e) => e.scrollWidth > e.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
      .map((e) => e.textContent.slice(0, 60)),
  };
}"""


def assert_fits(page: Page, desk: bool, tables: bool = True) -> None:
    """No sideways scroll of the page or its main column, no text cut off, and (`tables`) show-your-work's table on
    the page, every column of it visible without scrolling inside its box at a desk's width."""
    widths = page.evaluate(_WIDTHS_JS)
    assert widths["page"][0] <= widths["page"][1], widths  # no horizontal page scroll
    assert widths["main"][0] <= widths["main"][1], widths
    assert widths["cut"] == [], widths["cut"]  # e.g. the learned score's worked vectors on a phone
    if tables:
        assert widths["tables"], "show-your-work's table is on the page"
    if desk:
        assert all(scroll <= client for scroll, client in widths["tables"]), widths


# At 1400 px the pages at their defaults are checked as each is opened in each language
# (tests/browser/test_navigation.py); here the self page with heads, projections and the comparison
@pytest.mark.parametrize(
    ("path", "query", "size"), [(path, query, "phone") for path, query in PAGES] + [(*PAGES[1], "desk")]
)
def test_no_page_scrolls_sideways_and_the_work_table_fits_at_1400(
    new_page, server: StreamlitServer, path: str, query: str, size: str
) -> None:
    page: Page = new_page(viewport=DESK if size == "desk" else PHONE)
    goto(page, server.url_for(path) + (f"?{query}" if query else ""))
    wait_for_plotly(page, count=1)
    screenshot(page, f"layout_{path}_{query}_{size}")
    assert_fits(page, desk=size == "desk")
    assert exceptions(page) == []


_INLINE_MATHS_JS = """() => [
  ...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p')]
  .filter((p) => p.querySelector('.katex'))
  .map((p) => ({text: p.textContent.slice(0, 50), scroll: p.scrollWidth, client: p.clientWidth}))"""


@pytest.mark.parametrize("path", ["Self_attention", "Cross_attention"])
def test_on_a_phone_the_worked_score_wraps_instead_of_scrolling(new_page, server: StreamlitServer, path: str) -> None:
    """Step 1's worked line (the additive score's W_q q + W_k k, tanh and w_v vectors of eight numbers; the dot
    product's sum of eight products) breaks between numbers at 390 px, so a student sees every number without
    scrolling the line sideways."""
    page: Page = new_page(viewport=PHONE)
    goto(page, server.url_for(path) + "?lang=zh-Hans")
    wait_for_plotly(page, count=1)
    lines = page.evaluate(_INLINE_MATHS_JS)
    assert len(lines) >= (4 if path == "Cross_attention" else 1), lines
    assert [line for line in lines if line["scroll"] > line["client"] + 1] == [], lines
    assert exceptions(page) == []


_DISPLAY_MATHS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
  .map((e) => ({text: e.textContent.slice(0, 50), scroll: e.scrollWidth, client: e.clientWidth}))"""


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_on_a_phone_the_home_pages_formulas_fit_without_scrolling(new_page, server: StreamlitServer, lang: str) -> None:
    """The definition of attention and the worked example's weights: each formula whole on a 390 px screen, not cut
    off at the edge with the softmax's denominator out of sight."""
    page: Page = new_page(viewport=PHONE)
    goto(page, server.url_for("") + f"?lang={lang}")
    wait_for_plotly(page, count=1)
    formulas = page.evaluate(_DISPLAY_MATHS_JS)
    assert len(formulas) >= 5, formulas
    assert [f for f in formulas if f["scroll"] > f["client"] + 4] == [], formulas  # KaTeX overhangs a pixel or two
    assert exceptions(page) == []


_FIRST_CHART_JS = """() => {
  const chart = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
  const box = chart.getBoundingClientRect();
  return {top: box.top, height: box.height, scrolled: document.querySelector('[data-testid="stMain"]').scrollTop};
}"""


@pytest.mark.parametrize("path", ["Self_attention", "Cross_attention", "Kernel_attention"])
@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_on_a_1280x720_projector_the_first_chart_starts_in_the_top_half_of_the_first_screen(
    new_page, server: StreamlitServer, path: str, lang: str
) -> None:
    page: Page = new_page(viewport=PROJECTOR)
    goto(page, server.url_for(path) + f"?pm=1&lang={lang}")
    wait_for_plotly(page, count=1)
    place = page.evaluate(_FIRST_CHART_JS)
    screenshot(page, f"projector_{path}_{lang}", full_page=False)
    assert place["scrolled"] == 0 and place["top"] < PROJECTOR["height"] / 2, place
    assert exceptions(page) == []


def _masked_cells(figures: list) -> int:
    masked = next(f for f in figures if f["data"] and f["data"][0]["name"] == "weights")["data"][0]["z"]
    return sum(value is None for row in masked for value in row)


def test_the_batch_row_beside_the_chart_loads_that_row_on_a_projector(new_page, server: StreamlitServer) -> None:
    """d2l's batch: row 1 may see 2 of its 10 keys, row 2 sees 6. The batch row sits beside the chart (the sidebar
    is folded away on a projector), and changing it redraws the chart from that row's inputs and lengths."""
    page: Page = new_page(viewport=PROJECTOR)
    goto(page, server.url_for("Cross_attention") + "?pm=1&p=d2l_dot_product")
    assert _masked_cells(wait_for_plotly(page, count=1)) == 8
    set_number(page, t("widget.batch_row", "en", last=1), "1")
    assert _masked_cells(wait_for_figures(page, lambda figs: _masked_cells(figs) != 8)) == 4
    assert "b=1" in page.url
    assert exceptions(page) == []


_COMPARISON_JS = """() => {
  const boxes = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const charts = [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => (gd.layout.title || {}).text);
  const compared = charts.slice(-3);  // the two scores and their difference, drawn last
  return compared.map((gd) => ({
    chart: boxes(gd),
    title: boxes(gd.querySelector('.gtitle')),
    bar: boxes(gd.querySelector('.colorbar')),
    ticks: gd.querySelectorAll('g.xtick text').length,
  }));
}"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_the_comparison_view_at_1400_px_has_every_title_colour_bar_and_label_apart(new_page, server) -> None:
    """Issue 14, point 10, with 16 tokens: three charts apart, each title clear of its colour bar, every key
    labelled (the one-figure view overlapped its titles, ran its colour bars together and dropped every second
    label)."""
    sentence = "the+quick+brown+fox+jumps+over+the+lazy+dog+and+runs+far+into+the+green+wood"
    page: Page = new_page(viewport=DESK)
    goto(page, server.url_for("Self_attention") + f"?cmp=additive&s={sentence}")
    wait_for_plotly(page, count=4)
    parts = page.evaluate(_COMPARISON_JS)
    screenshot(page, "layout_comparison_16_tokens")
    assert len(parts) == 3
    for i, part in enumerate(parts):
        assert not _overlap(part["title"], part["bar"]), part
        assert part["ticks"] == 16, part  # every one of the 16 keys
        for other in parts[i + 1 :]:
            assert not _overlap(part["chart"], other["chart"]), (part, other)


_TITLE_LINES_JS = """() => {
  const title = document.querySelector('[data-testid="stMain"] h1');
  const range = document.createRange();
  range.selectNodeContents(title);
  const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
  return [title.innerText, tops.size];
}"""


@pytest.mark.parametrize("path", ["Pretrained_model", "Modern_attention"])
def test_on_a_phone_a_page_title_that_fits_stays_on_one_line(new_page, server: StreamlitServer, path: str) -> None:
    """Streamlit puts a link icon after every title; on a 390 px phone "Pretrained model" and "Modern attention"
    fit, but the icon wrapped to a second line and left a blank band under the title."""
    page: Page = new_page(viewport=PHONE)
    goto(page, server.url_for(path))
    wait_for_plotly(page, count=1)
    title, lines = page.evaluate(_TITLE_LINES_JS)
    assert lines == 1, (title, lines)


def test_the_model_pages_worked_steps_fit_their_column_at_1400(new_page, server: StreamlitServer) -> None:
    """The neuron view's worked steps sit in the results column: with eight of each value's components the table
    was 946 px in a 673 px box and cut off at v[4] (its scrollbar hidden until touched)."""
    page: Page = new_page(viewport=DESK)
    goto(page, server.url_for("Pretrained_model"))
    wait_for_plotly(page, count=3)  # the model view, the head view and the neuron view: the steps come with the last
    table = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] table').last
    table.wait_for(timeout=30000)
    scroll, client = table.evaluate("(t) => [t.scrollWidth, t.clientWidth]")
    assert scroll <= client, (scroll, client)
    assert "v[1]" in table.locator("th").all_inner_texts()  # the worked steps' table, with the values' components


def test_the_self_pages_worked_steps_fit_a_projector_with_the_sidebar_open(new_page, server: StreamlitServer) -> None:
    """A teacher's projector (1280 px, presentation mode, the sidebar open for the live class): show-your-work's table
    with eight components of each value ran off the right edge at v[6]; four fit."""
    page: Page = new_page(viewport=PROJECTOR)
    goto(page, server.url_for("Self_attention?pm=1"))
    wait_for_plotly(page, count=1)
    page.get_by_test_id("stExpandSidebarButton").click()
    table = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] table').last
    table.wait_for(timeout=30000)
    table.scroll_into_view_if_needed()
    headers = table.locator("th").all_inner_texts()
    assert "v[1]" in headers and "the·1" in table.locator("td").all_inner_texts(), headers
    scroll, client = table.evaluate("(t) => [t.scrollWidth, t.clientWidth]")
    assert scroll <= client, (scroll, client)


# The first chart of each page added since issue 14, with its presets that put the most above or in it
NEW_FIRST_CHARTS = [
    "",  # home: the worked example's chart beside the definition
    "Learned_attention",
    "Learned_attention?d=2024/04/19",  # a mistake: the check beside the chart is longest
    "Learned_attention?tk=induction",
    "Modern_attention?pr=rope_repeat",
    "Modern_attention?pr=sliding_3",
    "Modern_attention?pr=gqa_8_2",
    "Modern_attention?pr=kv_decode",
    "Modern_attention?pr=flash_rescale",
]
_CHART_BOX_JS = """() => {
  const chart = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
  const box = chart.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, scrolled: document.querySelector('[data-testid="stMain"]').scrollTop,
          plot: chart._fullLayout._size.h};
}"""
# Below this, a chart's plot is too short to read: FlashAttention's scores, drawn below their controls on a projector,
# had a plot 50 px tall whose five score ticks ran together
MIN_PLOT_HEIGHT = 150
LEARNED_MS = 90_000  # a first visit to "Watch attention learn" on a loaded machine (tests/browser/test_learned.py)
# Each chart's heatmaps, its x axes' domain starts (one per column) and its y axes' scale anchors (square cells)
_GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map((gd) => {
  const keys = Object.keys(gd.layout);
  return {
    heatmaps: gd.data.filter((trace) => trace.type === 'heatmap').length,
    starts: keys.filter((k) => k.startsWith('xaxis') && gd.layout[k].domain)
      .map((k) => Math.round(gd.layout[k].domain[0] * 1000)),
    anchors: keys.filter((k) => k.startsWith('yaxis')).map((k) => gd.layout[k].scaleanchor || null),
  };
})"""
# A phone's browser says so in its User-Agent ("Mobi"); the viewport alone does not tell the server
PHONE_BROWSER = {
    "viewport": PHONE,
    "is_mobile": True,
    "has_touch": True,
    "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36",
}


@pytest.mark.parametrize("path", NEW_FIRST_CHARTS)
@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_on_a_1280x720_projector_the_new_pages_first_chart_ends_on_the_first_screen(
    new_page, server: StreamlitServer, path: str, lang: str
) -> None:
    """Issue 40 §4: the dates heatmap was cut above its input characters, FlashAttention, GQA and the KV cache showed a
    title or one row, and home had no chart on the first screen. The whole chart, axis labels included, with a plot
    tall enough to read."""
    page: Page = new_page(viewport=PROJECTOR)
    # The first visit to "Watch attention learn" on this server replays the shipped training (seconds on a busy machine)
    goto(page, server.url_for(path) + ("&" if "?" in path else "?") + f"pm=1&lang={lang}", timeout=LEARNED_MS)
    wait_for_plotly(page, count=1)
    box = page.evaluate(_CHART_BOX_JS)
    screenshot(page, f"projector_first_chart_{path}_{lang}", full_page=False)
    assert box["scrolled"] == 0 and box["top"] >= 0 and box["bottom"] <= PROJECTOR["height"], box
    assert box["plot"] >= MIN_PLOT_HEIGHT, box
    assert exceptions(page) == []


@pytest.mark.parametrize("preset", ["rope_repeat", "gqa_8_2"])
def test_on_a_phone_the_modern_pages_first_chart_starts_on_the_first_screen(
    new_page, server: StreamlitServer, preset: str
) -> None:
    """Issue 40 §4: ~1,300 px of controls stood before the first chart; on a phone they are folded."""
    page: Page = new_page(**PHONE_BROWSER)
    goto(page, server.url_for("Modern_attention") + f"?pr={preset}")
    wait_for_plotly(page, count=1)
    box = page.evaluate(_CHART_BOX_JS)
    screenshot(page, f"phone_modern_{preset}", full_page=False)
    assert box["top"] < PHONE["height"], box
    assert page.get_by_text(t("frame.controls", "en"), exact=True).count() == 1  # folded, one tap away
    if preset == "gqa_8_2":  # the 8 heads in two columns (four were strips ~40 px wide), each cell square
        [grid] = [g for g in page.evaluate(_GRIDS_JS) if g["heatmaps"] >= 8]
        assert len(set(grid["starts"])) == 2 and all(grid["anchors"]), grid
    if preset == "rope_repeat":  # plain causal above RoPE, square cells (side by side each was a strip ~11 px wide)
        [grid] = page.evaluate(_GRIDS_JS)  # the page's one chart: two panels (each its weights and its mask)
        assert len(set(grid["starts"])) == 1 and all(grid["anchors"]), grid
    assert exceptions(page) == []


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_on_a_phone_the_dates_models_table_per_format_fits_without_scrolling(
    new_page, server: StreamlitServer, lang: str
) -> None:
    """The unseen years, where the model is weak, were the column cut off at 390 px (long headers, kept on one line)."""
    page: Page = new_page(viewport=PHONE)
    goto(page, server.url_for("Learned_attention") + f"?lang={lang}", timeout=LEARNED_MS)
    wait_for_plotly(page, count=1)
    header = t("learned.format_column", lang)  # the first column's, the same before and after
    table = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] table', has_text=header)
    table.scroll_into_view_if_needed()
    scroll, client = table.evaluate("(t) => [t.scrollWidth, t.clientWidth]")
    screenshot(page, f"phone_dates_formats_{lang}", full_page=False)
    assert scroll <= client, (scroll, client)
    assert exceptions(page) == []
