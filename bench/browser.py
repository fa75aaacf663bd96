"""Browser measurements with Playwright and Debian's Chromium: control change -> updated heatmap, and cold start."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from urllib.parse import quote

from playwright.sync_api import Browser, Page, sync_playwright

from bench.scenarios import SCENARIOS, start_server
from testkit.browser import CHROMIUM_ARGS, CHROMIUM_PATH, PLOTLY_SELECTOR, goto, wait_ready
from testkit.server import StreamlitServer

TEMPERATURE_LABEL = "Temperature T"
WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "a", "dog", "ran", "to", "it"]

# Arms a measurement: t0 is the moment the browser dispatches the Enter key that commits the new value (taken in
# the page, so Playwright's own round trip is not counted); the end is the first animation frame at which the first
# chart holds data other than before. window.__dt is the difference in milliseconds.
_ARM_JS = """
() => {
  const gd = document.querySelector('.js-plotly-plot');
  window.__before = gd ? gd.data : null;
  window.__t0 = null;
  window.__dt = null;
  document.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') window.__t0 = performance.now(); },
                            { capture: true, once: true });
  const poll = () => {
    const now = document.querySelector('.js-plotly-plot');
    if (window.__t0 !== null && now && now.data && now.data !== window.__before && now._fullLayout) {
      window.__dt = performance.now() - window.__t0;
    } else {
      requestAnimationFrame(poll);
    }
  };
  requestAnimationFrame(poll);
}
"""


def sentence(tokens: int) -> str:
    """A sentence of exactly `tokens` tokens, all different beyond a few words: repeated tokens would make the
    weights repetitive and flatter every size and compression figure. CJK characters are one token each and
    keep 512 tokens under the sentence box's 2,000 characters."""
    if tokens <= 8:
        return " ".join(WORDS[:tokens])
    return "".join(chr(0x4E00 + 7 * i) for i in range(tokens))


@dataclass
class ChangeTiming:
    """Control change -> updated chart, in milliseconds, over several changes."""

    label: str
    samples: list[float]

    @property
    def p50(self) -> float:
        """Median."""
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        """95th percentile (nearest rank)."""
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1)]


def launch(playwright) -> Browser:
    """Debian's Chromium, headless, with the flags that work on a closed network."""
    return playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, headless=True)


def change_timings(page: Page, changes: int, start: float = 1.0, label: str = TEMPERATURE_LABEL) -> list[float]:
    """Type new temperatures into the page and time each until its heatmap is redrawn with new data."""
    box = page.get_by_role("spinbutton", name=label, exact=True)
    samples = []
    for i in range(changes):
        box.fill(f"{start + 0.01 * (i + 1):.2f}")
        page.evaluate(_ARM_JS)
        box.press("Enter")
        page.wait_for_function("() => window.__dt !== null", timeout=60_000)
        samples.append(float(page.evaluate("window.__dt")))
        wait_ready(page)
    return samples


def measure_minimal(browser: Browser, changes: int) -> ChangeTiming:
    """The same measurement on the minimal page (the floor: one number input and one heatmap)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        with start_server(SCENARIOS["minimal"]) as server:
            goto(page, server.url_for(""))
            page.wait_for_selector(PLOTLY_SELECTOR, timeout=60_000)
            change_timings(page, 2, label="Temperature")
            return ChangeTiming("minimal page", change_timings(page, changes, label="Temperature"))
    finally:
        context.close()


def measure_changes(server: StreamlitServer, browser: Browser, tokens: int, changes: int) -> ChangeTiming:
    """Open the self-attention page with a sentence of `tokens` tokens and time `changes` temperature changes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        goto(page, server.url_for(f"Self_attention?s={quote(sentence(tokens))}"))
        page.wait_for_selector(PLOTLY_SELECTOR, timeout=60_000)
        change_timings(page, 2)  # warm-up: first renders, caches
        return ChangeTiming(f"{tokens} tokens", change_timings(page, changes))
    finally:
        context.close()


MODEL_WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "it", "was", "tired", "because"]


def model_sentence(tokens: int, last: int) -> str:
    """Words the model's tokenizer keeps whole: `tokens` WordPiece tokens with [CLS] and [SEP]; `last` varies the
    final word so that every change is a new sentence (the trace cache cannot answer it)."""
    words = [MODEL_WORDS[i % len(MODEL_WORDS)] for i in range(tokens - 3)]
    return " ".join([*words, MODEL_WORDS[last % len(MODEL_WORDS)]])


def measure_model(server: StreamlitServer, browser: Browser, tokens: int, changes: int) -> ChangeTiming:
    """The pretrained-model page: type a new sentence of `tokens` tokens, time until the model view (the page's
    first chart, all 72 heads) is redrawn with the new attention; the whole encoder runs for each change."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        goto(page, server.url_for(f"Pretrained_model?s={quote(model_sentence(tokens, 0))}"))
        page.wait_for_selector(PLOTLY_SELECTOR, timeout=60_000)
        box = page.get_by_role("textbox", name="Sentence", exact=True)
        samples = []
        for i in range(changes + 2):  # the first two warm up
            box.fill(model_sentence(tokens, i + 1))
            page.evaluate(_ARM_JS)
            box.press("Enter")
            page.wait_for_function("() => window.__dt !== null", timeout=60_000)
            samples.append(float(page.evaluate("window.__dt")))
            wait_ready(page)
        return ChangeTiming(f"model page, a new {tokens}-token sentence typed -> model view", samples[2:])
    finally:
        context.close()


def cold_start(browser: Browser, scenario: str = "self") -> tuple[float, float]:
    """Seconds from `streamlit run` to the server's health answer and to the first rendered page in Chromium."""
    started = time.perf_counter()
    server = start_server(SCENARIOS[scenario])
    try:
        healthy = time.perf_counter() - started
        context = browser.new_context()
        page = context.new_page()
        goto(page, server.url_for(SCENARIOS[scenario].page))
        page.wait_for_selector(PLOTLY_SELECTOR, timeout=60_000)
        rendered = time.perf_counter() - started
        context.close()
        return healthy, rendered
    finally:
        server.stop()


# Installed before any of the page's own scripts: the time (ms since navigation started) of the first animation frame
# at which a Plotly chart is drawn with its data.
FIRST_CHART_JS = """
(() => {
  window.__firstChart = null;
  const poll = () => {
    const drawn = [...document.querySelectorAll('.js-plotly-plot')].some(
      (gd) => gd._fullLayout && gd.data && gd.data.length);
    if (drawn) {
      window.__firstChart = performance.now();
    } else {
      requestAnimationFrame(poll);
    }
  };
  requestAnimationFrame(poll);
})();
"""

# The minimal page first: the others are measured against it
FIRST_VISIT_PAGES = ("minimal", "elements", "self", "model")


def first_chart(browser: Browser, server: StreamlitServer, path: str) -> float:
    """Seconds from navigation to the first drawn chart for a new visitor (a fresh browser profile, nothing cached)
    opening `path` on a warm server."""
    return first_chart_at(browser, server.url_for(path))


def first_chart_at(browser: Browser, url: str, timeout_s: float = 60) -> float:
    """Seconds from navigation to the first drawn chart for a new visitor (a fresh browser profile, nothing cached)
    opening `url`."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(FIRST_CHART_JS)
    page = context.new_page()
    try:
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_function("() => window.__firstChart !== null", timeout=timeout_s * 1000, polling=50)
        return float(page.evaluate("window.__firstChart")) / 1000
    finally:
        context.close()


def first_visits(browser: Browser, visits: int = 5) -> dict[str, dict]:
    """A new visitor's navigation -> first chart on each of FIRST_VISIT_PAGES, on warm servers, the pages taken in
    turn `visits` times (so that a drifting machine weighs on all alike); medians in seconds."""
    scenarios = [SCENARIOS[name] for name in FIRST_VISIT_PAGES]
    servers = [start_server(scenario) for scenario in scenarios]
    samples: dict[str, list[float]] = {name: [] for name in FIRST_VISIT_PAGES}
    try:
        paths = [f"{s.page}?{s.query}" if s.query else s.page for s in scenarios]
        for server, path in zip(servers, paths, strict=True):
            first_chart(browser, server, path)  # warm: imports, caches, the model's first sentence
        for _ in range(visits):
            for scenario, server, path in zip(scenarios, servers, paths, strict=True):
                samples[scenario.name].append(first_chart(browser, server, path))
    finally:
        for server in servers:
            server.stop()
    return {name: {"samples": values, "median_s": statistics.median(values)} for name, values in samples.items()}


def run_browser(changes: int = 20, large_changes: int = 5, cold_runs: int = 3) -> dict:
    """All browser figures: small and large change timings, and cold starts (median of `cold_runs`)."""
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            colds = [cold_start(browser) for _ in range(cold_runs)]
            cold_floor = [cold_start(browser, "minimal") for _ in range(cold_runs)]
            with start_server(SCENARIOS["self"]) as server:
                small = measure_changes(server, browser, 8, changes)
                large = measure_changes(server, browser, 512, large_changes)
                models = [measure_model(server, browser, tokens, large_changes) for tokens in (16, 128)]
            floor = measure_minimal(browser, changes)
            visits = first_visits(browser, 5 if changes > 5 else 2)
        finally:
            browser.close()
    return {
        "small": {"label": small.label, "p50_ms": small.p50, "p95_ms": small.p95, "samples": small.samples},
        "large": {"label": large.label, "p50_ms": large.p50, "p95_ms": large.p95, "samples": large.samples},
        "cold_health_s": statistics.median(h for h, _ in colds),
        "cold_render_s": statistics.median(r for _, r in colds),
        "cold_runs": [{"health_s": h, "render_s": r} for h, r in colds],
        "cold_minimal_render_s": statistics.median(r for _, r in cold_floor),
        "minimal": {"label": floor.label, "p50_ms": floor.p50, "p95_ms": floor.p95, "samples": floor.samples},
        "model": [{"label": m.label, "p50_ms": m.p50, "p95_ms": m.p95, "samples": m.samples} for m in models],
        "first_chart": visits,
    }
