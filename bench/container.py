"""The image's figures that deploy/README.md quotes, measured on a container deploy/smoke.sh has just started.

    python -m bench.container --container NAME --url URL [--build-s S --build-steps N --cached-steps C
                              --size-bytes B --healthy-s H]

smoke.sh passes what it measured itself (the build, the image's size, the time to healthy); this adds, on the
container while it is still cold:
- its memory before the first visitor (`docker stats`),
- navigation -> first chart drawn for the first visitor, who opens a share link on the cold container, then for
  the next visitors (fresh browser profiles, nothing cached; median of 3),
- its memory after those pages.
It prints the table and writes bench/results/<date>-container.{md,json}. Needs Playwright and Debian's Chromium.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import subprocess
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.browser import first_chart_at, launch

RESULTS = Path(__file__).resolve().parent / "results"
SHARE_LINK = "Self_attention?p=unit_sentences&b=1"
# docker stats' units, in MiB.
UNITS = {"B": 2**-20, "KiB": 2**-10, "kB": 1e3 / 2**20, "MiB": 1.0, "MB": 1e6 / 2**20, "GiB": 2**10, "GB": 1e9 / 2**20}


def memory_mib(container: str) -> float:
    """The container's memory use in MiB, as `docker stats` reports it (e.g. "188.3MiB / 23.47GiB")."""
    usage = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", container],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    match = re.match(r"\s*([\d.]+)\s*([A-Za-z]+)", usage)
    if not match or match[2] not in UNITS:
        raise ValueError(f"cannot read docker stats' memory use: {usage!r}")
    return float(match[1]) * UNITS[match[2]]


def measure(container: str, url: str, visitors: int = 3) -> dict[str, float]:
    figures = {"idle_memory_mib": memory_mib(container)}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            figures["cold_first_chart_s"] = first_chart_at(browser, f"{url}/{SHARE_LINK}", timeout_s=120)
            figures["next_first_chart_s"] = statistics.median(
                first_chart_at(browser, f"{url}/{SHARE_LINK}") for _ in range(visitors)
            )
        finally:
            browser.close()
    figures["memory_after_mib"] = memory_mib(container)
    return figures


def table(figures: dict) -> str:
    rows = []
    if "build_s" in figures:
        cached = figures.get("cached_steps", 0)
        how = "from scratch" if not cached else f"{cached} of {figures.get('build_steps', '?')} steps from cache"
        args = f", `{figures['build_args']}`" if figures.get("build_args") else ""
        rows.append(("docker build", f"{figures['build_s']:.0f} s ({how}{args})"))
    if "size_bytes" in figures:
        rows.append(("image size", f"{figures['size_bytes'] / 1e9:.2f} GB"))
    if "healthy_s" in figures:
        rows.append(("docker run → healthy (the health check runs every 10 s)", f"{figures['healthy_s']:.0f} s"))
    rows += [
        ("memory before the first visitor", f"{figures['idle_memory_mib']:.0f} MiB"),
        (
            "first visitor: a share link on the cold container → first chart drawn",
            f"{figures['cold_first_chart_s']:.1f} s",
        ),
        ("next visitors (median of 3) → first chart drawn", f"{figures['next_first_chart_s']:.1f} s"),
        ("memory after these pages", f"{figures['memory_after_mib']:.0f} MiB"),
    ]
    return "| figure | value |\n|---|---|\n" + "".join(f"| {name} | {value} |\n" for name, value in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--container", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--build-s", type=float)
    parser.add_argument("--build-steps", type=int)
    parser.add_argument("--cached-steps", type=int)
    parser.add_argument("--size-bytes", type=int)
    parser.add_argument("--healthy-s", type=float)
    parser.add_argument("--build-args", help="the build's extra arguments, shown with the figures")
    options = parser.parse_args()
    given = {k: v for k, v in vars(options).items() if k not in ("container", "url") and v is not None}
    figures = given | measure(options.container, options.url.rstrip("/"))
    text = table(figures)
    print(text, end="")
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"{dt.date.today().isoformat()}-container"
    stem.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(
        f"# The image's figures ({dt.date.today().isoformat()}, `bash deploy/smoke.sh`)\n\n{text}", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
