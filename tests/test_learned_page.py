"""The learned-attention page in AppTest: the shipped models on typed input, bad input, links, and training."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.learned_state import LearnedState, decode_learned, encode_learned
from attnviz.app.training.jobs import QUEUE
from attnviz.models.learned.train import TrainSettings

PAGE = str(Path(__file__).resolve().parent.parent / "app_pages" / "learned_attention.py")


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _markdown(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


def _captions(at: AppTest) -> str:
    return "\n".join(str(c.value) for c in at.caption)


def test_the_default_page_translates_the_date_and_shows_the_shipped_run():
    at = _page()
    assert "**22 November 2026** → `2026-11-22`" in _markdown(at)
    assert "Held-out accuracy: 100.0% of 2000 dates" in _captions(at)
    slider = at.select_slider(key="w:learned:step")
    assert slider.value == 300 and slider.options[0] == "0" and slider.options[-1] == "300"
    assert len(at.get("plotly_chart")) == 3  # the attention, the curves, step 0 beside the chosen step
    assert not at.button  # the shipped run needs no training: no Train button


def test_a_chinese_date_and_its_worked_row_use_the_trained_weights():
    at = _page(d="二〇二六年十一月二十二日")
    assert "→ `2026-11-22`" in _markdown(at)
    text = _markdown(at)
    assert r"\mathbf W_q \mathbf q + \mathbf W_k \mathbf k_{1}" in text  # step 1 worked out with the model's W
    assert "**W_k** (64, 128)" in text and "**w_v** (1, 64)" in text


def test_unknown_characters_are_named_literally_and_the_page_keeps_working():
    at = _page(d="22 Nov <b>2026</b>🙂")
    errors = [str(e.value) for e in at.error]
    assert len(errors) == 1
    assert "\\<" in errors[0] and "\\>" in errors[0] and "🙂" in errors[0]
    assert "<b>" not in errors[0]
    assert at.select_slider(key="w:learned:step").value == 300  # the history is still there


def test_the_sequence_task_labels_its_heads_and_measures_each_ablation():
    at = _page(tk="induction")
    text = _markdown(at)
    assert (
        "**L1 H1 · previous token**: previous-token score 0.552, induction score 0.157; switched off, accuracy" in text
    )
    assert "**L2 H1 · induction**" in text and "**L2 H2 · induction**" in text
    without = re.search(r"L1 H1 · previous token\*\*: .*?accuracy ([\d.]+)% \((-[\d.]+) points\)", text)
    assert without and float(without[1]) < 90 and float(without[2]) < -10  # the previous-token head matters
    # From the repeat's first symbol (the second D) on, each guess is the symbol that followed it the first time
    assert " D→H H→A A→Q Q→K K→M M→P P→B " in text
    assert at.select_slider(key="w:learned:step").value == 600
    assert "**W_q** (32, 64)" in text and "rows 1–32 of layer 2" in _captions(at)  # the followed head: L2 H1


@pytest.mark.parametrize(
    ("sequence", "wanted"),
    [("A B Z 9", ["Z", "9"]), ("A", ["1", "2 to 20"]), ("A" * 21, ["21", "2 to 20"])],
)
def test_a_bad_sequence_says_what_is_wrong(sequence, wanted):
    at = _page(tk="induction", q=sequence)
    errors = " ".join(str(e.value) for e in at.error)
    assert all(part in errors for part in wanted), errors


def test_hostile_link_values_fall_back_with_warnings():
    at = _page(tk="chess", n="99999", st="-4", h="9", d="x" * 500)
    warnings = " ".join(str(w.value) for w in at.warning)
    for field in ("task", "training steps", "training step shown", "followed head", "date"):
        assert field in warnings, (field, warnings)
    assert at.radio(key="w:learned:task").value == "dates"


def test_steps_beyond_the_task_are_capped_with_a_warning():
    at = _page(tk="dates", n="1500")
    assert any("1500 steps is more than this task allows; using 1000" in str(w.value) for w in at.warning)
    assert at.number_input(key="w:learned:steps").value == 1000


def test_the_link_holds_task_seed_steps_and_input():
    state = LearnedState(task="induction", sequence="A B A B", seed=7, steps=50, step=20, head=2)
    params = encode_learned(state)
    assert params == {"tk": "induction", "q": "A B A B", "sd": "7", "n": "50", "st": "20", "h": "2"}
    assert decode_learned(params).state == state
    assert state.training() == TrainSettings("induction", 7, 50).resolved()  # the typed input trains nothing
    assert LearnedState().training() == TrainSettings("dates").resolved()  # the shipped checkpoint's settings


def test_pressing_train_trains_once_for_a_class_and_shows_the_run():
    params = {"tk": "induction", "sd": "5", "n": "30", "q": "C D E C D E"}
    first, second = _page(**params), _page(**params)
    settings = TrainSettings("induction", 5, 30, ("C D E C D E",))
    assert QUEUE.get(settings) is None
    assert "seed 5 for 30 steps" in _captions(first)
    assert any("until this seed and number of steps has been trained" in str(i.value) for i in first.info)
    first.button(key="learned:train").click().run()
    job = QUEUE.get(settings)
    assert job is not None
    second.button(key="learned:train").click().run()
    assert QUEUE.get(settings) is job  # the second student joins the same training
    assert QUEUE.wait(job, timeout=120) and job.status == "done", job.error
    for at in (first, second):
        at.run()
        assert not at.exception
        slider = at.select_slider(key="w:learned:step")
        assert slider.options[-1] == "30" and slider.value == 30
        assert not any("until this seed" in str(i.value) for i in at.info)  # the trained model is the one shown
        assert "(30 training steps)" in _captions(at)
    fresh = _page(**params)
    assert fresh.select_slider(key="w:learned:step").options[-1] == "30"  # a link to it shows it at once


def test_students_typing_their_own_dates_at_the_default_seed_train_nothing():
    """Issue 36: each typed date made a training of its own, though the weights are the shipped ones. The history
    shown is the shipped run's, recorded on its own date, and the page says so."""
    for date in ("3 March 2027", "2027年3月3日", "Mar 3, 2027"):
        at = _page(d=date)
        assert not at.button  # no Train button: nothing to train
        assert at.select_slider(key="w:learned:step").options[-1] == "300"
        assert "recorded on “22 November 2026”" in _captions(at)
    at = _page(d="22 November 2026")
    assert "recorded on" not in _captions(at)  # the student's own date is the recorded one


def test_two_dates_at_one_seed_share_one_training():
    first, second = _page(sd="6", n="20", d="1 May 2027"), _page(sd="6", n="20", d="2027年5月1日")
    first.button(key="learned:train").click().run()
    job = QUEUE.get(TrainSettings("dates", 6, 20))
    assert job is not None
    second.run()
    assert not second.button  # the other student's page follows the same training
    assert QUEUE.wait(job, timeout=120) and job.status == "done", job.error


def test_the_page_in_chinese():
    at = _page(lang="zh-Hans", tk="induction")
    assert at.radio(key="w:learned:task").label == "任务"
    assert "第 1 层 头 1 · 前一个词元" in _markdown(at)


def test_the_dates_page_in_chinese():
    at = _page(lang="zh-Hant")
    assert at.text_input(key="w:learned:date").label == "一個日期，照人們的寫法"
    assert "留出集準確率" in _captions(at)
    assert "寫出計算過程：一列，用訓練好的權重" in [e.label for e in at.expander]


def test_switching_a_head_off_shows_the_model_without_it_and_goes_in_the_link():
    whole = _page(tk="induction")
    at = _page(tk="induction", off="1")
    warning = " ".join(str(w.value) for w in at.warning)
    assert "L1 H1 · previous token is switched off" in warning and "79.4%" in warning and "-20.6 points" in warning
    assert _markdown(at).split("\n")[0] != _markdown(whole).split("\n")[0]  # other guesses without the head
    titles = [a["text"] for a in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["annotations"]]
    assert titles[:4] == ["L1 H1 (off)", "L1 H2", "L2 H1", "L2 H2"]
    at.selectbox(key="w:learned:off").set_value(0).run()
    assert not at.warning and "off" not in at.query_params
    at.selectbox(key="w:learned:off").set_value(3).run()
    assert at.query_params["off"] == ["3"] or at.query_params["off"] == "3"
