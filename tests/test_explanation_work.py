"""Show-your-work on "Is attention an explanation?": the worked rollout entry against rollout reworked here by loops
over the layers, the worked norm-based entry against MiniLM's own value and output weights read here, and the panel
on the page in every language."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.i18n import t
from attnviz.lessons.explanation_work import (
    TOP_TERMS,
    default_cell,
    quoted,
    rollout_cell,
    rollout_steps,
)
from attnviz.lessons.norm_work import norm_cell, norm_steps
from attnviz.lessons.working import number_text
from attnviz.models.bert_attribution import norm_based_layers
from attnviz.models.bert_explanation import is_punctuation
from attnviz.models.bert_views import token_labels
from tests import test_bert_explanation, test_explanation_page
from tests.test_app import ROOT, run_page
from tests.test_i18n import ENGLISH_RUN

PAGE, SENTENCE = test_explanation_page.PAGE, test_bert_explanation.SENTENCE
OPEN = "faithful:open:work"
# The fixtures of the page's and the maps' tests: the model, the sentence's trace and maps, and the open gate.
model, computed = test_bert_explanation.model, test_bert_explanation.computed
open_gate = test_explanation_page.open_gate


@pytest.fixture(scope="module")
def worked(computed):
    """The sentence's trace and maps, and its tokens named as the charts and the steps name them."""
    trace, maps = computed
    return trace, maps, token_labels(maps.tokens, "·")


def rollout_by_hand(trace, layers: int) -> list[list[float]]:
    """Abnar & Zuidema's rollout after `layers` layers, by loops: each layer's heads averaged, half the identity mixed
    in, the rows renormalised, and that matrix times the rollout below."""
    n = len(trace.tokens)
    result = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for layer in trace.layers[:layers]:
        weights = layer.weights.tolist()  # (h, n, n)
        heads = len(weights)
        mixed = []
        for i in range(n):
            row = [
                0.5 * sum(weights[h][i][k] for h in range(heads)) / heads + (0.5 if i == k else 0.0) for k in range(n)
            ]
            mixed.append([value / sum(row) for value in row])
        result = [[sum(mixed[i][k] * result[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return result


def length_by_hand(model, trace, layer: int, head: int, key: int) -> float:
    """‖f_h(x_j)‖ from MiniLM's weights: the key's input to the layer through this head's rows of the value weight and
    its columns of the output weight (no bias)."""
    size = model.config.hidden_size // model.config.num_heads
    rows = slice((head - 1) * size, head * size)
    prefix = f"encoder.layer.{layer - 1}.attention."
    value = model.weights[prefix + "self.value.weight"][rows] @ trace.hidden_states[layer - 1][key]  # (d/h,)
    vector = model.weights[prefix + "output.dense.weight"][:, rows] @ value  # (d,)
    return float(vector.double().norm())


@pytest.mark.parametrize(("layer", "row", "key"), [(6, 5, 2), (3, 2, 6), (6, 11, 0), (1, 3, 3)])
def test_the_worked_rollout_entry_is_rollout_by_loops(worked, layer, row, key):
    trace, maps, labels = worked
    expected = rollout_by_hand(trace, layer)
    below = rollout_by_hand(trace, layer - 1)
    cell = rollout_cell(maps.attentions, layer, row, key)
    assert cell.entry == pytest.approx(expected[row][key], rel=1e-5)
    assert sum(cell.terms) == pytest.approx(expected[row][key], rel=1e-5)
    assert cell.below == pytest.approx([below[k][key] for k in range(len(labels))], abs=1e-6)
    steps = rollout_steps(cell, labels)
    product = steps[1].note
    if cell.chart is not None:  # the last layer: the chart's value, the mean of rollout's column (not of Ã's)
        assert r"\operatorname{rollout}_L[i, j]" in steps[2].formula and r"\tilde A" not in steps[2].formula
    assert f"{number_text(expected[row][key])}." in product  # the total and the matrix's entry
    if layer > 1:
        mean = trace.layers[layer - 1].weights.mean(dim=0)[row].tolist()
        mixed = [0.5 * a + (0.5 if k == row else 0.0) for k, a in enumerate(mean)]
        terms = [m / sum(mixed) * below[k][key] for k, m in enumerate(mixed)]
        largest = max(range(len(terms)), key=lambda k: terms[k])
        assert product.index(f"({quoted(labels[largest])})") < product.index("…")  # the largest term comes first
        rest = sorted(terms)[: len(terms) - TOP_TERMS]
        assert t("faithful.work_more_terms", "en", count=len(rest), sum=number_text(sum(rest))) in product
    else:
        assert product == t("faithful.work_product_first", "en", query=quoted(labels[row]), key=quoted(labels[key]),
                             entry=number_text(expected[row][key])) + " " + t(
            "faithful.work_other_layer", "en", last=6, L="₆")  # fmt: skip
    if layer == 6:  # the chart's value: the column's mean, as the page's rollout row shows it
        column = sum(expected[i][key] for i in range(len(labels))) / len(labels)
        assert cell.chart == pytest.approx(column, rel=1e-5)
        if key in maps.positions:
            assert float(maps.rollout[maps.positions.index(key)]) == pytest.approx(column, rel=1e-5)
        assert number_text(column) in steps[2].note and len(steps) == 3
    else:
        assert cell.chart is None and len(steps) == 2


def test_the_residual_mix_is_written_out_for_the_row(worked):
    trace, maps, labels = worked
    cell = rollout_cell(maps.attentions, 4, 2, 6)
    mean = trace.layers[3].weights.mean(dim=0)[2].tolist()
    note = rollout_steps(cell, labels)[0].note
    assert f"0.5 × {number_text(mean[6])} / 1 = {number_text(0.5 * mean[6])}" in note
    assert f"(0.5 × {number_text(mean[2])} + 0.5) / 1 = {number_text(0.5 * mean[2] + 0.5)}" in note
    diagonal = rollout_steps(rollout_cell(maps.attentions, 4, 2, 2), labels)[0].note
    assert diagonal.startswith(t("faithful.work_mix_note_diagonal", "en").split("{")[0])


@pytest.mark.parametrize(("layer", "head", "row", "key"), [(6, 3, 9, 6), (2, 7, 3, 0), (4, 12, 12, 11)])
def test_the_worked_norm_entry_from_minilms_own_weights(model, worked, layer, head, row, key):
    trace, maps, labels = worked
    weight = float(trace.layers[layer - 1].weights[head - 1, row, key])
    length = length_by_hand(model, trace, layer, head, key)
    cell = norm_cell(maps.attentions, maps.norms, maps.lengths, layer, head, row, key)
    assert cell.weights[0][key] == pytest.approx(weight, rel=1e-6)
    assert cell.lengths[0][key] == pytest.approx(length, rel=1e-4)
    assert cell.entries[0][key] == pytest.approx(weight * length, rel=1e-4)
    steps = norm_steps(cell, labels)
    assert f"‖f({quoted(labels[key])})‖ = {number_text(length)}" in steps[1].note
    assert f"= {number_text(weight)} × {number_text(length)} = {number_text(weight * length)}." in steps[2].note
    assert steps[2].note.endswith(f": {number_text(weight * length)}.")  # the matrix's own entry
    column = sum(float(trace.layers[layer - 1].weights[head - 1, i, key]) * length for i in range(len(labels))) / len(
        labels
    )
    assert f": {number_text(column)}." in steps[3].note  # the chart's value
    assert r"\lVert \alpha_{ij} f(\mathbf x_j) \rVert" in steps[3].formula  # the mean of what step 3 worked out


def test_the_mean_of_heads_is_the_mean_of_each_heads_product(model, worked):
    trace, maps, labels = worked
    layer, row, key = 6, 5, 2
    products = [
        float(trace.layers[layer - 1].weights[h - 1, row, key]) * length_by_hand(model, trace, layer, h, key)
        for h in range(1, 13)
    ]
    cell = norm_cell(maps.attentions, maps.norms, maps.lengths, layer, None, row, key)
    assert cell.mean(cell.entries)[key] == pytest.approx(sum(products) / 12, rel=1e-4)
    note = norm_steps(cell, labels)[2].note
    assert f"/ 12 = {number_text(sum(products) / 12)}." in note
    top = max(range(12), key=lambda h: products[h])
    assert note.index(f"({t('faithful.head_n', 'en', head=top + 1)})") < note.index("…")


def test_why_it_differs_names_the_key_with_more_weight_and_its_short_vector(model, worked):
    """In the last layer, «was» looks at [CLS] more than at «mat», but [CLS] adds a far shorter vector."""
    trace, maps, labels = worked
    layer, head, row, key = 6, 3, 9, 6
    weights = trace.layers[layer - 1].weights[head - 1, row].tolist()
    other = max((k for k in range(len(weights)) if k != key), key=lambda k: weights[k])
    assert labels[other] == "[CLS]" and weights[other] > weights[key]
    lengths = {k: length_by_hand(model, trace, layer, head, k) for k in (key, other)}
    assert weights[other] * lengths[other] < weights[key] * lengths[key]
    cell = norm_cell(maps.attentions, maps.norms, maps.lengths, layer, head, row, key)
    note = norm_steps(cell, labels)[4].note
    assert f"‖f(«[CLS]»)‖ = {number_text(lengths[other])}" in note
    assert t("faithful.work_flips", "en", key="«mat»", other="«[CLS]»") in note


def test_the_default_cell_is_the_top_word_of_the_norm_based_chart_and_its_largest_row(worked):
    _trace, maps, labels = worked
    norms = maps.norms[5][2]  # layer 6, head 3: (T, T)
    words = [i for i in maps.positions if not is_punctuation(maps.tokens[i])]
    row, key = default_cell(maps.norms[5], 3, words)
    columns = norms.mean(dim=0)
    assert key in words and all(columns[key] >= columns[j] for j in words)
    assert row != key and all(norms[row, key] >= norms[i, key] for i in range(len(labels)) if i != key)
    mean_row, mean_key = default_cell(maps.norms[5], None, words)
    assert mean_key == max(words, key=lambda j: float(maps.norms[5].mean(dim=0).mean(dim=0)[j]))
    assert mean_row != mean_key


def _work_texts(at) -> str:
    """Every markdown text of the run, the escapes of the user's tokens and of the numbers' dots taken out."""
    return "\n".join(m.value for m in at.markdown).replace("\\", "")


def opened_page(**params: str) -> AppTest:
    """The page opened from a link with `params`, its show-your-work section open from the first run (a rerun of a
    Chinese page in AppTest would format the head picker's options in English, outside the page's language)."""
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    at.session_state[OPEN] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _pickers(at, lang: str = "en"):
    query = [s for s in at.selectbox if s.label == t("faithful.work_query", lang)]
    key = [s for s in at.selectbox if s.label == t("faithful.work_key", lang)]
    assert len(query) == len(key) == 1
    return query[0], key[0]


@pytest.mark.parametrize("lang", ["en", "zh-Hans", "zh-Hant"])
def test_the_panel_opens_on_the_page_in_every_language(worked, lang):
    trace, maps, _labels = worked
    params = {"lang": lang} if lang != "en" else {}
    closed = run_page(PAGE, **params)
    assert t("faithful.work_heading", lang) in [e.label for e in closed.expander]
    assert t("faithful.work_mix", lang) not in _work_texts(closed)  # built only when opened
    at = opened_page(**params)
    query, key = _pickers(at, lang)
    texts = _work_texts(at)
    for title in ("faithful.work_mix", "faithful.work_product", "faithful.work_times", "faithful.work_differs"):
        assert t(title, lang) in texts
    entry = rollout_by_hand(trace, 6)[query.value][key.value]
    assert number_text(entry) in texts
    assert query.value != key.value and key.value in maps.positions
    if lang != "en":
        prose = re.sub(r"\$\$.*?\$\$|\$.*?\$", "", texts, flags=re.S).replace(SENTENCE, "")
        assert not ENGLISH_RUN.search(prose), ENGLISH_RUN.search(prose)


def test_choosing_a_cell_and_a_head_reworks_it(model, worked):
    trace, _maps, labels = worked
    at = opened_page(hd="5", l="2")
    query, key = _pickers(at)
    query.set_value(4).run()
    _, key = _pickers(at)
    key.set_value(len(labels) - 1).run()  # [SEP]
    assert not at.exception
    texts = _work_texts(at)
    weight = float(trace.layers[1].weights[4, 4, len(labels) - 1])
    length = length_by_hand(model, trace, 2, 5, len(labels) - 1)
    assert f"‖α f(«[SEP]»)‖ = {number_text(weight)} × {number_text(length)}" in texts
    assert "rollout₂[«on», «[SEP]»]" in texts
    assert number_text(rollout_by_hand(trace, 2)[4][len(labels) - 1]) in texts


def test_a_new_sentence_gets_new_pickers_on_its_own_default_cell(model):
    at = opened_page()
    at.text_input(key="w:faithful:sentence").set_value("A dog barked at the moon.").run()
    assert not at.exception
    query, key = _pickers(at)
    tokens = model.encode("A dog barked at the moon.").tokens
    assert query.options == token_labels(tokens, "·")
    trace = model.run("A dog barked at the moon.")
    words = [i for i in range(1, len(tokens) - 1) if not is_punctuation(tokens[i])]
    assert (query.value, key.value) == default_cell(norm_based_layers(model, trace)[5], None, words)
    kept = [k for k in at.session_state if k.startswith("w:faithful:work_")]
    assert sorted(kept) == sorted([query.key, key.key])  # Streamlit drops the first sentence's, no longer drawn
