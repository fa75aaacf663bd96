"""The app's pages, in one table, and the router that app.py runs: `st.navigation` with the pages' titles in the
interface language.

The page files live in app_pages/, not in a folder named pages/, which Streamlit would also discover (and then run a
deep link's page file without the router). Each page file draws its own frame (`frame.page_frame`), so that a page
file also runs alone (the tests' AppTest).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attnviz.app.ui import settings
from attnviz.i18n import N_, t


@dataclass(frozen=True)
class AppPage:
    """One page: its catalogue name (its state's and its ids' prefix), url path, icon, file and message ids."""

    name: str
    url_path: str  # "" for the home page; the others keep the paths of the old pages/ folder, which links carry
    icon: str
    script: str  # relative to app.py
    title: str  # message id of its title (navigation menu, browser tab, heading)
    intro: str  # message id of the line under the title


PAGES = (
    AppPage("home", "", "🔍", "app_pages/home.py", N_("home.title"), N_("home.intro")),
    AppPage("self", "Self_attention", "🔁", "app_pages/self_attention.py", N_("self.title"), N_("self.intro")),
    AppPage("cross", "Cross_attention", "🔀", "app_pages/cross_attention.py", N_("cross.title"), N_("cross.intro")),
    AppPage(
        "kernel", "Kernel_attention", "📈", "app_pages/kernel_attention.py", N_("kernel.title"), N_("kernel.intro")
    ),
    AppPage("model", "Pretrained_model", "🧠", "app_pages/pretrained_model.py", N_("model.title"), N_("model.intro")),
    AppPage(
        "faithful",
        "Is_attention_an_explanation",
        "🔬",
        "app_pages/is_attention_an_explanation.py",
        N_("faithful.title"),
        N_("faithful.intro"),
    ),
    AppPage(
        "learned", "Learned_attention", "🌱", "app_pages/learned_attention.py", N_("learned.title"), N_("learned.intro")
    ),
    AppPage(
        "modern", "Modern_attention", "🚀", "app_pages/modern_attention.py", N_("modern.title"), N_("modern.intro")
    ),
)
BY_NAME = {page.name: page for page in PAGES}


def app_page(name: str) -> AppPage:
    """The page of catalogue name `name` ("home", "self", ...)."""
    return BY_NAME[name]


def run_app() -> None:
    """app.py: the navigation menu in the interface language, then the page the URL names (home for "/").

    The link's settings are taken first, so that a link's ?lang= titles the menu in the same run (the page's frame
    reports a bad value)."""
    settings.from_link()
    lang = st.session_state.get(settings.LANG.param, settings.LANG.default)
    pages = [
        st.Page(
            page.script,
            title=t(page.title, lang),
            icon=page.icon,
            url_path=page.url_path or None,
            default=not page.url_path,
        )
        for page in PAGES
    ]
    st.navigation(pages, position="sidebar").run()
