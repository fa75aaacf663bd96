"""Gradient maps of the induction model by Captum, against autograd written out here: gradient × input from the
embeddings' own gradient, and integrated gradients' completeness (the map adds up to the readout's change from the
baseline to the input)."""

from __future__ import annotations

import pytest
import torch

from attnviz.models.learned import induction
from attnviz.models.learned.gradients import IG_STEPS, gradient_maps
from attnviz.models.learned.train import checkpoint_path, load_run

EXAMPLE = induction.RepeatExample(tuple("QBKDA"))


@pytest.fixture(scope="module")
def model() -> induction.InductionTransformer:
    return load_run(checkpoint_path("induction")).model


def readout_from_embeddings(model, embeddings: torch.Tensor, target: int) -> torch.Tensor:
    """The model's forward written out from its token embeddings (1, n, d): log p(target) at the last position."""
    x = embeddings + model.position_embedding(torch.arange(embeddings.shape[1]))[None]
    for layer in model.layers:
        x = layer(x)
    return torch.log_softmax(model.unembed(model.norm(x))[0, -1], dim=-1)[target]


def test_gradient_times_input_is_the_embeddings_gradient_times_the_embeddings(model):
    ids = torch.tensor([[induction.INDEX[t] for t in EXAMPLE.tokens[:-1]]])
    target = induction.INDEX[EXAMPLE.tokens[-1]]
    embeddings = model.token_embedding(ids).detach().requires_grad_(True)  # (1, n, d)
    readout_from_embeddings(model, embeddings, target).backward()
    expected = (embeddings.grad * embeddings).sum(dim=-1)[0]
    got = gradient_maps(model, EXAMPLE)
    assert torch.allclose(got.gradient_x_input, expected.detach(), atol=1e-6)


def test_integrated_gradients_add_up_to_the_readouts_change_from_the_baseline(model):
    ids = torch.tensor([[induction.INDEX[t] for t in EXAMPLE.tokens[:-1]]])
    target = induction.INDEX[EXAMPLE.tokens[-1]]
    baseline = torch.full_like(ids, induction.INDEX["C"])  # the first symbol the sequence does not hold
    with torch.no_grad():
        change = readout_from_embeddings(model, model.token_embedding(ids), target) - readout_from_embeddings(
            model, model.token_embedding(baseline), target
        )
    got = gradient_maps(model, EXAMPLE)
    assert float(got.integrated.sum()) == pytest.approx(float(change), abs=0.05 * abs(float(change)) + 1e-3)
    assert got.completeness_gap < 0.05 * abs(float(change)) + 1e-3, (got.completeness_gap, IG_STEPS)
    assert int(got.integrated.argmax()) == 5  # the symbol after the earlier "D", which the induction head copies
