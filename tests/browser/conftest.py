"""Fixtures for the real-browser tests: one Chromium and one app server per session (per process, where the run is
split over processes), and a clean tab per test that no other test uses at the same time (its cookies and storage
cleared, its caches kept: testkit.browser.TabPool)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from testkit.browser import (
    CHROMIUM_ARGS,
    CHROMIUM_PATH,
    SCREENSHOT_DIR,
    ConsoleRecorder,
    TabPool,
    screenshot,
)
from testkit.server import LOG_DIR, StreamlitServer

BROWSER_DIR = Path(__file__).resolve().parent
DEFAULT_TIMEOUT_MS = 30_000
# What an `expect` waits for when it names no timeout (Playwright's own is 5 s): a page's rerun on two cores shared
# with another test process, servers and browsers can take longer. A met expectation returns at once.
expect.set_options(timeout=DEFAULT_TIMEOUT_MS)
VIEWPORT = {"width": 1280, "height": 900}
_TABS_KEY = pytest.StashKey[list[Page]]()
_collected_browser_tests: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test collected from this folder with `browser`."""
    for item in items:
        if BROWSER_DIR in item.path.resolve().parents:
            item.add_marker(pytest.mark.browser)
            _collected_browser_tests.append(item.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """When a test's call phase fails, screenshot its open pages before any fixture (e.g. a server) is torn down."""
    report = yield
    if report.when == "call" and report.failed:
        for i, tab in enumerate(item.stash.get(_TABS_KEY, [])):
            for j, pg in enumerate(tab.context.pages if not tab.is_closed() else []):
                try:
                    path = screenshot(pg, f"FAILED-{item.nodeid}-{i}-{j}")
                    report.sections.append(("browser screenshot", str(path)))
                except Exception as exc:  # a crashed page must not hide the real failure
                    report.sections.append(("browser screenshot", f"could not screenshot: {exc}"))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Tell CI where the screenshots are."""
    if not _collected_browser_tests:
        return
    count = len(list(SCREENSHOT_DIR.glob("*.png"))) if SCREENSHOT_DIR.is_dir() else 0
    terminalreporter.write_sep("-", "browser test artefacts")
    terminalreporter.write_line(f"screenshots ({count} PNG): {SCREENSHOT_DIR.resolve()}")
    terminalreporter.write_line(f"server logs: {LOG_DIR.resolve()}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Failure shots of an earlier run would mislead: removed once, by the run's main process."""
    if not hasattr(session.config, "workerinput"):
        for stale in SCREENSHOT_DIR.glob("FAILED-*.png"):
            stale.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    """The Playwright driver (sync API), started once per session."""
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_instance: Playwright) -> Iterator[Browser]:
    """Debian's headless Chromium, launched once per session."""
    if not Path(CHROMIUM_PATH).exists():
        pytest.fail(f"{CHROMIUM_PATH} is missing; run `bash scripts/system-deps.sh` (apt-get install chromium)")
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def tabs(browser: Browser) -> Iterator[TabPool]:
    """The session's browser tabs, each used by one test at a time and kept with its caches (TabPool)."""
    pool = TabPool(browser, DEFAULT_TIMEOUT_MS)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def server() -> Iterator[StreamlitServer]:
    """The repo's app.py served on 127.0.0.1, shared by the whole session."""
    srv = StreamlitServer("app.py", log_name="app")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., StreamlitServer]]:
    """Factory: `fresh_server(script="app.py", **StreamlitServer_kwargs)` starts a server, stopped after the test."""
    started: list[StreamlitServer] = []

    def start(script: str | Path = "app.py", **kwargs: Any) -> StreamlitServer:
        kwargs.setdefault("log_name", f"{request.node.name}-{len(started)}")
        srv = StreamlitServer(script, **kwargs)
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def console_errors() -> ConsoleRecorder:
    """Console errors, page errors, dialogs and off-host requests of every page this test opens."""
    return ConsoleRecorder()


@pytest.fixture
def new_page(
    tabs: TabPool, console_errors: ConsoleRecorder, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Page]]:
    """Factory: `new_page(**context_kwargs)` gives this test a tab of its own: no cookies or storage of another
    test, and two tabs of one test never share cookies (each is in a context of its own)."""
    taken: list[Page] = []
    request.node.stash[_TABS_KEY] = taken

    def open_page(**context_kwargs: Any) -> Page:
        context_kwargs.setdefault("viewport", VIEWPORT)
        tab = tabs.acquire(**context_kwargs)
        taken.append(tab)
        return console_errors.attach(tab)

    yield open_page
    for tab in taken:
        console_errors.detach(tab)
        tabs.release(tab)


@pytest.fixture
def page(new_page: Callable[..., Page]) -> Page:
    """A blank page in a fresh context, 30 s default timeout, recorded by the `console_errors` fixture."""
    return new_page()
