"""What the modern-attention page and its sections share: the page's session, its inputs, and the computation of a
trace from the page's state (the page: modern_page.py; its topics: modern_sections.py and modern_steppers.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from attnviz.app.fastpath import modern_attention
from attnviz.app.modern_state import ModernState
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import md_escape
from attnviz.core.errors import AttnvizError
from attnviz.core.modern import ModernTrace
from attnviz.core.sparse import scheme_mask

SESSION = PageSession("modern")
# On a 1280x720 projector, the height a topic's first chart may take below the folded inputs and controls and the
# topic's heading (about 290 px down; its paragraphs come after the chart there), so that it ends on the first screen
MODERN_FIT = 420


@dataclass(frozen=True)
class Inputs:
    """The tokens, their labels (a repeated token marked with its position) and vectors (T, d_model)."""

    tokens: list[str]
    labels: list[str]
    x: torch.Tensor


def _projection_weights(state: ModernState, d_model: int) -> dict[str, torch.Tensor] | None:
    """Identity projections (q = k = v = the typed numbers, split into heads), or None for seeded random ones."""
    if state.projections != "identity":
        return None
    if state.heads * state.head_dim != d_model or state.kv_heads != state.heads:
        raise AttnvizError(
            "identity_size", heads=state.heads, head_dim=state.head_dim, features=d_model, kv_heads=state.kv_heads
        )
    eye = torch.eye(d_model)
    return {"W_q": eye, "W_k": eye, "W_v": eye}


def page_mask(state: ModernState, length: int) -> torch.Tensor:
    """The (T, T) mask of the state's scheme, global tokens past the end left out."""
    globals_ = tuple(t - 1 for t in state.global_tokens if t <= length)
    return scheme_mask(
        state.mask, length, window=state.window, prefix=state.prefix, block=state.block, global_tokens=globals_
    )


def valid_length(state: ModernState, length: int) -> int | None:
    """The valid length the computation uses: None for none (0, or at least the number of tokens)."""
    return state.valid if 0 < state.valid < length else None


def compute(state: ModernState, inputs: Inputs, **changes: object) -> ModernTrace:
    """The state's attention on the inputs, with `changes` to its fields (mask="causal", positions="none", valid=0
    for a comparison); the state's own trace when they change nothing."""
    length = inputs.x.shape[0]
    scheme = replace(state, **changes)
    return modern_attention(
        inputs.x,
        num_heads=scheme.heads,
        kv_heads=scheme.kv_heads,
        head_dim=scheme.head_dim,
        positions=scheme.positions,
        mask=page_mask(scheme, length),
        valid_len=valid_length(scheme, length),
        seed=scheme.seed,
        weights=_projection_weights(scheme, inputs.x.shape[1]),
    )


def escaped(labels: list[str]) -> str:
    """Tokens as literal Markdown."""
    return md_escape(" ".join(labels))
