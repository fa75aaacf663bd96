"""Watch attention learn, in Chromium: press Train, see the progress grow, then the step slider; the page's link
opened in another tab shows the same run."""

from __future__ import annotations

import time

from playwright.sync_api import Page

from testkit.browser import exceptions, goto, plotly_figures, wait_for_plotly
from testkit.server import StreamlitServer
from tests.messages import message, text_pattern

STEPS = 120  # long enough (~5 s) to see the progress, short enough for CI


def _loss_points(page: Page) -> list[float]:
    """The loss curve's points drawn now ([] before the curves are drawn)."""
    for figure in plotly_figures(page):
        for trace in figure["data"]:
            if trace["name"] == "loss":
                return list(trace["y"] or [])
    return []


def _train_and_read(page: Page, url: str) -> list[float]:
    """Open `url`, press Train, watch the curves grow until the step slider comes; the final losses."""
    goto(page, url, timeout=90000)
    page.get_by_text(text_pattern("learned.not_recorded", seed=4, steps=STEPS)).wait_for(timeout=30000)
    page.get_by_role("button", name=message("learned.train"), exact=True).click()
    page.get_by_role("progressbar").wait_for(timeout=30000)  # the progress bar, while it trains
    slider = page.get_by_role("slider", name=message("learned.step"))
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while slider.count() == 0 and time.monotonic() < deadline:
        if page.get_by_role("progressbar").count():
            seen.add(len(_loss_points(page)))
        time.sleep(0.2)
    slider.wait_for(timeout=1000)  # finished: the step slider
    points = _loss_points(page)
    assert len([count for count in seen if 0 < count < len(points)]) >= 2, seen  # the curves grew while it trained
    assert points[0] > 1.5 * points[-1]
    return points


def test_press_train_see_it_grow_then_the_steps_and_the_link_shows_the_run(new_page) -> None:
    """A fresh server: Train, the curves grow, the step slider comes; the page's link in another tab shows the same
    run at once, from the server's finished trainings. (That the same settings give the same numbers on another
    server, the training being deterministic: tests/test_learned_jobs.py, a queued training against one run here, and
    tests/test_learned.py, the script twice bit for bit.)"""
    url_query = f"?tk=induction&sd=4&n={STEPS}"
    with StreamlitServer("app.py", log_name="learned-a") as server:
        page: Page = new_page(viewport={"width": 1400, "height": 1000})
        losses = _train_and_read(page, server.url_for("Learned_attention") + url_query)
        assert "sd=4" in page.url and f"n={STEPS}" in page.url
        link = page.url.split("?", 1)[1]
        assert wait_for_plotly(page, count=3)
        assert exceptions(page) == []
        other: Page = new_page(viewport={"width": 390, "height": 844})  # a student's phone, a session of its own
        goto(other, server.url_for("Learned_attention") + "?" + link, timeout=90000)
        other.get_by_role("slider", name=message("learned.step")).wait_for(timeout=30000)
        assert other.get_by_role("button", name=message("learned.train"), exact=True).count() == 0
        assert _loss_points(other) == losses
        assert exceptions(other) == []


def test_the_default_link_shows_the_shipped_run_without_training(new_page, server: StreamlitServer) -> None:
    page: Page = new_page(viewport={"width": 390, "height": 844})
    goto(page, server.url_for("Learned_attention") + "?tk=induction", timeout=90000)
    page.get_by_role("slider", name=message("learned.step")).wait_for(timeout=30000)
    assert page.get_by_role("button", name=message("learned.train"), exact=True).count() == 0
    assert len(_loss_points(page)) > 20
    assert exceptions(page) == []
