"""The live class's figures, as plain functions of what the clients and the store recorded (bench/tests test them).

Times are `time.perf_counter()` readings of the one process that runs every simulated browser, so a teacher's and a
student's times compare directly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

IGNORED = frozenset({"class", "teach"})  # in every member's address, not the teacher's page state


def page_state(query: str) -> dict[str, str]:
    """A query string's page parameters (last value of a repeated one), without the class's own."""
    found = parse_qs(query, keep_blank_values=True)
    return {k: v[-1] for k, v in found.items() if k not in IGNORED}


def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank percentile `q` (0-100) of `values`; None for none."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(seconds: list[float]) -> dict[str, Any]:
    """n, p50, p95 and max of durations in seconds, in milliseconds."""

    def ms(value: float | None) -> float | None:
        return None if value is None else round(1000 * value, 1)

    return {
        "n": len(seconds),
        "p50_ms": ms(percentile(seconds, 50)),
        "p95_ms": ms(percentile(seconds, 95)),
        "max_ms": ms(percentile(seconds, 100)),
    }


def propagation(
    changes: list[tuple[float, float, dict[str, str]]], seen: list[tuple[float, str]]
) -> tuple[list[float], int]:
    """Each change's delay to one student's page, and how many changes it never showed.

    `changes`: (sent, written, page state) for each of the teacher's changes, in order: the teacher sent its rerun
    at `sent`, and the run that published it finished at `written`. `seen`: (arrival, query string) of every address
    the student's page showed, in order. A change shows when the student's address first carries its page state after
    it was sent; its delay is from `written` (it may be a little negative: the state is published during the
    teacher's run, before that run's end reaches the teacher). A change that the next one replaced before the
    student's page showed it (a student reconnecting) is counted as never shown."""
    delays: list[float] = []
    missed = 0
    for sent, written, state in changes:
        shown = next((t for t, query in seen if sent <= t and page_state(query) == state), None)
        if shown is None:
            missed += 1
        else:
            delays.append(shown - written)
    return delays, missed


ANSWERED = re.compile(r"(\d+)\D+(\d+)")


def answered_counts(text: str) -> tuple[int, int] | None:
    """(answered, joined) from the teacher's "17 of 28 answered"; None if the text holds no such pair."""
    found = ANSWERED.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def aggregate_delay(last_answer: float, metrics: list[tuple[float, str]], expected: int) -> float | None:
    """Seconds from the last answer's acknowledgement to the first metric on the teacher's screen that counts
    `expected` answers (arriving after it); None if none did."""
    for arrived, text in metrics:
        counts = answered_counts(text)
        if arrived >= last_answer and counts is not None and counts[0] >= expected:
            return arrived - last_answer
    return None


def lost_answers(acknowledged: dict[str, str], stored: dict[str, str]) -> list[str]:
    """The students whose acknowledged answer the store does not hold as sent (student id -> answer JSON)."""
    return sorted(student for student, answer in acknowledged.items() if stored.get(student) != answer)


def change_cost(cpu: float, seconds: float, idle_rate: float, changes: int) -> float | None:
    """CPU seconds of one change: a phase's CPU less what the same time idle costs, per change."""
    if changes <= 0:
        return None
    return max(0.0, cpu - idle_rate * seconds) / changes
