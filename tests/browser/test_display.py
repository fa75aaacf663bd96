"""attnviz.show's file in Chromium with every network request refused: the charts draw, each with a PNG and an SVG
download, and the tables and worked row are there; nothing is fetched."""

from __future__ import annotations

import pytest
import torch
from playwright.sync_api import Page, Route

import attnviz
from attnviz import notebook
from attnviz.core.modern import modern_attention
from attnviz.i18n import t
from tests.messages import message, says


def test_the_offline_file_draws_without_the_network(new_page, tmp_path) -> None:
    trace = attnviz.attend(torch.randn(4, 3), torch.randn(6, 3), torch.randn(6, 2), causal=True)
    first = attnviz.show(trace, tmp_path / "weights.html")
    heads = attnviz.show(modern_attention(torch.randn(6, 16), num_heads=4, kv_heads=2), tmp_path / "heads.html")
    page: Page = new_page(viewport={"width": 1000, "height": 800})
    fetched: list[str] = []

    def refuse(route: Route) -> None:
        if not route.request.url.startswith("file://"):
            fetched.append(route.request.url)
        route.abort() if not route.request.url.startswith("file://") else route.continue_()

    page.route("**/*", refuse)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    for path, panels in ((first, 1), (heads, 4)):
        page.goto(path.resolve().as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
        assert page.locator(".js-plotly-plot").count() == 1
        assert page.locator(".js-plotly-plot .heatmaplayer image, .js-plotly-plot .hm").count() >= panels
        page.locator(".js-plotly-plot").hover()
        titles = page.eval_on_selector_all(".modebar-btn", "buttons => buttons.map(b => b.dataset.title)")
        assert "Download plot as a PNG" in titles and "SVG" in titles
        assert not any("Share" in title or "Edit" in title for title in titles)  # nothing that uploads the chart
    assert not says(page.inner_text("body"), "display.worked_row")  # the grid has no single row to work out
    page.goto(first.resolve().as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
    assert message("display.worked_row", row=1) in page.inner_text("body")
    assert fetched == [] and errors == []


def test_where_scripts_do_not_run_the_file_says_why_no_chart_is_there(new_page, tmp_path) -> None:
    """An untrusted notebook (or a viewer without JavaScript) shows the tables and the worked row, and a line where
    each chart would be, saying why; where the script runs, that line is gone."""
    trace = attnviz.attend(torch.randn(2, 3), torch.randn(4, 3), torch.randn(4, 2))
    path = attnviz.show(trace, tmp_path / "weights.html", lang="zh-Hans")
    line = t("display.no_script", "zh-Hans")
    plain: Page = new_page(java_script_enabled=False)
    plain.goto(path.resolve().as_uri())
    assert line in plain.inner_text("body") and plain.locator(".js-plotly-plot").count() == 0
    assert t("display.worked_row", "zh-Hans", row=1) in plain.inner_text("body")
    drawn: Page = new_page()
    drawn.goto(path.resolve().as_uri())
    drawn.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
    assert line not in drawn.inner_text("body")


def test_a_notebooks_outputs_share_one_copy_of_plotly(new_page, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel's notebook outputs, in one page as Jupyter shows them: the first carries Plotly's library and every
    chart draws, nothing fetched. Without that first output (cleared, then the notebook saved), each chart says why
    it is missing instead of staying blank."""
    monkeypatch.setattr(notebook, "_library_sent", False)  # a new kernel
    traces = [attnviz.attend(torch.randn(3, 2), torch.randn(5, 2), torch.randn(5, 2)) for _ in range(3)]
    outputs = [notebook.to_html(trace, document=False, lang="zh-Hans") for trace in traces]
    for name, shown in (("all", outputs), ("cleared", outputs[1:])):
        (tmp_path / f"{name}.html").write_text(f"<!DOCTYPE html><body>{''.join(shown)}</body>", encoding="utf-8")
    page: Page = new_page(viewport={"width": 1000, "height": 800})
    fetched: list[str] = []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else (
        fetched.append(route.request.url), route.abort()))  # fmt: skip
    page.goto((tmp_path / "all.html").as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3")
    assert page.locator(".attnviz-no-script").count() == 0 and fetched == []
    cleared = page.context.new_page()  # a tab of its own for the fake clock
    cleared.clock.install()
    cleared.goto((tmp_path / "cleared.html").as_uri())
    cleared.clock.run_for(11_000)  # the charts wait 10 s for the library
    assert cleared.locator(".js-plotly-plot").count() == 0
    assert cleared.locator(".attnviz-no-script").all_inner_texts() == [t("display.no_library", "zh-Hans")] * 2
