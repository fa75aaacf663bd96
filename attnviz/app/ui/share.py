"""The share box: the page's link and QR code, the offline HTML file, and a state file saved and loaded."""

from __future__ import annotations

import io
from collections.abc import Callable
from urllib.parse import urlencode

import segno
import streamlit as st

from attnviz.app.links import link_problem, read_state_file, state_file
from attnviz.app.state import Decoded
from attnviz.app.streamlit_patches.uploads import forget_upload
from attnviz.app.ui import offline
from attnviz.app.ui.common import lazy_expander
from attnviz.app.ui.navigation import app_page
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, error_text, tr


def share_box(
    session: PageSession,
    params: dict[str, str],
    decode: Callable[[dict[str, str]], Decoded],
    extra: Callable[[], None] | None = None,
) -> None:
    """The link that reproduces this page and a QR code to project in class; a state file when the state is too
    large for a link, and a place to load one; `extra` draws exports below them."""
    box = lazy_expander(tr("widget.share_and_export" if extra else "widget.share"), key=session.part("open", "share"))
    if box is None:
        return
    with box:
        problem = link_problem(params)
        link = None
        if problem is None:
            link = (st.context.url or "") + ("?" + urlencode(params) if params else "")
            st.caption(tr("widget.share_caption"))
            st.code(link, language=None, wrap_lines=True)
            st.caption(tr("widget.link_length", count=len(link)))
            if len(link) <= 2000:
                buffer = io.BytesIO()
                segno.make(link, error="m").save(buffer, kind="png", scale=4, border=2)
                st.image(buffer.getvalue(), caption=tr("widget.qr_caption"), width=220)
            else:
                st.info(tr("widget.link_too_long"))
        else:
            st.warning(error_text(problem), icon="⚠️")
        offline_button(session.page, link)
        st.download_button(
            tr("widget.download_state"),
            state_file(session.page, params),
            file_name=f"attnviz_{session.page}.json",
            mime="application/json",
            help=tr("widget.state_file_help"),
        )
        key = session.versioned("upload")
        st.file_uploader(
            tr("widget.load_state"), type=["json"], key=key, on_change=_load_state_file, args=(session, key, decode)
        )
        problem = st.session_state.pop(session.part("upload_error"), None)
        if problem is not None:
            st.error(error_text(problem), icon="🚫")
        if extra is not None:
            extra()


def offline_button(page: str, link: str | None) -> None:
    """The page as it is in one HTML file that fetches nothing, made when the button is clicked (`offline`)."""
    lang, about = current_language(), app_page(page)
    make = offline.file_maker(tr(about.title), tr(about.intro), link, lang)
    if make is None:
        return
    st.download_button(
        tr("widget.offline_html"),
        make,
        file_name=f"attnviz_{page}.html",
        mime="text/html",
        on_click="ignore",  # nothing on the page changes: no rerun
        icon=":material/download:",
        help=tr("widget.offline_help"),
    )


def _load_state_file(session: PageSession, key: str, decode: Callable[[dict[str, str]], Decoded]) -> None:
    """Callback of the state-file uploader: load the file into the page (its parameters checked like a link's), or
    keep what is wrong with it for the share box to say. A callback runs before the page draws its widgets, the only
    time their values may be set; the new state gives the uploader a new key, which empties it."""
    upload = st.session_state.get(key)
    if upload is None:  # the file was removed
        return
    data = upload.getvalue()
    forget_upload(upload)  # read once: the server keeps no copy
    try:
        params = read_state_file(data, session.page)
    except ValueError as exc:
        session.put(exc, "upload_error")
        return
    decoded = decode(params)
    session.load(decoded.state)
    session.warnings = decoded.warnings
