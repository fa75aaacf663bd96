"""A live class's questions: what each page offers, truths checked against numbers worked out here (the study notes'
printed values, torch.softmax of hand-written scores, the models run directly), answers checked, marked, summed up,
exported as CSV, and the reveal's figures."""

from __future__ import annotations

import csv
import io
import json
import math
import random
import statistics

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attnviz.app.classroom.answers import MAX_ANSWER_TEXT, marked
from attnviz.app.classroom.faithful import best_maps, map_agreement
from attnviz.app.classroom.questions import (
    aggregate,
    answers_csv,
    is_correct,
    make_question,
    offers,
    option_labels,
    parse_answer,
    prompt,
    reveal_note,
)
from attnviz.app.classroom.store import Question
from attnviz.core.attribution import FLOW_MAX_TOKENS, spearman
from attnviz.core.errors import AttnvizError, render
from attnviz.figures import classroom as figures
from attnviz.figures.style import BLUE, ORANGE
from attnviz.i18n import LANGUAGES, t
from attnviz.models.bert import load_minilm
from attnviz.models.bert_explanation import layer_maps, sentence_maps
from attnviz.models.learned import induction
from attnviz.models.learned.train import checkpoint_path, load_run

# The notes' unit-normalised sentences (batch 0 of "Attention核心思想"): x's first column, the scores x xᵀ and the
# weights the note printed (4 decimals)
UNIT_X0 = [0.1696, 0.0771, 0.3007, 0.4082]
UNIT_SCORES = [
    [1.0000, 0.8921, 0.9020, 0.6954],
    [0.8921, 1.0000, 0.7390, 0.7076],
    [0.9020, 0.7390, 1.0000, 0.7453],
    [0.6954, 0.7076, 0.7453, 1.0000],
]
UNIT_WEIGHTS = [
    [0.2823, 0.2535, 0.2560, 0.2082],
    [0.2629, 0.2929, 0.2256, 0.2186],
    [0.2626, 0.2231, 0.2897, 0.2245],
    [0.2263, 0.2290, 0.2378, 0.3068],
]


def kinds(found) -> dict[str, list[tuple[int, str]]]:
    return {offer.kind: offer.choices for offer in found}


def code_of(call) -> str:
    with pytest.raises(AttnvizError) as caught:
        call()
    for lang in LANGUAGES:  # every code has its message in every language
        assert render(caught.value, lang)
    return caught.value.code


# --- the self- and cross-attention pages --------------------------------------------------------------------------


def test_self_page_notes_sentences_every_kind_against_the_notes_numbers():
    params = {"p": "unit_sentences"}
    offered = kinds(offers("self", params))
    labels = [(i, f"w{i + 1}") for i in range(4)]
    assert offered == {"top_key": labels, "row": labels, "number": labels}
    expected = torch.softmax(torch.tensor(UNIT_SCORES), dim=-1)  # the dot score, no scaling (the note's own)
    np.testing.assert_allclose(expected.numpy(), UNIT_WEIGHTS, atol=1e-4)  # the test's hand computation is right
    for i in range(4):
        top = make_question("self", params, "top_key", i, question_id=i + 1)
        assert top.spec["options"] == ["w1", "w2", "w3", "w4"] and top.spec["truth"] == [i]  # each word itself
        assert top.spec["about"] == {"index": i, "label": f"w{i + 1}"} and top.id == i + 1
        row = make_question("self", params, "row", i, question_id=1)
        np.testing.assert_allclose(row.spec["truth"], UNIT_WEIGHTS[i], atol=1e-4)
        assert row.spec["tolerance"] == {"absolute": 0.05}
        number = make_question("self", params, "number", i, question_id=1)
        assert number.spec["truth"] == pytest.approx(
            sum(w * x for w, x in zip(UNIT_WEIGHTS[i], UNIT_X0, strict=True)), abs=1e-3
        )
        assert number.spec["tolerance"] == {"relative": 0.02, "absolute": 0.01}
    json.dumps(row.spec)  # plain JSON


UNIT_X = [
    [0.1696, 0.0125, 0.1379, 0.3478, 0.3790, 0.2276, 0.4528, 0.2270, 0.4609, 0.4082],
    [0.0771, 0.2745, 0.1747, 0.4133, 0.1001, 0.1052, 0.4344, 0.0607, 0.4888, 0.5148],
    [0.3007, 0.0279, 0.0811, 0.3120, 0.4506, 0.3386, 0.4638, 0.2450, 0.0686, 0.4554],
    [0.4082, 0.3927, 0.4035, 0.1330, 0.3023, 0.3567, 0.0814, 0.0258, 0.1728, 0.4929],
]  # the note's sentences, batch 0


def test_two_heads_ask_about_the_heads_mean():
    """Two heads on the notes' sentences (identity projections): head h scores its five features, x_h x_hᵀ; the
    weights asked about are the mean of the two heads' softmaxes; the output's first value is head 1's."""
    params = {"p": "unit_sentences", "h": "2"}
    x = torch.tensor(UNIT_X)
    per_head = [torch.softmax(part @ part.T, dim=-1) for part in (x[:, :5], x[:, 5:])]
    mean = (per_head[0] + per_head[1]) / 2
    for i in (0, 3):
        row = make_question("self", params, "row", i, question_id=1)
        np.testing.assert_allclose(row.spec["truth"], mean[i].numpy(), atol=1e-6)
        assert make_question("self", params, "top_key", i, 1).spec["truth"] == [int(mean[i].argmax())]
        number = make_question("self", params, "number", i, question_id=1)
        assert number.spec["truth"] == pytest.approx(float(per_head[0][i] @ x[:, 0]), abs=1e-6)


def test_cross_page_a_tie_makes_both_keys_right():
    """The notes' 2-D waist/chest example: (57, 83)·(51, 70) = 8717, ·(56, 82) = 9998 twice: weights 0, ½, ½."""
    params = {"p": "waist_chest_2d"}
    top = make_question("cross", params, "top_key", 0, question_id=1)
    assert top.spec["options"] == ["(51, 70)", "(56, 82)·2", "(56, 82)·3"]  # the two keys told apart, as on the chart
    assert top.spec["truth"] == [1, 2]
    assert [is_correct(top, parse_answer(top, n)) for n in (0, 1, 2)] == [False, True, True]
    row = make_question("cross", params, "row", 1, question_id=2)  # (55, 76): 8125 against 9312 twice
    np.testing.assert_allclose(row.spec["truth"], [0.0, 0.5, 0.5], atol=1e-6)
    number = make_question("cross", params, "number", 0, question_id=3)
    assert number.spec["truth"] == pytest.approx(0.5 * 43 + 0.5 * 48)


def test_a_repeated_word_is_marked_with_its_position_as_the_chart_marks_it():
    """ "the cat saw the dog": two pills reading "the", or a question about "query the", could not be told apart;
    the page's chart names them the·1 and the·4 (1-based positions)."""
    params = {"s": "the cat saw the dog"}
    offered = kinds(offers("self", params))
    assert offered["top_key"] == [(0, "the·1"), (1, "cat"), (2, "saw"), (3, "the·4"), (4, "dog")]
    top = make_question("self", params, "top_key", 3, question_id=1)
    assert top.spec["options"] == ["the·1", "cat", "saw", "the·4", "dog"]
    assert top.spec["about"] == {"index": 3, "label": "the·4"}
    assert prompt(top) == "Which key gets the most weight from query the·4?"
    cross = make_question("cross", {"s": "a cat and a dog", "src": "x y x"}, "top_key", 3, question_id=2)
    assert cross.spec["about"]["label"] == "a·4"
    assert cross.spec["options"] == ["x·1", "y", "x·3"]


@pytest.mark.parametrize(("batch", "length"), [(0, 2), (1, 3)])
def test_cross_page_valid_lengths_note_004(batch, length):
    """Note 004's torch.rand(2, 2, 4) scores (seeded 4 in the preset), valid lengths [2, 3], values = I."""
    params = {"p": "masked_softmax", "b": str(batch)}
    scores = torch.rand(2, 2, 4, generator=torch.Generator().manual_seed(4))[batch]
    offered = kinds(offers("cross", params))
    assert offered["row"] == [(0, "q1"), (1, "q2")]
    for i in range(2):
        expected = torch.softmax(scores[i, :length], dim=-1)
        row = make_question("cross", params, "row", i, question_id=1)
        assert row.spec["options"] == ["k1", "k2", "k3", "k4"][:length]  # the keys it may attend to
        np.testing.assert_allclose(row.spec["truth"], expected.numpy(), atol=1e-6)
        top = make_question("cross", params, "top_key", i, question_id=1)
        assert top.spec["options"] == ["k1", "k2", "k3", "k4"]
        assert top.spec["truth"] == [int(expected.argmax())]
        number = make_question("cross", params, "number", i, question_id=1)  # values = I: output = weights
        assert number.spec["truth"] == pytest.approx(float(expected[0]), abs=1e-6)


def test_causal_rows_and_a_query_with_one_key():
    """x = [[1, 0], [0, 1], [1, 1]], scaled dot, causal: query 1 sees key 1 only; query 3 sees all three."""
    params = {"m": "numbers", "q": "1,0;0,1;1,1", "c": "1"}
    first = make_question("self", params, "row", 0, question_id=1)
    assert first.spec["options"] == ["t1"] and first.spec["truth"] == [1.0]
    last = make_question("self", params, "row", 2, question_id=1)
    expected = torch.softmax(torch.tensor([1.0, 1.0, 2.0]) / math.sqrt(2), dim=-1)
    np.testing.assert_allclose(last.spec["truth"], expected.numpy(), atol=1e-6)
    assert make_question("self", params, "top_key", 2, question_id=1).spec["truth"] == [2]
    per_query = kinds(offers("cross", {"p": "masked_softmax_per_query"}))  # lengths [1, 3]
    assert per_query["row"] == [(0, "q1"), (1, "q2")]
    single = make_question("cross", {"p": "masked_softmax_per_query"}, "row", 0, question_id=1)
    assert single.spec["options"] == ["k1"] and single.spec["truth"] == [1.0]


def test_what_a_page_cannot_be_asked():
    assert "row" not in kinds(offers("cross", {"p": "concat_linear"}))  # 32 keys: no row to type
    assert set(kinds(offers("cross", {"p": "concat_linear"}))) == {"top_key", "number"}
    assert offers("self", {"m": "sentence", "s": ""}) == []  # the page shows an error, no chart
    assert offers("nowhere", {}) == []
    assert kinds(offers("self", {"sc": "no-such-score"}))  # a bad parameter falls back, as in a link
    assert code_of(lambda: make_question("self", {}, "head", 0, 1)) == "question_unavailable"
    assert code_of(lambda: make_question("self", {}, "top_key", 99, 1)) == "question_unavailable"
    assert code_of(lambda: make_question("self", {}, "top_key", "0", 1)) == "question_unavailable"
    assert code_of(lambda: make_question("cross", {"p": "concat_linear"}, "row", 0, 1)) == "question_unavailable"
    assert code_of(lambda: make_question("kernel", {}, "top_key", 0, 1)) == "question_unavailable"


# --- the kernel page ----------------------------------------------------------------------------------------------


def test_kernel_page_f_of_57_is_the_notes_45_5_and_marked_within_two_percent():
    offered = kinds(offers("kernel", {}))
    assert offered == {"number": [(0, "57")]}
    question = make_question("kernel", {}, "number", 0, question_id=4)
    assert question.spec["truth"] == pytest.approx(45.5, abs=1e-4)  # (43 + 48) / 2, the note's f(57)
    assert question.spec["about"] == {"index": 0, "label": "57"}
    assert prompt(question) == "What number comes out? f(57)"
    marks = {text: is_correct(question, parse_answer(question, text)) for text in ("45.5", "46.4", "44.6", "46.5")}
    assert marks == {"45.5": True, "46.4": True, "44.6": True, "46.5": False}  # 2 % of 45.5 = 0.91
    assert not is_correct(question, parse_answer(question, str((40 + 43 + 48) / 3)))  # the plain mean


def test_kernel_page_leaves_out_a_query_no_key_reaches():
    params = {"kn": "boxcar", "q": "57, 100"}  # σ = 1: 56 and 58 reach 57, nothing reaches 100
    assert kinds(offers("kernel", params)) == {"number": [(0, "57")]}
    assert make_question("kernel", params, "number", 0, 1).spec["truth"] == pytest.approx(45.5)
    assert code_of(lambda: make_question("kernel", params, "number", 1, 1)) == "question_unavailable"


# --- the pretrained-model page ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def test_model_page_the_chosen_head_and_the_shown_tokens(model):
    sentence = "The cat sat on the mat because it was tired."
    trace = model.run(sentence)
    tokens = trace.tokens
    params = {"l": "3", "hd": "2,5", "hs": "1"}  # layer 3, heads 2 and 5 averaged, [CLS]/[SEP] hidden
    offered = kinds(offers("model", params, model=model))
    assert set(offered) == {"top_key"}
    words = [i for i, token in enumerate(tokens) if token not in ("[CLS]", "[SEP]")]
    assert [i for i, _ in offered["top_key"]] == words
    it = tokens.index("it")
    question = make_question("model", params, "top_key", it, question_id=1, model=model)
    mean = trace.attentions[2, [1, 4]].mean(dim=0)[it]  # (T,)
    assert question.spec["options"] == [
        tokens[i] if tokens.count(tokens[i]) == 1 else f"{tokens[i]}·{i}" for i in words
    ]
    assert question.spec["truth"] == [words.index(max(words, key=lambda j: float(mean[j])))]
    assert question.spec["context"] == {"layer": 3, "heads": [2, 5]}
    assert prompt(question) == "Which token will this head look at from it?"
    default = make_question("model", {}, "top_key", 0, question_id=1, model=model)  # [CLS], layer 6, head 12
    assert default.spec["truth"] == [int(trace.attentions[5, 11, 0].argmax())]


def test_model_page_a_pair_asks_about_one_sentence_looking_at_the_other(model):
    params = {"s": "Where is the cat?", "s2": "The cat is on the mat.", "pt": "ab"}
    trace = model.run("Where is the cat?", "The cat is on the mat.")
    first = [i for i in range(len(trace.tokens)) if int(trace.type_ids[i]) == 0]  # [CLS] A [SEP]
    second = [i for i in range(len(trace.tokens)) if int(trace.type_ids[i]) == 1]  # B [SEP]
    assert [i for i, _ in kinds(offers("model", params, model=model))["top_key"]] == first
    query = trace.tokens.index("where")
    question = make_question("model", params, "top_key", query, question_id=1, model=model)
    assert len(question.spec["options"]) == len(second)
    weights = trace.attentions[5, 11, query]  # layer 6, head 12: the page's default
    assert question.spec["truth"] == [max(range(len(second)), key=lambda n: float(weights[second[n]]))]


# --- the learned page ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dates_run():
    return load_run(checkpoint_path("dates"))


@pytest.fixture(scope="module")
def induction_run():
    return load_run(checkpoint_path("induction"))


def test_learned_dates_the_recorded_step_and_the_probe(dates_run):
    steps = [snapshot.step for snapshot in dates_run.snapshots]
    probe = dates_run.settings.probes[1]  # the Chinese date: the page shows its own recorded probe
    asked = steps[3] + 1  # between two snapshots: the one before it is shown
    params = {"d": probe, "st": str(asked)}
    offered = kinds(offers("learned", params))
    assert set(offered) == {"top_key"} and len(offered["top_key"]) == 10  # the ISO date's ten characters
    attention = dates_run.snapshots[3].attention[1, :, : len(probe)]  # (10, T)
    for i in (0, 5, 9):
        question = make_question("learned", params, "top_key", i, question_id=1)
        assert question.spec["options"][: len(probe)] == [f"{c}·{n + 1}" if probe.count(c) > 1 else c
                                                          for n, c in enumerate(probe)]  # fmt: skip
        assert question.spec["truth"] == [int(attention[i].argmax())]
        assert question.spec["context"]["step"] == steps[3]
    assert prompt(question).startswith("Which input character does output character")


def test_learned_induction_head_query_and_the_induction_head(induction_run):
    params = {"tk": "induction", "h": "4", "st": "0"}  # layer 2, head 2, at step 0
    offered = kinds(offers("learned", params))
    assert set(offered) == {"top_key", "head"} and offered["head"] == [(0, "")]
    tokens = [induction.BOS, *induction.parse_sequence(induction_run.settings.probes[0])[0]]
    assert len(offered["top_key"]) == len(tokens)
    weights = induction_run.snapshots[0].attention[1, 1]  # (T, T)
    i = len(tokens) - 1
    question = make_question("learned", params, "top_key", i, question_id=1)
    assert question.spec["truth"] == [int(weights[i, : i + 1].argmax())]
    early = make_question("learned", params, "top_key", 0, question_id=1)
    assert early.spec["truth"] == [0]  # causal: <s> sees only itself
    head = make_question("learned", params, "head", 0, question_id=2)
    assert head.spec["options"] == ["L1 H1", "L1 H2", "L2 H1", "L2 H2"]
    pairs = ((1, 1), (1, 2), (2, 1), (2, 2))
    assert option_labels(head, "zh-Hans") == [t("learned.head_short", "zh-Hans", layer=a, head=b) for a, b in pairs]
    # The prefix-matching score worked out here: on repeated sequences, each repeat query's weight on the key just
    # after its token's first occurrence, for every head
    rng, totals = random.Random(7), torch.zeros(2, 2)
    examples = induction.sample_examples(60, rng)
    for example in examples:
        half = len(example.half)
        seen = induction.sequence_attention(induction_run.model, list(example.half) * 2).weights  # (2, 2, T, T)
        totals += torch.stack([seen[..., q, q - half + 1] for q in range(half + 1, 2 * half + 1)]).mean(0)
    best = int((totals / len(examples)).flatten().argmax())
    assert best in head.spec["truth"]
    assert all(head.spec["context"]["scores"][n] >= 0.4 for n in head.spec["truth"])  # the page's threshold
    assert prompt(head, "zh-Hant") == t("class.prompt_head", "zh-Hant")
    untrained = kinds(offers("learned", {"tk": "induction", "sd": "17"}))  # no history; the page tries the shipped
    assert untrained == {"head": [(0, "")]}


# --- the explanation page -----------------------------------------------------------------------------------------

SENTENCE = "The cat sat on the mat because it was tired."  # the page's default sentence


def rhos_by_hand(model, sentence: str, layer: int, head: int | None) -> dict[str, float]:
    """Each map's Spearman ρ against blank-out, worked out here from the page's maps (core.attribution.spearman,
    not the function under test); the raw map checked against the model's own weights first."""
    encoded = model.encode(sentence)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    maps = layer_maps(sentence_maps(model, trace, encoded.ids, encoded.type_ids), layer - 1, head)
    weights = trace.layers[layer - 1].weights  # (h, T, T)
    chosen = weights.mean(dim=0) if head is None else weights[head]
    np.testing.assert_allclose(maps["raw"].numpy(), chosen.mean(dim=0)[1:-1].numpy(), rtol=1e-5)
    return {method: spearman(values, maps["blank"]) for method, values in maps.items() if method != "blank"}


@pytest.mark.parametrize(("params", "layer", "head"), [({}, 6, None), ({"l": "2", "hd": "3"}, 2, 2)])
def test_explanation_page_the_map_that_agrees_best_with_blank_out(model, params, layer, head):
    assert kinds(offers("faithful", params, model=model)) == {"best_map": [(0, "")]}
    expected = rhos_by_hand(model, SENTENCE, layer, head)
    methods = ["raw", "rollout", "flow", "norm", "gradient", "integrated"]  # the page's order; blank-out is the key
    assert list(expected) == methods
    question = make_question("faithful", params, "best_map", 0, question_id=3, model=model)
    spec = question.spec
    assert spec["options"] == [t(f"faithful.method_{m}", "en") for m in methods]
    best = max(expected.values())
    assert spec["truth"] == [n for n, m in enumerate(methods) if expected[m] >= best - 0.005]
    assert methods.index(max(methods, key=expected.get)) in spec["truth"]  # the argmax itself
    np.testing.assert_allclose(spec["context"]["rho"], [expected[m] for m in methods], atol=1e-6)
    assert spec["context"]["methods"] == methods and spec["tolerance"] == {"rho": 0.005}
    json.dumps(spec, allow_nan=False)  # plain JSON
    right = spec["truth"][0]
    wrong = next(n for n in range(len(methods)) if n not in spec["truth"])
    assert is_correct(question, parse_answer(question, right)) and not is_correct(
        question, parse_answer(question, wrong)
    )
    which = "mean of heads" if head is None else f"head {head + 1}"
    assert prompt(question) == f"Layer {layer}, {which}: which map will agree best with blank-out (Spearman's ρ)?"
    assert option_labels(question, "zh-Hant") == [t(f"faithful.method_{m}", "zh-Hant") for m in methods]
    for lang in LANGUAGES:
        assert str(layer) in prompt(question, lang)


def test_explanation_page_without_flow_and_the_states_that_cannot_be_asked(model):
    long = SENTENCE + " The dog slept by the door while the rain fell softly on the old red roof of the house."
    assert len(model.encode(long).tokens) > FLOW_MAX_TOKENS
    question = make_question("faithful", {"s": long, "l": "4"}, "best_map", 0, question_id=1, model=model)
    assert question.spec["context"]["methods"] == ["raw", "rollout", "norm", "gradient", "integrated"]
    assert t("faithful.method_flow", "en") not in question.spec["options"]
    expected = rhos_by_hand(model, long, 4, None)
    assert question.spec["truth"] == [max(range(5), key=lambda n: expected[question.spec["context"]["methods"][n]])]
    # the page shows no maps: a sentence over the model's limit, a bad second sentence; one word piece ranks nothing
    for params in ({"s": "word " * 300}, {"s2": "word " * 300}, {"s": "cat"}):
        assert offers("faithful", params, model=model) == []
        assert code_of(lambda p=params: make_question("faithful", p, "best_map", 0, 1, model=model)) == (
            "question_unavailable"
        )
    assert map_agreement({"s": "word " * 300}, model) is None
    assert all(math.isnan(rho) for rho in map_agreement({"s": "cat"}, model).values())
    assert code_of(lambda: make_question("model", {}, "best_map", 0, 1, model=model)) == "question_unavailable"
    assert "best_map" not in kinds(offers("model", {}, model=model))


def test_best_maps_ties_within_half_a_shown_digit_and_never_nan():
    nan = float("nan")
    assert best_maps({"raw": 0.62, "norm": 0.6151, "gradient": 0.614, "flow": nan}) == ["raw", "norm"]
    assert best_maps({"raw": -0.2, "rollout": -0.5}) == ["raw"]  # the largest, even when every map disagrees
    assert best_maps({"raw": nan, "rollout": nan}) == [] and best_maps({}) == []


MAPS = ["raw", "rollout", "norm", "gradient"]
BEST_MAP = Question(5, "best_map", {"page": "faithful", "kind": "best_map", "about": {"index": 0, "label": ""},
                                    "options": [t(f"faithful.method_{m}", "en") for m in MAPS], "truth": [1, 3],
                                    "tolerance": {"rho": 0.005},
                                    "context": {"methods": MAPS, "rho": [0.1, 0.62, None, 0.618], "layer": 6,
                                                "head": 0}})  # fmt: skip


def test_best_map_answers_summed_up_exported_and_the_rhos_revealed():
    summary = aggregate(BEST_MAP, {"a": "0", "b": "0", "c": "1", "d": "3", "e": "2", "f": "4"}, lang="zh-Hans")
    assert (summary.answered, summary.correct, summary.invalid) == (5, 2, 1)  # a tie: both right; 4 is no option
    assert summary.counts == [2, 1, 1, 1] and summary.truth == [1, 3]
    assert summary.commonest_wrong == (t("faithful.method_raw", "zh-Hans"), 2)
    rows = read_csv(answers_csv([BEST_MAP], {5: {"id-a": "3", "id-b": "2"}}, {"id-a": "小明"}))
    truth = "Rollout / Gradient × input"
    assert rows[1:] == [
        ["5", "map closest to blank-out", "", "小明", "Gradient × input", "yes", truth],
        ["5", "map closest to blank-out", "", "student 1", "Norm-based ‖α f(x)‖", "no", truth],
    ]
    assert reveal_note(BEST_MAP) == (
        "Spearman's ρ against blank-out: Raw attention +0.10, ✓ Rollout +0.62, Norm-based ‖α f(x)‖ —, "
        "✓ Gradient × input +0.62."
    )
    for lang in LANGUAGES:
        assert "+0.62" in reveal_note(BEST_MAP, lang) and t("faithful.method_rollout", lang) in reveal_note(
            BEST_MAP, lang
        )
    assert reveal_note(CHOICE) is None
    assert prompt(BEST_MAP, "zh-Hans") == t(
        "class.prompt_best_map", "zh-Hans", layer=6, which=t("faithful.mean_of_heads", "zh-Hans")
    )
    fig = validated(figures.choice_histogram(option_labels(BEST_MAP), summary.counts, BEST_MAP.spec["truth"], "?"))
    assert [list(bars.x) for bars in fig.data] == [[1, 1], [2, 1]]  # the right maps blue, the others orange


# --- answers ------------------------------------------------------------------------------------------------------


def synthetic(kind: str, truth, options=None, **spec) -> Question:
    return Question(7, kind, {"page": "self", "kind": kind, "about": {"index": 0, "label": "q1"},
                              "options": options or [], "truth": truth, **spec})  # fmt: skip


CHOICE = synthetic("top_key", [1, 2], ["a", "b", "c", "d"])
ROW = synthetic("row", [0.2, 0.3, 0.5], ["k1", "k2", "k3"], tolerance={"absolute": 0.05})
NUMBER = synthetic("number", 45.5, tolerance={"relative": 0.02, "absolute": 0.01})


def test_parse_answer_stores_plain_json():
    assert parse_answer(CHOICE, 2) == "2" and parse_answer(CHOICE, " 3 ") == "3"
    assert parse_answer(ROW, "0.1，0.2、0.7") == "[0.1,0.2,0.7]"  # Chinese commas
    assert parse_answer(ROW, "0 0.5 1") == "[0.0,0.5,1.0]" and parse_answer(ROW, [0.2, "0.3", 0.5]) == "[0.2,0.3,0.5]"
    assert parse_answer(NUMBER, "-3.25") == "-3.25" and parse_answer(NUMBER, 1e6) == "1000000.0"


@pytest.mark.parametrize(
    ("question", "raw", "code"),
    [
        (CHOICE, 4, "answer_option"),
        (CHOICE, "-1", "answer_option"),
        (CHOICE, "b", "answer_option"),
        (CHOICE, True, "answer_option"),
        (CHOICE, 1.5, "answer_option"),
        (ROW, "0.5, 0.5", "answer_row_count"),
        (ROW, "0.1, 0.2, 0.3, 0.4", "answer_row_count"),
        (ROW, "0.5, 0.5, 1.5", "answer_row"),
        (ROW, "0.5, -0.1, 0.6", "answer_row"),
        (ROW, "0.5, nan, 0.5", "answer_row"),
        (ROW, "a, b, c", "answer_row"),
        (NUMBER, "abc", "answer_number"),
        (NUMBER, "inf", "answer_number"),
        (NUMBER, "", "answer_number"),
        (NUMBER, "1e13", "answer_number_range"),
        (NUMBER, "1" * (MAX_ANSWER_TEXT + 1), "answer_long"),
        (ROW, "0.1," * 400, "answer_long"),
        (synthetic("essay", None), "x", "question_kind"),
    ],
)
def test_parse_answer_refuses_with_a_code(question, raw, code):
    assert code_of(lambda: parse_answer(question, raw)) == code


def test_refusals_name_what_is_wrong_in_every_language():
    with pytest.raises(AttnvizError) as caught:
        parse_answer(ROW, "0.5, 0.5")
    assert str(caught.value) == "Type 3 numbers, one per key: 2 were typed."
    assert "3" in render(caught.value, "zh-Hans") and "2" in render(caught.value, "zh-Hant")
    with pytest.raises(AttnvizError) as caught:
        parse_answer(ROW, "0.5, 0.2, 7")
    assert "7" in str(caught.value)


def test_marking_at_the_tolerances_edges():
    assert is_correct(ROW, "[0.25,0.25,0.45]")  # every error 0.05
    assert not is_correct(ROW, "[0.251,0.3,0.5]")
    assert is_correct(NUMBER, "46.41") and is_correct(NUMBER, "44.59") and not is_correct(NUMBER, "46.42")
    near_zero = synthetic("number", 0.001, tolerance={"relative": 0.02, "absolute": 0.01})
    assert is_correct(near_zero, "0.0105") and not is_correct(near_zero, "0.012")
    assert is_correct(CHOICE, "1") and is_correct(CHOICE, "2") and not is_correct(CHOICE, "0")
    for stored in ("", "not json", "[1,", '"1"', "1.0", "true", "[0.2,0.3]", '["0.2","0.3","0.5"]', "9", None):
        assert not is_correct(CHOICE, stored) and not is_correct(ROW, stored)
    for stored in ('"45.5"', "true", "[45.5]", "NaN", "Infinity", "1e400"):
        assert not is_correct(NUMBER, stored)


# --- the class's answers summed up --------------------------------------------------------------------------------


def test_aggregate_choice_counts_and_the_commonest_wrong_answer():
    answers = {"s1": "1", "s2": "0", "s3": "0", "s4": "3", "s5": "2", "s6": "garbage", "s7": "9"}
    summary = aggregate(CHOICE, answers)
    assert (summary.answered, summary.correct, summary.invalid) == (5, 2, 2)
    assert summary.counts == [2, 1, 1, 1]
    assert summary.commonest_wrong == ("a", 2)
    assert aggregate(CHOICE, {"s1": "1"}).commonest_wrong is None
    empty = aggregate(CHOICE, {})
    assert (empty.answered, empty.counts, empty.commonest_wrong) == (0, [0, 0, 0, 0], None)


def test_aggregate_rows_mean_spread_and_rounded_wrong_rows():
    rows = [[0.2, 0.3, 0.5], [0.333, 0.333, 0.333], [0.33, 0.33, 0.33], [0.1, 0.4, 0.5], [0.6, 0.2, 0.2]]
    answers = {f"s{n}": json.dumps(row) for n, row in enumerate(rows)}
    answers["bad"] = "[0.2, 0.3]"
    summary = aggregate(ROW, answers)
    assert (summary.answered, summary.correct, summary.invalid) == (5, 1, 1)
    for key in range(3):
        column = [row[key] for row in rows]
        assert summary.mean[key] == pytest.approx(statistics.mean(column))
        assert summary.std[key] == pytest.approx(statistics.pstdev(column))
    assert summary.truth == [0.2, 0.3, 0.5]
    assert summary.commonest_wrong == ("≈ 0.33, 0.33, 0.33", 2)  # 0.333 and 0.33 typed: rounded, and said so


def test_aggregate_numbers_values_median_and_rounded_wrong_numbers():
    answers = {"a": "45.5", "b": "43.67", "c": "43.666", "d": "50", "e": "46", "f": "{}"}
    summary = aggregate(NUMBER, answers)
    assert (summary.answered, summary.correct, summary.invalid) == (5, 2, 1)
    assert summary.values == [45.5, 43.67, 43.666, 50.0, 46.0]
    assert summary.median == statistics.median([45.5, 43.67, 43.666, 50.0, 46.0])
    assert summary.commonest_wrong == ("≈ 43.7", 2)  # 43.67 and 43.666 typed: rounded, and said so


def test_the_commonest_wrong_number_is_written_as_typed_when_everyone_typed_it_alike():
    """Two students typed 69.25: the reveal said "Commonest wrong answer: 69.2" while each was told "Your answer was
    69.25"."""
    summary = aggregate(NUMBER, {"a": "69.25", "b": "69.25", "c": "45.5"})
    assert summary.commonest_wrong == ("69.25", 2)


def test_aggregate_head_names_the_wrong_head_in_the_language():
    head = Question(3, "head", {"page": "learned", "kind": "head", "options": ["L1 H1", "L1 H2", "L2 H1", "L2 H2"],
                                "truth": [2], "context": {"heads": [[1, 1], [1, 2], [2, 1], [2, 2]]}})  # fmt: skip
    summary = aggregate(head, {"a": "0", "b": "0", "c": "2"}, lang="zh-Hans")
    assert summary.counts == [2, 0, 1, 0]
    assert summary.commonest_wrong == (t("learned.head_short", "zh-Hans", layer=1, head=1), 2)


# --- the CSV ------------------------------------------------------------------------------------------------------


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


def test_csv_rows_students_and_formula_injection():
    first = Question(1, "top_key", {**synthetic("top_key", [1], ["the", "cat", "sat"]).spec})
    second = Question(2, "number", {**NUMBER.spec, "about": {"index": 0, "label": "57"}})
    answers = {1: {"id-a": "1", "id-b": "0", "id-c": "0"}, 2: {"id-b": "45.5", "id-d": "-3", "id-e": "oops"}}
    nicknames = {"id-a": '=HYPERLINK("x")', "id-b": "小明", "id-c": ""}
    data = answers_csv([first, second], answers, nicknames)
    assert data.startswith(b"\xef\xbb\xbf")  # UTF-8 with its mark: spreadsheets read the Chinese right
    rows = read_csv(data)
    assert rows[0] == ["question", "kind", "about", "student", "answer", "correct", "truth"]
    assert rows[1:] == [
        ["1", "most weight", "q1", '\'=HYPERLINK("x")', "cat", "yes", "cat"],
        ["1", "most weight", "q1", "小明", "the", "no", "cat"],
        ["1", "most weight", "q1", "student 1", "the", "no", "cat"],
        ["2", "number", "57", "小明", "45.5", "yes", "45.5"],
        ["2", "number", "57", "student 2", "'-3", "no", "45.5"],
        ["2", "number", "57", "student 3", "oops", "no", "45.5"],
    ]
    assert b"id-" not in data  # never the internal ids
    chinese = read_csv(answers_csv([first], answers, nicknames, lang="zh-Hant"))
    assert chinese[0][3] == t("class.csv_student", "zh-Hant") and chinese[3][3] == t(
        "class.csv_student_n", "zh-Hant", n=1
    )


# --- prompts ------------------------------------------------------------------------------------------------------


def test_prompts_in_every_language():
    top = make_question("self", {"p": "unit_sentences"}, "top_key", 1, 1)
    row = make_question("self", {"p": "unit_sentences"}, "row", 1, 1)
    number = make_question("self", {"p": "unit_sentences"}, "number", 1, 1)
    assert prompt(top) == "Which key gets the most weight from query w2?"
    assert prompt(row) == "Type row w2 of the weights."
    assert prompt(number) == "What is the first number of the output of query w2?"
    for lang in LANGUAGES:
        assert "w2" in prompt(top, lang) and "w2" in prompt(row, lang) and "w2" in prompt(number, lang)


# --- figures ------------------------------------------------------------------------------------------------------


def validated(fig: go.Figure) -> go.Figure:
    go.Figure(fig.to_dict())  # Plotly's validation on: raises on any invalid property
    return fig


def test_choice_histogram_marks_the_right_options():
    labels = ["the", "cat", "a very long token that does not fit a phone", "<b>"]
    fig = validated(figures.choice_histogram(labels, [3, 5, 0, 1], [1, 2], "Which key?"))
    right, other = fig.data
    assert right.type == other.type == "bar" and right.orientation == "h"
    assert list(right.y) == ["✓ cat", "✓ a very long token…"] and list(right.x) == [5, 0]
    assert list(other.y) == ["the", "&lt;b&gt;"] and list(other.x) == [3, 1]
    assert right.marker.color == BLUE and right.marker.pattern.shape == "/"
    assert right.marker.pattern.fillmode == "overlay"  # stripes over the blue, not instead of it
    assert other.marker.color == ORANGE and not other.marker.pattern.shape
    assert fig.layout.title.text == "Which key?" and fig.layout.xaxis.title.text == "students"
    assert list(fig.layout.yaxis.categoryarray) == ["the", "✓ cat", "✓ a very long token…", "&lt;b&gt;"]
    zh = figures.choice_histogram(labels, [3, 5, 0, 1], [1], "?", lang="zh-Hans")
    assert zh.layout.xaxis.title.text == t("class.students", "zh-Hans")
    long = figures.choice_histogram(["a"], [1], [0], "Which key gets the most weight from query <b>it</b>?")
    assert long.layout.title.text == "Which key gets the most weight from<br>query &lt;b&gt;it&lt;/b&gt;?"
    assert long.layout.margin.t > fig.layout.margin.t  # room for the second line
    chinese = figures.choice_histogram(["a"], [1], [0], "查询" * 20)  # no spaces: cut by width (2 columns each)
    assert chinese.layout.title.text == "查询" * 9 + "<br>" + "查询" * 9 + "<br>" + "查询" * 2
    many = validated(figures.choice_histogram([f"k{i}" for i in range(200)], np.ones(200), [0], "t"))
    assert many.layout.height <= 150 + 30 * 40 and len(many.layout.yaxis.tickvals) <= 40


def test_row_comparison_truth_against_the_class_mean_with_its_spread():
    fig = validated(
        figures.row_comparison(["k1", "k2", "k3"], [0.2, 0.3, 0.5], [0.3, 0.3, 0.4], [0.1, 0.0, 0.05], "Row")
    )
    truth, mean = fig.data
    assert truth.name == "truth" and mean.name == "class mean"
    np.testing.assert_allclose(truth.y, [0.2, 0.3, 0.5], rtol=1e-6)
    np.testing.assert_allclose(mean.y, [0.3, 0.3, 0.4], rtol=1e-6)
    np.testing.assert_allclose(mean.error_y.array, [0.1, 0.0, 0.05], rtol=1e-6)
    assert truth.marker.pattern.shape == "/" and mean.marker.color == ORANGE
    with pytest.raises(ValueError):
        figures.row_comparison(["k1"], [0.2, 0.8], [0.5, 0.5], [0, 0], "Row")


def test_number_distribution_histogram_and_the_truth_line():
    values = [45.5, 43.67, 43.666, 50.0, 46.0, 45.0]
    fig = validated(figures.number_distribution(values, 45.5, "f(57)"))
    bars, line = fig.data
    assert bars.type == "bar" and line.type == "scatter" and line.mode == "lines"
    assert float(np.sum(bars.y)) == len(values) and len(bars.x) <= figures.MAX_BINS
    assert list(line.x) == [45.5, 45.5] and line.line.dash == "dash" and line.line.color == BLUE
    edges_low = np.asarray(bars.x) - np.asarray(bars.width) / 2
    assert edges_low.min() <= 43.666 and (np.asarray(bars.x) + np.asarray(bars.width) / 2).max() >= 50.0
    same = validated(figures.number_distribution([2.0, 2.0], 2.0, "t"))  # one value: bins of some width
    assert float(np.sum(same.data[0].y)) == 2 and min(same.data[0].width) > 0
    low, high = fig.layout.xaxis.range  # the truth at the largest answer: inside the frame, not on it
    edge = validated(figures.number_distribution([1.0, 2.0, 3.0, 10.0], 10.0, "t"))
    edge_low, edge_high = edge.layout.xaxis.range
    width = float(np.max(edge.data[0].width))
    assert edge_high - 10.0 >= width / 2 - 1e-6 and 1.0 - edge_low >= width / 2 - 1e-6
    assert low < 43.666 and high > 50.0
    nobody = validated(figures.number_distribution([], 1.0, "t"))
    assert float(np.sum(nobody.data[0].y)) == 0 and list(nobody.data[1].x) == [1.0, 1.0]


def test_with_the_tolerance_the_bar_around_the_truth_holds_exactly_the_right_answers():
    """The bars were numpy's "auto" bins (~8 wide for answers 45.5 and 69.25): the right answer's bar covered
    45.5-53.5 with the truth on its left edge. With the marking's tolerance (2 % of 45.5 = 0.91) the truth's bar
    is 44.59-46.41, centred on it, and every other bar is as wide."""
    values = [45.5, 45.4, 43.67, 50.0, 46.41, 45.6, 69.25, 69.25]  # 46.41: on the tolerance's edge, right
    right = [marked(NUMBER, v) for v in values]
    assert right == [True, True, False, False, True, True, False, False]
    fig = validated(figures.number_distribution(values, 45.5, "f(57)", right=right, tolerance=0.91))
    good, other, _ = fig.data
    low, high = np.asarray(good.customdata)[:, 0], np.asarray(good.customdata)[:, 1]
    centre = int(np.argmax(good.y))
    assert (low[centre], high[centre]) == (pytest.approx(44.59, abs=1e-4), pytest.approx(46.41, abs=1e-4))
    assert float(good.y[centre]) == 4 and float(np.sum(good.y)) == 4 and float(other.y[centre]) == 0
    np.testing.assert_allclose(good.width, 1.82, rtol=1e-5)
    assert float(np.sum(other.y)) == 4 and len(good.x) <= figures.MAX_BINS
    spread = validated(figures.number_distribution([45.5, 1000.0], 45.5, "t", right=[True, False], tolerance=0.91))
    bars = spread.data[0]
    assert len(bars.x) <= figures.MAX_BINS  # too far for bins of 1.82: wider ones, the truth's still centred on it
    assert float(bars.x[int(np.argmax(bars.y))]) == pytest.approx(45.5, rel=1e-5)


def test_number_distribution_stacks_the_right_answers_in_blue_below_the_others():
    values = [45.5, 45.4, 43.67, 50.0, 46.0, 45.6]
    right = [abs(v - 45.5) <= 0.02 * 45.5 for v in values]  # the marking's 2 %: 45.5, 45.4, 45.6, 46.0
    fig = validated(figures.number_distribution(values, 45.5, "f(57)", right=right, lang="zh-Hans"))
    good, other, line = fig.data
    assert fig.layout.barmode == "stack"
    assert float(np.sum(good.y)) == 4 and float(np.sum(other.y)) == 2
    assert good.marker.color == BLUE and good.marker.pattern.shape == "/" and other.marker.color == ORANGE
    assert line.name == "真实值：45.5"  # the Chinese colon, from the catalogue
    assert validated(figures.number_distribution(values, 45.5, "t")).data[-1].name == "truth: 45.5"
    with pytest.raises(ValueError):
        figures.number_distribution(values, 45.5, "t", right=[True])


@pytest.mark.parametrize(
    ("params", "methods"),
    [
        ({"m": "induction", "l": "6", "hd": "9"}, ["raw", "rollout", "flow", "norm", "gradient", "integrated"]),
        ({"m": "induction", "l": "1", "hd": "2"}, ["raw", "rollout", "flow", "norm", "gradient", "integrated"]),
        ({"m": "dates", "c": "6"}, ["raw", "gradient", "integrated"]),
    ],
)
def test_explanation_page_on_a_trained_model_asks_which_of_its_maps_agrees_best(params, methods):
    """The induction model's maps at the page's layer and head (a link's layer 6 and head 9 are its layer 2 and the
    heads' mean, as the page shows them); the dates model's three maps for output character 6."""
    from attnviz.models.learned.explanation import dates_explanation, induction_explanation
    from attnviz.models.learned.explanation import layer_maps as learned_maps
    from attnviz.models.learned.train import checkpoint_path, load_run

    question = make_question("faithful", params, "best_map", 0, question_id=4)
    spec = question.spec
    assert spec["context"]["methods"] == methods
    if params["m"] == "induction":
        maps = induction_explanation(load_run(checkpoint_path("induction")).model, "D H A Q K D H A Q K")
        layer = min(int(params["l"]), 2) - 1
        by_method = learned_maps(maps, layer, None if int(params["hd"]) > 2 else int(params["hd"]) - 1)
    else:
        maps = dates_explanation(load_run(checkpoint_path("dates")).model, "22 November 2026", 5)
        by_method = learned_maps(maps, 0, None)
    expected = {m: spearman(values, by_method["blank"]) for m, values in by_method.items() if m != "blank"}
    np.testing.assert_allclose(spec["context"]["rho"], [expected[m] for m in methods], atol=1e-6)
    best = max(expected.values())
    assert spec["truth"] == [n for n, m in enumerate(methods) if expected[m] >= best - 0.005]
    assert offers("faithful", {"m": "induction", "q": "A B 7"}) == []
    assert offers("faithful", {"m": "dates", "d": "22 ноября 2026"}) == []
