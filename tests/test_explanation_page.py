"""AppTest: "Is attention an explanation?" shows every map of the student's sentence with its ρ against blank-out,
in every language, follows links, and says what it cannot show."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnviz.app.gate import GATE
from attnviz.core.attribution import FLOW_MAX_TOKENS
from attnviz.i18n import t
from attnviz.models.bert import load_minilm
from tests.messages import message, pattern
from tests.test_app import _array, figures, run_page
from tests.test_gate import Holder
from tests.test_gate_pages import busy

PAGE = "app_pages/is_attention_an_explanation.py"
RHO = re.compile(r"ρ = ([+-]\d\.\d\d)$")


@pytest.fixture(autouse=True)
def open_gate(monkeypatch):
    """No pause at the server's gate after each test's computation (tests/test_gate_pages.py tests the pause)."""
    monkeypatch.setattr(GATE, "share", 1.0)


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def maps_figure(at, lang: str = "en") -> dict:
    [fig] = [f for f in figures(at) if f["layout"]["title"]["text"] == t("fig.maps_title", lang)]
    return fig


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    rank_a, rank_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(rank_a, rank_b)[0, 1])


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_seven_maps_each_with_its_rho_and_blank_out_without_one(model, lang):
    at = run_page(PAGE, **({"lang": lang} if lang != "en" else {}))
    assert at.title[0].value == t("faithful.title", lang)
    heat = maps_figure(at, lang)["data"][0]
    labels = heat["y"]
    assert len(labels) == 7
    assert labels[0].startswith(t("faithful.method_raw", lang))
    note = t("faithful.layer_note", lang, layer=6, which=t("faithful.mean_of_heads", lang))
    assert note in [c.value for c in at.caption]
    rhos = [RHO.search(label) for label in labels[:-1]]
    assert all(match and -1.0 <= float(match.group(1)) <= 1.0 for match in rhos), labels
    assert labels[-1].startswith(t("faithful.method_blank", lang)) and not RHO.search(labels[-1])
    assert heat["x"] == ["the·1", "cat", "sat", "on", "the·5", "mat", "because", "it", "was", "tired", "."]
    # The raw row and its ρ, from the model's weights read here: layer 6's heads averaged, column means
    trace = model.run("The cat sat on the mat because it was tired.")
    raw = trace.layers[5].weights.numpy().mean(axis=0).mean(axis=0)[1:-1]
    values = _array(heat["customdata"])
    np.testing.assert_allclose(values[0], raw, rtol=1e-5)
    assert float(rhos[0].group(1)) == pytest.approx(rank_correlation(raw, values[-1]), abs=0.006)
    sinks = [f for f in figures(at) if f["layout"]["title"]["text"] == t("fig.sink_title", lang)]
    assert len(sinks) == 1 and len(sinks[0]["data"]) == 2
    shown = " ".join(w.value for w in at.warning).replace("\\", "")
    assert pattern("faithful.punctuation_first", lang).search(shown)  # rollout ranks "." first
    assert pattern("faithful.sink_warning", lang, layer=6, token="[CLS]").search(shown)


def test_a_bad_layer_in_the_link_is_named_and_the_page_still_works():
    at = run_page(PAGE, l="9", hd="3")
    shown = [w.value.replace("\\", "") for w in at.warning]
    assert any("'l'" in w and "9" in w for w in shown), shown
    labels = maps_figure(at)["data"][0]["y"]
    assert len(labels) == 7 and labels[0].startswith(message("faithful.method_raw"))
    assert message("faithful.layer_note", layer=6, which=message("faithful.head_n", head=3)) in [
        c.value for c in at.caption
    ]
    assert at.selectbox(key="w:faithful:layer").value == 6 and at.selectbox(key="w:faithful:head").value == 3


def test_moving_the_layer_updates_the_raw_map_and_the_link(model):
    at = run_page(PAGE)
    at.selectbox(key="w:faithful:layer").set_value(2).run()
    at.selectbox(key="w:faithful:head").set_value(7).run()
    assert not at.exception
    assert at.query_params["l"] == "2" and at.query_params["hd"] == "7"
    heat = maps_figure(at)["data"][0]
    assert message("faithful.layer_note", layer=2, which=message("faithful.head_n", head=7)) in [
        c.value for c in at.caption
    ]
    trace = model.run("The cat sat on the mat because it was tired.")
    expected = trace.layers[1].weights[6].numpy().mean(axis=0)[1:-1]
    np.testing.assert_allclose(_array(heat["customdata"])[0], expected, rtol=1e-5)


def test_a_sentence_too_long_for_flow_says_so_and_shows_the_other_maps():
    sentence = (
        "The cat sat on the mat because it was tired, and the dog slept by the door while the rain fell softly on "
        "the old roof of the house."
    )
    tokens = len(load_minilm().encode(sentence).tokens)
    assert tokens > FLOW_MAX_TOKENS
    at = run_page(PAGE, s=sentence)
    notes = " ".join(i.value for i in at.info)
    assert message("error.flow_too_long", tokens=tokens, limit=FLOW_MAX_TOKENS) in notes
    labels = maps_figure(at)["data"][0]["y"]
    assert len(labels) == 6 and not any(label.startswith(message("faithful.method_flow")) for label in labels)


def test_a_sentence_over_the_models_limit_gets_a_clear_message_and_no_maps():
    at = run_page(PAGE, s="word " * 300)
    errors = " ".join(e.value for e in at.error)
    assert pattern("model.sentence_error").search(errors) and "256" in errors
    assert not figures(at)


def test_new_maps_take_a_turn_at_the_gate_and_kept_ones_do_not(monkeypatch):
    at = run_page(PAGE, s="A dog barked at the moon.")
    monkeypatch.setattr(GATE, "max_wait", 0.5)
    holder = Holder(GATE)  # another session's large rerun holds the gate
    try:
        at.selectbox(key="w:faithful:head").set_value(5).run()  # the sentence's maps are kept: read, not computed
        assert not at.exception and not busy(at) and len(maps_figure(at)["data"][0]["y"]) == 7
        at.text_input(key="w:faithful:sentence").set_value("A cat slept in the sun.").run()  # new maps: must wait
        assert not at.exception and busy(at) == [message("gate.busy", ahead=1)]
        assert not figures(at) and at.selectbox(key="w:faithful:layer").value == 6  # the controls stay
    finally:
        holder.done()


def test_a_second_sentence_makes_the_gradients_explain_the_cosine(model):
    alone = run_page(PAGE, s="A dog barked at the moon.")
    paired = run_page(PAGE, s="A dog barked at the moon.", s2="The moon rose over the hills.")
    assert paired.query_params["s2"] == "The moon rose over the hills."
    readout = message("faithful.readout_cosine")
    assert any(readout in c.value for c in paired.caption) and not any(readout in c.value for c in alone.caption)
    gradients = [_array(maps_figure(at)["data"][0]["customdata"])[4] for at in (alone, paired)]
    assert not np.allclose(gradients[0], gradients[1])  # another readout, another map
    blank = [_array(maps_figure(at)["data"][0]["customdata"])[-1] for at in (alone, paired)]
    np.testing.assert_allclose(blank[0], blank[1])  # blank-out reads the sentence's own embedding either way


def test_the_share_box_opens_with_the_pages_link():
    at = run_page(PAGE, l="3")
    at.session_state["faithful:open:share"] = True
    at.run()
    assert not at.exception
    assert any("l=3" in code.value for code in at.code)


def test_the_induction_model_maps_its_last_letter_with_every_map_and_attention_matters():
    at = run_page(PAGE, m="induction", l="6", hd="9")  # MiniLM's layer 6 and head 9: this model has 2 and 2
    heat = maps_figure(at)["data"][0]
    assert len(heat["y"]) == 7 and heat["x"][0] == "&lt;s&gt;" and len(heat["x"]) == 10
    captions = [c.value for c in at.caption]
    note = message("faithful.induction_layer_note", layer=2, which=message("faithful.mean_of_heads"))
    assert any(note in c and "«K»" in c for c in captions), captions
    values = _array(heat["customdata"])
    assert int(np.argmax(values[-1])) == 5  # blank-out: the K after the first Q, which the induction head copies
    [bars] = [f for f in figures(at) if f["layout"]["title"]["text"] == t("fig.matter_title", "en")]
    accuracy = dict(zip(bars["data"][0]["y"], _array(bars["data"][0]["x"]), strict=True))
    assert accuracy[message("faithful.as_trained")] > 0.95
    assert accuracy[message("faithful.ablation_uniform", layer=2)] < 0.3
    assert accuracy[message("faithful.ablation_permute", layer=2)] < 0.3
    assert message("faithful.findings_title") in [e.label for e in at.expander]  # the table over many inputs
    assert not at.exception


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_the_dates_model_maps_one_output_character(lang):
    at = run_page(PAGE, m="dates", c="1", **({"lang": lang} if lang != "en" else {}))
    heat = maps_figure(at, lang)["data"][0]
    methods = ("raw", "gradient", "integrated", "blank")
    assert [label.split("  ")[0] for label in heat["y"]] == [t(f"faithful.method_{m}", lang) for m in methods]
    assert heat["x"][2] == "␣·3" and len(heat["x"]) == len("22 November 2026")
    [picker] = [s for s in at.selectbox if s.label == t("faithful.character", lang)]
    assert picker.options[:2] == ["1 · 2", "2 · 0"] and picker.value == 1
    assert t("faithful.one_attention", lang) in [c.value for c in at.caption]


@pytest.mark.parametrize(
    ("params", "code", "fields"),
    [
        ({"m": "induction", "q": "A B 7"}, "sequence_symbols", {"symbols": "7", "first": "A", "last": "T"}),
        ({"m": "dates", "d": "22 ноября 2026"}, "date_characters", {}),
    ],
)
def test_bad_input_for_a_trained_model_is_named_and_the_page_keeps_working(params, code, fields):
    at = run_page(PAGE, **params)
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(pattern(f"error.{code}", "en", **fields).search(e) for e in errors), errors
    assert not at.exception and at.radio[0].value == params["m"]


@pytest.mark.parametrize("params", [{}, {"m": "induction"}, {"m": "dates"}])
def test_the_default_inputs_maps_take_no_turn_and_a_new_input_does(monkeypatch, params):
    """What a process computes once for everyone (the page's own default input, the models' ablations) does not wait
    behind another session's large rerun; a student's new input does."""
    from attnviz.app.ui import common

    with common._RESULTS_LOCK:
        common._RESULTS.clear()  # nothing kept: the default's maps are computed in this run
    monkeypatch.setattr(GATE, "max_wait", 0.5)
    holder = Holder(GATE)  # another session's large rerun holds the gate
    try:
        at = run_page(PAGE, **params)
        assert not at.exception and not busy(at) and maps_figure(at)
        new = {"s": "A cat slept in the sun.", "q": "A B C D A B C D", "d": "2026/11/22"}
        field = {"minilm": "s", "induction": "q", "dates": "d"}[params.get("m", "minilm")]
        at = run_page(PAGE, **params, **{field: new[field]})
        assert not at.exception and busy(at) == [message("gate.busy", ahead=1)]
    finally:
        holder.done()
