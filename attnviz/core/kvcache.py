"""The KV cache, decoding step by step, and what it costs in memory for real models.

A decoder generates one token at a time. At step t the new token's query attends over the keys and values of
tokens 0..t. Those of tokens 0..t-1 were computed at earlier steps, so they are kept (the cache) and only the new
token's key and value are computed and appended: the cache grows by one row per step. Decoding this way gives
exactly causal attention over the whole sequence, row by row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import as_float_tensor, check_finite
from attnviz.core.errors import AttnvizError, short
from attnviz.core.masking import softmax_where
from attnviz.core.positions import apply_rope


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step: the new token's query over the cache, after its own key and value were appended."""

    step: int  # the new token's position, from 0
    query: Tensor  # (d,) W_q x_t
    new_key: Tensor  # (d,) W_k x_t: the row appended to the key cache
    new_value: Tensor  # (v,) W_v x_t: the row appended to the value cache
    keys: Tensor  # (step + 1, d): the key cache after this step
    values: Tensor  # (step + 1, v)
    scores: Tensor  # (step + 1,) q · k_j / sqrt(d), plus ALiBi's -slope × (step - j) when it is on
    weights: Tensor  # (step + 1,)
    output: Tensor  # (v,)

    @property
    def cached_numbers(self) -> int:
        """Numbers held in the cache after this step (keys and values)."""
        return self.keys.numel() + self.values.numel()


def _projections(x: Any, W_q: Any, W_k: Any, W_v: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    tokens = as_float_tensor(x, "x")
    if tokens.dim() != 2:
        raise AttnvizError("shape", name="x", expected="(T, d_model)", shape=tuple(tokens.shape))
    mats = []
    for name, matrix in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        tensor = as_float_tensor(matrix, name).to(tokens.dtype)
        if tensor.dim() != 2 or tensor.shape[1] != tokens.shape[1]:
            raise AttnvizError("shape", name=name, expected=f"(out, {tokens.shape[1]})", shape=tuple(tensor.shape))
        check_finite(tensor, name)
        mats.append(tensor)
    if mats[0].shape[0] != mats[1].shape[0]:
        raise AttnvizError("qk_size", query=mats[0].shape[0], key=mats[1].shape[0])
    check_finite(tokens, "x")
    return tokens, *mats


def _at(vector: Tensor, position: int) -> Tensor:
    """A (d,) query or key turned by RoPE to its position (the cache keeps keys already turned)."""
    return apply_rope(vector[None], torch.tensor([position]))[0]


def decode_with_cache(
    x: Any, W_q: Any, W_k: Any, W_v: Any, *, rope: bool = False, alibi_slope: float | None = None
) -> list[DecodeStep]:
    """Every step of decoding the tokens x (T, d_model) with a KV cache (projections as nn.Linear weights, out x in);
    `rope`: the new query and key are turned to their position; `alibi_slope`: ALiBi's penalty on older keys."""
    tokens, wq, wk, wv = _projections(x, W_q, W_k, W_v)
    scale = 1.0 / math.sqrt(wq.shape[0])
    keys = torch.zeros(0, wk.shape[0], dtype=tokens.dtype)
    values = torch.zeros(0, wv.shape[0], dtype=tokens.dtype)
    steps = []
    for t in range(tokens.shape[0]):
        query, new_key, new_value = wq @ tokens[t], wk @ tokens[t], wv @ tokens[t]  # only the new token's
        if rope:
            query, new_key = _at(query, t), _at(new_key, t)
        keys = torch.cat([keys, new_key[None]])  # the cache grows by one row: (t + 1, d)
        values = torch.cat([values, new_value[None]])
        scores = (keys @ query) * scale  # (t + 1,)
        if alibi_slope is not None:
            scores = scores - alibi_slope * torch.arange(t, -1, -1, dtype=scores.dtype)  # distances t, ..., 1, 0
        weights = softmax_where(scores, None)
        steps.append(DecodeStep(t, query, new_key, new_value, keys, values, scores, weights, weights @ values))
    return steps


def causal_attention(x: Any, W_q: Any, W_k: Any, W_v: Any) -> tuple[Tensor, Tensor]:
    """The same attention without a cache: the whole (T, T) causal weights and the (T, v) outputs at once."""
    tokens, wq, wk, wv = _projections(x, W_q, W_k, W_v)
    q, k, v = tokens @ wq.T, tokens @ wk.T, tokens @ wv.T
    scores = (q @ k.T) / math.sqrt(wq.shape[0])  # (T, T)
    mask = torch.ones(scores.shape, dtype=torch.bool).tril()
    weights = softmax_where(scores, mask)
    return weights, weights @ v


@dataclass(frozen=True)
class ModelConfig:
    """The attention sizes of a published model, from its configuration file (`source`)."""

    name: str
    layers: int
    query_heads: int
    kv_heads: int
    head_dim: int
    source: str

    @property
    def kind(self) -> str:
        """ "MHA", "GQA" or "MQA" (see `attention_kind`)."""
        return attention_kind(self.query_heads, self.kv_heads)


def attention_kind(query_heads: int, kv_heads: int) -> str:
    """ "MHA" (a key/value head per query head), "MQA" (one for all) or "GQA" (groups in between)."""
    if kv_heads == query_heads:
        return "MHA"
    return "MQA" if kv_heads == 1 else "GQA"


# The numbers are those of each model's config.json on the Hugging Face Hub (num_hidden_layers, num_attention_heads,
# num_key_value_heads, hidden_size / num_attention_heads); Falcon's "multi_query": true means one key/value head.
PUBLISHED_CONFIGS: tuple[ModelConfig, ...] = (
    ModelConfig("GPT-2 (124M)", 12, 12, 12, 64, "https://huggingface.co/openai-community/gpt2/blob/main/config.json"),
    ModelConfig("Llama 2 7B", 32, 32, 32, 128, "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    ModelConfig(
        "Llama 3 8B", 32, 32, 8, 128, "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"
    ),
    ModelConfig(
        "Mistral 7B v0.1", 32, 32, 8, 128, "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"
    ),
    ModelConfig("Qwen2.5 7B", 28, 28, 4, 128, "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json"),
    ModelConfig("Falcon 7B", 32, 71, 1, 64, "https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json"),
)


def kv_cache_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """2 (a key and a value) x layers x key/value heads x head size x bytes per number (2 for fp16/bf16)."""
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("bytes", bytes_per_value)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AttnvizError("whole_from", name=name, low=1, value=short(repr(value)))
    return 2 * layers * kv_heads * head_dim * bytes_per_value
