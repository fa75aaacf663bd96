"""The learned-attention page in AppTest: the shipped models on typed input, bad input, links, and training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.learned_state import LearnedState, decode_learned, encode_learned
from attnviz.app.training import jobs
from attnviz.app.training.jobs import QUEUE
from attnviz.figures.style import POSITION_MARK
from attnviz.i18n import t
from attnviz.models.learned import induction
from attnviz.models.learned.train import TrainSettings
from tests.messages import message, pattern, says
from tests.test_errors_coded import english_in

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
    assert message("learned.translation", text="22 November 2026", output="2026-11-22") in _markdown(at)
    assert says(_captions(at), "learned.dates_accuracy", accuracy="100.0%", count=2000, steps=300)
    slider = at.select_slider(key="w:learned:step")
    assert slider.value == 300 and slider.options[0] == "0" and slider.options[-1] == "300"
    assert len(at.get("plotly_chart")) == 3  # the attention, the curves, step 0 beside the chosen step
    assert not at.button  # the shipped run needs no training: no Train button


def test_a_chinese_date_and_its_worked_row_use_the_trained_weights():
    at = _page(d="二〇二六年十一月二十二日")
    assert says(_markdown(at), "learned.translation", output="2026-11-22")
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
    previous, induction = message("learned.pattern_previous_token"), message("learned.pattern_induction")
    first = message("learned.head_title", layer=1, head=1, label=previous)
    assert says(text, "learned.head_line", head=first, previous="0.552", induction="0.157")
    for head in (1, 2):
        assert says(text, "learned.head_line", head=message("learned.head_title", layer=2, head=head, label=induction))
    without = pattern("learned.head_line", head=first).search(text)
    assert without and float(without["without"].rstrip("%")) < 90  # the previous-token head matters
    assert float(without["change"]) < -10
    # From the repeat's first symbol (the second D) on, each guess is the symbol that followed it the first time
    assert " D→H ✓ H→A ✓ A→Q ✓ Q→K ✓ K→M ✓ M→P ✓ P→B ✓ " in text
    assert at.select_slider(key="w:learned:step").value == 600
    assert "**W_q** (32, 64)" in text
    assert says(_captions(at), "learned.head_weights", first=1, last=32, layer=2)  # the followed head: L2 H1


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
    for field in ("task", "steps", "step", "head", "date"):
        assert message(f"field.{field}") in warnings, (field, warnings)
    assert at.radio(key="w:learned:task").value == "dates"


def test_steps_beyond_the_task_are_capped_with_a_warning():
    at = _page(tk="dates", n="1500")
    assert message("learned.steps_capped", steps=1500, most=1000) in [str(w.value) for w in at.warning]
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
    assert says(_captions(first), "learned.not_recorded", seed=5, steps=30, ahead=message("learned.trainings_none"))
    assert any(says(i.value, "learned.shipped_until_trained") for i in first.info)
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
        assert not any(says(i.value, "learned.shipped_until_trained") for i in at.info)  # the trained model is shown
        assert says(_captions(at), "learned.sequence_accuracy", steps=30)
    fresh = _page(**params)
    assert fresh.select_slider(key="w:learned:step").options[-1] == "30"  # a link to it shows it at once


def _two_steps(at: AppTest) -> list[dict]:
    """The two heatmaps of "step 0 beside the chosen step" (the last chart on the page): their columns' labels as
    written (without the position mark a repeated label carries) and their weights."""
    from html import unescape

    from tests.test_app import _array

    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    return [
        {"x": [unescape(str(x)).split(POSITION_MARK)[0] for x in trace["x"]], "z": _array(trace["z"]).tolist()}
        for trace in spec["data"]
        if trace["type"] == "heatmap"
    ]


def test_students_typing_their_own_dates_at_the_default_seed_train_nothing():
    """Issue 36: each typed date made a training of its own, though the weights are the shipped ones. Issue 40: the
    history shown is on the student's own date, put through the weights the shipped run kept at each step."""
    for date in ("3 March 2027", "2027年3月3日", "Mar 3, 2027"):
        at = _page(d=date)
        assert not at.button  # no Train button: nothing to train
        assert at.select_slider(key="w:learned:step").options[-1] == "300"
        assert says(_captions(at), "learned.replayed") and not says(_captions(at), "learned.recorded_on")
        for heatmap in _two_steps(at):
            assert heatmap["x"] == list(date.replace(" ", "␣"))  # the columns are the student's own characters
    at = _page(d="22 November 2026")
    assert not says(_captions(at), "learned.recorded_on") and not says(_captions(at), "learned.replayed")


def test_a_typed_date_goes_through_the_recorded_training_step_by_step():
    """Issue 40 §1: any input on the shipped run, through the recorded training at once."""
    from attnviz.models.learned import replay
    from attnviz.models.learned.train import checkpoint_path, load_run

    run = load_run(checkpoint_path("dates"))
    date = "3 March 2027"
    at = _page(d=date, st="42")
    assert at.select_slider(key="w:learned:step").value == 42
    untrained, chosen = _two_steps(at)
    index = [s.step for s in run.snapshots].index(42)
    expected = replay.attention_at(run, index, date)  # the model of step 42, on the student's date
    assert len(chosen["z"]) == 10 and len(chosen["z"][0]) == len(date)
    for row, weights in zip(chosen["z"], expected.tolist(), strict=True):
        assert row == pytest.approx(weights, abs=1e-3)
    first = replay.attention_at(run, 0, date)
    assert untrained["z"][0] == pytest.approx(first[0].tolist(), abs=1e-3)
    at.select_slider(key="w:learned:step").set_value(300).run()
    assert _two_steps(at)[1]["z"] != chosen["z"]  # another step, other weights


def test_a_typed_sequence_goes_through_the_recorded_training_and_a_bad_one_falls_back():
    at = _page(tk="induction", q="C F J C F J", st="600")
    assert says(_captions(at), "learned.replayed")
    assert _two_steps(at)[0]["x"] == ["<s>", "C", "F", "J", "C", "F", "J"]
    at = _page(tk="induction", q="C F 1")  # not a sequence the model reads: the recorded probe, said so
    assert says(_captions(at), "learned.recorded_on", probe="D H A Q K M P B D H A Q K M P B")
    assert not says(_captions(at), "learned.replayed")


def test_two_dates_at_one_seed_share_one_training():
    first, second = _page(sd="6", n="20", d="1 May 2027"), _page(sd="6", n="20", d="2027年5月1日")
    first.button(key="learned:train").click().run()
    job = QUEUE.get(TrainSettings("dates", 6, 20))
    assert job is not None
    second.run()
    assert not second.button  # the other student's page follows the same training
    assert QUEUE.wait(job, timeout=120) and job.status == "done", job.error


def test_a_failed_training_is_shown_in_the_interface_language(monkeypatch):
    """The job kept the training process's last English line as its error, and the Chinese page showed it as it was.
    The error is coded now: each page says it in its own language."""
    said = "Traceback: MemoryError: the process ran out of memory"
    command = [sys.executable, "-c", f"import sys; sys.exit({said!r})"]
    monkeypatch.setattr(jobs, "training_command", lambda settings, out="-", server=0: command)
    job = QUEUE.submit(TrainSettings("induction", seed=81, steps=7))
    assert QUEUE.wait(job, timeout=60) and job.status == "failed"
    for lang in ("zh-Hans", "zh-Hant", "en"):
        at = _page(lang=lang, tk="induction", sd="81", n="7")
        shown = [str(e.value) for e in at.error]
        why = t("error.training_exit", lang, status=1)
        assert shown == [t("learned.training_failed", lang, error=why)], shown
        assert "MemoryError" not in shown[0]
        if lang != "en":
            assert not english_in(shown[0]), shown
        assert at.button(key="learned:train")  # it can be asked again


def test_the_page_in_chinese():
    at = _page(lang="zh-Hans", tk="induction")
    assert at.radio(key="w:learned:task").label == message("learned.task", "zh-Hans")
    previous = message("learned.pattern_previous_token", "zh-Hans")
    assert message("learned.head_title", "zh-Hans", layer=1, head=1, label=previous) in _markdown(at)


def test_the_dates_page_in_chinese():
    at = _page(lang="zh-Hant")
    assert at.text_input(key="w:learned:date").label == message("learned.date", "zh-Hant")
    assert says(_captions(at), "learned.dates_accuracy", "zh-Hant", count=2000, steps=300)
    assert message("learned.work_heading", "zh-Hant") in [e.label for e in at.expander]


def test_switching_a_head_off_shows_the_model_without_it_and_goes_in_the_link():
    whole = _page(tk="induction")
    at = _page(tk="induction", off="1")
    warning = " ".join(str(w.value) for w in at.warning)
    first = message("learned.head_title", layer=1, head=1, label=message("learned.pattern_previous_token"))
    assert says(warning, "learned.switched_off", head=first, accuracy="79.4%", change="-20.6")
    assert _markdown(at).split("\n")[0] != _markdown(whole).split("\n")[0]  # other guesses without the head
    titles = [a["text"] for a in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["annotations"]]
    short = [message("learned.head_short", layer=layer, head=head) for layer in (1, 2) for head in (1, 2)]
    assert titles[:4] == [message("learned.head_off", title=short[0]), *short[1:]]
    shapes = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"].get("shapes", [])
    assert [(s["xref"], s["yref"]) for s in shapes] == [("x domain", "y domain")]  # head 1's panel greyed out
    at.pills(key="w:learned:off").set_value([]).run()
    assert not at.warning and "off" not in at.query_params
    at.pills(key="w:learned:off").set_value([3]).run()
    assert at.query_params["off"] == ["3"] or at.query_params["off"] == "3"


def test_switching_both_induction_heads_off_costs_more_than_either_alone():
    """Issue 40: each induction head alone costs a few points, the two together far more: they back each other up."""
    from attnviz.models.learned.train import checkpoint_path, load_run

    at = _page(tk="induction", off="3,4")
    assert at.query_params["off"] in (["3,4"], "3,4") and at.pills(key="w:learned:off").value == [3, 4]
    model = load_run(checkpoint_path("induction")).model
    examples = induction.held_out_examples(500)
    full = induction.token_accuracy(model, examples)
    alone = [induction.token_accuracy(model, examples, induction.without_heads(model.config, [(1, h)])) for h in (0, 1)]
    both = induction.token_accuracy(model, examples, induction.without_heads(model.config, [(1, 0), (1, 1)]))
    assert both < min(alone) - 0.05 and full - max(alone) < 0.05  # measured here, on the page's 500 repeats
    warning = " ".join(str(w.value) for w in at.warning)
    assert says(warning, "learned.switched_off_several", accuracy=f"{both:.1%}")
    shapes = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["shapes"]
    assert [s["xref"] for s in shapes] == ["x3 domain", "x4 domain"]  # layer 2's panels greyed out


def test_each_guess_in_the_repeat_is_marked_right_or_wrong():
    from attnviz.app.ui.learned_induction import marked_guesses

    tokens = ["<s>", "A", "B", "C", "A", "B", "C"]
    assert marked_guesses(tokens, ["A", "C", "A", "A", "B", "X", "B"]) == (
        "<s>→A A→C B→A C→A A→B ✓ B→X ✗ C→B"  # marked once a token repeats; the last has nothing to check against
    )


def test_a_tab_that_joins_a_training_under_way_is_not_told_to_press_train(monkeypatch):
    """Issue 40: a tab opened on a seed and steps already training said "press Train below", with no button there."""
    from attnviz.app.training.jobs import TrainingJob

    params = {"tk": "induction", "sd": "77", "n": "40"}
    under_way = TrainingJob(LearnedState(task="induction", seed=77, steps=40).training(), status="running")
    real_get = QUEUE.get
    monkeypatch.setattr(QUEUE, "get", lambda s: under_way if s == under_way.settings else real_get(s))
    at = _page(**params)
    infos = [i.value for i in at.info]
    assert any(says(i, "learned.shipped_while_training", steps=600) for i in infos), infos
    assert not any(says(i, "learned.shipped_until_trained") for i in infos)
    assert not [b for b in at.button if b.key == "learned:train"]  # indeed no button: the training's progress
    monkeypatch.setattr(QUEUE, "get", real_get)
    fresh = _page(**params)  # nothing under way: the button, and the message that names it
    assert any(says(i.value, "learned.shipped_until_trained") for i in fresh.info)
    assert [b for b in fresh.button if b.key == "learned:train"]


def test_the_induction_work_names_positions_as_the_charts_do():
    """Issue 40: the induction chart's ticks said H·3 and Q·5 while show-your-work said H·2 and Q·4."""
    from tests.test_app import figures

    at = _page(tk="induction")
    [picker] = [s for s in at.selectbox if s.label == message("learned.row_sequence")]
    ticks = {str(x) for fig in figures(at) for trace in fig["data"] for x in (trace.get("x") or []) if "·" in str(x)}
    assert "D·2" in ticks and "D·10" in ticks  # <s> D H A Q K M P B D ...: the charts count from 1
    repeated = [label.split(": ", 1)[1] for label in picker.options if "·" in label]  # "2: D·2": the label after ": "
    assert repeated and set(repeated) <= ticks, (repeated, sorted(ticks))


# ---------------------------------------------------------------- issue 40: the dates model's mistakes, shown


def _chart_rows(at: AppTest) -> tuple[list[str], list[tuple[float, float]]]:
    """The dates chart's row labels and the rows it outlines (y0, y1)."""
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    shapes = spec["layout"].get("shapes", [])
    return spec["data"][0]["y"], [(shape["y0"], shape["y1"]) for shape in shapes if shape["type"] == "rect"]


def test_each_wrong_output_character_is_marked_and_named():
    """2024/04/19 is 19 April 2024; the shipped model writes 2029-04-19: the fourth character is wrong."""
    at = _page(d="2024/04/19")
    text = _markdown(at)
    marked = "202:red-background[**9**]-04-19"
    assert message("learned.translation_checked", text="2024/04/19", output=marked, expected="2024-04-19") in text
    details = message("learned.wrong_position", position=4, want="4", got="9")
    assert message("learned.wrong_one", total=10, details=details) in text
    labels, outlined = _chart_rows(at)
    assert labels == ["2·1", "0·2", "2·3", "✗9·4", "-·5", "0·6", "4·7", "-·8", "1·9", "9·10"]
    assert outlined == [(2.5, 3.5)]  # row 4, 0-based 3, outlined across the chart
    right = _page(d="2024/4/19")  # the trained way of writing it comes out right: nothing marked
    assert message("learned.all_right", total=10, expected="2024-04-19") in _captions(right)
    assert _chart_rows(right)[1] == [] and not any("✗" in label for label in _chart_rows(right)[0])


def test_show_your_work_opens_on_the_first_wrong_row():
    at = _page(d="2024/04/19")
    rows = [box for box in at.selectbox if box.key.startswith("learned:row:")]
    assert [box.value for box in rows] == [3]  # 0-based: the fourth character, "9" for "4"
    assert rows[0].options[3] == "4: ✗9·4"
    at.text_input(key="w:learned:date").set_value("2055/12/1").run()  # a new date: its own first wrong row
    rows = [box for box in at.selectbox if box.key.startswith("learned:row:")]
    assert [box.value for box in rows] == [8]  # 2055-12-21 for 2055-12-01: the ninth character
    linked = _page(d="2024/04/19", r="1")  # a link that names its row opens on it
    assert [box.value for box in linked.selectbox if box.key.startswith("learned:row:")] == [1]
    right = _page(d="2024/4/19")
    assert [box.value for box in right.selectbox if box.key.startswith("learned:row:")] == [0]


@pytest.mark.parametrize("lang", ["en", "zh-Hans", "zh-Hant"])
def test_a_date_in_no_trained_format_or_no_date_at_all_is_said_so(lang):
    at = _page(lang=lang, d="2024/04/19")
    warnings = " ".join(str(w.value) for w in at.warning)
    assert says(warnings, "learned.reading_format", lang, written="2024/4/19", example="2026/11/22")
    at = _page(lang=lang, d="1 1 1")
    assert says(" ".join(str(w.value) for w in at.warning), "learned.reading_not_date", lang, text="1 1 1")
    assert message("learned.translation", lang, text="1 1 1", output="11111-11-1") in _markdown(at)  # still shown
    at = _page(lang=lang, d="31 February 2023")
    warnings = " ".join(str(w.value) for w in at.warning)
    assert says(warnings, "learned.reading_not_real_day", lang, when="2023-02", days=28, day=31)
    assert says(_markdown(at), "learned.translation", lang, text="31 February 2023")  # the model's answer, shown
    at = _page(lang=lang, d="2055/12/1")
    warnings = " ".join(str(w.value) for w in at.warning)
    assert says(warnings, "learned.reading_years", lang, year=2055, first=1950, last=2049)


def test_the_known_mistake_preset_says_where_the_attention_went_wrong():
    from attnviz.app.ui.learned_training import shipped_run
    from attnviz.models.learned.seq2seq import translate_texts

    at = _page()
    at.selectbox(key="w:learned:date_preset").set_value("format").run()
    assert at.text_input(key="w:learned:date").value == "2024/04/19"
    weights = translate_texts(shipped_run("dates").model, ["2024/04/19"])[0].trace.weights  # (10, 10)
    year_4, day_9 = float(weights[3, 3]), float(weights[3, 9])  # the year's "4" is character 4, the day's "9" is 10
    assert day_9 > year_4  # the row that writes the wrong 9 looks at the day's 9 more than at the year's 4
    source = message("learned.source_digit", field=message("learned.field_year"), character="4", position=4)
    top = message("learned.source_digit", field=message("learned.field_day"), character="9", position=10)
    expected = message(
        "learned.wrong_row",
        row="9·4",
        want="4",
        got="9",
        source=source,
        source_weight=f"{year_4:.2f}",
        top=top,
        top_weight=f"{day_9:.2f}",
    )
    assert expected in _markdown(at)
    assert at.query_params["d"] in ("2024/04/19", ["2024/04/19"])  # the link holds it


def test_held_out_accuracy_is_shown_per_format():
    at = _page()
    text = _markdown(at)
    assert message("learned.format_heading") in text
    assert says(_captions(at), "learned.format_note", count=100, first=1950, last=2049)
    table = next(str(m.value) for m in at.markdown if str(m.value).startswith("| "))
    lines = table.splitlines()[2:]
    examples = ["22 November 2026", "November 22, 2026", "Nov 22, 2026", "22 Nov 2026", "22nd November 2026"]
    examples += ["22/11/2026", "22\\.11\\.2026", "2026年11月22日", "二〇二六年十一月二十二日", "2026/11/22"]
    assert [line.split(" | ")[0].lstrip("| ") for line in lines] == examples
    for line in lines:
        held_out, other = (cell.strip(" |") for cell in line.split(" | ")[1:])
        assert held_out == "100 / 100"  # as the 2,000 held-out dates of the caption: 100.0 %
        assert other.endswith(" / 100") and 0 <= int(other.split(" / ")[0]) <= 100


def test_the_induction_work_opens_on_the_last_position_not_on_the_start_token():
    """Issue 40: the induction head's show-your-work opened on <s>, whose only key is itself."""
    at = _page(tk="induction")
    [picker] = [s for s in at.selectbox if s.label == message("learned.row_sequence")]
    assert picker.value == len(picker.options) - 1 and picker.options[0].endswith("<s>")
    at = _page(tk="induction", r="3")
    [picker] = [s for s in at.selectbox if s.label == message("learned.row_sequence")]
    assert picker.value == 3


def test_the_chinese_page_opens_on_the_chinese_date_and_its_link_names_it():
    """Issue 40: the Chinese dates box defaulted to an English date."""
    chinese_date = "二〇二六年十一月二十二日"
    for lang in ("zh-Hans", "zh-Hant"):
        at = _page(lang=lang)
        assert at.text_input(key="w:learned:date").value == chinese_date
        assert says(_markdown(at), "learned.translation", lang, text=chinese_date, output="2026-11-22")
        assert not says(_captions(at), "learned.recorded_on", lang)  # its history was recorded on this very date
        assert at.query_params["d"] == chinese_date  # the link names it: the same page in English
    english = _page(d=chinese_date)
    assert english.text_input(key="w:learned:date").value == chinese_date
    assert _page().text_input(key="w:learned:date").value == "22 November 2026"
