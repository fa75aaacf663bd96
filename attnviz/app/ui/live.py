"""The live class in a session: who this session is in a class (teacher or student), and joining, starting, leaving
and ending a class. Following the teacher's page and publishing it, in every run, is live_sync.py.

A class's state is the teacher's page and its link parameters (`PageSession.publish` hands them to `published`).
A following student's page applies a newer version at the start of its run, as if a link had been opened: the page's
codec validates it like any link. The student's browser learns of a new version without a rerun (live_follow.py).

The teacher's control rests on a secret. The store keeps only its hash; the teacher's session holds it, and a cookie
of this browser keeps it for a reload or a reconnect to another replica (never in the page, the join link or the QR
code). The sidebar's "teacher link" carries it to another device. A student's id is kept the same way, so that a
reconnected student answers as the same student.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from attnviz.app.classroom.store import (
    JOIN_ATTEMPTS,
    JOIN_WINDOW_SECONDS,
    MAX_NICKNAME,
    ClassState,
    new_secret,
    normal_code,
    secret_hash,
    shared_store,
)
from attnviz.app.ui import settings
from attnviz.app.ui.client import client_address
from attnviz.core.errors import AttnvizError, short
from attnviz.i18n import N_

MEMBER_KEY = settings.CLASS_KEY  # this session's Membership
VIEW_KEY = "attnviz_live_view"  # the class as the last full run saw it (a fragment's rerun reads it)
FOLLOWED_KEY = "attnviz_live_followed"  # set by the follower's trigger: a new class version set off this rerun
# The page whose link a follower's run has just set to the class's state: that page reads it whole, defaults included
# (an empty link is the page's defaults, not "keep what the student had")
CLASS_LINK_KEY = "attnviz_live_class_link"
NOTICE_KEY = "attnviz_live_notice"  # a message for the next run (the class ended, a join failed)
COOKIE_PREFIX = "attnviz_class_"  # + code: "t:<secret>" (teacher) or "s:<student id>" (student)
COOKIE_SECONDS = 12 * 3600


@dataclass
class Membership:
    """This session in a class."""

    code: str
    role: str  # "teacher" or "student"
    secret: str = ""  # the teacher's
    student_id: str = ""
    nickname: str = ""
    following: bool = True  # a student who follows the teacher's page (False: exploring on their own)
    applied: int = -1  # the class version this page shows (a student's)
    baseline: dict[str, str] | None = None  # the page's parameters right after applying it: a change is exploring
    sent: tuple[str, dict[str, str]] | None = None  # the teacher's (page, params) last written to the store
    answers: dict[int, str] = field(default_factory=dict)  # own answers, by question id
    started_on: str = ""  # the page the teacher started the class on (its join box stays open there only)
    cookie: str = ""  # the cookie still to be set in the browser ("" once set)
    follow_id: str = ""  # the class's follow id as last read (a page keeps asking while the store is away)
    by_teacher_link: bool = False  # a teacher's device that came in by the teacher link: it takes the class's page

    @property
    def teacher(self) -> bool:
        return self.role == "teacher"

    @property
    def hash(self) -> str:
        return secret_hash(self.secret)


@dataclass(frozen=True)
class View:
    """What a run shows of the class: the membership, the class (None when unavailable), and whether the store
    could be reached."""

    member: Membership
    state: ClassState | None
    unavailable: bool = False


def member() -> Membership | None:
    """This session's place in a class, if any."""
    found = st.session_state.get(MEMBER_KEY)
    return found if isinstance(found, Membership) else None


def view() -> View | None:
    """The class as this session's last full run saw it."""
    found = st.session_state.get(VIEW_KEY)
    return found if isinstance(found, View) else None


def class_code() -> str | None:
    """The code of this session's class (it goes in every link the page writes)."""
    found = member()
    return found.code if found is not None else None


def notice(message: AttnvizError | str) -> None:
    """A message for the class panel to show on the next run: an error, or a catalogue id (marked with N_)."""
    st.session_state[NOTICE_KEY] = message


def take_notice() -> AttnvizError | str | None:
    """The waiting message, once."""
    return st.session_state.pop(NOTICE_KEY, None)


def _cookie(code: str, value: str) -> str:
    return f"{COOKIE_PREFIX}{code}={value}; Path=/; Max-Age={COOKIE_SECONDS}; SameSite=Strict"


def _text(value: Any) -> str:
    """A header's, cookie's or address's value as text ("" when there is none: a client that is not a browser)."""
    return value if isinstance(value, str) else ""


def _client() -> str:
    """Who is joining, for the limit on failed joins: the client's address as far as the app can trust it (client.py:
    behind ATTNVIZ_TRUSTED_PROXIES proxies, the address they saw; never an X-Forwarded-For the client wrote)."""
    return (_text(client_address()) or "?")[:64]


# ----- joining, starting, leaving ------------------------------------------------------------------------------------
def start(page: str, params: dict[str, str]) -> None:
    """Callback of "Start a class": a new class on this page, with this session as its teacher."""
    secret = new_secret()
    try:
        shared_store().expire(time.time())  # the idle classes end first, and make room under the limit
        state = shared_store().create(secret_hash(secret), page, params, time.time())
    except AttnvizError as error:
        notice(error)
        return
    found = Membership(code=state.code, role="teacher", secret=secret, sent=(page, dict(params)), started_on=page)
    found.cookie = _cookie(state.code, "t:" + secret)
    st.session_state[MEMBER_KEY] = found


def join(code_text: str, nickname: str = "") -> None:
    """Join the class of a typed code or a link (limited per client: failed attempts, JOIN_ATTEMPTS per window)."""
    store, now, client = shared_store(), time.time(), _client()
    if store.failed_joins(client, now) >= JOIN_ATTEMPTS:
        notice(AttnvizError("class_join_wait", minutes=JOIN_WINDOW_SECONDS // 60))
        return
    code = normal_code(code_text)
    state = store.get(code) if code is not None else None
    if code is None or state is None:
        store.failed_join(client, now)
        notice(AttnvizError("class_unknown_code", code=short(code_text, 12)))
        return
    cookie = _text(st.context.cookies.get(COOKIE_PREFIX + code))
    if cookie.startswith("t:") and store.is_teacher(code, secret_hash(cookie[2:])):
        st.session_state[MEMBER_KEY] = Membership(code=code, role="teacher", secret=cookie[2:], sent=None)
        return
    known = cookie[2:] if cookie.startswith("s:") and 8 <= len(cookie) <= 64 else ""
    student = known or secrets.token_urlsafe(12)
    nickname = nickname.strip()[:MAX_NICKNAME]
    store.join(code, student, nickname, now)
    found = Membership(code=code, role="student", student_id=student, nickname=nickname)
    found.cookie = "" if known else _cookie(code, "s:" + student)
    st.session_state[MEMBER_KEY] = found


def leave() -> None:
    """Leave the class (a student), or forget it (the class ended)."""
    st.session_state.pop(MEMBER_KEY, None)
    st.session_state.pop(VIEW_KEY, None)
    st.query_params.pop(settings.CLASS_PARAM, None)


def end() -> None:
    """Callback of "End the class": its data deleted from the store."""
    found = member()
    if found is None or not found.teacher:
        return
    try:
        shared_store().end(found.code, found.hash)
    except AttnvizError as error:
        notice(error)
        return
    leave()
    notice(N_("live.ended_by_you"))


def set_nickname(nickname: str) -> None:
    """A student's nickname (optional; shown literally to the teacher, capped)."""
    found = member()
    if found is None or found.teacher:
        return
    found.nickname = nickname.strip()[:MAX_NICKNAME]
    shared_store().join(found.code, found.student_id, found.nickname, time.time())


def explore() -> None:
    """Callback of "Explore on my own": the page stays, and no longer follows the class."""
    found = member()
    if found is not None:
        found.following = False


def back_to_class() -> None:
    """Callback of "Back to the class": the class's page and state come back at the start of the next run."""
    found = member()
    if found is not None:
        found.following = True
        found.applied = -1


def join_from_link() -> None:
    """A link with ?class=CODE: join that class (a new session, a reloaded tab, a reconnect to another replica). With
    ?teach=SECRET too (the teacher's own link) as its teacher; the secret leaves the address at once."""
    raw = st.query_params.get(settings.CLASS_PARAM)
    secret = st.query_params.get(settings.TEACH_PARAM)
    if secret is not None:
        st.query_params.pop(settings.TEACH_PARAM, None)
    found = member()
    if raw is None or (found is not None and normal_code(raw) == found.code and (secret is None or found.teacher)):
        return
    if found is not None:
        leave()
    try:
        if secret is not None:
            _teach(raw, secret)
        else:
            join(raw)
    except AttnvizError as error:
        notice(error)
    if member() is None:
        st.query_params.pop(settings.CLASS_PARAM, None)


def _teach(code_text: str, secret: str) -> None:
    """Take over a class as its teacher with the teacher link's secret (failed attempts count as failed joins)."""
    store, now, client = shared_store(), time.time(), _client()
    if store.failed_joins(client, now) >= JOIN_ATTEMPTS:
        notice(AttnvizError("class_join_wait", minutes=JOIN_WINDOW_SECONDS // 60))
        return
    code = normal_code(code_text)
    if code is None or len(secret) > 64 or not store.is_teacher(code, secret_hash(secret)):
        store.failed_join(client, now)
        notice(AttnvizError("class_teacher_link"))
        return
    found = Membership(code=code, role="teacher", secret=secret, by_teacher_link=True)
    found.cookie = _cookie(code, "t:" + secret)
    st.session_state[MEMBER_KEY] = found
