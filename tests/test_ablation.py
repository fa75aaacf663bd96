"""Does attention matter? The shipped induction model with one layer's attention made uniform over the keys each
query may see, or shuffled along each row: the weights as the hook leaves them, and the accuracy on held-out data."""

from __future__ import annotations

import pytest
import torch

from attnviz.core.attention import DotProductAttention
from attnviz.models.learned import induction
from attnviz.models.learned.ablation import attention_replaced, replaced_weights
from attnviz.models.learned.train import checkpoint_path, held_out_accuracy, load_run


@pytest.fixture(scope="module")
def model() -> induction.InductionTransformer:
    return load_run(checkpoint_path("induction")).model


def test_uniform_spreads_each_row_over_the_keys_it_may_see():
    weights = torch.softmax(torch.randn(1, 3, 4), dim=-1)
    mask = torch.tensor([[[True, False, False, False], [True, True, False, False], [True, True, True, True]]])
    got = replaced_weights(weights, mask, "uniform")
    assert torch.allclose(got[0, 0], torch.tensor([1.0, 0, 0, 0]))
    assert torch.allclose(got[0, 1], torch.tensor([0.5, 0.5, 0, 0]))
    assert torch.allclose(got[0, 2], torch.full((4,), 0.25))


def test_permute_shuffles_each_rows_own_weights_among_its_keys():
    weights = torch.tensor([[[0.7, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.4]]])
    mask = torch.tensor([[[True, True, True, False], [True, True, True, True]]])
    got = replaced_weights(weights, mask, "permute", torch.Generator().manual_seed(1))
    for row in range(2):
        assert sorted(got[0, row].tolist()) == pytest.approx(sorted(weights[0, row].tolist()))
    assert got[0, 0, 3] == 0.0  # a key the query may not see stays at 0
    with pytest.raises(ValueError):
        replaced_weights(weights, mask, "reverse")


def test_the_hook_changes_the_output_and_is_gone_afterwards(model):
    tokens = induction.token_ids(induction.RepeatExample(tuple("ABCDE")))
    before = model(tokens)
    with attention_replaced(model.layers[1], "uniform"):
        during = model(tokens)
        weights = model.layers[1].attention_weights  # (B, h, T, T): what the hook left
        length = tokens.shape[1]
        expected = torch.tril(torch.ones(length, length)) / torch.arange(1, length + 1)[:, None]
        assert torch.allclose(weights[0, 0], expected, atol=1e-6)
    assert not torch.allclose(before, during)
    assert torch.allclose(model(tokens), before)  # the hook is removed
    with pytest.raises(ValueError), attention_replaced(torch.nn.Linear(2, 2), "uniform"):
        pass
    assert any(isinstance(m, DotProductAttention) for m in model.layers[1].modules())


def test_the_induction_model_needs_its_second_layers_attention(model):
    """The issue measured 100 % as trained, 15 % with layer 2 uniform, 12 % with each row permuted."""
    examples = induction.held_out_examples(300)
    trained = induction.token_accuracy(model, examples)
    with attention_replaced(model.layers[1], "uniform"):
        uniform = induction.token_accuracy(model, examples)
    with attention_replaced(model.layers[1], "permute", seed=0):
        permuted = induction.token_accuracy(model, examples)
    assert trained > 0.95
    assert uniform < 0.4 and permuted < 0.4, (trained, uniform, permuted)


def test_the_dates_model_needs_its_attention():
    """The dates model reads its input through one additive attention: spread evenly, the dates come out wrong."""
    dates_model = load_run(checkpoint_path("dates")).model
    trained = held_out_accuracy(dates_model, "dates", 200)
    with attention_replaced(dates_model, "uniform"):
        uniform = held_out_accuracy(dates_model, "dates", 200)
    with attention_replaced(dates_model, "permute"):
        permuted = held_out_accuracy(dates_model, "dates", 200)
    assert trained > 0.9 and uniform < 0.2 and permuted < 0.2, (trained, uniform, permuted)
