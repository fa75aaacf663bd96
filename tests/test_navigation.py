"""The navigation table (attnviz/app/ui/navigation.py) and the router that app.py runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.ui.navigation import PAGES

ROOT = Path(__file__).resolve().parent.parent


def test_every_page_keeps_the_url_path_its_links_carry():
    """The paths of the pages/ folder the app had before its router: every link written since opens its page."""
    paths = [page.url_path for page in PAGES]
    assert paths == [
        "",
        "Self_attention",
        "Cross_attention",
        "Kernel_attention",
        "Pretrained_model",
        "Is_attention_an_explanation",
        "Learned_attention",
        "Modern_attention",
    ]


def test_no_folder_named_pages_sits_next_to_the_router():
    """Streamlit would discover it too, and run a cold deep link's page file without app.py's router."""
    assert not (ROOT / "pages").exists()


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_each_page_file_draws_the_frame_of_its_own_row(page):
    """The frame takes the page's icon and titles from its row: a file must name the row that lists it."""
    tree = ast.parse((ROOT / page.script).read_text(encoding="utf-8"))
    frames = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "page_frame"
    ]
    assert frames == [page.name]


@pytest.mark.parametrize(
    ("script", "title"), [("app_pages/kernel_attention.py", "核注意力"), ("app_pages/cross_attention.py", "交叉注意力")]
)
def test_the_router_runs_the_page_titled_in_the_links_language(script, title):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["lang"] = "zh-Hans"
    at.run()
    at.switch_page(script)
    at.run()
    assert not at.exception
    assert [element.value for element in at.title] == [title]
