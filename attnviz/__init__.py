"""attnviz: attention mechanisms you can see. The PyTorch core (no Streamlit, no Plotly here).

In IPython or Jupyter, importing attnviz registers how a trace is shown: as the app draws it, offline
(attnviz.notebook), through IPython's HTML formatter. The traces themselves know no view.
"""

import sys

from attnviz.core.attention import AdditiveAttention, DotProductAttention, attend
from attnviz.core.kernel import (
    KERNELS,
    BandwidthFit,
    ToyData,
    fit_bandwidth,
    make_toy_data,
    nadaraya_watson,
    toy_function,
)
from attnviz.core.masking import masked_softmax, sequence_mask
from attnviz.core.multihead import (
    MultiHeadAttention,
    MultiHeadTrace,
    cross_attention,
    multi_head_attend,
    self_attention,
)
from attnviz.core.scores import (
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
from attnviz.core.text import MAX_TOKENS, embed_tokens, tokenize
from attnviz.core.trace import AttentionTrace
from attnviz.lessons.presets import PRESETS, Preset
from attnviz.models.hf import from_transformers

__version__ = "0.1.0"


# The traces a notebook shows as the app draws them: (module, class), registered by name so that none is imported
# before it is used (a model's trace loads its model's code).
NOTEBOOK_TYPES = (
    ("attnviz.core.trace", "AttentionTrace"),
    ("attnviz.core.multihead", "MultiHeadTrace"),
    ("attnviz.core.modern", "ModernTrace"),
    ("attnviz.models.bert", "BertTrace"),
    ("attnviz.models.hf", "TransformersTrace"),
)


def _notebook_html(trace: object) -> str:
    from attnviz.notebook import to_html  # Plotly only when a notebook shows a trace

    return to_html(trace, document=False)


def register_notebook_display(shell: object = None) -> bool:
    """Show attnviz's traces in IPython's `shell` (the running one by default) as the app draws them; False outside
    IPython. Called on `import attnviz`."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["text/html"]  # type: ignore[attr-defined]
    for module, name in NOTEBOOK_TYPES:
        formatter.for_type_by_name(module, name, _notebook_html)
    return True


register_notebook_display()


def __getattr__(name: str):  # `attnviz.show` without importing Plotly with the core
    if name == "show":
        from attnviz.notebook import show

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
    "register_notebook_display",
    "self_attention",
    "sequence_mask",
    "show",
    "tokenize",
    "toy_function",
]
