"""No input lost when a replica dies: nginx in front of two replicas, the serving one killed with SIGKILL.

The page reconnects through the proxy to the other replica, into a new session. A student changes the
temperature while the page is reconnecting (Chromium types as soon as the field takes input again), right after
it reconnected, or a moment later. The new value must reach the server: the page computes with it, the link
carries it, and the field still shows it. The causes, each tested alone, are in tests/test_reconnect.py.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from testkit.browser import (
    NOT_RUNNING,
    RECONNECT_MOMENTS,
    ConsoleRecorder,
    exceptions,
    goto,
    kill_serving_replica,
    wait_for_plotly,
)

from .test_proxy import Cluster, cluster, shared_cluster, wait_until  # noqa: F401 (cluster, shared_cluster: fixtures)

LABEL = "Temperature T"


def temperature_in_link(page: Page) -> str | None:
    """The T parameter of the page's address."""
    values = parse_qs(urlsplit(page.url).query).get("T")
    return values[0] if values else None


def set_temperature(page: Page, value: str) -> None:
    """Type `value` into the temperature field and commit it (Playwright waits until the field takes input)."""
    field = page.get_by_role("spinbutton", name=LABEL, exact=True)
    field.fill(value, timeout=60_000)
    field.press("Enter")


@pytest.mark.parametrize("moment", RECONNECT_MOMENTS)
def test_a_change_made_around_a_replica_loss_is_kept(
    cluster: Cluster,  # noqa: F811 (the module's two replicas, each killed and restarted in turn)
    new_page: Callable[..., Page],
    console_errors: ConsoleRecorder,
    moment: str,
) -> None:
    for trial in range(2):  # the second trial kills the replica the first one restarted, or the other one
        page = new_page()
        goto(page, cluster.url_for("Self_attention"))
        wait_for_plotly(page, count=1)
        set_temperature(page, "0.5")
        page.wait_for_function("() => new URLSearchParams(location.search).get('T') === '0.5'")
        serving = kill_serving_replica(page, cluster.replicas, moment)
        value = f"{1.5 + trial / 10:.1f}"
        set_temperature(page, value)
        try:
            page.wait_for_function(f"() => new URLSearchParams(location.search).get('T') === '{value}'", timeout=60_000)
        except PlaywrightTimeout:
            pytest.fail(f"{moment}, trial {trial}: {value} typed, the link kept T={temperature_in_link(page)}")
        page.wait_for_selector(NOT_RUNNING)
        expect(page.get_by_role("spinbutton", name=LABEL, exact=True)).to_have_value(value)
        assert exceptions(page) == []
        page.context.close()
        serving.restart()
        wait_until(lambda: all(r.running for r in cluster.replicas), "the killed replica is back")
    console_errors.clear()  # the lost connections were reported while a replica was down: expected
