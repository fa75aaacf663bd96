"""The container smoke check: run by deploy/smoke.sh against a freshly started container, never by `make test`.

Not named test_*.py on purpose: pytest collects it only when given this file explicitly, so CI (which has no
Docker engine) neither runs nor skips it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from playwright.sync_api import Page

from testkit.browser import ConsoleRecorder, exceptions, goto, screenshot, wait_for_plotly
from testkit.server import StreamlitServer

from .test_proxy import BASE_PATH_PROBE, SHARE_LINK, open_page

SMOKE_URL = os.environ.get("ATTNVIZ_SMOKE_URL", "").rstrip("/")
MODEL_LINK = "Pretrained_model?l=1&hd=3&s=one+two+three+four"


def test_container_serves_a_cold_share_link(
    server: StreamlitServer, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """The image's app, opened first by a share link (nothing ran it before), draws what a local server draws."""
    assert SMOKE_URL, "set ATTNVIZ_SMOKE_URL to the container's address (deploy/smoke.sh does)"
    console_errors.ignore.append(BASE_PATH_PROBE)
    container = new_page()
    in_container = open_page(container, f"{SMOKE_URL}/{SHARE_LINK}")
    screenshot(container, "container_share_link")
    assert open_page(new_page(), server.url_for(SHARE_LINK)) == in_container
    open_page(new_page(), f"{SMOKE_URL}/")
    console_errors.assert_clean()


def test_container_runs_the_pretrained_model_offline(
    server: StreamlitServer, new_page: Callable[..., Page], console_errors: ConsoleRecorder
) -> None:
    """The model inside the image (no download) draws the same 72 heads, head view and neuron view as a local
    server."""
    assert SMOKE_URL, "set ATTNVIZ_SMOKE_URL to the container's address (deploy/smoke.sh does)"
    console_errors.ignore.append(BASE_PATH_PROBE)
    shown = []
    for page, url in ((new_page(), f"{SMOKE_URL}/{MODEL_LINK}"), (new_page(), server.url_for(MODEL_LINK))):
        goto(page, url)
        figures = wait_for_plotly(page, count=3)
        assert exceptions(page) == [], f"{url} shows an exception"
        shown.append([{k: v for k, v in figure.items() if k != "index"} for figure in figures])
        screenshot(page, "container_model" if not shown[1:] else "local_model")
    # The same numbers up to float rounding: the image runs torch on one thread, the local server on all cores, and
    # matrix products sum in a different order.
    assert _close(shown[0], shown[1])
    console_errors.assert_clean()


def _close(a: object, b: object, path: str = "figures") -> bool:
    """Equal structure and text; floats equal to 1e-4 relative or 1e-5 absolute. Raises naming the first difference."""
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), f"{path}: {a!r} != {b!r}"
        assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5), f"{path}: {a} != {b}"
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)} items"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{index}]")
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            _close(a[key], b[key], f"{path}.{key}")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
    return True
