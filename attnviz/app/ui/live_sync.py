"""The live class in every run of a page: join the class a link names, follow it (a following student's page takes
the class's newer state at the start of its run, or in the page's fragment), publish what the teacher's page shows,
and keep an open question's answer off the screens (live.py holds who this session is in the class).
"""

from __future__ import annotations

import json
import time
from typing import Any

import streamlit as st

from attnviz.app.classroom.store import ClassState, shared_store
from attnviz.app.ui import live, settings
from attnviz.app.ui.live import (
    CLASS_LINK_KEY,
    FOLLOWED_KEY,
    VIEW_KEY,
    Membership,
    View,
    leave,
    member,
    notice,
    view,
)
from attnviz.app.ui.navigation import app_page
from attnviz.app.ui.settings import tr
from attnviz.core.errors import AttnvizError
from attnviz.i18n import N_


def begin(page: str) -> View | None:
    """At the start of every page's run: join a class the link names, then follow it (a student's page may switch
    to the teacher's page here), or publish the home page for a teacher (it has no state of its own)."""
    live.join_from_link()
    st.session_state.pop(FOLLOWED_KEY, None)  # a run of the whole page applies the new version here
    found = member()
    if found is None:
        st.session_state.pop(VIEW_KEY, None)
        return None
    try:
        state = shared_store().get(found.code)
    except AttnvizError:
        current = View(found, None, unavailable=True)
        st.session_state[VIEW_KEY] = current
        return current
    if state is None:
        leave()
        notice(N_("live.class_ended"))
        return None
    if not found.teacher and found.following and state.version != found.applied:
        _apply(found, state, page)
    if found.teacher and (found.by_teacher_link or found.sent not in (None, (state.page, state.params))):
        _take_over(found, state, page)  # (a teacher's second device, or one whose class another device moved)
    if found.teacher and page == "home":
        published(page, {})
    current = View(found, state)
    st.session_state[VIEW_KEY] = current
    return current


def _apply(found: Membership, state: ClassState, page: str) -> None:
    """Bring the class's page and state into this student's session, as a link would."""
    found.applied, found.baseline = state.version, None
    params = settings.with_settings(state.params)
    st.session_state[CLASS_LINK_KEY] = state.page  # that page loads the class's state whole (class_link_applied)
    if state.page != page:
        st.switch_page(app_page(state.page).script, query_params=params)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


def class_link_applied(page: str) -> bool:
    """True once, on the run of `page` whose link a follower's run has just set to the class's state: the page loads
    the link whole, an empty one as its defaults, over what the student had (the class's state is the whole state,
    the projector's numbers, not the changes from a student's own)."""
    if st.session_state.get(CLASS_LINK_KEY) != page:
        return False
    del st.session_state[CLASS_LINK_KEY]
    return True


def _take_over(found: Membership, state: ClassState, page: str) -> None:
    """A teacher's device whose page is not the class's: one that just came in by the teacher link (a second
    device) or one whose class another of the teacher's devices moved. It takes the class's page
    and state instead of publishing its own: opening the teacher link moves nobody, and the class's page is one
    thing, whichever device drives it. (A teacher's own reload, by the cookie, publishes the page it opens.)"""
    found.by_teacher_link = False
    found.sent = (state.page, dict(state.params))
    _apply(found, state, page)


def followed() -> None:
    """The follower's trigger: a new class version sets off this rerun (of the whole page, or of the page's fragment
    that holds the follower)."""
    st.session_state[FOLLOWED_KEY] = True


def newer_in_fragment(page: str) -> ClassState | None:
    """In a page's fragment, at its start: the class's newer state when the follower set off this rerun of the
    fragment alone and the fragment can show it by itself (a following student, the same page, the same question);
    None when the rerun was not the follower's or nothing is new. Anything else reruns the whole page, whose start
    applies it (`begin`): another page, a question opened or revealed, a teacher's or an explorer's panel, the class
    ended or unreachable."""
    if not st.session_state.pop(FOLLOWED_KEY, False):
        return None
    found, current = member(), view()
    if found is None or current is None or current.state is None:
        st.rerun(scope="app")
    try:
        state = shared_store().get(found.code)
    except AttnvizError:
        st.rerun(scope="app")
    if state is not None and state.version == current.state.version:
        return None
    if state is None or found.teacher or not found.following or state.page != page:
        st.rerun(scope="app")
    if state.question != current.state.question:  # (state is not None here: st.rerun does not return)
        st.rerun(scope="app")
    return state


def applied_in_fragment(state: ClassState) -> None:
    """The fragment took the class's state `state` into its controls (`newer_in_fragment`): this page shows it now."""
    found = member()
    assert found is not None
    found.applied, found.baseline = state.version, None
    st.session_state[VIEW_KEY] = View(found, state)


def published(page: str, params: dict[str, str]) -> None:
    """The page's state as its run published it: the teacher's goes to the class; a following student's first
    one after the class's is the baseline, and any other means the student changed something (now exploring)."""
    found = member()
    if found is None:
        return
    if found.teacher:
        if found.sent != (page, params):
            try:
                shared_store().set_state(found.code, found.hash, page, params, time.time())
                found.sent = (page, dict(params))
            except AttnvizError as error:
                notice(error)
                return
            shown = view()
            if shown is not None and shown.state is not None and (shown.state.page, shown.state.params) != found.sent:
                # The question panel at the top was drawn from the class's previous state (or, in a fragment's rerun,
                # not drawn again): the choices must be the chart's, so the whole page runs again with the new one
                st.rerun(scope="app")
        return
    if not found.following:
        return
    if found.baseline is None:
        found.baseline = dict(params)
    elif params != found.baseline:
        found.following = False
        notice(N_("live.now_exploring"))


def answers_hidden() -> bool:
    """True while the class's question about this page is open and not yet revealed, for the teacher (whose screen
    the class sees) and a following student: the page keeps the answer off the screen."""
    current = view()
    if current is None or current.state is None or current.state.question is None:
        return False
    question = current.state.question
    if question.revealed or question.spec.get("page") != current.state.page:
        return False
    return current.member.teacher or current.member.following


def answer_hidden_note() -> None:
    """In place of what would give the answer away."""
    st.info(tr("live.answer_hidden"), icon="🙈")


def own_answer(question_id: int) -> Any:
    """This student's answer to a question (decoded), None if none."""
    found = member()
    if found is None or question_id not in found.answers:
        return None
    return json.loads(found.answers[question_id])
