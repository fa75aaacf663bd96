"""The benchmark's cost ratio: a page's server CPU per rerun over the minimal page's measured around it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import cost_ratios

ROOT = Path(__file__).resolve().parents[2]


def _row(round_: int, slot: int, page: str, cpu: float) -> dict[str, object]:
    return {"round": round_, "slot": slot, "page": page, "cpu_ms_per_rerun": cpu}


def test_a_page_is_measured_against_the_minimal_windows_just_before_and_after_it() -> None:
    # One round on a machine that slows down by half while it runs: the minimal page 8, 10, 12 ms around the pages.
    paired = [
        _row(1, 0, "minimal", 8.0),
        _row(1, 1, "self", 10.0),
        _row(1, 2, "minimal", 10.0),
        _row(1, 3, "cross", 13.2),
        _row(1, 4, "minimal", 12.0),
    ]
    assert cost_ratios(paired, "self") == [pytest.approx(10.0 / 9.0)]
    assert cost_ratios(paired, "cross") == [pytest.approx(13.2 / 11.0)]  # not 13.2 / 8, the round's first window


def test_each_round_gives_one_ratio_from_its_own_windows() -> None:
    paired = [
        _row(1, 0, "minimal", 8.0),
        _row(1, 1, "self", 12.0),
        _row(1, 2, "minimal", 8.0),
        _row(2, 0, "minimal", 10.0),
        _row(2, 1, "self", 12.0),
        _row(2, 2, "minimal", 10.0),
    ]
    assert cost_ratios(paired, "self") == [pytest.approx(1.5), pytest.approx(1.2)]


def test_the_benchmark_and_the_load_tools_load_without_playwright() -> None:
    """Only the browser benchmarks need Playwright (bench.browser, loaded when asked for): the rest, and this test's
    module, are collected on a machine without it."""
    modules = "bench.run, bench.loadclient, bench.classload, bench.uploads, bench.sessions, bench.training"
    code = f"import sys, {modules}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'playwright'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
