"""The live class's questions on the page: the teacher asks, watches the answers come in and reveals them; a student
answers and then sees the class's answers beside the truth, and their own.

What a question may be about, its truth, the checks of an answer and the class's aggregate are plain functions
(attnviz/app/classroom/questions.py, answers.py), computed from the class's state as the page computes it. A
question's truth is worked out when it is asked, from the state the teacher's page published last.
"""

from __future__ import annotations

import functools
import json
import time
import zlib
from typing import Any

import streamlit as st

from attnviz.app.classroom import answers as class_answers
from attnviz.app.classroom import questions
from attnviz.app.classroom.store import Question
from attnviz.app.ui import live, live_sync
from attnviz.app.ui.common import chart, shared_value
from attnviz.app.ui.models import get_model
from attnviz.app.ui.settings import current_language, error_text, md_escape, presenting, tr
from attnviz.core.errors import AttnvizError
from attnviz.figures import classroom as figures
from attnviz.models.bert import ModelUnavailableError

COUNT_EVERY_S = 1.0  # the teacher's "17 of 28 answered" is read again this often while a question is open


def _model() -> Any:
    """The pretrained model the app holds (None when it is not installed: its pages say so themselves)."""
    try:
        return get_model()
    except ModelUnavailableError:
        return None


def _offers(page: str, params: dict[str, str]) -> list[questions.Offer]:
    """What the class may be asked on this state (made once for every teacher showing the same state)."""
    key = ("live_offers", page, tuple(sorted(params.items())))
    try:
        return shared_value(key, lambda: questions.offers(page, params, model=_model()))
    except (AttnvizError, ModelUnavailableError):
        return []


# ----- the teacher ----------------------------------------------------------------------------------------------------
def question_for_teacher(page: str, current: live.View) -> None:
    """Ask a question about this page, follow the answers, reveal them, close it."""
    state = current.state
    assert state is not None
    question = state.question
    if question is not None and question.spec.get("page") != state.page:
        question = None  # asked on another page: the teacher has moved on
    if question is None:
        _ask(page, current)
    elif not question.revealed:
        with st.container(border=True, key="live_question_open"):
            st.markdown(f"**{md_escape(questions.prompt(question, current_language()))}**")
            _answer_count(state.code, question.id)
            ask, close, _ = st.columns([2, 2, 3])  # side by side at the left (not one at the middle of the screen)
            ask.button(tr("live.reveal"), key="live:reveal", type="primary", on_click=_reveal, args=(question,))
            close.button(tr("live.cancel_question"), key="live:cancel", on_click=_close)
    else:
        with st.container(border=True, key="live_question_revealed"):
            st.markdown(f"**{md_escape(questions.prompt(question, current_language()))}**")
            _reveal_view(state.code, question, own=None)
            st.button(tr("live.close_question"), key="live:close", on_click=_close)


def _ask(page: str, current: live.View) -> None:
    state = current.state
    assert state is not None
    if state.page != page:
        return
    offers = _offers(page, state.params)
    if not offers:
        st.caption(tr("live.no_questions"))
        return
    with st.expander(tr("live.ask_title"), expanded=not presenting(), key="live:ask_open"):
        kinds = [offer.kind for offer in offers]
        kind_col, about_col, button_col = st.columns([3, 2, 1], vertical_alignment="bottom")
        kind = kind_col.selectbox(
            tr("live.question_kind"),
            kinds,
            format_func=lambda k: tr(questions.KIND_NAMES[k]),
            key="live:kind",
        )
        offer = offers[kinds.index(kind)] if kind in kinds else offers[0]
        choices = offer.choices
        about = 0
        if len(choices) > 1 or choices[0][1]:
            labels = dict(choices)
            about = about_col.selectbox(
                tr("live.question_about"),
                [index for index, _ in choices],
                format_func=lambda i: str(labels.get(i, i)),
                key=about_key(kind, choices),
            )
        button_col.button(
            tr("live.ask"), key="live:ask", type="primary", on_click=_open, args=(page, kind, about), width="stretch"
        )


def about_key(kind: str, choices: list[tuple[int, str]]) -> str:
    """The "About" box's key for a kind and its choices: a new box when the tokens change (a keyed box kept showing the
    old sentence's token in the browser, "brown", while the class was asked about "w3")."""
    labels = json.dumps([label for _, label in choices], ensure_ascii=False)
    return f"live:about:{kind}:{zlib.crc32(labels.encode()):08x}"


def _open(page: str, kind: str, about: int) -> None:
    """Callback of "Ask": the question's truth from the class's current state, then the question opens for all.

    The kind and its subject are read from their select boxes as this click found them, not from the run that drew the
    button: on a slow page a teacher may choose a kind and press Ask before the page has run again with that choice
    (the button's arguments would ask the kind chosen before)."""
    found, current = live.member(), live.view()
    if found is None or not found.teacher or current is None or current.state is None:
        return
    store = live.shared_store()
    try:
        state = store.get(found.code)
        if state is None:
            return
        chosen = st.session_state.get("live:kind", kind)
        if chosen != kind:
            offer = next((o for o in _offers(state.page, state.params) if o.kind == chosen), None)
            kind, about = chosen, st.session_state.get(about_key(chosen, offer.choices), 0) if offer else 0
        question = questions.make_question(
            state.page, state.params, kind, int(about), state.questions_asked + 1, model=_model()
        )
        store.set_question(found.code, found.hash, question, time.time())
    except (AttnvizError, ModelUnavailableError) as error:
        live.notice(error if isinstance(error, AttnvizError) else AttnvizError("class_store_unavailable"))


def _reveal(question: Question) -> None:
    found = live.member()
    if found is None or not found.teacher:
        return
    revealed = Question(question.id, question.kind, question.spec, revealed=True)
    try:
        live.shared_store().set_question(found.code, found.hash, revealed, time.time())
    except AttnvizError as error:
        live.notice(error)


def _close() -> None:
    found = live.member()
    if found is None or not found.teacher:
        return
    try:
        live.shared_store().set_question(found.code, found.hash, None, time.time())
    except AttnvizError as error:
        live.notice(error)


@st.fragment(run_every=COUNT_EVERY_S)
def _answer_count(code: str, question_id: int) -> None:
    """ "17 of 28 answered", read again every second (the teacher's session only). A question revealed, cancelled or
    ended from the teacher's other device (the teacher link) reruns the whole page: the projector shows it too."""
    try:
        store = live.shared_store()
        answered, joined = len(store.answers(code, question_id)), len(store.students(code))
        state = store.get(code)
    except AttnvizError:
        st.caption(tr("live.unavailable"))
        return
    if state is None or state.question is None or state.question.id != question_id or state.question.revealed:
        st.rerun()
    # the count in large digits, readable from the back of the room; the sentence says what it counts
    st.metric(tr("live.answered", answered=answered, joined=joined), f"{answered} / {joined}")


# ----- the student ----------------------------------------------------------------------------------------------------
def question_for_student(page: str, current: live.View) -> None:
    """The open question with a place to answer, or the revealed one with the class's answers and one's own."""
    state, found = current.state, current.member
    if state is None or state.question is None or state.question.spec.get("page") != state.page:
        return
    question = state.question
    if not found.following and not question.revealed:
        st.info(tr("live.question_while_exploring"), icon="❓")
        return
    with st.container(border=True, key="live_student_question"):
        st.markdown(f"**{md_escape(questions.prompt(question, current_language()))}**")
        if question.id not in found.answers:
            _recall_answer(found, question.id)
        own = live_sync.own_answer(question.id)
        if question.revealed:
            _reveal_view(state.code, question, own=own, answered=question.id in found.answers)
            return
        _answer_form(found, question)
        if own is not None:
            labels = questions.option_labels(question, current_language())
            st.success(tr("live.sent", answer=md_escape(class_answers.value_text(question, own, labels))), icon="✅")


def _recall_answer(found: live.Membership, question_id: int) -> None:
    """This student's answer as the store holds it: a session that reconnected to another replica, or a reloaded tab,
    is the same student (its cookie) but no longer remembers what it sent."""
    try:
        stored = live.shared_store().answers(found.code, question_id).get(found.student_id)
    except AttnvizError:
        return
    if stored is not None:
        found.answers[question_id] = stored


def _answer_form(found: live.Membership, question: Question) -> None:
    labels = questions.option_labels(question, current_language())
    key = f"live:answer:{question.id}"
    with st.form(key=f"live:form:{question.id}", border=False):
        if question.kind in class_answers.CHOICE_KINDS:
            st.pills(
                tr("live.your_answer"),
                list(range(len(labels))),
                format_func=lambda i: md_escape(labels[i]),  # a pill label is Markdown; tokens are user text
                selection_mode="single",
                key=key,
            )
        elif question.kind == "row":
            st.text_input(tr("live.your_row", keys=", ".join(labels)), key=key, max_chars=class_answers.MAX_ANSWER_TEXT)
        else:
            st.text_input(tr("live.your_number"), key=key, max_chars=64)
        st.form_submit_button(tr("live.send"), type="primary", on_click=_send, args=(question, key))
    problem = st.session_state.pop("live:answer_error", None)
    if problem is not None:
        st.error(error_text(problem), icon="🚫")


def _send(question: Question, key: str) -> None:
    """Callback of "Send": the answer checked, then stored (a second one replaces the first)."""
    found = live.member()
    raw = st.session_state.get(key)
    if found is None or raw is None or raw == "":
        return
    try:
        stored = class_answers.parse_answer(question, raw)
        live.shared_store().answer(found.code, question.id, found.student_id, stored, time.time())
    except AttnvizError as error:
        st.session_state["live:answer_error"] = error
        return
    found.answers[question.id] = stored


# ----- the reveal -----------------------------------------------------------------------------------------------------
def _reveal_view(code: str, question: Question, own: Any, answered: bool = False) -> None:
    """The class's answers beside the truth (a chart the class shares), the commonest wrong answer, and one's own."""
    lang = current_language()
    try:
        stored = live.shared_store().answers(code, question.id)
    except AttnvizError:
        st.caption(tr("live.unavailable"))
        return
    summary = questions.aggregate(question, stored, lang=lang)
    labels = questions.option_labels(question, lang)
    truth = class_answers.value_text(question, question.spec.get("truth"), labels, decimals=2)
    st.markdown(tr("live.truth", truth=md_escape(truth), correct=summary.correct, answered=summary.answered))
    note = questions.reveal_note(question, lang)  # best_map: each map's ρ, hidden on the page until now
    if note is not None:
        st.markdown(md_escape(note))
    if summary.commonest_wrong is not None:  # above the chart: on a projector the chart fills the rest of the screen
        text, count = summary.commonest_wrong
        st.markdown(tr("live.commonest_wrong", answer=md_escape(text), count=count))
    if summary.answered:
        build = functools.partial(_aggregate_figure, question, summary, labels, lang)
        key = ("live_reveal", code, question.id, summary.answered, tuple(sorted(stored.items())), lang)
        chart(build, f"class_answers_{question.id}", table="folded", shared=key)
    if own is not None:
        mine = class_answers.value_text(question, own, labels)
        right = class_answers.marked(question, own)
        (st.success if right else st.warning)(
            tr("live.own_right" if right else "live.own_wrong", answer=md_escape(mine), truth=md_escape(truth))
        )
    elif answered is False and live.member() is not None and not live.member().teacher:
        st.caption(tr("live.own_none"))


def _aggregate_figure(question: Question, summary: questions.Aggregate, labels: list[str], lang: str) -> Any:
    title = tr("live.class_answers")
    if question.kind in class_answers.CHOICE_KINDS:
        return figures.choice_histogram(labels, summary.counts, question.spec.get("truth", []), title, lang=lang)
    if question.kind == "row":
        return figures.row_comparison(labels, summary.truth, summary.mean, summary.std, title, lang=lang)
    right = [class_answers.marked(question, value) for value in summary.values or []]
    tolerance = class_answers.number_tolerance(question)
    return figures.number_distribution(
        summary.values, summary.truth, title, right=right, tolerance=tolerance, lang=lang
    )
