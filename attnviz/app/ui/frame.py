"""The frame of every page: page config, title, the live class's place at the top, and the shared sidebar."""

from __future__ import annotations

import streamlit as st

from attnviz.app.ui import live_panels, live_sync, offline, settings
from attnviz.app.ui.common import after_first_paint, begin_first_paint
from attnviz.app.ui.navigation import app_page
from attnviz.app.ui.settings import tr


def page_frame(page: str, link_warnings: bool = False) -> None:
    """Page config, title, the live class (live.py) and the shared sidebar (settings first); every page calls this
    first. `page` names its row
    of the navigation table (its icon, title and intro). The link's bad settings are shown with the page's own link
    warnings, or here (`link_warnings`) on a page without a state of its own."""
    about = app_page(page)
    warnings = settings.from_link()
    offline.begin(page)
    settings.begin_run()
    current = live_sync.begin(page)  # a following student's page may switch to the teacher's page here
    st.set_page_config(
        page_title=f"{tr(about.title)} · attnviz",
        page_icon=about.icon,
        layout="wide",
        initial_sidebar_state="collapsed" if settings.presenting() else "auto",
    )
    st.html(settings.PAGE_CSS + (settings.PRESENTATION_CSS if settings.presenting() else ""))  # the app's own
    st.title(tr(about.title), anchor=False)  # no link icon: the page's address is its link, and on a phone it wrapped
    if not settings.presenting():  # on a projector the teacher says it, and the first chart needs the room
        st.caption(tr(about.intro))
    live_panels.top_of_page(page, current)
    with st.sidebar:
        if begin_first_paint(page):  # the sidebar comes after the main chart
            after_first_paint()
        else:
            settings.sidebar_controls()
            live_panels.sidebar(page)
            st.caption(tr("frame.sidebar"))
    for warning in warnings if link_warnings else ():
        st.warning(settings.error_text(warning), icon="⚠️")
