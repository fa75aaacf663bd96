"""Fresh Compose starts under a path prefix: does the first page always draw its chart?

    python -m bench.compose_starts --starts 20 [--image attnviz:latest] [--nginx-image nginx:stable-alpine]

Each start is what a teacher does before a class: `docker compose up -d` on nothing (the volumes removed), wait
until the proxy answers /attnviz/_stcore/health, then a new visitor (a fresh Chromium profile) opens
http://127.0.0.1:PORT/attnviz/ and waits up to 120 s for the home page's chart. Then `docker compose down -v`.
A start whose page draws no chart keeps its evidence in bench/results/compose-starts/<n>/: a screenshot, the
browser's console and failed requests, and every container's log. Writes bench/results/<date>-compose-starts.md.
Needs a Docker engine, Compose (`docker compose` or `docker-compose`), Playwright and Debian's Chromium.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.browser import FIRST_CHART_JS, launch

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "bench" / "results"
PROJECT = "attnviz-starts"


def compose_command() -> list[str]:
    if subprocess.run(["docker", "compose", "version"], capture_output=True, check=False).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise SystemExit("needs Docker Compose: `docker compose` or `docker-compose`")


def compose(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*compose_command(), "--project-name", PROJECT, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_health(url: str, timeout: float = 300) -> float:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with opener.open(url, timeout=5) as answer:
                if answer.status == 200:
                    return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{url} did not answer in {timeout:.0f} s")


def visit(browser, url: str, evidence: Path) -> float | None:
    """Seconds to the first chart drawn, or None (evidence kept) if none is drawn in 120 s."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(FIRST_CHART_JS)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("requestfailed", lambda request: console.append(f"request failed: {request.url} {request.failure}"))
    page.on("response", lambda r: console.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    try:
        page.goto(url, timeout=120_000)
        page.wait_for_function("() => window.__firstChart !== null", timeout=120_000, polling=100)
        return float(page.evaluate("window.__firstChart")) / 1000
    except Exception as error:  # any failure is the evidence this script is after
        evidence.mkdir(parents=True, exist_ok=True)
        console.append(f"error: {error}")
        page.screenshot(path=str(evidence / "page.png"))
        (evidence / "console.txt").write_text("\n".join(console), encoding="utf-8")
        return None
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--image", default="attnviz:latest")
    parser.add_argument("--nginx-image", default="nginx:stable-alpine")
    parser.add_argument("--port", type=int, default=18501)
    options = parser.parse_args()
    env = {
        **os.environ,
        "ATTNVIZ_IMAGE": options.image,
        "ATTNVIZ_NGINX_IMAGE": options.nginx_image,
        "ATTNVIZ_BASE_PATH": "attnviz",
        "ATTNVIZ_PORT": str(options.port),
        "ATTNVIZ_REPLICAS": "2",
    }
    base = f"http://127.0.0.1:{options.port}/attnviz"
    evidence_root = RESULTS / "compose-starts"
    rows = []
    compose(env, "down", "--volumes")
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for start in range(1, options.starts + 1):
                began = time.monotonic()
                up = compose(env, "up", "--detach", "--no-build")
                assert up.returncode == 0, up.stderr
                # `up` returns once the replicas are healthy and the proxy is started (depends_on).
                healthy = time.monotonic() - began + wait_health(f"{base}/_stcore/health")
                evidence = evidence_root / str(start)
                drawn = visit(browser, f"{base}/", evidence)
                if drawn is None:
                    (evidence / "compose.log").write_text(compose(env, "logs", "--no-color").stdout)
                rows.append((start, healthy, drawn))
                print(
                    f"start {start}: proxy healthy after {healthy:.1f} s, first chart: "
                    + (f"{drawn:.1f} s" if drawn is not None else f"NONE in 120 s (see {evidence})"),
                    flush=True,
                )
                compose(env, "down", "--volumes")
        finally:
            browser.close()
            compose(env, "down", "--volumes")
    drawn = [row[2] for row in rows if row[2] is not None]
    lines = [
        f"# {len(rows)} fresh Compose starts under /attnviz/ ({dt.date.today().isoformat()})",
        "",
        f"`python -m bench.compose_starts --starts {options.starts}`: image `{options.image}`, proxy "
        f"`{options.nginx_image}`, 2 replicas. A new visitor opens `/attnviz/` once the proxy answers its health.",
        "",
        f"**First chart drawn: {len(drawn)} of {len(rows)} starts**"
        + (f", median {statistics.median(drawn):.1f} s, slowest {max(drawn):.1f} s." if drawn else "."),
        "",
        "| start | `compose up` → the proxy answers /attnviz/_stcore/health (s) | navigation → first chart drawn (s) |",
        "|---|---|---|",
        *(f"| {n} | {h:.1f} | {d:.1f} |" if d is not None else f"| {n} | {h:.1f} | none |" for n, h, d in rows),
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{dt.date.today().isoformat()}-compose-starts.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
