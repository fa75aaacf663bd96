"""Note 000's Attn module as written (typos fixed): its numbers, its shapes step by step, and torch.bmm's rule."""

from __future__ import annotations

import pytest
import torch

from attnviz.core.note_attn import Attn, bmm_rule, shape_steps
from tests.test_app import CROSS, run_page


def note_inputs():
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 32, generator=generator), torch.randn(1, 1, 32, generator=generator)
    v = torch.randn(1, 32, 64, generator=generator)  # (1, value_size1, value_size2): the note's (1, 1, 64) is the typo
    return q, k, v


def test_the_module_maps_one_q_k_pair_to_32_weights_over_v_and_mixes_the_result_with_q():
    q, k, v = note_inputs()
    attn = Attn(32, 32, 32, 64, 64, seed=0)
    output, weights = attn(q, k, v)
    with torch.no_grad():  # by hand, one operation at a time, from the module's two linear layers
        logits = attn.attn.weight @ torch.cat([q[0, 0], k[0, 0]]) + attn.attn.bias  # all 32 logits at once
        expected_weights = torch.exp(logits) / torch.exp(logits).sum()
        applied = expected_weights @ v[0]  # (32,) · (32, 64)
        expected = attn.attn_combine.weight @ torch.cat([q[0, 0], applied]) + attn.attn_combine.bias
    torch.testing.assert_close(weights[0], expected_weights)
    torch.testing.assert_close(output[0, 0], expected)
    assert output.shape == (1, 1, 64) and weights.shape == (1, 32)


def test_the_shapes_step_by_step_are_the_tensors_own():
    q, k, v = note_inputs()
    steps = shape_steps(Attn(32, 32, 32, 64, 64), q, k, v)
    assert [(step.shapes_in, step.shape_out) for step in steps] == [
        (((1, 32), (1, 32)), (1, 64)),
        (((1, 64),), (1, 32)),
        (((1, 32),), (1, 32)),
        (((1, 32),), (1, 1, 32)),
        (((1, 1, 32), (1, 32, 64)), (1, 1, 64)),
        (((1, 32), (1, 64)), (1, 96)),
        (((1, 96),), (1, 1, 64)),
    ]
    assert all(tuple(step.value.shape) == step.shape_out for step in steps)
    assert bmm_rule((1, 1, 32), (1, 32, 64)) == {"b": 1, "n": 1, "m": 32, "p": 64}
    with pytest.raises(ValueError, match=r"\(b, n, m\) and \(b, m, p\)"):
        bmm_rule((1, 1, 32), (1, 1, 64))  # the note's V as printed


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_the_linear_qk_preset_shows_the_module_as_written(lang):
    at = run_page(CROSS, p="concat_linear", lang=lang)
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "(1, 1, 32) · (1, 32, 64)" in text and "(1, 96)" in text
    assert "b = 1" in text and "m = 32" in text and "p = 64" in text and "(1, 1, 64)" in text
    assert any("outpu_size" in c.value.replace("\\", "") for c in at.caption)
