"""Every worked example of the study notes, with their numbers, as a one-click preset.

A preset holds its inputs (so the app can load them into its editors) and `run()` recomputes the
example through the public API. `expected` records the numbers the notes themselves state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attnviz.core.attention import AdditiveAttention, DotProductAttention, attend
from attnviz.core.kernel import make_toy_data, nadaraya_watson
from attnviz.core.multihead import MultiHeadTrace, cross_attention, multi_head_attend
from attnviz.core.text import embed_tokens, tokenize
from attnviz.core.trace import AttentionTrace
from attnviz.i18n import prose


@dataclass(frozen=True)
class Preset:
    """One example from the notes: inputs, settings, the notes' stated results, and how to run it."""

    key: str
    queries: Tensor
    keys: Tensor
    values: Tensor
    settings: dict[str, Any] = field(default_factory=dict)  # score/kernel, params, valid_lens, ...
    query_labels: list[str] | None = None
    key_labels: list[str] | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    runner: Callable[[Preset], AttentionTrace | MultiHeadTrace] | None = None

    title = prose("preset", "key", "title")
    source = prose("preset", "key", "source")  # which note, and where in it
    description = prose("preset", "key", "description")

    @property
    def page(self) -> str:
        """The page that shows it ("self", "cross" or "kernel"), from PRESET_PAGES."""
        return PRESET_PAGES[self.key]

    def run(self) -> AttentionTrace | MultiHeadTrace:
        """Recompute the example through attnviz's public API."""
        if self.runner is not None:
            return self.runner(self)
        if self.page == "kernel":
            return nadaraya_watson(self.queries, self.keys, self.values, **self.settings)
        return multi_head_attend(self.queries, self.keys, self.values, **self.settings)


def _note_004_scores() -> Tensor:
    """Note 004's torch.rand(2, 2, 4) score tensor, seeded (the note's own numbers were not printed with a seed)."""
    return torch.rand(2, 2, 4, generator=torch.Generator().manual_seed(4))


def _seeded_normal(seed: int, *shape: int) -> Tensor:
    return torch.normal(0.0, 1.0, shape, generator=torch.Generator().manual_seed(seed))


# --- Note "Attention Score" (一维样本): waist -> weight --------------------------------------------
WAIST = torch.tensor([51.0, 56.0, 58.0])
WEIGHT = torch.tensor([40.0, 43.0, 48.0])

# --- Note "Attention Score" (二维样本): (waist, chest) -> (weight, height), as printed -----------------
WAIST_CHEST = torch.tensor([[51.0, 70.0], [56.0, 82.0], [56.0, 82.0]])
WEIGHT_HEIGHT = torch.tensor([[40.0, 155.0], [43.0, 159.0], [48.0, 162.0]])
WAIST_CHEST_QUERIES = torch.tensor([[57.0, 83.0], [55.0, 76.0]])

# --- d2l's attention-scoring example, reproduced in the "Attention Score Code" note ------------------
D2L_KEYS = torch.ones(2, 10, 2)
D2L_VALUES = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
D2L_VALID_LENS = torch.tensor([2, 6])

# --- Note "Attention核心思想": the unit-normalised sentences it printed, shape (2, 4, 10) -----------
UNIT_SENTS = torch.tensor(
    [
        [
            [0.1696, 0.0125, 0.1379, 0.3478, 0.3790, 0.2276, 0.4528, 0.2270, 0.4609, 0.4082],
            [0.0771, 0.2745, 0.1747, 0.4133, 0.1001, 0.1052, 0.4344, 0.0607, 0.4888, 0.5148],
            [0.3007, 0.0279, 0.0811, 0.3120, 0.4506, 0.3386, 0.4638, 0.2450, 0.0686, 0.4554],
            [0.4082, 0.3927, 0.4035, 0.1330, 0.3023, 0.3567, 0.0814, 0.0258, 0.1728, 0.4929],
        ],
        [
            [0.3552, 0.3260, 0.0076, 0.2821, 0.1292, 0.4619, 0.3386, 0.4913, 0.2997, 0.1095],
            [0.4076, 0.1469, 0.2115, 0.5363, 0.1666, 0.5930, 0.0947, 0.2785, 0.0444, 0.1096],
            [0.0576, 0.4700, 0.0063, 0.1463, 0.3560, 0.2613, 0.4805, 0.0120, 0.3639, 0.4427],
            [0.4564, 0.5436, 0.0129, 0.1896, 0.2353, 0.3753, 0.2794, 0.4229, 0.0830, 0.0102],
        ],
    ]
)
UNIT_SCORES = torch.tensor(
    [
        [
            [1.0000, 0.8921, 0.9020, 0.6954],
            [0.8921, 1.0000, 0.7390, 0.7076],
            [0.9020, 0.7390, 1.0000, 0.7453],
            [0.6954, 0.7076, 0.7453, 1.0000],
        ],
        [
            [1.0000, 0.8352, 0.7078, 0.9250],
            [0.8352, 1.0000, 0.5001, 0.7811],
            [0.7078, 0.5001, 1.0000, 0.6655],
            [0.9250, 0.7811, 0.6655, 1.0000],
        ],
    ]
)
UNIT_WEIGHTS = torch.tensor(
    [
        [
            [0.2823, 0.2535, 0.2560, 0.2082],
            [0.2629, 0.2929, 0.2256, 0.2186],
            [0.2626, 0.2231, 0.2897, 0.2245],
            [0.2263, 0.2290, 0.2378, 0.3068],
        ],
        [
            [0.2839, 0.2408, 0.2120, 0.2634],
            [0.2603, 0.3069, 0.1862, 0.2466],
            [0.2433, 0.1977, 0.3259, 0.2332],
            [0.2692, 0.2331, 0.2076, 0.2901],
        ],
    ]
)


def _run_d2l_additive(preset: Preset) -> AttentionTrace:
    """d2l's code, unchanged: AdditiveAttention(2, 20, 8, 0.1) in eval mode, lens [2, 6]."""
    with torch.random.fork_rng():  # d2l's module draws from the global generator; leave it untouched
        torch.manual_seed(0)
        attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    attention(preset.queries, preset.keys, preset.values, preset.settings["valid_lens"])
    return attention.trace


def _run_d2l_dot(preset: Preset) -> AttentionTrace:
    """d2l's code, unchanged: DotProductAttention(dropout=0.5) in eval mode, lens [2, 6]."""
    attention = DotProductAttention(dropout=0.5)
    attention.eval()
    attention(preset.queries, preset.keys, preset.values, preset.settings["valid_lens"])
    return attention.trace


def _run_attend(preset: Preset) -> AttentionTrace:
    return attend(preset.queries, preset.keys, preset.values, **preset.settings)


def _sentence(text: str, dim: int = 8) -> tuple[list[str], Tensor]:
    tokens = tokenize(text)
    return tokens, embed_tokens(tokens, dim=dim, seed=0)


@functools.cache
def _shared() -> dict[str, Any]:
    """Tensors several presets share, built on first use (decoding a link builds only the preset it names)."""
    target_tokens, target = _sentence("the cat sat on the mat")
    source_tokens, source = _sentence("猫坐在垫子上")
    return {
        "target": (target_tokens, target),
        "source": (source_tokens, source),
        "decoder_query": _seeded_normal(1, 10, 1, 256),
        "encoder_states": _seeded_normal(2, 10, 12, 256),
        "seq_tokens": [f"h{i + 1}" for i in range(12)],
    }


@functools.cache
def _toy() -> Any:
    return make_toy_data()


_BUILDERS: dict[str, Callable[[], Preset]] = {
    "waist_weight": lambda: Preset(
        "waist_weight",
        torch.tensor([57.0]),
        WAIST,
        WEIGHT,
        {"kernel": "gaussian", "bandwidth": 1.0},
        expected={"output": [45.5], "weights": [[0.0, 0.5, 0.5]]},
    ),
    "waist_chest_2d": lambda: Preset(
        "waist_chest_2d",
        WAIST_CHEST_QUERIES,
        WAIST_CHEST,
        WEIGHT_HEIGHT,
        {"score": "dot"},
        query_labels=["(57, 83)", "(55, 76)"],
        key_labels=["(51, 70)", "(56, 82)", "(56, 82)"],
        runner=_run_attend,
    ),
    "d2l_additive": lambda: Preset(
        "d2l_additive",
        _seeded_normal(0, 2, 1, 20),
        D2L_KEYS,
        D2L_VALUES,
        {"score": "additive", "valid_lens": D2L_VALID_LENS},
        expected={"output": [[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]]},
        runner=_run_d2l_additive,
    ),
    "d2l_dot_product": lambda: Preset(
        "d2l_dot_product",
        _seeded_normal(0, 2, 1, 2),
        D2L_KEYS,
        D2L_VALUES,
        {"score": "scaled_dot", "valid_lens": D2L_VALID_LENS},
        expected={"output": [[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]]},
        runner=_run_d2l_dot,
    ),
    "unit_sentences": lambda: Preset(
        "unit_sentences",
        UNIT_SENTS,
        UNIT_SENTS,
        UNIT_SENTS,
        {"score": "dot"},
        query_labels=[f"w{i + 1}" for i in range(4)],
        key_labels=[f"w{i + 1}" for i in range(4)],
        expected={"scores": UNIT_SCORES.tolist(), "weights": UNIT_WEIGHTS.tolist()},
    ),
    "decoder_state": lambda: Preset(
        "decoder_state",
        _shared()["decoder_query"],
        _shared()["encoder_states"],
        _shared()["encoder_states"],
        {"score": "dot", "projections": "random", "proj_seed": 0},
        query_labels=["decoder"],
        key_labels=_shared()["seq_tokens"],
    ),
    "decoder_state_cosine": lambda: Preset(
        "decoder_state_cosine",
        _shared()["decoder_query"],
        _shared()["encoder_states"],
        _shared()["encoder_states"],
        {"score": "cosine", "projections": "random", "proj_seed": 0},
        query_labels=["decoder"],
        key_labels=_shared()["seq_tokens"],
    ),
    "concat_linear": lambda: Preset(
        "concat_linear",
        _seeded_normal(3, 1, 1, 32),
        _seeded_normal(4, 1, 32, 32),
        _seeded_normal(5, 1, 32, 64),
        {"score": "concat", "seed": 0},
        query_labels=["q"],
        key_labels=[f"k{i + 1}" for i in range(32)],
        runner=_run_attend,
    ),
    "concat_tanh": lambda: Preset(
        "concat_tanh",
        _seeded_normal(3, 1, 1, 32),
        _seeded_normal(4, 1, 32, 32),
        _seeded_normal(5, 1, 32, 64),
        {"score": "concat_tanh", "seed": 0, "num_hiddens": 8},
        query_labels=["q"],
        key_labels=[f"k{i + 1}" for i in range(32)],
        runner=_run_attend,
    ),
    "masked_softmax": lambda: Preset(
        "masked_softmax",
        torch.zeros(2, 2, 1),
        torch.zeros(2, 4, 1),
        torch.eye(4).expand(2, 4, 4).clone(),  # the values are the identity: each output row is its weights
        {"score": "given", "scores": _note_004_scores(), "valid_lens": [2, 3]},
        query_labels=["q1", "q2"],
        key_labels=["k1", "k2", "k3", "k4"],
    ),
    "masked_softmax_per_query": lambda: Preset(
        "masked_softmax_per_query",
        torch.zeros(2, 2, 1),
        torch.zeros(2, 4, 1),
        torch.eye(4).expand(2, 4, 4).clone(),
        {"score": "given", "scores": _note_004_scores(), "valid_lens": [[1, 3], [2, 4]]},
        query_labels=["q1", "q2"],
        key_labels=["k1", "k2", "k3", "k4"],
    ),
    "cross_residual": lambda: Preset(
        "cross_residual",
        _shared()["target"][1],
        _shared()["source"][1],
        _shared()["source"][1],
        {"score": "scaled_dot", "residual": True},
        query_labels=_shared()["target"][0],
        key_labels=_shared()["source"][0],
        runner=lambda p: cross_attention(p.queries, p.keys, **p.settings),
    ),
    "d2l_toy_regression": lambda: Preset(
        "d2l_toy_regression",
        _toy().x_test,
        _toy().x_train,
        _toy().y_train,
        {"kernel": "gaussian", "bandwidth": 0.5},
    ),
}


# Which page shows each preset, in the order the pickers list them: known without building any tensor.
PRESET_PAGES: dict[str, str] = {
    "waist_weight": "kernel",
    "waist_chest_2d": "cross",
    "d2l_additive": "cross",
    "d2l_dot_product": "cross",
    "unit_sentences": "self",
    "decoder_state": "cross",
    "decoder_state_cosine": "cross",
    "concat_linear": "cross",
    "concat_tanh": "cross",
    "masked_softmax": "cross",
    "masked_softmax_per_query": "cross",
    "cross_residual": "cross",
    "d2l_toy_regression": "kernel",
}


class _Presets(Mapping[str, Preset]):
    """Every preset by key, each built on first use and then kept."""

    def __getitem__(self, key: str) -> Preset:
        return _preset(key)

    def __iter__(self) -> Iterator[str]:
        return iter(PRESET_PAGES)

    def __len__(self) -> int:
        return len(PRESET_PAGES)


@functools.cache
def _preset(key: str) -> Preset:
    if key not in _BUILDERS:
        raise KeyError(key)
    return _BUILDERS[key]()


PRESETS: Mapping[str, Preset] = _Presets()


def presets_for(page: str) -> list[str]:
    """The presets a page lists: the self page's own; the cross page's, and the self page's (keys = queries)."""
    pages = ("self", "cross") if page == "cross" else (page,)
    return [key for key, where in PRESET_PAGES.items() if where in pages]
