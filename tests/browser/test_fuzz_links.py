"""Hostile links in a real browser, opened one after another in one tab of each page, as the browser's Back and
Forward open them (the app reads each as a new link).

Each link must leave no exception box on the page, and nothing the link's text became: no link to the injected
addresses, no image and no element with an inline handler. What the browser alone can see is how the page draws the
text a link carries, so every page gets every injection of tests/test_fuzz_links.py (in each of its text parameters and
two others) and BROWSER_FUZZ_CASES of its generated links (huge values, broken matrices, other pages'
presets). The generated links' other checks (no exception, no markup in any message) run 300 a page over a real
server's websocket (tests/test_fuzz_links.py). The issue's full browser run is 300 a page
(`BROWSER_FUZZ_CASES=300 pytest tests/browser/test_fuzz_links.py`, ~2 s a link on two loaded cores; results in
bench/results/).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page

from testkit.browser import ConsoleRecorder, exceptions, goto, wait_ready, wait_rerun
from testkit.server import StreamlitServer
from tests.test_fuzz_links import INJECTIONS, PAGES, URL_PATHS, generated_links

CASES = int(os.environ.get("BROWSER_FUZZ_CASES", "8"))
# What a link's text must never become on the page: a link or image to the injected addresses, an image the payload
# names, or any element with an inline event handler.
INJECTED_JS = """() => Array.from(document.querySelectorAll('a[href], img, [onerror], [onload], script[src]'))
    .filter((el) => /attacker|127\\.0\\.0\\.1:9/.test(el.getAttribute('href') || el.getAttribute('src') || '')
        || el.getAttribute('src') === 'x' || el.hasAttribute('onerror') || el.hasAttribute('onload'))
    .map((el) => el.outerHTML.slice(0, 200))"""
OPEN_LINK_JS = """(query) => {
    history.pushState({}, '', '?' + query);
    window.dispatchEvent(new PopStateEvent('popstate', {state: {}}));
}"""


def injection_links(fields, seed: int) -> list[dict[str, str]]:
    """A link per injection: in every text parameter of the page (a sentence is drawn as tokens, in tables and in the
    charts' axes) and in two other parameters drawn with `seed` (echoed in the warning that names them)."""
    rng = random.Random(seed)
    texts = [f.key for f in fields if f.kind == "text"]
    others = [f.key for f in fields if f.kind != "text"] + ["lang", "pal", "pm", "zzz"]
    return [dict.fromkeys([*texts, *rng.sample(others, 2)], injection) for injection in INJECTIONS]


def test_every_page_gets_every_injection_in_every_text_parameter():
    for _, fields in PAGES.values():
        links = injection_links(fields, 3)
        assert [set(link.values()) for link in links] == [{injection} for injection in INJECTIONS]
        for text in (f.key for f in fields if f.kind == "text"):
            assert all(text in link for link in links)


@pytest.fixture(scope="module")
def open_gate_server() -> Iterator[StreamlitServer]:
    """A server whose gate lets large reruns follow each other (ATTNVIZ_GATE_SHARE=1): every link on the explanation
    page computes new maps, which would otherwise wait for the gate to reopen after the last."""
    with StreamlitServer("app.py", log_name="fuzz-browser", env={"ATTNVIZ_GATE_SHARE": "1"}) as server:
        yield server


@pytest.mark.parametrize("page_name", list(URL_PATHS))
def test_hostile_links_in_the_browser(
    page: Page, open_gate_server: StreamlitServer, console_errors: ConsoleRecorder, page_name: str
) -> None:
    server = open_gate_server
    goto(page, server.url_for(URL_PATHS[page_name]))
    _, fields = PAGES[page_name]
    problems = []
    for number, params in enumerate(injection_links(fields, 3) + generated_links(page_name, fields, 3, CASES)):
        page.evaluate(OPEN_LINK_JS, urlencode(params))
        wait_rerun(page, timeout=60_000)
        wait_ready(page, timeout=60_000)
        found = exceptions(page) + page.evaluate(INJECTED_JS)
        if found:
            problems.append((number, {k: v[:80] for k, v in params.items()}, found[:2]))
    assert problems == [], problems[:5]
    assert console_errors.dialogs == []
