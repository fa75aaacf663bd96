"""Any Hugging Face model's attention, read from the model's own `output_attentions`, as a trace attnviz can show.

`transformers` stays optional: this module never imports it, it calls the model and the tokenizer it is given.
Recent `transformers` versions compute attention with SDPA by default, which returns no weights (an empty tuple, or
None); that is detected and named, with the fix: load the model with `attn_implementation="eager"`, or call
`model.set_attn_implementation("eager")`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz.core.errors import AttnvizError, Name

PARTS = ("encoder", "decoder", "cross")  # an encoder-only model has "encoder", a decoder-only one "decoder"


@dataclass(frozen=True)
class ModelAttention:
    """One stack's attention on one input: every layer's heads, (L, H, Q, K), queries over keys."""

    part: str  # "encoder", "decoder" (self-attention) or "cross" (decoder queries over encoder keys)
    query_tokens: list[str]
    key_tokens: list[str]
    weights: Tensor  # (L, H, Q, K)

    @property
    def mask(self) -> Tensor:
        """(Q, K) bool: the pairs the model let through (a causal decoder's later keys get exactly 0 weight)."""
        return (self.weights > 0).any(dim=0).any(dim=0)


@dataclass(frozen=True)
class TransformersTrace:
    """A Hugging Face model's attention on one input, per stack (`parts`, in the order of PARTS)."""

    model_type: str
    parts: dict[str, ModelAttention]


def _stacked(attentions: Any, what: str, implementation: str) -> Tensor:
    """(L, H, Q, K) from the model's tuple of (1, H, Q, K), or the error that says how to get the weights."""
    if not attentions or any(layer is None for layer in attentions):
        raise AttnvizError("eager_attention", implementation=implementation, part=Name(f"part_{what}"))
    return torch.stack([layer[0] for layer in attentions]).detach().float()


def _tokens(tokenizer: Any, ids: Tensor) -> list[str]:
    return [str(token) for token in tokenizer.convert_ids_to_tokens(ids[0].tolist())]


def from_transformers(model: Any, tokenizer: Any, text: str, text_b: str | None = None) -> TransformersTrace:
    """Run `model` on `text` (and `text_b`: a sentence pair for an encoder, the decoder's input for an
    encoder-decoder, appended for a decoder-only model) and read every layer's attention weights.

    Encoder models (BERT) give "encoder", decoder-only models (GPT-2) "decoder", encoder-decoder models (T5, BART)
    "encoder", "decoder" and "cross". The weights are the model's own `output_attentions`."""
    config = model.config
    implementation = str(getattr(config, "_attn_implementation", None) or "unknown")
    model.eval()
    with torch.no_grad():
        if getattr(config, "is_encoder_decoder", False):
            source = tokenizer(text, return_tensors="pt")
            if text_b is not None:
                target = tokenizer(text_b, return_tensors="pt")["input_ids"]
            else:  # no decoder text: the decoder's first step, from its start token
                target = torch.tensor([[config.decoder_start_token_id]])
            out = model(  # input ids and mask only: T5 and BART take no segment ids, whatever a tokenizer returns
                input_ids=source["input_ids"],
                attention_mask=source.get("attention_mask"),
                decoder_input_ids=target,
                output_attentions=True,
            )
            src, tgt = _tokens(tokenizer, source["input_ids"]), _tokens(tokenizer, target)
            parts = {
                "encoder": ModelAttention(
                    "encoder", src, src, _stacked(out.encoder_attentions, "encoder", implementation)
                ),
                "decoder": ModelAttention(
                    "decoder", tgt, tgt, _stacked(out.decoder_attentions, "decoder", implementation)
                ),
                "cross": ModelAttention("cross", tgt, src, _stacked(out.cross_attentions, "cross", implementation)),
            }
        elif _decoder_only(model, config):
            joined = text if text_b is None else f"{text} {text_b}"
            ids = tokenizer(joined, return_tensors="pt")["input_ids"]
            out = model(input_ids=ids, output_attentions=True)
            tokens = _tokens(tokenizer, ids)
            parts = {
                "decoder": ModelAttention(
                    "decoder", tokens, tokens, _stacked(out.attentions, "decoder", implementation)
                )
            }
        else:
            encoded = (
                tokenizer(text, text_b, return_tensors="pt")
                if text_b is not None
                else tokenizer(text, return_tensors="pt")
            )
            out = model(**encoded, output_attentions=True)
            tokens = _tokens(tokenizer, encoded["input_ids"])
            parts = {
                "encoder": ModelAttention(
                    "encoder", tokens, tokens, _stacked(out.attentions, "encoder", implementation)
                )
            }
    return TransformersTrace(str(getattr(config, "model_type", "") or type(model).__name__), parts)


def _decoder_only(model: Any, config: Any) -> bool:
    """A causal language model: GPT-2, Llama, ... (its config says is_decoder, or its class generates text)."""
    if getattr(config, "is_decoder", False):
        return True
    name = type(model).__name__
    return name.endswith(("LMHeadModel", "ForCausalLM")) or getattr(config, "model_type", "") in (
        "gpt2",
        "gpt_neo",
        "gptj",
        "llama",
        "mistral",
        "qwen2",
        "gemma",
        "phi",
    )
