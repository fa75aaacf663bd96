"""Sessions of the app in one process (Streamlit's AppTest), as the tests open them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def scan_installed_components_once() -> None:
    """Every AppTest's first run scans the metadata of every installed package for Streamlit components (~1 s here,
    of a run that takes 0.1 s): one scan per test process instead, since no test installs a package. Streamlit 1.67's
    `BidiComponentManager.discover_and_register_components` imports `scan_component_manifests` from its module at
    each call; tests/test_testkit.py fails when that changes."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):  # not cached yet
        manifest_scanner.scan_component_manifests = functools.cache(scan)


def app_session(script: str = "app.py", after_home: Callable[[], None] | None = None, **params: str) -> AppTest:
    """A new session through the router, on `script`, opened from a link with `params`. A page other than home is
    reached from the home page's first run, after which `after_home` is called."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    if script != "app.py":
        at.run()
        if after_home is not None:
            after_home()
        at.switch_page(script)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def counting(calls: dict[str, int], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, counting its calls in `calls[name]`."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return function(*args, **kwargs)

    return wrapper
