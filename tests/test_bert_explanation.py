"""The maps of "Is attention an explanation?" on the pretrained model, checked against sums written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.models.bert import load_minilm
from attnviz.models.bert_explanation import (
    agreement,
    column_mean,
    is_punctuation,
    layer_maps,
    punctuation_first,
    sentence_maps,
    sink_column,
)

SENTENCE = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def computed(model):
    encoded = model.encode(SENTENCE)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    return trace, sentence_maps(model, trace, encoded.ids, encoded.type_ids)


def spearman_by_hand(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation of the ranks (the maps' floats have no ties)."""
    rank_a, rank_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(rank_a, rank_b)[0, 1])


def test_the_maps_rank_only_the_word_pieces(computed):
    trace, maps = computed
    words = [trace.tokens[i] for i in maps.positions]
    assert words == ["the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", "."]
    shown = layer_maps(maps, 5, None)
    assert list(shown) == ["raw", "rollout", "flow", "norm", "gradient", "integrated", "blank"]
    assert all(values.shape == (11,) for values in shown.values())


def test_raw_attention_is_the_column_mean_of_the_chosen_head_or_of_the_heads_mean(computed):
    trace, maps = computed
    weights = trace.layers[2].weights.numpy()  # (12, 13, 13)
    one_head = weights[4].sum(axis=0) / 13  # each key's weight, summed over the 13 query rows
    np.testing.assert_allclose(layer_maps(maps, 2, 4)["raw"].numpy(), one_head[1:-1], rtol=1e-6)
    mean = sum(weights[h] for h in range(12)).sum(axis=0) / (12 * 13)
    np.testing.assert_allclose(layer_maps(maps, 2, None)["raw"].numpy(), mean[1:-1], rtol=1e-5)
    assert column_mean(torch.tensor(weights), None).sum().item() == pytest.approx(1.0)  # rows sum to 1


def test_rollout_is_the_row_mean_of_the_product_of_the_mixed_layers(computed):
    trace, maps = computed
    product = np.eye(13)
    for layer in trace.layers:
        mixed = 0.5 * layer.weights.numpy().astype(np.float64).mean(axis=0) + 0.5 * np.eye(13)
        product = (mixed / mixed.sum(axis=1, keepdims=True)) @ product
    np.testing.assert_allclose(maps.rollout.numpy(), product.mean(axis=0)[1:-1], rtol=1e-5)


def test_each_maps_rho_is_spearmans_against_blank_out(computed):
    _, maps = computed
    shown = layer_maps(maps, 5, None)
    rhos = agreement(shown)
    assert "blank" not in rhos and set(rhos) == set(shown) - {"blank"}
    blank = shown["blank"].numpy()
    for method, rho in rhos.items():
        assert rho == pytest.approx(spearman_by_hand(shown[method].numpy(), blank), abs=1e-9), method
        assert -1.0 <= rho <= 1.0


def test_punctuation_and_sinks_are_found(computed):
    trace, maps = computed
    assert is_punctuation(".") and is_punctuation(",") and is_punctuation("##!") and is_punctuation("?!")
    assert not is_punctuation("cat") and not is_punctuation("[CLS]") and not is_punctuation("##s")
    words = [trace.tokens[i] for i in maps.positions]
    shown = layer_maps(maps, 5, None)
    first = punctuation_first(shown, words)
    expected = {m: "." for m, v in shown.items() if m != "blank" and int(np.argmax(v.numpy())) == len(words) - 1}
    assert first == expected and "rollout" in first  # rollout ranks the full stop first (issue's measurement)
    columns = trace.layers[5].weights.numpy().mean(axis=0).mean(axis=0)  # (13,)
    assert int(np.argmax(columns)) == 0  # [CLS] takes the most weight of layer 6's mean
    assert sink_column(maps, 5, None) == ("[CLS]", pytest.approx(columns.max(), rel=1e-5))
    word_heads = [
        (layer, head)
        for layer in range(6)
        for head in range(12)
        if 0 < int(np.argmax(trace.layers[layer].weights[head].numpy().mean(axis=0))) < 12
    ]
    assert word_heads and all(sink_column(maps, layer, head) is None for layer, head in word_heads)
