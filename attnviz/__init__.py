"""attnviz: attention mechanisms you can see. The PyTorch core (no Streamlit, no Plotly here)."""

from attnviz.attention import AdditiveAttention, DotProductAttention, attend
from attnviz.hf import from_transformers
from attnviz.kernel import (
    KERNELS,
    BandwidthFit,
    ToyData,
    fit_bandwidth,
    make_toy_data,
    nadaraya_watson,
    toy_function,
)
from attnviz.masking import masked_softmax, sequence_mask
from attnviz.multihead import MultiHeadAttention, MultiHeadTrace, cross_attention, multi_head_attend, self_attention
from attnviz.presets import PRESETS, Preset
from attnviz.scores import (
    SCORES,
    AdditiveScore,
    ConcatScore,
    ConcatTanhScore,
    GeneralScore,
    LearnedScore,
    ParamSpec,
    ScoreSpec,
    make_score_module,
)
from attnviz.text import MAX_TOKENS, embed_tokens, tokenize
from attnviz.trace import AttentionTrace

__version__ = "0.1.0"


def __getattr__(name: str):  # `attnviz.show` without importing Plotly with the core
    if name == "show":
        from attnviz.display import show

        return show
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")


__all__ = [
    "KERNELS",
    "MAX_TOKENS",
    "PRESETS",
    "SCORES",
    "AdditiveAttention",
    "AdditiveScore",
    "AttentionTrace",
    "BandwidthFit",
    "ConcatScore",
    "ConcatTanhScore",
    "DotProductAttention",
    "GeneralScore",
    "LearnedScore",
    "MultiHeadAttention",
    "MultiHeadTrace",
    "ParamSpec",
    "Preset",
    "ScoreSpec",
    "ToyData",
    "attend",
    "cross_attention",
    "embed_tokens",
    "fit_bandwidth",
    "from_transformers",
    "make_score_module",
    "make_toy_data",
    "masked_softmax",
    "multi_head_attend",
    "nadaraya_watson",
    "self_attention",
    "sequence_mask",
    "show",
    "tokenize",
    "toy_function",
]
