"""Decoding with a KV cache equals causal attention; the cache's cost per token for published models."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.errors import AttnvizError
from attnviz.core.kvcache import PUBLISHED_CONFIGS, causal_attention, decode_with_cache, kv_cache_bytes_per_token


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 10), st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**16))
def test_decoding_step_by_step_with_the_cache_equals_full_causal_attention(tokens, d_model, d, width, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, d_model, generator=generator, dtype=torch.float64)
    W_q, W_k = (
        torch.randn(d, d_model, generator=generator, dtype=torch.float64),
        torch.randn(d, d_model, generator=generator, dtype=torch.float64),
    )
    W_v = torch.randn(width, d_model, generator=generator, dtype=torch.float64)
    steps = decode_with_cache(x, W_q, W_k, W_v)
    weights, outputs = causal_attention(x, W_q, W_k, W_v)
    torch.testing.assert_close(torch.stack([s.output for s in steps]), outputs, rtol=1e-12, atol=1e-12)
    for t, step in enumerate(steps):
        assert step.keys.shape == (t + 1, d) and step.values.shape == (t + 1, width)  # one row more per step
        torch.testing.assert_close(step.weights, weights[t, : t + 1], rtol=1e-12, atol=1e-12)
        if t:
            torch.testing.assert_close(step.keys[:-1], steps[t - 1].keys)  # earlier rows kept, not recomputed
        assert step.cached_numbers == (t + 1) * (d + width)
    # and torch's own causal attention agrees
    q, k, v = x @ W_q.T, x @ W_k.T, x @ W_v.T
    torch.testing.assert_close(outputs, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-10, atol=1e-10)


def test_bad_shapes_are_named():
    with pytest.raises(AttnvizError) as bad:
        decode_with_cache(torch.ones(3, 4), torch.ones(2, 4), torch.ones(2, 5), torch.ones(2, 4))
    assert bad.value.code == "shape" and bad.value.params["name"] == "W_k"
    with pytest.raises(AttnvizError) as bad:
        decode_with_cache(torch.ones(3, 4), torch.ones(2, 4), torch.ones(3, 4), torch.ones(2, 4))
    assert bad.value.code == "qk_size" and bad.value.params == {"query": 2, "key": 3}


def test_the_cache_per_token_of_published_models():
    by_name = {config.name: config for config in PUBLISHED_CONFIGS}
    per_token = {name: kv_cache_bytes_per_token(c.layers, c.kv_heads, c.head_dim) for name, c in by_name.items()}
    # 2 x layers x kv heads x head size x 2 bytes, worked by hand:
    assert per_token["Llama 2 7B"] == 2 * 32 * 32 * 128 * 2 == 524_288  # 512 KiB a token: MHA
    assert per_token["Llama 3 8B"] == 131_072 and by_name["Llama 3 8B"].kind == "GQA"  # 8 KV heads: a quarter
    assert per_token["Falcon 7B"] == 8_192 and by_name["Falcon 7B"].kind == "MQA"
    assert by_name["GPT-2 (124M)"].kind == "MHA" and per_token["GPT-2 (124M)"] == 36_864
    assert all(
        c.source.startswith("https://huggingface.co/") and c.source.endswith("config.json") for c in by_name.values()
    )
    assert all(c.query_heads % c.kv_heads == 0 for c in by_name.values())  # heads share K/V in equal groups
    assert kv_cache_bytes_per_token(32, 8, 128, bytes_per_value=1) == 65_536  # an 8-bit cache halves it
    with pytest.raises(ValueError, match="kv_heads"):
        kv_cache_bytes_per_token(32, 0, 128)
