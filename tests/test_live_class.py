"""The live class in sessions (AppTest, one process, the SQLite store): a teacher starts a class, students join with
its link, follow each change, explore on their own and come back; the class's state is validated like a link; the
teacher's secret never reaches the page a class sees; only the teacher's session changes the class."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.classroom import questions
from attnviz.app.classroom import store as class_store
from attnviz.app.classroom.answers import CHOICE_KINDS
from attnviz.app.gate import GATE
from attnviz.app.ui import live, live_panels
from attnviz.app.ui.settings import CLASS_KEY
from attnviz.i18n import t
from testkit.apptest import app_session
from tests.test_app import figures

ROOT = Path(__file__).resolve().parent.parent
SELF, KERNEL = "app_pages/self_attention.py", "app_pages/kernel_attention.py"


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    """Each test its own SQLite file (the server's default store, in a folder of its own)."""
    monkeypatch.setenv("ATTNVIZ_CLASS_STORE", f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    yield class_store.shared_store()


session = app_session  # a new session through the router, on a page, opened from a link


def membership(at: AppTest) -> live.Membership | None:
    return at.session_state[CLASS_KEY] if CLASS_KEY in at.session_state else None  # noqa: SIM401 (no .get)


def start_class(at: AppTest) -> str:
    """Open the sidebar's live-class section and press Start, as a teacher does."""
    at.session_state["live:open"] = True
    at.run()
    at.button(key="live:start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    found = membership(at)
    assert found is not None and found.teacher
    return found.code


def page_text(at: AppTest) -> str:
    parts = [e.value for e in [*at.markdown, *at.caption, *at.info, *at.warning, *at.code, *at.title]]
    parts += [e.label for e in at.expander]
    return "\n".join(str(p) for p in parts)


def test_a_teacher_starts_a_class_and_it_holds_the_teachers_page(own_store):
    teacher = session(SELF)
    teacher.number_input(key="w:self:temperature").set_value(0.5).run()
    code = start_class(teacher)
    state = own_store.get(code)
    assert state is not None and state.page == "self"
    assert state.params.get("T") == "0.5", state.params
    assert code in page_text(teacher)  # the code on the projected page
    assert membership(teacher).secret not in page_text(teacher)  # never the secret
    assert teacher.query_params.get("class") == code  # the class stays in the address


def test_students_follow_the_teachers_changes_and_page(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    student = session(**{"class": code})  # the join link opens the home page of the app
    found = membership(student)
    assert found is not None and not found.teacher and found.following
    assert student.number_input(key="w:self:temperature").value == pytest.approx(1.0)  # the teacher's page
    teacher.number_input(key="w:self:temperature").set_value(0.25).run()
    assert own_store.get(code).params.get("T") == "0.25"
    student.run()
    assert student.number_input(key="w:self:temperature").value == pytest.approx(0.25)
    assert t("live.following", "en", code=code) in page_text(student)
    teacher.switch_page(KERNEL).run()
    assert own_store.get(code).page == "kernel"
    student.run()
    assert [title.value for title in student.title] == [t("kernel.title")]


def test_a_student_explores_and_comes_back(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    student = session(SELF, **{"class": code})
    student.number_input(key="w:self:temperature").set_value(3.0).run()
    assert not membership(student).following  # a change of their own: exploring
    teacher.number_input(key="w:self:temperature").set_value(0.5).run()
    student.run()
    assert student.number_input(key="w:self:temperature").value == pytest.approx(3.0)  # left alone
    student.button(key="live:back").click().run()
    assert membership(student).following
    assert student.number_input(key="w:self:temperature").value == pytest.approx(0.5)


def test_an_unknown_code_is_named_and_the_page_works(own_store):
    student = session(SELF, **{"class": "ZZZZZZ"})
    assert membership(student) is None
    assert any("ZZZZZZ" in e.value for e in student.info), [e.value for e in student.info]
    assert "class" not in student.query_params
    assert student.number_input(key="w:self:temperature").value == pytest.approx(1.0)


def test_markup_in_a_code_is_shown_literally(own_store):
    student = session(SELF, **{"class": "<b>*x*</b>"})
    shown = [e.value for e in student.info]
    assert any("\\<b\\>" in text or "`" in text for text in shown), shown


def test_failed_joins_are_limited_per_client(own_store):
    student = session(SELF)
    for _ in range(class_store.JOIN_ATTEMPTS):
        own_store.failed_join("?", time.time())
    student.query_params["class"] = "ABCDEF"
    student.run()
    assert any(t("error.class_join_wait", "en", minutes=10)[:20] in e.value for e in student.info)


def test_the_class_ends_for_everyone(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    student = session(SELF, **{"class": code})
    teacher.button(key="live:end").click().run()
    assert own_store.get(code) is None
    student.run()
    assert membership(student) is None
    assert t("live.class_ended") in page_text(student)


def test_a_reloaded_teacher_keeps_control_with_the_teacher_link(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    secret = membership(teacher).secret
    again = session(SELF, **{"class": code, "teach": secret})
    assert membership(again).teacher
    assert "teach" not in again.query_params  # the secret leaves the address at once
    again.number_input(key="w:self:temperature").set_value(2.0).run()
    assert own_store.get(code).params.get("T") == "2"
    wrong = session(SELF, **{"class": code, "teach": "not-the-secret"})
    assert membership(wrong) is None


def test_a_students_session_cannot_change_the_class(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    student = session(SELF, **{"class": code})
    before = own_store.get(code).version
    found = membership(student)
    found.role = "teacher"  # a forged role: the store still wants the teacher's secret
    student.number_input(key="w:self:temperature").set_value(4.0).run()
    assert own_store.get(code).version == before
    assert own_store.get(code).params.get("T") is None


def ask(teacher: AppTest, kind: str, about: int = 0) -> None:
    teacher.selectbox(key="live:kind").set_value(kind).run()
    box = next((s.key for s in teacher.selectbox if s.key and s.key.startswith(f"live:about:{kind}:")), None)
    if box is not None:
        teacher.selectbox(key=box).set_value(about).run()
    teacher.button(key="live:ask").click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]


def test_an_open_question_leaves_out_the_presets_worked_answer(own_store):
    """The kernel page's preset note works f(57) out ("(43 + 48) / 2 = 45.5"): while a question is open it shows its
    source alone, on the teacher's page and a following student's, and the whole note again after the reveal."""
    worked = "45.5"  # the notes' f(57), which the number question asks for
    teacher = session(KERNEL)
    code = start_class(teacher)
    student = session(KERNEL, **{"class": code})
    assert worked in page_text(student) and worked in page_text(teacher)
    ask(teacher, "number", 0)
    assert own_store.get(code).question.spec["truth"] == pytest.approx(45.5)
    student.run()
    for page in (teacher, student):
        assert t("live.answer_hidden") in page_text(page)
        assert worked not in page_text(page), page_text(page)
        assert t("preset.waist_weight.source") in page_text(page)  # the source stays
    teacher.button(key="live:reveal").click().run()
    student.run()
    assert worked in page_text(student) and worked in page_text(teacher)


def send(student: AppTest, value: object) -> AppTest:
    """Answer the open question as a student does: choose or type, then Send."""
    question = own_answerable(student)
    if question.kind in CHOICE_KINDS:
        student.button_group[0].set_value(value)
    else:
        student.text_input(key=f"live:answer:{question.id}").set_value(str(value))
    next(b for b in student.button if b.label == t("live.send")).click().run()
    assert not student.exception, [e.value for e in student.exception]
    return student


def own_answerable(student: AppTest):
    """The question open on a student's page."""
    return student.session_state[live.VIEW_KEY].state.question


def test_a_question_hides_the_answer_then_reveals_the_class_answers(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    students = [session(SELF, **{"class": code}) for _ in range(3)]
    charts_before = len(students[0].get("plotly_chart"))
    ask(teacher, "top_key", 0)
    question = own_store.get(code).question
    assert question is not None and question.kind == "top_key" and not question.revealed
    right = question.spec["truth"][0]
    wrong = next(i for i in range(len(question.spec["options"])) if i not in question.spec["truth"])
    for student in students:
        student.run()
        assert t("live.answer_hidden") in page_text(student)  # the page keeps the weights off the screen
        assert len(student.get("plotly_chart")) < charts_before
    assert t("live.answer_hidden") in page_text(teacher)  # the projected page too
    send(students[0], right)
    send(students[1], right)  # changed their mind below: the second answer replaces the first
    send(students[1], wrong)
    send(students[2], wrong)
    stored = own_store.answers(code, question.id)
    assert len(stored) == 3
    teacher.run()
    shown = [(m.label, m.value) for m in teacher.metric]  # the sentence, and the count in large digits
    assert (t("live.answered", answered=3, joined=3), "3 / 3") in shown, shown
    teacher.button(key="live:reveal").click().run()
    assert own_store.get(code).question.revealed
    assert "1 of 3 right" in page_text(teacher)
    label = question.spec["options"][wrong]
    assert t("live.commonest_wrong", answer=label, count=2).split(":")[0] in page_text(teacher)
    assert f"({2} students)" in page_text(teacher) or "2 students" in page_text(teacher)
    for student, good in zip(students, (True, False, False), strict=True):
        student.run()
        texts = [e.value for e in [*student.success, *student.warning]]
        expected = "live.own_right" if good else "live.own_wrong"
        assert any(t(expected, answer="§", truth="§").split("§")[0] in text for text in texts), texts
        assert len(student.get("plotly_chart")) >= charts_before  # the page's own charts are back
    assert len(teacher.get("plotly_chart")) >= 1
    data = live_panels.class_answers_csv(membership(teacher))
    rows = data.decode("utf-8-sig").strip().splitlines()
    assert len(rows) == 1 + 3, rows


LEARNED = "app_pages/learned_attention.py"
FAITHFUL = "app_pages/is_attention_an_explanation.py"


@pytest.mark.parametrize(
    ("script", "params", "kind"),
    [
        (SELF, {}, "row"),
        (KERNEL, {}, "number"),
        (LEARNED, {"tk": "induction"}, "head"),
        (FAITHFUL, {"l": "2", "hd": "3"}, "best_map"),
    ],
    ids=["row-self", "number-kernel", "head-learned", "best_map-faithful"],
)
def test_each_kind_of_question_is_answered_and_marked(own_store, monkeypatch, script, params, kind):
    """A right and a wrong answer, typed or chosen as a student does, marked against the truth the store holds."""
    monkeypatch.setattr(GATE, "share", 1.0)  # no pause at the server's gate after the explanation maps
    teacher = session(script, **params)
    code = start_class(teacher)
    students = [session(script, **{**params, "class": code}) for _ in range(2)]
    ask(teacher, kind, 0)
    question = own_store.get(code).question
    assert question is not None and question.kind == kind
    truth = question.spec["truth"]
    if kind == "row":
        right = ", ".join(f"{w:.3f}" for w in truth)
        wrong = ", ".join("1" if j == 0 else "0" for j in range(len(truth)))  # all weight on the first key
        assert max(abs(w - (1.0 if j == 0 else 0.0)) for j, w in enumerate(truth)) > 0.05
    elif kind == "number":
        right, wrong = f"{truth:.4f}", f"{truth * 1.5 + 1:.4f}"
    else:
        right = truth[0]
        wrong = next(i for i in range(len(question.spec["options"])) if i not in truth)
    for student in students:
        student.run()
    send(students[0], right)
    send(students[1], wrong)
    assert len(own_store.answers(code, question.id)) == 2
    teacher.run()
    teacher.button(key="live:reveal").click().run()
    assert "1 of 2 right" in page_text(teacher), page_text(teacher)
    for student, good in zip(students, (True, False), strict=True):
        student.run()
        texts = [e.value for e in [*student.success, *student.warning]]
        expected = t("live.own_right" if good else "live.own_wrong", answer="§", truth="§").split("§")[0]
        assert any(expected in text for text in texts), texts


def test_a_bad_answer_is_named_and_nothing_is_stored(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    student = session(SELF, **{"class": code})
    ask(teacher, "row", 0)
    student.run()
    keys = len(own_store.get(code).question.spec["options"])
    send(student, ", ".join(["0.1"] * (keys - 1) + ["<b>x</b>"]))
    assert own_store.answers(code, own_store.get(code).question.id) == {}
    shown = [e.value for e in student.error]
    assert shown and "\\<b\\>" in shown[0], shown  # the typed text shown literally


def test_ask_asks_the_kind_chosen_even_before_the_page_ran_with_it(own_store):
    """A teacher who picks a kind and presses Ask at once (a slow page has not run again with the choice)."""
    teacher = session(SELF)
    code = start_class(teacher)
    teacher.selectbox(key="live:kind").set_value("row")
    teacher.button(key="live:ask").click().run()  # both in one run, as a quick click sends them
    assert own_store.get(code).question.kind == "row"


def test_the_join_box_is_open_where_the_class_started_and_folded_on_other_pages(own_store):
    teacher = session(SELF)
    code = start_class(teacher)
    title = t("live.teacher_title", "en", code=code, count=0)

    def join_box(at: AppTest):
        return next(e for e in at.expander if e.label == title)

    assert join_box(teacher).proto.expanded  # the QR code, for the class to scan
    teacher.switch_page(KERNEL).run()
    assert not join_box(teacher).proto.expanded  # the lesson moved on: the chart, not the QR code
    teacher.switch_page(SELF).run()
    assert join_box(teacher).proto.expanded


def test_a_reconnected_student_sees_the_answer_sent_before(own_store):
    """A student's session on a replica that died answered; the browser's new session (the same student, by its
    cookie) shows that answer as sent, and the reveal marks it, not "you did not answer"."""
    teacher = session(SELF)
    code = start_class(teacher)
    before = session(SELF, **{"class": code})
    ask(teacher, "top_key", 0)
    question = own_store.get(code).question
    send(before.run(), question.spec["truth"][0])
    again = session(SELF, **{"class": code})
    membership(again).student_id = membership(before).student_id  # what the student cookie restores
    again.run()
    sent = t("live.sent", answer="§").split("§")[0]
    assert any(sent in e.value for e in again.success), [e.value for e in again.success]
    teacher.button(key="live:reveal").click().run()
    again.run()
    texts = [e.value for e in [*again.success, *again.warning, *again.caption]]
    assert any(t("live.own_right", answer="§", truth="§").split("§")[0] in text for text in texts), texts
    assert t("live.own_none") not in texts


def map_labels(at: AppTest) -> list[str]:
    """The explanation page's rows of maps: each map's name, with its ρ unless a question hides it."""
    [fig] = [f for f in figures(at) if f["layout"]["title"]["text"] == t("fig.maps_title")]
    return fig["data"][0]["y"]


def test_which_map_agrees_best_hides_each_maps_rho_until_the_reveal(own_store, monkeypatch):
    """The explanation page writes each map's ρ against blank-out beside it: the answer to "Which map will agree best
    with blank-out?". While the question is open the maps stay, without their ρ; the reveal lists every ρ."""
    monkeypatch.setattr(GATE, "share", 1.0)
    teacher = session(FAITHFUL)
    code = start_class(teacher)
    student = session(FAITHFUL, **{"class": code})
    assert sum("ρ = " in label for label in map_labels(student)) == 7  # blank-out's own: "ρ = —"
    ask(teacher, "best_map")
    question = own_store.get(code).question
    assert question.kind == "best_map" and question.spec["context"]["layer"] == 6
    student.run()
    for page in (teacher, student):
        labels = map_labels(page)
        assert len(labels) == 7 and not any("ρ" in label for label in labels), labels
        assert t("live.answer_hidden") in page_text(page)
        assert questions.prompt(question) in page_text(page).replace("\\", "")
    send(student, question.spec["truth"][0])
    teacher.button(key="live:reveal").click().run()
    student.run()
    note = questions.reveal_note(question)
    for page in (teacher, student):
        assert sum("ρ = " in label for label in map_labels(page)) == 7
        assert note in page_text(page).replace("\\", ""), page_text(page)
        assert "1 of 1 right" in page_text(page)
