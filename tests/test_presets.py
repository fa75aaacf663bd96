"""Every preset runs, and the presets reproduce the study notes' numbers."""

import numpy as np
import pytest
import reference as ref

import attnviz

REQUIRED = [
    "waist_weight",
    "waist_chest_2d",
    "d2l_additive",
    "d2l_dot_product",
    "unit_sentences",
    "decoder_state",
    "cross_residual",
]


def attention_part(trace):
    """The AttentionTrace inside a preset's result (a multi-head trace holds it in .heads)."""
    if hasattr(trace, "scores"):
        return trace
    assert len(trace.heads) == 1, "expected a single-head trace"
    return trace.heads[0]


def run(key):
    return attnviz.PRESETS[key].run()


def test_required_presets_exist():
    for key in REQUIRED:
        assert key in attnviz.PRESETS, key


@pytest.mark.parametrize("key", sorted(attnviz.PRESETS))
def test_every_preset_runs_and_is_finite(key):
    preset = attnviz.PRESETS[key]
    assert preset.page in ("self", "cross", "kernel")
    for field in ("title", "source", "description"):
        assert isinstance(getattr(preset, field), str) and getattr(preset, field).strip()
    trace = preset.run()
    weights = ref.to_np(trace.weights)
    assert np.all(np.isfinite(weights)) and np.all(weights >= 0)
    assert np.all(np.isfinite(ref.to_np(trace.output)))
    sums = weights.sum(-1)
    assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0))


def test_every_preset_is_reproducible():
    for key, preset in attnviz.PRESETS.items():
        a, b = preset.run(), preset.run()
        np.testing.assert_array_equal(ref.to_np(a.output), ref.to_np(b.output), err_msg=key)


# ------------------------------------------------------------------ note 004: waist -> weight


def test_waist_weight_predicts_45_5_at_57():
    trace = run("waist_weight")
    queries = ref.to_np(trace.queries).reshape(-1)
    output = ref.to_np(trace.output).reshape(-1)
    idx = np.flatnonzero(np.isclose(queries, 57.0))
    assert idx.size >= 1, f"no query 57 in {queries}"
    assert output[idx[0]] == pytest.approx(45.5, abs=1e-4)
    np.testing.assert_allclose(ref.to_np(trace.keys).reshape(-1), [51, 56, 58])
    np.testing.assert_allclose(ref.to_np(trace.values).reshape(-1), [40, 43, 48])
    np.testing.assert_allclose(ref.to_np(trace.weights).reshape(-1, 3)[idx[0]], [0, 0.5, 0.5], atol=1e-6)


def test_waist_chest_2d_matches_reference():
    keys = np.array([[51, 70], [56, 82], [56, 82]], dtype=np.float64)
    values = np.array([[40, 155], [43, 159], [48, 162]], dtype=np.float64)
    queries = np.array([[57, 83], [55, 76]], dtype=np.float64)
    trace = attention_part(run("waist_chest_2d"))
    np.testing.assert_allclose(ref.to_np(trace.keys).reshape(3, 2), keys)
    np.testing.assert_allclose(ref.to_np(trace.values).reshape(3, 2), values)
    np.testing.assert_allclose(ref.to_np(trace.queries).reshape(2, 2), queries)
    expected = ref.attention(queries, keys, values, score="dot")
    np.testing.assert_allclose(ref.to_np(trace.scores).reshape(2, 3), expected["scores"], rtol=1e-6)
    np.testing.assert_allclose(ref.to_np(trace.weights).reshape(2, 3), expected["weights"], atol=1e-6)
    np.testing.assert_allclose(ref.to_np(trace.output).reshape(2, 2), expected["output"], atol=1e-3)
    # by hand: q . (56, 82) beats q . (51, 70) by > 1000, the two equal keys share the weight
    np.testing.assert_allclose(ref.to_np(trace.output).reshape(2, 2), [[45.5, 160.5], [45.5, 160.5]], atol=1e-3)


# ------------------------------------------------------------------ note 004: d2l code


BOOK_OUTPUT = np.array([[2.0, 3.0, 4.0, 5.0], [10.0, 11.0, 12.0, 13.0]])


@pytest.mark.parametrize("key", ["d2l_additive", "d2l_dot_product"])
def test_d2l_presets_reproduce_book_output(key):
    trace = attention_part(run(key))
    assert ref.to_np(trace.valid_lens).tolist() == [2, 6]
    np.testing.assert_allclose(ref.to_np(trace.output).reshape(2, 4), BOOK_OUTPUT, atol=1e-4)
    w = ref.to_np(trace.weights).reshape(2, 10)
    np.testing.assert_allclose(w[0, :2], 0.5, atol=1e-6)
    np.testing.assert_allclose(w[1, :6], 1 / 6, atol=1e-6)
    assert np.all(w[0, 2:] == 0) and np.all(w[1, 6:] == 0)


# ------------------------------------------------------------------ note 003: unit sentences

SENTS = np.array(
    [
        [
            [0.1696, 0.0125, 0.1379, 0.3478, 0.3790, 0.2276, 0.4528, 0.2270, 0.4609, 0.4082],
            [0.0771, 0.2745, 0.1747, 0.4133, 0.1001, 0.1052, 0.4344, 0.0607, 0.4888, 0.5148],
            [0.3007, 0.0279, 0.0811, 0.3120, 0.4506, 0.3386, 0.4638, 0.2450, 0.0686, 0.4554],
            [0.4082, 0.3927, 0.4035, 0.1330, 0.3023, 0.3567, 0.0814, 0.0258, 0.1728, 0.4929],
        ],
        [
            [0.3552, 0.3260, 0.0076, 0.2821, 0.1292, 0.4619, 0.3386, 0.4913, 0.2997, 0.1095],
            [0.4076, 0.1469, 0.2115, 0.5363, 0.1666, 0.5930, 0.0947, 0.2785, 0.0444, 0.1096],
            [0.0576, 0.4700, 0.0063, 0.1463, 0.3560, 0.2613, 0.4805, 0.0120, 0.3639, 0.4427],
            [0.4564, 0.5436, 0.0129, 0.1896, 0.2353, 0.3753, 0.2794, 0.4229, 0.0830, 0.0102],
        ],
    ]
)

PRINTED_SCORES = np.array(
    [
        [
            [1.0000, 0.8921, 0.9020, 0.6954],
            [0.8921, 1.0000, 0.7390, 0.7076],
            [0.9020, 0.7390, 1.0000, 0.7453],
            [0.6954, 0.7076, 0.7453, 1.0000],
        ],
        [
            [1.0000, 0.8352, 0.7078, 0.9250],
            [0.8352, 1.0000, 0.5001, 0.7811],
            [0.7078, 0.5001, 1.0000, 0.6655],
            [0.9250, 0.7811, 0.6655, 1.0000],
        ],
    ]
)

PRINTED_WEIGHTS = np.array(
    [
        [
            [0.2823, 0.2535, 0.2560, 0.2082],
            [0.2629, 0.2929, 0.2256, 0.2186],
            [0.2626, 0.2231, 0.2897, 0.2245],
            [0.2263, 0.2290, 0.2378, 0.3068],
        ],
        [
            [0.2839, 0.2408, 0.2120, 0.2634],
            [0.2603, 0.3069, 0.1862, 0.2466],
            [0.2433, 0.1977, 0.3259, 0.2332],
            [0.2692, 0.2331, 0.2076, 0.2901],
        ],
    ]
)


def test_unit_sentences_inputs_are_the_printed_sents():
    trace = attention_part(run("unit_sentences"))
    np.testing.assert_allclose(ref.to_np(trace.queries), SENTS, atol=1e-6)
    np.testing.assert_allclose(ref.to_np(trace.keys), SENTS, atol=1e-6)


def test_unit_sentences_scores_match_printed_scores():
    trace = attention_part(run("unit_sentences"))
    np.testing.assert_allclose(ref.to_np(trace.scores), PRINTED_SCORES, atol=2e-3)


def test_unit_sentences_weights_match_printed_softmax():
    trace = attention_part(run("unit_sentences"))
    np.testing.assert_allclose(ref.to_np(trace.weights), PRINTED_WEIGHTS, atol=2e-3)


def test_unit_sentences_output_is_weights_times_sents():
    result = run("unit_sentences")
    expected = ref.attention(SENTS, SENTS, SENTS, score="dot")
    np.testing.assert_allclose(ref.to_np(result.output), expected["output"], atol=1e-4)


# ------------------------------------------------------------------ note 001


def test_decoder_state_shapes():
    trace = attention_part(run("decoder_state"))
    assert tuple(trace.output.shape) == (10, 1, 256)
    assert tuple(trace.weights.shape) == (10, 1, 12)
    np.testing.assert_allclose(ref.to_np(trace.weights).sum(-1), 1.0, atol=1e-5)


def test_decoder_state_matches_reference_on_its_inputs():
    trace = attention_part(run("decoder_state"))
    expected = ref.attention_from_scores(
        ref.raw_scores(trace.score, trace.queries, trace.keys, **trace.score_params),
        trace.values,
        scale=trace.scale,
        temperature=trace.temperature,
    )
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-5)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-4)


def test_cross_residual_output_is_queries_plus_delta():
    preset = attnviz.PRESETS["cross_residual"]
    trace = preset.run()
    queries = getattr(preset, "queries", None)
    if queries is None:
        queries = getattr(trace, "queries", None)
    assert queries is not None, "neither the preset nor its trace exposes the queries"
    delta = ref.to_np(trace.delta)
    assert np.abs(delta).max() > 1e-6
    np.testing.assert_allclose(ref.to_np(trace.output), ref.to_np(queries) + delta, atol=1e-5)


def test_a_preset_keeps_its_token_labels_while_its_rows_match():
    """Note 001's preset showed "the cat sat on the mat" / 猫坐在垫子上 as q1...q6 / k1...k6."""
    from dataclasses import replace

    from attnviz.app.pipeline import resolve_inputs
    from attnviz.app.state import apply_preset, default_attention_state

    state = apply_preset(default_attention_state("cross"), "cross_residual")
    inputs = resolve_inputs(state)
    assert inputs.query_labels == ["the", "cat", "sat", "on", "the", "mat"]
    assert inputs.key_labels == list("猫坐在垫子上")
    edited = replace(state, queries=((9.0,) * len(state.queries[0]), *state.queries[1:]))
    assert resolve_inputs(edited).query_labels[1] == "cat"  # a number edited in place keeps the labels
    shorter = replace(state, queries=state.queries[:5])
    assert resolve_inputs(shorter).query_labels == ["q1", "q2", "q3", "q4", "q5"]  # a row removed: back to q1...
    assert resolve_inputs(replace(state, preset="")).key_labels[0] == "k1"  # "— none —"


def test_the_cross_residual_chart_is_labelled_with_the_notes_tokens():
    import json

    from tests.test_app import CROSS, run_page

    at = run_page(CROSS, p="cross_residual")
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    text = json.dumps(spec, ensure_ascii=False)
    assert "猫" in text and "mat" in text
    assert '"q1"' not in text and '"k1"' not in text


def test_the_unit_sentences_preset_says_how_far_from_the_notes_print_it_is():
    """The note printed its inputs rounded to 4 decimals: some printed scores and weights differ from what those
    inputs give in the 4th decimal, and the preset's description says so, in every language."""
    from attnviz.i18n import LANGUAGES, t

    trace = attention_part(run("unit_sentences"))
    diffs = np.concatenate(
        [
            np.abs(ref.to_np(trace.scores) - PRINTED_SCORES).ravel(),
            np.abs(ref.to_np(trace.weights) - PRINTED_WEIGHTS).ravel(),
        ]
    )
    assert diffs.size == 64
    assert diffs.max() <= 1.1e-4
    assert (diffs > 5e-5).sum() >= 3  # not rounding noise: these read differently at 4 decimals
    for lang in LANGUAGES:
        assert "0.0001" in t("preset.unit_sentences.description", lang)


def test_note_000_tanh_rule_has_its_own_preset_computed_as_the_note_writes_it():
    """Issue 14, point 14: Softmax(sum(tanh(Linear([Q, K])))) · V, on the Linear([Q, K]) preset's numbers."""
    import torch

    tanh_rule, linear_rule = attnviz.PRESETS["concat_tanh"], attnviz.PRESETS["concat_linear"]
    for name in ("queries", "keys", "values"):
        assert torch.equal(getattr(tanh_rule, name), getattr(linear_rule, name))
    trace = tanh_rule.run()
    layer = attnviz.make_score_module("concat_tanh", 32, 32, seed=0, num_hiddens=8).W  # the note's nn.Linear
    q, keys, values = tanh_rule.queries[0, 0], tanh_rule.keys[0], tanh_rule.values[0]
    with torch.no_grad():
        scores = torch.stack([torch.tanh(layer(torch.cat([q, k]))).sum() for k in keys])  # one [q; k] at a time
    weights = torch.softmax(scores, dim=0)
    np.testing.assert_allclose(ref.to_np(trace.weights)[0, 0], weights.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ref.to_np(trace.output)[0, 0], (weights @ values).numpy(), rtol=1e-5, atol=1e-6)
    assert attnviz.lessons.presets.PRESET_PAGES["concat_tanh"] == "cross"


def test_batch_rows_runs_every_row_of_a_batched_preset_with_its_own_lengths():
    from attnviz.app.pipeline import batch_rows
    from attnviz.app.state import decode_attention

    rows = batch_rows(decode_attention({"p": "d2l_dot_product"}, "cross").state)
    expected = ref.to_np(attnviz.PRESETS["d2l_dot_product"].run().weights).reshape(2, 10)
    np.testing.assert_allclose(rows.weights.numpy(), expected, atol=1e-6)
    assert rows.mask.sum(dim=-1).tolist() == [2, 6] and rows.batches == [0, 1]
