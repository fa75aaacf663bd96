"""AppTest: on every page a large rerun takes its turn at the server's gate, and small reruns never wait for it.

In the class load test, three adversarial clients (the crafted link reopened again and again, 254-WordPiece
sentences in new sessions) pushed 30 students' p95 from 72 ms to 178 ms, and both replicas over their memory limit
with several large runs in memory at once. Here another session holds the gate's turn (a large rerun in progress).
"""

from __future__ import annotations

import threading

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.budget import model_seconds
from attnviz.app.gate import GATE, HEAVY_SECONDS
from attnviz.app.model_state import ModelState
from attnviz.i18n import LANGUAGES
from attnviz.models.bert import load_minilm
from tests.messages import message, says
from tests.test_app import KERNEL, SELF
from tests.test_app import run_page as run
from tests.test_budget import CRAFTED
from tests.test_gate import Holder

MODEL = "app_pages/pretrained_model.py"
# 202 WordPieces with [CLS] and [SEP]: a long sentence, as a student pastes a paragraph
LONG_SENTENCE = " ".join(f"word{i}" for i in range(100))
MANY_POINTS = {
    "k": ",".join(str(round(i * 0.01, 2)) for i in range(512)),
    "v": ",".join(str(round((i % 7) * 0.5, 1)) for i in range(512)),
}


@pytest.fixture
def held(monkeypatch):
    """The server's gate, held by another session's large rerun for the whole test; a waiter gives up after 0.5 s."""
    monkeypatch.setattr(GATE, "max_wait", 0.5)
    monkeypatch.setattr(GATE, "share", 1.0)  # no pause after the holder's turn for the tests that follow
    holder = Holder(GATE)
    yield holder
    holder.done()


def busy(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if any(says(w.value, "gate.busy", lang) for lang in LANGUAGES)]


def test_a_long_model_sentence_is_large_and_the_default_one_small():
    model = load_minilm()
    assert model_seconds(len(model.encode(LONG_SENTENCE).tokens)) > HEAVY_SECONDS
    assert model_seconds(len(model.encode(ModelState().sentence).tokens)) < HEAVY_SECONDS / 2


@pytest.mark.parametrize(
    ("path", "params"),
    [(SELF, {}), (SELF, {"s": "the cat sat on the mat because it was tired", "h": "2"}), (MODEL, {}), (KERNEL, {})],
)
def test_small_reruns_never_wait_for_a_large_one(held, path, params):
    at = run(path, **params)
    assert not busy(at)
    assert at.get("plotly_chart")


def test_a_large_link_waits_its_turn_and_then_says_the_server_is_busy(held):
    at = run(SELF, **CRAFTED)
    assert busy(at) == [message("gate.busy", ahead=1)]
    notes = [i.value for i in at.info]
    assert any(says(note, "budget.rows") or says(note, "budget.compare") for note in notes)  # the budget's note stays
    assert not any(says(c.value, "gate.waiting") for c in at.caption)  # the wait is over
    assert not at.get("plotly_chart")  # nothing large was computed
    assert any(n.label == message("attention.temperature") for n in at.number_input)  # the controls stay
    at.session_state["self:open:share"] = True  # and the share box, with the link of this state
    at.run()
    assert not at.exception and len(busy(at)) == 1
    assert any(says(c.value, "widget.link_length") for c in at.caption)


def test_the_busy_note_speaks_the_interface_language(held):
    at = run(SELF, **CRAFTED, lang="zh-Hans")
    assert busy(at) == [message("gate.busy", "zh-Hans", ahead=1)]


def test_a_large_link_runs_when_its_turn_comes(monkeypatch):
    monkeypatch.setattr(GATE, "share", 1.0)
    holder = Holder(GATE)
    threading.Timer(0.5, holder.done).start()  # the other large rerun ends while this one waits
    at = run(SELF, **CRAFTED)
    assert not busy(at)
    assert len(at.get("plotly_chart")) >= 2


def test_a_long_model_sentence_waits_its_turn_and_keeps_the_controls(held):
    at = run(MODEL, s=LONG_SENTENCE)
    assert len(busy(at)) == 1
    assert not at.get("plotly_chart")
    assert any(s.label == message("model.layer") for s in at.selectbox)
    assert at.text_input[0].value == LONG_SENTENCE  # the sentence is kept, to try again


def test_learning_sigma_from_many_points_waits_its_turn(held):
    at = run(KERNEL, **MANY_POINTS)
    assert at.get("plotly_chart")  # the regression itself is small
    next(b for b in at.button if b.label == message("kernel.learn_button")).click().run()
    assert not at.exception
    assert len(busy(at)) == 1
    assert not any(says(s.value, "kernel.learned") for s in at.success)
