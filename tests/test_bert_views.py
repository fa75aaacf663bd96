"""What the pretrained-model page computes from a trace: token filters, head views, thumbnails, finder, exports."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnviz.app.exports import attentions_npz, model_snippet, view_csv
from attnviz.app.model_state import ModelState, decode_model, encode_model
from attnviz.models.bert_views import (
    find_heads,
    head_view,
    head_weights,
    pooled_labels,
    thumbnails,
    token_selection,
)

PAIR = ["[CLS]", "where", "is", "it", "?", "[SEP]", "on", "the", "mat", "[SEP]"]
PAIR_TYPES = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1, 1])


def random_weights(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=generator), dim=-1)


@pytest.mark.parametrize(
    ("hide", "part", "rows", "cols"),
    [
        (False, "all", list(range(10)), list(range(10))),
        (True, "all", [1, 2, 3, 4, 6, 7, 8], [1, 2, 3, 4, 6, 7, 8]),
        (False, "ab", [0, 1, 2, 3, 4, 5], [6, 7, 8, 9]),
        (True, "ba", [6, 7, 8], [1, 2, 3, 4]),
    ],
)
def test_token_selection_hides_specials_and_splits_a_pair(hide, part, rows, cols):
    assert token_selection(PAIR, PAIR_TYPES, hide, part) == (rows, cols)


def test_a_single_sentence_ignores_the_pair_filter():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    assert token_selection(tokens, torch.zeros(4, dtype=torch.long), False, "ab") == ([0, 1, 2, 3], [0, 1, 2, 3])


def test_head_view_cuts_the_block_and_renormalises_rows():
    weights = random_weights(10, 10)
    rows, cols = [1, 2, 3], [4, 6, 8]
    block = head_view(weights, rows, cols)
    torch.testing.assert_close(block, weights[[1, 2, 3]][:, [4, 6, 8]])
    assert (block.sum(dim=-1) < 1).all()
    renormalised = head_view(weights, rows, cols, renormalise=True)
    torch.testing.assert_close(renormalised.sum(dim=-1), torch.ones(3))
    torch.testing.assert_close(renormalised, block / block.sum(dim=-1, keepdim=True))
    zero = head_view(torch.zeros(3, 3), [0, 1], [1, 2], renormalise=True)
    assert torch.equal(zero, torch.zeros(2, 2))  # nothing to rescale: stays 0, never NaN


def test_head_weights_average_the_chosen_heads():
    layer = SimpleNamespace(weights=random_weights(12, 5, 5))
    trace = SimpleNamespace(layers=[SimpleNamespace(weights=random_weights(12, 5, 5, seed=1)), layer])
    torch.testing.assert_close(head_weights(trace, 2, (3,)), layer.weights[2])
    torch.testing.assert_close(head_weights(trace, 2, (1, 4, 12)), layer.weights[[0, 3, 11]].mean(dim=0))


def test_thumbnails_keep_short_inputs_and_max_pool_long_ones():
    attentions = random_weights(2, 3, 200, 200)
    same, pooled = thumbnails(attentions[..., :50, :50], list(range(50)), list(range(50)))
    assert not pooled and same.shape == (2, 3, 50, 50)
    small, pooled = thumbnails(attentions, list(range(200)), list(range(200)), size=100)
    assert pooled and small.shape == (2, 3, 100, 100)
    torch.testing.assert_close(small[1, 2, 0, 0], attentions[1, 2, :2, :2].max())  # a 2 x 2 block's maximum
    assert small.amax() == attentions.amax()  # the brightest cell survives


def test_pooled_labels_name_the_tokens_each_bin_covers():
    labels = [f"t{i}" for i in range(5)]
    assert pooled_labels(labels, 8) == labels
    assert pooled_labels(labels, 2) == ["t0 … t2", "t2 … t4"]  # adaptive pooling's overlapping bins
    pooled = torch.nn.functional.adaptive_max_pool1d(torch.arange(5.0)[None, None], 2)[0, 0]
    assert pooled.tolist() == [2.0, 4.0]  # the last index of each bin, as the labels say


def test_find_heads_names_the_head_with_each_pattern():
    tokens = ["[CLS]", "a", "b", "c", "d", "[SEP]"]
    attentions = torch.full((2, 3, 6, 6), 1 / 6)
    previous, to_cls = torch.zeros(6, 6), torch.zeros(6, 6)
    for i in range(1, 6):
        previous[i, i - 1] = 1.0
    previous[0, 0] = 1.0
    to_cls[:, 0] = 1.0
    attentions[1, 2], attentions[0, 1] = previous, to_cls
    found = {
        pattern: (layer, head, weight)
        for pattern, layer, head, weight in find_heads(SimpleNamespace(attentions=attentions, tokens=tokens))
    }
    assert found["previous"] == (2, 3, 1.0)
    assert found["cls"] == (1, 2, 1.0)
    assert set(found) == {"previous", "next", "self", "cls", "sep"}


def test_csv_export_has_one_line_per_pair_with_positions_and_safe_text():
    tokens = ["[CLS]", "=1+1", "cat", "[SEP]"]
    block = torch.tensor([[0.25, 0.75], [0.5, 0.5]])
    lines = view_csv(block, tokens, [1, 2], [2, 3]).splitlines()
    assert lines[0] == "query_position,query,key_position,key,weight"
    assert lines[1] == "1,'=1+1,2,cat,0.25"
    assert lines[4] == "2,cat,3,[SEP],0.5"


def test_npz_export_loads_without_pickle(tmp_path):
    trace = SimpleNamespace(
        attentions=random_weights(6, 12, 4, 4), tokens=["[CLS]", "猫", "cat", "[SEP]"], type_ids=torch.zeros(4)
    )
    path = tmp_path / "a.npz"
    path.write_bytes(attentions_npz(trace))
    with np.load(path, allow_pickle=False) as data:
        np.testing.assert_array_equal(data["attentions"], trace.attentions.numpy())
        assert data["tokens"].tolist() == trace.tokens


def test_the_python_snippet_reproduces_the_followed_tokens_weights():
    from attnviz.models.bert import load_minilm

    state = ModelState(sentence='it\'s a "quoted" sentence', pair="and a second", layer=4, heads=(7, 9), token=2)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(model_snippet(state), {})  # the app's own generated code, never user input
    trace = load_minilm().run(state.sentence, state.pair)
    expected = trace.head(3, 6).weights[2]
    last = printed.getvalue().strip().splitlines()
    assert str(trace.tokens) in last[0]
    assert "torch.Size([6, 12," in last[1]
    numbers = torch.tensor(
        [
            float(x)
            for x in " ".join(last[2:])
            .replace("tensor(", "")
            .replace(")", "")
            .replace("[", "")
            .replace("]", "")
            .split(",")
        ]
    )
    torch.testing.assert_close(numbers, expected, atol=1e-4, rtol=0)


def test_model_state_round_trips_through_a_link():
    state = ModelState(
        sentence="a b", pair="c", layer=2, heads=(1, 5), hide_special=True, renormalise=True, part="ba", token=3
    )
    params = encode_model(state)
    assert params == {"s": "a b", "s2": "c", "l": "2", "hd": "1,5", "hs": "1", "rn": "1", "pt": "ba", "tk": "3"}
    decoded = decode_model(params)
    assert decoded.state == state and not decoded.warnings
    assert encode_model(ModelState()) == {}


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"l": "7"}, "layer", "layer"),
        ({"l": "1.5"}, "layer", "whole number"),
        ({"hd": "0"}, "heads", "head"),
        ({"hd": "3,13"}, "heads", "head"),
        ({"hd": ""}, "heads", "head"),
        ({"pt": "<script>"}, "part", "sentence part"),
        ({"tk": "-1"}, "token", "followed token"),
        ({"hs": "yes"}, "hide_special", "0 or 1"),
        ({"s": "x" * 2001}, "sentence", "limit"),
    ],
)
def test_bad_link_parameters_fall_back_with_a_warning_naming_them(params, field, words):
    decoded = decode_model(params)
    assert getattr(decoded.state, field) == getattr(ModelState(), field)
    text = str(decoded.warnings[0]) if decoded.warnings else ""
    assert len(decoded.warnings) == 1 and words in text and next(iter(params)) in text


def test_heads_in_a_link_are_sorted_and_deduplicated():
    assert decode_model({"hd": "9,2,9"}).state.heads == (2, 9)


def test_token_labels_mark_repeats_with_the_pickers_position():
    from attnviz.models.bert_views import token_labels

    assert token_labels(["[CLS]", "the", "cat", "the", "[SEP]"]) == ["[CLS]", "the·1", "cat", "the·3", "[SEP]"]


def test_a_traces_attentions_are_stacked_once():
    from attnviz.models.bert import load_minilm

    trace = load_minilm().run("stacked once")
    assert trace.attentions is trace.attentions  # the app reads it several times a rerun from a cached trace
    torch.testing.assert_close(trace.attentions[2], trace.layers[2].weights)
