"""`make run` is safe to show a class: an error shows no traceback or server path, and there is no Deploy button.

The server is started with exactly the flags the Makefile's `run` target passes (`make class-flags` prints them), and
the same failing page under Streamlit's defaults shows both, so the check can tell the two apart.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

from testkit.browser import goto, wait_ready
from testkit.server import REPO_ROOT, StreamlitServer

FAILING_PAGE = Path(__file__).with_name("failing_page.py")
SECRET = "/srv/secret/path.py"


def class_flags() -> dict[str, str]:
    """The Makefile's CLASS_FLAGS as Streamlit options: {"server.headless": "true", ...}."""
    words = subprocess.run(
        ["make", "-s", "class-flags"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(words) % 2 == 0 and all(word.startswith("--") for word in words[::2]), words
    return {name[2:]: value for name, value in zip(words[::2], words[1::2], strict=True)}


def test_the_class_flags_are_the_images_production_settings() -> None:
    flags = class_flags()
    assert flags["client.showErrorDetails"] == "none"
    assert flags["client.toolbarMode"] == "viewer"
    assert flags["server.fileWatcherType"] == "none"
    assert flags["server.headless"] == "true"


@pytest.mark.parametrize("settings", ["class", "default"])
def test_an_error_shows_no_details_and_no_deploy_button_in_class(new_page: Callable[..., Page], settings: str) -> None:
    options = {"server.headless": "true", "server.fileWatcherType": "none"}
    if settings == "class":
        options = class_flags()
    with StreamlitServer(FAILING_PAGE, server_options=options, log_name=f"class-settings-{settings}") as server:
        page = new_page(viewport={"width": 1280, "height": 900})
        goto(page, server.url_for(""))
        wait_ready(page)
        page.wait_for_selector('[data-testid="stException"], [data-testid="stAlert"]', timeout=30_000)
        text = page.locator('[data-testid="stMain"]').inner_text()
        deploy = page.locator('[data-testid="stAppDeployButton"]').count()
    if settings == "class":
        assert SECRET not in text and "RuntimeError" not in text and "Traceback" not in text, text
        assert "failing_page.py" not in text
        assert deploy == 0
    else:  # Streamlit's defaults show the details: the check above can fail
        assert SECRET in text and deploy == 1
