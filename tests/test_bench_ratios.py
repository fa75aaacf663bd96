"""The benchmark's cost ratio: a page's server CPU per rerun over the minimal page's measured around it."""

from __future__ import annotations

import pytest

from bench.run import cost_ratios


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
