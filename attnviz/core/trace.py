"""AttentionTrace: every intermediate tensor of one attention computation, named."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from torch import Tensor


@dataclass(frozen=True)
class AttentionTrace:
    """What an attention computation did, step by step (shapes for batched inputs)."""

    queries: Tensor  # (B, Q, d)
    keys: Tensor  # (B, K, d_k)
    values: Tensor  # (B, K, v)
    scores: Tensor  # (B, Q, K) raw a(q, k)
    logits: Tensor  # (B, Q, K) scores * scale / temperature, before masking
    mask: Tensor  # (B, Q, K) bool, True = may attend
    weights: Tensor  # (B, Q, K) softmax over allowed keys, 0 elsewhere
    output: Tensor  # (B, Q, v) weights @ values
    score: str
    score_params: dict[str, Any] = field(default_factory=dict)
    scale: float = 1.0
    temperature: float = 1.0
    causal: bool = False
    valid_lens: Tensor | None = None
    no_support: Tensor | None = None  # (B, Q) kernel regression: no key inside the kernel window
    distances: Tensor | None = None  # (B, Q, K) kernel regression: |q − k|
    bias: Tensor | None = None  # (B, Q, K) added to the scaled scores before the softmax (ALiBi); in `logits`
    # A learned score's intermediates, by name, for show-your-work's worked pair (the additive score: "W_q q" (B, Q, h)
    # and "W_k k" (B, K, h)); empty for the others
    features: dict[str, Tensor] = field(default_factory=dict)

    @property
    def batched(self) -> bool:
        """True when the inputs had a batch axis (weights are then (B, Q, K))."""
        return self.weights.dim() == 3

    def batch_row(self, index: int) -> AttentionTrace:
        """Batch row `index` of a batched trace, as an unbatched trace (every tensor with its batch axis taken)."""
        tensors = ("queries", "keys", "values", "scores", "logits", "mask", "weights", "output")
        optional = ("valid_lens", "no_support", "distances", "bias")
        taken = {name: getattr(self, name)[index] for name in tensors}
        taken |= {name: None if getattr(self, name) is None else getattr(self, name)[index] for name in optional}
        return replace(self, **taken, features={name: t[index] for name, t in self.features.items()})
