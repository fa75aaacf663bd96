"""What the live class draws: the teacher's join box and the students' banner at the top of every page, and the
class's place in the sidebar (start, join, the teacher's own link, the answers as CSV, end).

The teacher's secret appears only in the sidebar's "teacher link" section, which a projector does not show (the
sidebar is folded in presentation mode) and which is built only while opened. The join link and the QR code carry the
class code alone. Nicknames and codes typed by students are shown literally.
"""

from __future__ import annotations

import io
import os
from urllib.parse import urlencode

import segno
import streamlit as st

from attnviz.app.classroom import address, questions
from attnviz.app.classroom.store import IDLE_SECONDS, MAX_NICKNAME, MAX_STUDENTS
from attnviz.app.ui import live, settings
from attnviz.app.ui.common import lazy_expander
from attnviz.app.ui.live_follow import follow_class
from attnviz.app.ui.live_questions import question_for_student, question_for_teacher
from attnviz.app.ui.navigation import app_page
from attnviz.app.ui.settings import current_language, error_text, md_escape, presenting, tr
from attnviz.core.errors import AttnvizError

FOLLOWED_IN_FRAGMENT = frozenset({"self", "cross", "kernel"})  # pages that hold the follower in their fragment
JOINED_EVERY_S = 2.0  # the teacher's "· 17 joined" is read again this often (students join while it is projected)


def top_of_page(page: str, current: live.View | None) -> None:
    """Below the page's title: a message from the last run, and the class as this session sees it."""
    waiting = live.take_notice()
    if waiting is not None:
        st.info(tr(waiting) if isinstance(waiting, str) else error_text(waiting), icon="👥")
    if current is None:
        return
    found = current.member
    if page not in FOLLOWED_IN_FRAGMENT:
        _follower(page, current)
    if current.unavailable:
        st.warning(tr("live.unavailable"), icon="📡")
        return
    if found.teacher:
        state = current.state
        assert state is not None
        # open where the class started, until its first question; folded elsewhere (one click opens it for a late
        # student): on another page the chart, not the QR code, is what the class should see
        fresh = state.questions_asked == 0 and state.question is None and page == found.started_on
        _teacher_box(page, state.code, expanded=fresh)
        question_for_teacher(page, current)
    else:
        _student_banner(current)
        question_for_student(page, current)


def fragment_follower(page: str) -> None:
    """The class's follower inside the page's fragment of controls and results (a page of FOLLOWED_IN_FRAGMENT): a
    change of the teacher's that only moves those controls reruns that fragment alone on each student's page, not
    the whole page (the cost of following a change; bench/liveclass)."""
    current = live.view()
    if current is not None:
        _follower(page, current)


def _follower(page: str, current: live.View) -> None:
    """The follower (live_follow.py), and the cookie that keeps this browser's place in the class."""
    found = current.member
    # A student follows the class. So does a teacher whose page is not yet the class's (just switched: the page
    # publishes its state below, after the panel was drawn without questions): the new version reruns it once.
    # While the store is away a student's page keeps asking (its follower reruns it when the store answers again).
    stale = current.state is not None and current.state.page != page
    if current.state is not None:
        found.follow_id = current.state.follow_id
    follow_id = found.follow_id if found.follow_id and (not found.teacher or stale) else None
    version = current.state.version if current.state is not None else max(found.applied, 0)
    follow_class(follow_id, version, page, cookie=found.cookie)
    found.cookie = ""


def join_base(page: str) -> address.JoinBase:
    """Where students reach this server: the app's root as the teacher reached it, or, when that names the teacher's
    computer (localhost), its address on the class's network or the operator's public URL (classroom/address.py)."""
    url = st.context.url or ""
    path = app_page(page).url_path
    if path and url.rstrip("/").endswith("/" + path):
        url = url.rstrip("/")[: -len(path)]
    listening = st.get_option("server.address")
    public = os.environ.get(address.PUBLIC_URL_ENV)
    return address.join_base(url, listening, public, address.network_address())


def join_link(code: str, page: str) -> str:
    """The link students open: this server's root, with the class code only."""
    return join_base(page).url + "?" + urlencode({settings.CLASS_PARAM: code})


@st.fragment(run_every=JOINED_EVERY_S)
def _teacher_box(page: str, code: str, expanded: bool) -> None:
    """The class code, its join link and a QR code large enough to scan from the back of a room; open until the
    first question, then folded (one click brings it back for a late student). Drawn again every few seconds, on
    its own: the projector counts the students as they join, and says so when the store cannot be reached."""
    count = _count_students(code)
    if count is None:
        st.warning(tr("live.unavailable"), icon="📡")
        return
    title = tr("live.teacher_title", code=code, count=count)
    with st.expander(title, expanded=expanded):
        base = join_base(page)
        link = base.url + "?" + urlencode({settings.CLASS_PARAM: code})
        qr, words = st.columns([2, 3] if presenting() else [1, 2], gap="medium")
        buffer = io.BytesIO()
        segno.make(link, error="m").save(buffer, kind="png", scale=10, border=2)
        qr.image(buffer.getvalue(), width=360 if presenting() else 220)
        words.markdown(tr("live.join_how"))
        words.markdown(f"## {code}")
        words.code(link, language=None, wrap_lines=True)
        if base.local_only:
            words.warning(tr("live.link_local_only", setting=address.PUBLIC_URL_ENV), icon="🏠")
        words.caption(tr("live.limits", students=MAX_STUDENTS, hours=IDLE_SECONDS // 3600))


def _count_students(code: str) -> int | None:
    try:
        return len(live.shared_store().students(code))
    except AttnvizError:
        return None


def _student_banner(current: live.View) -> None:
    """Whether this student follows the class, and the way out or back."""
    state, found = current.state, current.member
    assert state is not None
    banner, button = st.columns([4, 1], vertical_alignment="center")
    if found.following:
        banner.info(tr("live.following", code=state.code), icon="👀")
        button.button(tr("live.explore"), on_click=live.explore, key="live:explore", width="stretch")
    else:
        banner.warning(tr("live.exploring", code=state.code), icon="🧭")
        button.button(tr("live.back"), on_click=live.back_to_class, key="live:back", width="stretch", type="primary")


def sidebar(page: str) -> None:
    """The sidebar's live-class section (open while the session is in a class)."""
    found = live.member()
    box = lazy_expander(tr("live.sidebar_title"), key="live:open", expanded=found is not None)
    if box is None:
        return
    with box:
        if found is None:
            _start_or_join(page)
        elif found.teacher:
            _teacher_sidebar(found, page)
        else:
            _student_sidebar(found)


def _start_or_join(page: str) -> None:
    last = st.session_state.get("last_link")
    params = last[1] if isinstance(last, tuple) and last[0] == page else {}
    st.caption(tr("live.start_help"))
    st.button(tr("live.start"), on_click=_start, args=(page, params), key="live:start", type="primary")
    st.divider()
    with st.form("live:join", border=False):
        code = st.text_input(tr("live.code"), max_chars=12, key="live:code")
        nickname = st.text_input(tr("live.nickname"), max_chars=MAX_NICKNAME, key="live:nickname")
        if st.form_submit_button(tr("live.join")):
            _join(code, nickname)


def _start(page: str, params: dict[str, str]) -> None:
    try:
        live.start(page, params)
    except AttnvizError as error:
        live.notice(error)


def _join(code: str, nickname: str) -> None:
    try:
        live.join(code, nickname)
    except AttnvizError as error:
        live.notice(error)
    if live.member() is not None:
        st.rerun()


def _teacher_sidebar(found: live.Membership, page: str) -> None:
    st.caption(tr("live.teacher_sidebar", code=found.code))
    link = join_link(found.code, page) + "&" + urlencode({settings.TEACH_PARAM: found.secret})
    private = lazy_expander(tr("live.teacher_link"), key="live:open_teacher_link")
    if private is not None:
        with private:
            st.caption(tr("live.teacher_link_help"))
            st.code(link, language=None, wrap_lines=True)
    data = class_answers_csv(found)
    if data is not None:
        st.download_button(
            tr("live.download_csv"),
            data,
            file_name=f"attnviz_class_{found.code}.csv",
            mime="text/csv",
            on_click="ignore",
        )
    st.button(tr("live.end"), on_click=live.end, key="live:end", help=tr("live.end_help"))


def _student_sidebar(found: live.Membership) -> None:
    st.caption(tr("live.student_sidebar", code=found.code))
    nickname = st.text_input(tr("live.nickname"), value=found.nickname, max_chars=MAX_NICKNAME, key="live:my_name")
    if nickname.strip()[:MAX_NICKNAME] != found.nickname:
        try:
            live.set_nickname(nickname)
        except AttnvizError as error:
            st.warning(error_text(error))
    if found.nickname:
        st.caption(tr("live.your_nickname", name=md_escape(found.nickname)))
    st.button(tr("live.leave"), on_click=live.leave, key="live:leave")


def class_answers_csv(found: live.Membership) -> bytes | None:
    """Every answer of the class as CSV (anonymous: nicknames only where given), None if nothing was asked."""
    try:
        store = live.shared_store()
        asked = store.questions(found.code)
        if not asked:
            return None
        by_question = {q.id: store.answers(found.code, q.id) for q in asked}
        return questions.answers_csv(asked, by_question, store.students(found.code), lang=current_language())
    except AttnvizError:
        return None
