"""A shared link opened by a new visitor, on this checkout and on an earlier commit, paired: what a change to the
app's frame (its navigation, say) costs the first look at a page.

    python -m bench.coldlink --before <commit> [--rounds 6] [--path "Cross_attention?lang=zh-Hans&p=d2l_additive"]

Each round starts a server of each version in turn (the order alternates from round to round, so that a drifting
machine weighs on both alike), and times, in a fresh browser profile each time:
- `cold`: the first visitor of a server that has run nothing yet (it imports the app's modules in that visit);
- `warm`: a new visitor of the same server just after (a fresh session, the modules loaded).
Each visit records, in milliseconds since the navigation started: `ready`, when the page's script has finished, the
tab has the page's title, its heading is shown and no skeleton is left; `complete`, when besides nothing is pending
(the rest of a first paint has come) and the first chart is drawn.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tarfile
import tempfile
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from playwright.sync_api import Browser, sync_playwright

from testkit.browser import CHROMIUM_ARGS, CHROMIUM_PATH
from testkit.server import REPO_ROOT, StreamlitServer

DEFAULT_PATH = "Cross_attention?lang=zh-Hans&p=d2l_additive"
DEFAULT_TITLE = "交叉注意力"

# Polled from the first moment of the document: the times at which the page was ready and complete (see above)
_WATCH_JS = """
(() => {
  const seen = (window.__coldLink = { ready: null, complete: null });
  const poll = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const heading = document.querySelector('[data-testid="stMain"] h1');
    const ready = app && app.getAttribute('data-test-script-state') === 'notRunning'
      && document.title.startsWith(window.__expectedTitle) && heading
      && heading.textContent.trim() === window.__expectedTitle
      && !document.querySelector('[data-testid="stSkeleton"]');
    if (ready && seen.ready === null) seen.ready = performance.now();
    const chart = [...document.querySelectorAll('.js-plotly-plot')].some((gd) => gd._fullLayout && gd.data);
    if (ready && chart && !document.querySelector('[class*="st-key-attnviz_pending"]')) {
      seen.complete = performance.now();
    } else {
      setTimeout(poll, 5);
    }
  };
  poll();
})();
"""


def checkout(commit: str, into: Path) -> Path:
    """The app's files at `commit` (git archive) in `into`, with its catalogues compiled."""
    archive = subprocess.run(["git", "archive", commit], cwd=REPO_ROOT, check=True, capture_output=True).stdout
    archive_path = into / "app.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(into / "app", filter="data")
    for po in (into / "app" / "attnviz" / "i18n" / "locale").glob("*/LC_MESSAGES/attnviz.po"):
        with po.open("rb") as source, po.with_suffix(".mo").open("wb") as target:
            write_mo(target, read_po(source))
    return into / "app"


def visit(browser: Browser, url: str, title: str, timeout_s: float = 120) -> dict[str, float]:
    """One new visitor (a fresh browser profile) opening `url`: its `ready` and `complete` times in ms."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(f"window.__expectedTitle = {json.dumps(title)};")
    context.add_init_script(_WATCH_JS)
    page = context.new_page()
    try:
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_function("() => window.__coldLink.complete !== null", timeout=timeout_s * 1000, polling=50)
        return {key: float(value) for key, value in page.evaluate("window.__coldLink").items()}
    finally:
        context.close()


def measure(before: Path, rounds: int, path: str, title: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Paired rounds: {version: {"cold"|"warm": {"ready"|"complete": [ms, ...]}}}."""
    versions = {"before": before, "after": REPO_ROOT}
    samples = {v: {kind: {"ready": [], "complete": []} for kind in ("cold", "warm")} for v in versions}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, headless=True)
        try:
            for index in range(rounds):
                order = list(versions) if index % 2 == 0 else list(reversed(versions))
                for version in order:
                    with StreamlitServer("app.py", cwd=versions[version], log_name=f"coldlink-{version}") as server:
                        for kind in ("cold", "warm"):
                            times = visit(browser, server.url_for(path), title)
                            for key, value in times.items():
                                samples[version][kind][key].append(value)
                    print(version, index, {kind: samples[version][kind]["ready"][-1] for kind in ("cold", "warm")})
        finally:
            browser.close()
    return samples


def summary(samples: dict[str, dict[str, dict[str, list[float]]]]) -> list[str]:
    """A Markdown table: medians of each version and the median of the paired differences (after - before)."""
    lines = ["| visit | time | before (median ms) | after (median ms) | after - before, paired (median, min..max) |"]
    lines.append("|---|---|---|---|---|")
    for kind in ("cold", "warm"):
        for key in ("ready", "complete"):
            old, new = samples["before"][kind][key], samples["after"][kind][key]
            diffs = [b - a for a, b in zip(old, new, strict=True)]
            lines.append(
                f"| {kind} | {key} | {statistics.median(old):.0f} | {statistics.median(new):.0f} | "
                f"{statistics.median(diffs):+.0f} ({min(diffs):+.0f}..{max(diffs):+.0f}) |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit to compare this checkout with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--path", default=DEFAULT_PATH)
    parser.add_argument("--title", default=DEFAULT_TITLE, help="the page's heading in the link's language")
    parser.add_argument("--json", type=Path, help="write the samples here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="attnviz-before-") as folder:
        before = checkout(args.before, Path(folder))
        samples = measure(before, args.rounds, args.path, args.title)
    if args.json:
        args.json.write_text(json.dumps(samples, indent=1))
    print("\n".join(summary(samples)))


if __name__ == "__main__":
    main()
