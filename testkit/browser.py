"""Playwright helpers for driving the app in Debian's Chromium: launch settings, readiness waits, Plotly scraping,
console recording and screenshots. The server they drive is testkit.server's StreamlitServer."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Dialog, Error, Locator, Page, Request
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from testkit.server import ARTIFACTS_DIR, StreamlitServer, active_sessions, slug

SCREENSHOT_DIR: Path = ARTIFACTS_DIR / "screenshots"
CHROMIUM_PATH: str = "/usr/bin/chromium"
CHROMIUM_ARGS: list[str] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

APP_SELECTOR = '[data-testid="stApp"]'
NOT_RUNNING = f'{APP_SELECTOR}[data-test-script-state="notRunning"]'
CONNECTED = f"() => document.querySelector('{APP_SELECTOR}').getAttribute('data-test-connection-state') === 'CONNECTED'"
PLOTLY_SELECTOR = ".js-plotly-plot"
EXCEPTION_SELECTOR = '[data-testid="stException"]'


# ----- readiness -------------------------------------------------------------------------------------------------

# Installed before the app's own scripts (add_init_script): wraps WebSocket and reads the top-level fields of each
# ForwardMsg on /_stcore/stream. session_status_changed (field 9) carries script_is_running (its field 2), sent when
# a run starts and ends; this catches reruns that finish so fast that React batches stApp's data-test-script-state
# from notRunning to running and back without the DOM ever changing. Field numbers checked against Streamlit 1.67.
_TRACKER_JS = r"""
() => {
  if (window.__stTracker) return;
  const t = (window.__stTracker = { ws: false, serverRunning: false, starts: 0, finishes: 0, seen: 0, frames: 0,
                                   pageRuns: 0, fragmentRuns: 0 });
  const varint = (b, i) => {
    let v = 0, scale = 1, x;
    do { x = b[i++]; v += (x & 0x7f) * scale; scale *= 128; } while (x & 0x80 && i < b.length);
    return [v, i];
  };
  const fields = (b) => {
    const out = [];
    let i = 0;
    while (i < b.length) {
      let tag, v;
      [tag, i] = varint(b, i);
      const num = Math.floor(tag / 8), wire = tag & 7;
      if (wire === 0) { [v, i] = varint(b, i); out.push([num, v]); }
      else if (wire === 2) { [v, i] = varint(b, i); out.push([num, b.subarray(i, i + v)]); i += v; }
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else break;
    }
    return out;
  };
  const onFrame = (buf) => {
    t.frames += 1;
    for (const [num, value] of fields(new Uint8Array(buf))) {
      if (num === 6 && value === 0) t.pageRuns += 1;  // ForwardMsg.script_finished: FINISHED_SUCCESSFULLY
      if (num === 6 && value === 3) t.fragmentRuns += 1;  // FINISHED_FRAGMENT_RUN_SUCCESSFULLY
      if (num !== 9 || !(value instanceof Uint8Array)) continue;  // ForwardMsg.session_status_changed
      const running = fields(value).some(([n, v]) => n === 2 && v === 1);  // SessionStatus.script_is_running
      if (running && !t.serverRunning) t.starts += 1;
      if (!running && t.serverRunning) t.finishes += 1;
      t.serverRunning = running;
    }
  };
  const Native = window.WebSocket;
  if (!Native) return;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      if (!String(args[0]).includes("_stcore/stream")) return;
      t.ws = true;
      this.addEventListener("message", (ev) => {
        try {
          if (ev.data instanceof ArrayBuffer) onFrame(ev.data);
          else if (ev.data instanceof Blob) ev.data.arrayBuffer().then(onFrame);
        } catch (e) { /* never break the app */ }
      });
      this.addEventListener("close", () => { t.serverRunning = false; });
    }
  };
}
"""

_READY_JS = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return false;
  const state = app.getAttribute("data-test-script-state");
  if (state === "compilationError") return state;
  if (state !== "notRunning") return false;
  const conn = app.getAttribute("data-test-connection-state");
  if (conn && conn !== "CONNECTED" && conn !== "STATIC_CONNECTED") return false;
  const t = window.__stTracker;
  if (t && t.ws && t.serverRunning) return false;
  if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[class*="st-key-attnviz_pending"]')) return false;  // a part still to come (first_paint)
  return state;
}
"""

_RERUN_STARTED_JS = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app ? app.getAttribute("data-test-script-state") : null;
  const t = window.__stTracker;
  return state !== "notRunning" || (t !== undefined && (t.serverRunning || t.starts > t.seen));
}
"""

_SETTLE_JS = """
() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
  if (window.__stTracker) window.__stTracker.seen = window.__stTracker.starts;
  resolve();
})))
"""


def install_rerun_tracker(target: Page | BrowserContext) -> None:
    """Register the WebSocket run tracker for every future document of a page or context (the `page` fixture does).

    Without it wait_ready/wait_rerun still work from the DOM alone, but may miss reruns too fast to be rendered.
    """
    target.add_init_script(f"({_TRACKER_JS})()")


def script_state(page: Page) -> str | None:
    """The current data-test-script-state of stApp (initial, running, notRunning, ...), or None before render."""
    return page.evaluate(
        "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') ?? null"
    )


def run_count(page: Page) -> int | None:
    """How many script runs the server has started for this page's session (None without the tracker)."""
    return page.evaluate("() => (window.__stTracker && window.__stTracker.ws ? window.__stTracker.starts : null)")


def finished_runs(page: Page) -> tuple[int, int]:
    """How many runs of the whole page and of a fragment alone the server finished for this page's session (the
    tracker's count of `script_finished` messages)."""
    counts = page.evaluate(
        "() => window.__stTracker ? [window.__stTracker.pageRuns, window.__stTracker.fragmentRuns] : null"
    )
    assert counts is not None, "the run tracker is not installed (install_rerun_tracker)"
    return int(counts[0]), int(counts[1])


def wait_ready(page: Page, timeout: float = 30000) -> None:
    """Wait until the app is connected, its script run has finished and everything (lazy widgets too) is rendered.

    Ready means: stApp's data-test-script-state is notRunning, the connection is up, the server's last session
    status says no script is running (tracker), and no running indicator or loading skeleton is shown.
    """
    handle = page.wait_for_function(_READY_JS, timeout=timeout, polling=50)
    if handle.json_value() == "compilationError":
        raise AssertionError("Streamlit reports a compilation error in the script (see the server log)")
    page.evaluate(_SETTLE_JS)


def wait_rerun(page: Page, timeout: float = 30000, start_timeout: float = 2000) -> bool:
    """After an interaction: wait up to `start_timeout` ms for a rerun to begin, then wait_ready; True if one ran."""
    started = True
    try:
        page.wait_for_function(_RERUN_STARTED_JS, timeout=start_timeout, polling=20)
    except PlaywrightTimeoutError:
        started = False  # no rerun was triggered (or none was observable); still make sure the app is idle
    wait_ready(page, timeout=timeout)
    return started


def goto(page: Page, url: str, timeout: float = 30000) -> None:
    """Navigate to `url` and wait_ready."""
    page.goto(url, timeout=timeout)
    wait_ready(page, timeout=timeout)


def slider_thumb(page: Page, label: str | None = None) -> Locator:
    """The focusable thumb of the (first, or `label`-named) st.slider; focus it and press Arrow keys to move it.

    Streamlit 1.67 renders a react-aria slider whose thumb is a visually hidden <input type="range"> (implicit ARIA
    role, so the CSS selector [role="slider"] does not match it); the ARIA role query covers both.
    """
    sliders = page.locator('[data-testid="stSlider"]')
    if label is not None:  # the thumb's accessible name repeats the label ("scale scale"), so match the label element
        sliders = sliders.filter(has=page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True))
    return sliders.get_by_role("slider").first


def exceptions(page: Page) -> list[str]:
    """Texts of the Streamlit exception boxes (st.exception / uncaught errors) currently on the page."""
    return page.locator(EXCEPTION_SELECTOR).all_inner_texts()


# ----- Plotly ----------------------------------------------------------------------------------------------------

_PLOTLY_JS = r"""
(graphs) => {
  const DTYPES = {
    f8: Float64Array, float64: Float64Array, f4: Float32Array, float32: Float32Array,
    i1: Int8Array, int8: Int8Array, u1: Uint8Array, uint8: Uint8Array, u1c: Uint8ClampedArray,
    uint8c: Uint8ClampedArray, i2: Int16Array, int16: Int16Array, u2: Uint16Array, uint16: Uint16Array,
    i4: Int32Array, int32: Int32Array, u4: Uint32Array, uint32: Uint32Array,
  };
  const decode = (spec) => {
    const Ctor = DTYPES[spec.dtype];
    if (!Ctor) throw new Error(`unknown Plotly dtype ${spec.dtype}`);
    let flat;
    if (typeof spec.bdata === "string") {
      const bin = atob(spec.bdata);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      flat = new Ctor(bytes.buffer);
    } else {
      flat = new Ctor(spec.bdata);
    }
    let shape = spec.shape;
    if (typeof shape === "string") shape = shape.split(",").map((s) => parseInt(s, 10));
    if (!Array.isArray(shape) || shape.length < 2) return flat;
    const reshape = (offset, dims) => {
      if (dims.length === 1) return flat.subarray(offset, offset + dims[0]);
      const step = dims.slice(1).reduce((a, b) => a * b, 1);
      return Array.from({ length: dims[0] }, (_, i) => reshape(offset + i * step, dims.slice(1)));
    };
    return reshape(0, shape);
  };
  const plain = (v, depth = 0) => {
    if (v === undefined || v === null) return null;
    if (typeof v === "number") return Number.isFinite(v) ? v : null;
    if (typeof v === "bigint") return Number(v);
    if (typeof v === "string" || typeof v === "boolean") return v;
    if (ArrayBuffer.isView(v)) return Array.from(v, (x) => plain(x, depth + 1));
    if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
    if (v instanceof Date) return v.toISOString();
    if (typeof v === "object" && "dtype" in v && "bdata" in v) return plain(decode(v), depth);
    if (typeof v === "object" && depth < 4) {
      const entries = Object.entries(v).filter(([k]) => !k.startsWith("_"));
      return Object.fromEntries(entries.map(([k, x]) => [k, plain(x, depth + 1)]));
    }
    return null;
  };
  const title = (t) => (t === undefined || t === null ? null : typeof t === "string" ? t : t.text ?? null);
  // Streamlit's theming wraps layout.title.text in <b>...</b> (once per theming pass); undo only whole wrappers.
  const balanced = (s) => {
    let depth = 0;
    for (const m of s.matchAll(/<(\/?)b>/g)) if ((depth += m[1] ? -1 : 1) < 0) return false;
    return depth === 0;
  };
  const unbold = (s) => {
    while (s !== null && s.startsWith("<b>") && s.endsWith("</b>") && balanced(s.slice(3, -4))) s = s.slice(3, -4);
    return s;
  };
  return graphs.map((gd, index) => {
    const layout = gd.layout || {};
    const full = gd._fullData || [];
    return {
      index,
      title: unbold(title(layout.title)),
      title_raw: title(layout.title),
      xaxis_title: title(layout.xaxis && layout.xaxis.title),
      yaxis_title: title(layout.yaxis && layout.yaxis.title),
      data: (gd.data || []).map((trace, i) => ({
        type: trace.type ?? (full[i] && full[i].type) ?? "scatter",
        name: trace.name ?? null,
        z: plain(trace.z),
        x: plain(trace.x),
        y: plain(trace.y),
        text: plain(trace.text),
      })),
    };
  });
}
"""

_PLOTLY_READY_JS = """
(n) => {
  const graphs = Array.from(document.querySelectorAll(".js-plotly-plot"));
  const drawn = (gd) => gd._fullLayout && Array.isArray(gd.data) && gd.querySelector(".main-svg");
  return graphs.length >= n && graphs.every(drawn);
}
"""


def plotly_figures(page: Page) -> list[dict[str, Any]]:
    """Every rendered Plotly chart, in DOM order: {index, title, title_raw, xaxis_title, yaxis_title, data: [traces]}.

    `title` is layout.title.text without the <b>...</b> wrappers Streamlit's theming adds (`title_raw` keeps them).

    Each trace is {type, name, z, x, y, text} with arrays as plain nested lists (typed arrays and Plotly's
    {dtype, bdata, shape} encoding decoded; NaN/inf become None).
    """
    return page.locator(PLOTLY_SELECTOR).evaluate_all(_PLOTLY_JS)


def wait_for_plotly(page: Page, count: int = 1, timeout: float = 30000) -> list[dict[str, Any]]:
    """Wait until at least `count` Plotly charts have rendered, then return plotly_figures(page)."""
    page.wait_for_function(_PLOTLY_READY_JS, arg=count, timeout=timeout, polling=50)
    return plotly_figures(page)


def wait_for_figures(
    page: Page, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 10000, interval: float = 0.1
) -> list[dict[str, Any]]:
    """Poll plotly_figures(page) until `predicate(figures)` is true (Plotly redraws asynchronously after a rerun)."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        figures = plotly_figures(page)
        if predicate(figures):
            return figures
        if time.monotonic() > deadline:
            raise AssertionError(f"Plotly figures did not reach the expected state within {timeout:.0f} ms: {figures}")
        time.sleep(interval)


# ----- tabs -------------------------------------------------------------------------------------------------------

# What a tab keeps of a test that the next test must not see: cookies (cleared apart), each site's storage, its
# request interceptions. Its caches are kept: a new tab fetches, compiles and starts Streamlit's and Plotly's
# JavaScript again (a page load took 4.3 s in a new tab, 1.9 s in a tab that had loaded the app before, on two cores),
# which no test is about.
_STORAGE_TYPES = "local_storage,indexeddb,websql,service_workers,cache_storage,file_systems,shader_cache"


class TabPool:
    """Browser tabs handed to one test at a time, each in a context of its own (its own cookies), and cleaned between
    tests: a tab comes back on about:blank (its Streamlit session ended), without cookies, permissions, request
    interceptions or any site's storage, as a new one would, but with the browser's caches.

    `acquire(viewport, **kwargs)` takes `browser.new_context` options (user_agent, java_script_enabled, ...); a tab
    made with the same options is reused, at the viewport asked for. A tab or context a test closes is dropped. Other
    tabs a test opens in a context (`tab.context.new_page()`) are closed when the test gives the tab back."""

    def __init__(self, browser: Browser, timeout_ms: float) -> None:
        self.browser = browser
        self.timeout_ms = timeout_ms
        self._free: dict[str, list[Page]] = {}
        self._keys: dict[int, str] = {}  # id(tab) -> its options
        self._origins: dict[int, set[str]] = {}  # id(context) -> the sites its tabs reached

    def acquire(self, viewport: dict[str, int] | None = None, **kwargs: Any) -> Page:
        """A clean tab of a context made with `kwargs`, at `viewport` (the default timeouts set, the run tracker
        installed)."""
        key = repr(sorted(kwargs.items()))
        free = self._free.setdefault(key, [])
        while free:
            tab = free.pop()
            if not tab.is_closed():
                if viewport is not None and tab.viewport_size != viewport:
                    tab.set_viewport_size(viewport)
                return tab
        context = self.browser.new_context(viewport=viewport, **kwargs)
        context.set_default_timeout(self.timeout_ms)
        context.set_default_navigation_timeout(self.timeout_ms)
        install_rerun_tracker(context)
        origins: set[str] = set()
        self._origins[id(context)] = origins
        context.on("request", lambda request: origins.add(_origin(request.url)))
        tab = context.new_page()
        self._keys[id(tab)] = key
        return tab

    def release(self, tab: Page) -> None:
        """End the tab's session, clear what its test left, and keep it for the next test."""
        key = self._keys.get(id(tab))
        if key is None or tab.is_closed():
            return
        context = tab.context
        try:
            for other in context.pages:
                if other is not tab:
                    other.close()
            tab.unroute_all(behavior="ignoreErrors")
            tab.goto("about:blank")
            self._clear(context, tab)
        except Error:  # a crashed tab or a closed context is not worth keeping
            with contextlib.suppress(Error):
                context.close()
            return
        self._free[key].append(tab)

    def close(self) -> None:
        """Close every context of the pool."""
        for tabs in self._free.values():
            for tab in tabs:
                with contextlib.suppress(Error):
                    tab.context.close()
        self._free.clear()

    def _clear(self, context: BrowserContext, tab: Page) -> None:
        context.clear_cookies()
        context.clear_permissions()
        origins = {origin for origin in self._origins.get(id(context), set()) if origin}
        if origins:
            session = context.new_cdp_session(tab)
            for origin in origins:
                session.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": _STORAGE_TYPES})
            session.detach()
            self._origins[id(context)].clear()


def _origin(url: str) -> str:
    """scheme://host:port of an http(s) URL; "" for any other (data:, blob:, file:)."""
    found = re.match(r"^(https?://[^/?#]+)", url)
    return found.group(1) if found else ""


# ----- artefacts -------------------------------------------------------------------------------------------------

_CONTENT_HEIGHT_JS = """
() => {
  const sel = ['[data-testid="stMain"]', '[data-testid="stAppViewContainer"]', '[data-testid="stSidebarContent"]'];
  const heights = [document.documentElement.scrollHeight, document.body.scrollHeight];
  for (const s of sel) for (const el of document.querySelectorAll(s)) heights.push(el.scrollHeight);
  return Math.max(...heights);
}
"""


def screenshot(page: Page, name: str, full_page: bool = True) -> Path:
    """Save a PNG of the whole app to test-artifacts/screenshots/<name>.png and return its path.

    Streamlit scrolls inside its main container, so for a full-page shot the viewport is grown to the content's
    height for the capture and restored afterwards.
    """
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{slug(name)}.png"
    viewport = page.viewport_size
    if not full_page or viewport is None:
        page.screenshot(path=str(path))
        return path
    height = min(int(page.evaluate(_CONTENT_HEIGHT_JS)), 16000)
    try:
        if height > viewport["height"]:
            page.set_viewport_size({"width": viewport["width"], "height": height})
            page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.screenshot(path=str(path), full_page=True)
    finally:
        if page.viewport_size != viewport:
            page.set_viewport_size(viewport)
    return path


@dataclass
class ConsoleRecorder:
    """Records console errors, uncaught page errors, JS dialogs (alert/confirm/prompt) and off-host requests."""

    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> Page:
        """Start recording on `page` (dialogs are recorded and dismissed so they never block) and return it."""
        page.on("console", self._on_console)
        page.on("pageerror", self._on_page_error)
        page.on("dialog", self._on_dialog)
        page.on("request", self._on_request)
        return page

    def detach(self, page: Page) -> None:
        """Stop recording on `page` (a tab given back to its pool, for another test)."""
        if page.is_closed():
            return
        for event, handler in (
            ("console", self._on_console),
            ("pageerror", self._on_page_error),
            ("dialog", self._on_dialog),
            ("request", self._on_request),
        ):
            page.remove_listener(event, handler)

    def _ignored(self, text: str) -> bool:
        """Whether `text` matches one of the `ignore` regular expressions."""
        return any(re.search(pattern, text) for pattern in self.ignore)

    def _on_console(self, msg: ConsoleMessage) -> None:
        """Record a console message; errors also go to `errors`."""
        text = msg.text
        self.messages.append(f"{msg.type}: {text}")
        loc = msg.location or {}
        where = f" ({loc.get('url')}:{loc.get('lineNumber')})" if loc.get("url") else ""
        if msg.type == "error" and not self._ignored(text + where):
            self.errors.append(text + where)

    def _on_page_error(self, error: Error) -> None:
        """Record an uncaught exception in the page."""
        text = f"{error.name}: {error.message}" if error.name else str(error)
        if not self._ignored(text):
            self.page_errors.append(text)

    def _on_dialog(self, dialog: Dialog) -> None:
        """Record a JS dialog and dismiss it."""
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        with contextlib.suppress(Error):
            dialog.dismiss()

    def _on_request(self, request: Request) -> None:
        """Record requests that leave 127.0.0.1 (data:, blob: and about: URLs are local)."""
        url = request.url
        if re.match(r"^(https?|wss?)://", url) and not re.match(r"^(https?|wss?)://(127\.0\.0\.1|localhost)[:/]", url):
            self.external_requests.append(url)

    def problems(self, allow_external: bool = False) -> list[str]:
        """Everything recorded that a clean page should not have, one line each."""
        found = [f"console error: {e}" for e in self.errors]
        found += [f"page error: {e}" for e in self.page_errors]
        found += [f"dialog: {d}" for d in self.dialogs]
        if not allow_external:
            found += [f"external request: {u}" for u in self.external_requests]
        return found

    def assert_clean(self, allow_external: bool = False) -> None:
        """Fail if any console error, page error, dialog (or, unless allowed, off-host request) was recorded."""
        found = self.problems(allow_external=allow_external)
        assert not found, "browser reported problems:\n" + "\n".join(found)

    def clear(self) -> None:
        """Forget everything recorded so far (e.g. after an expected error)."""
        for bucket in (self.messages, self.errors, self.page_errors, self.dialogs, self.external_requests):
            bucket.clear()


RECONNECT_MOMENTS = ("while reconnecting", "right after", "later")


def kill_serving_replica(page: Page, replicas: list[StreamlitServer], moment: str) -> StreamlitServer:
    """SIGKILL the replica that holds the page's session, then wait until a student would type at `moment`: at once
    ("while reconnecting"), once the page has reconnected ("right after"), or once its first run on the other
    replica has ended ("later"). Returns the killed replica."""
    serving = next(replica for replica in replicas if active_sessions(replica) > 0)
    serving.kill()
    if moment != "while reconnecting":
        page.wait_for_function(CONNECTED, timeout=60_000)
    if moment == "later":
        page.wait_for_selector(NOT_RUNNING)
        page.wait_for_timeout(1500)
    return serving
