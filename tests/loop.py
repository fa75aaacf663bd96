"""Run a coroutine to its end from a test, whatever event loop the test's thread already holds."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_in_own_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` in a thread of its own: in the full suite, Playwright's sync API (another test's
    browser) may hold an event loop in the test's thread, where asyncio.run refuses to start another."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
