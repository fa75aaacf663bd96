"""The explanation maps on the shipped induction model: blank-out against single forward passes, and the issue's
measurement that the last layer's raw attention barely ranks the tokens as blank-out does while rollout does."""

from __future__ import annotations

import random
import statistics

import pytest
import torch

from attnviz.core.attribution import spearman
from attnviz.models.learned import induction
from attnviz.models.learned.induction_attribution import induction_maps
from attnviz.models.learned.train import checkpoint_path, load_run


@pytest.fixture(scope="module")
def model() -> induction.InductionTransformer:
    return load_run(checkpoint_path("induction")).model


def log_prob(model, tokens: list[str], target: str) -> float:
    ids = torch.tensor([[induction.INDEX[t] for t in tokens]])
    with torch.no_grad():
        return float(torch.log_softmax(model(ids)[0, -1], dim=-1)[induction.INDEX[target]])


def test_blank_out_is_the_drop_of_the_right_symbols_log_probability(model):
    example = induction.RepeatExample(tuple("QBKDA"))
    maps = induction_maps(model, example)
    assert maps.tokens == ["<s>", *"QBKDA", *"QBKD"] and maps.target == "A"
    assert maps.log_prob == pytest.approx(log_prob(model, maps.tokens, "A"), abs=1e-5)
    for position in (0, 4, 8):
        blanked = list(maps.tokens)
        blanked[position] = "C"  # the first symbol the sequence does not hold
        drop = maps.log_prob - log_prob(model, blanked, "A")
        assert float(maps.blank_out[position]) == pytest.approx(drop, abs=1e-5)
    # the prediction rests on the symbol after the earlier "D": blank-out ranks it first, and so does raw attention
    assert int(maps.blank_out.argmax()) == 5 and int(maps.raw.argmax()) == 5
    assert maps.flow is not None and maps.flow.shape == (10,) and float(maps.flow.max()) <= 1.0 + 1e-6
    assert torch.allclose(maps.rollout.sum(), torch.tensor(1.0), atol=1e-5)


def test_rollout_ranks_the_tokens_as_blank_out_does_far_better_than_raw_attention(model):
    """The issue measured Spearman's ρ against blank-out, mean over 300 repeats: raw +0.08, rollout +0.56."""
    examples = induction.sample_examples(40, random.Random(7))
    raw, rolled = [], []
    for example in examples:
        maps = induction_maps(model, example, flow=False)
        raw.append(spearman(maps.raw, maps.blank_out))
        rolled.append(spearman(maps.rollout, maps.blank_out))
    assert statistics.mean(rolled) > statistics.mean(raw) + 0.2, (statistics.mean(raw), statistics.mean(rolled))
    assert abs(statistics.mean(raw)) < 0.3
