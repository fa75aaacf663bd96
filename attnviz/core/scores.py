"""Scoring functions a(q, k): the registry the app shows, and the learned score modules.

Every function maps queries (B, Q, d_q) and keys (B, K, d_k) to raw scores (B, Q, K). Scaling by
1/sqrt(d) and the temperature are applied later, in `attend`, so the trace can show both steps.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnviz.core.errors import AttnvizError, Name, short
from attnviz.core.fields import Field
from attnviz.i18n import prose

# The scores' and kernels' parameters are fields: one declaration gives the link key, the range the app allows,
# the widget's label and help, and the check `attend` applies (attnviz/core/fields.py).
SEED = Field("seed", "sd", "int", 0, 0, 2**31 - 1, label="widget.seed", help="param.seed.help")
HIDDENS = Field("num_hiddens", "nh", "int", 8, 1, 256, label="widget.hidden_units", help="param.num_hiddens.help")
BANDWIDTH = Field(
    "bandwidth", "bw", "float", 1.0, 0.001, 10_000.0, label="widget.bandwidth", help="param.bandwidth.help", fmt="%.4g"
)
# Typed scores (note 004's masked softmax starts from a score tensor): one row per query, one column per key
SCORE_MATRIX = Field(
    "scores", "S", "matrix", ((0.0,),), max_len=64, max_cols=64, label="widget.score_matrix", help="param.scores.help"
)
ParamSpec = Field  # the name the public API has used for a parameter's declaration

# The largest per-pair intermediate computed at once, in floats: queries are taken in blocks to stay under it (16 MB
# of float32), so that a long sentence with many hidden units does not hold gigabytes at once.
CHUNK_FLOATS = 4 * 2**20


def _init_linear(linear: nn.Linear, generator: torch.Generator) -> nn.Linear:
    """Draw a linear layer's weights like PyTorch's default init, but from a seeded generator."""
    bound = 1.0 / math.sqrt(linear.in_features)
    with torch.no_grad():
        linear.weight.uniform_(-bound, bound, generator=generator)
        if linear.bias is not None:
            linear.bias.uniform_(-bound, bound, generator=generator)
    return linear


class LearnedScore(nn.Module):
    """Base class of scores with weights; subclasses set `score_name` and implement `score`."""

    score_name = ""

    def forward(self, queries: Tensor, keys: Tensor) -> Tensor:
        """Raw scores (B, Q, K)."""
        return self.score(queries, keys)

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_and_features(self, queries: Tensor, keys: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """The scores and, by name, the intermediates that a worked example of the score shows (none by default),
        so that show-your-work reads them instead of computing them again."""
        return self.score(queries, keys), {}

    @property
    def params(self) -> dict[str, Any]:
        """The parameters that rebuild this module with `make_score_module`."""
        return dict(self._params)


class GeneralScore(LearnedScore):
    """Luong's bilinear score qᵀ W k."""

    score_name = "general"

    def __init__(self, query_size: int, key_size: int, seed: int = 0):
        super().__init__()
        self.W = _init_linear(nn.Linear(key_size, query_size, bias=False), torch.Generator().manual_seed(seed))
        self._params = {"seed": seed}

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        return queries @ self.W(keys).transpose(-1, -2)  # (B, Q, d_q) @ (B, d_q, K) -> (B, Q, K)


def by_query_chunks(pairwise: Callable[[Tensor, Tensor], Tensor], queries: Tensor, keys: Tensor, width: int) -> Tensor:
    """`pairwise(queries, keys)` -> (..., Q, K), computed a block of queries at a time so that its per-pair
    intermediate of `width` floats never holds more than CHUNK_FLOATS at once."""
    per_query = max(1, math.prod(keys.shape[:-1]) * width)
    rows = max(1, CHUNK_FLOATS // per_query)
    num_queries = queries.shape[-2]
    if rows >= num_queries:
        return pairwise(queries, keys)
    blocks = [pairwise(queries[..., i : i + rows, :], keys) for i in range(0, num_queries, rows)]
    return torch.cat(blocks, dim=-2)


def additive_scores(
    queries: Tensor,
    keys: Tensor,
    W_q: nn.Linear,
    W_k: nn.Linear,
    w_v: nn.Linear,
    features: dict[str, Tensor] | None = None,
) -> Tensor:
    """Bahdanau's w_vᵀ tanh(W_q q + W_k k) for every query-key pair. `features`, when given, receives the projected
    queries "W_q q" (B, Q, h) and keys "W_k k" (B, K, h), whose sums a worked example shows."""
    projected_q, projected_k = W_q(queries), W_k(keys)
    if features is not None:
        features.update({"W_q q": projected_q, "W_k k": projected_k})

    def pairwise(q: Tensor, k: Tensor) -> Tensor:
        summed = q[..., :, None, :] + k[..., None, :, :]  # (B, Q, 1, h) + (B, 1, K, h) -> (B, Q, K, h)
        return w_v(torch.tanh(summed))[..., 0]  # (B, Q, K)

    return by_query_chunks(pairwise, projected_q, projected_k, W_q.out_features)


class AdditiveScore(LearnedScore):
    """Bahdanau's additive score w_vᵀ tanh(W_q q + W_k k)."""

    score_name = "additive"

    def __init__(self, query_size: int, key_size: int, num_hiddens: int = 8, seed: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.W_q = _init_linear(nn.Linear(query_size, num_hiddens, bias=False), generator)
        self.W_k = _init_linear(nn.Linear(key_size, num_hiddens, bias=False), generator)
        self.w_v = _init_linear(nn.Linear(num_hiddens, 1, bias=False), generator)
        self._params = {"seed": seed, "num_hiddens": num_hiddens}

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        return additive_scores(queries, keys, self.W_q, self.W_k, self.w_v)

    def score_and_features(self, queries: Tensor, keys: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        features: dict[str, Tensor] = {}
        return additive_scores(queries, keys, self.W_q, self.W_k, self.w_v, features), features


def _concat_pairs(queries: Tensor, keys: Tensor) -> Tensor:
    """Every pair [q; k] as one vector: (B, Q, K, d_q + d_k)."""
    batch, num_queries, _ = queries.shape
    num_keys = keys.shape[1]
    q = queries.unsqueeze(2).expand(batch, num_queries, num_keys, queries.shape[-1])
    k = keys.unsqueeze(1).expand(batch, num_queries, num_keys, keys.shape[-1])
    return torch.cat([q, k], dim=-1)


class ConcatScore(LearnedScore):
    """The notes' Softmax(Linear([Q, K])): one linear layer on the concatenation [q; k]."""

    score_name = "concat"

    def __init__(self, query_size: int, key_size: int, seed: int = 0):
        super().__init__()
        self.W = _init_linear(nn.Linear(query_size + key_size, 1), torch.Generator().manual_seed(seed))
        self._params = {"seed": seed}

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        width = queries.shape[-1] + keys.shape[-1]
        return by_query_chunks(lambda q, k: self.W(_concat_pairs(q, k)).squeeze(-1), queries, keys, width)


class ConcatTanhScore(LearnedScore):
    """The notes' Softmax(sum(tanh(Linear([Q, K])))): sum over h of tanh(W [q; k] + b)."""

    score_name = "concat_tanh"

    def __init__(self, query_size: int, key_size: int, num_hiddens: int = 8, seed: int = 0):
        super().__init__()
        self.W = _init_linear(nn.Linear(query_size + key_size, num_hiddens), torch.Generator().manual_seed(seed))
        self._params = {"seed": seed, "num_hiddens": num_hiddens}

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        width = queries.shape[-1] + keys.shape[-1] + self.W.out_features

        def pairwise(q: Tensor, k: Tensor) -> Tensor:
            return torch.tanh(self.W(_concat_pairs(q, k))).sum(dim=-1)  # (B, Q, K)

        return by_query_chunks(pairwise, queries, keys, width)


def given_scores(queries: Tensor, keys: Tensor, scores: Any = ((0.0,),)) -> Tensor:
    """Scores typed directly: (Q, K), or (B, Q, K) for a batch, one row per query and one column per key."""
    given = torch.as_tensor(scores, dtype=queries.dtype)
    given = given.unsqueeze(0) if given.dim() == 2 else given
    batch, num_queries, num_keys = queries.shape[0], queries.shape[1], keys.shape[1]
    if given.dim() != 3 or given.shape[-2:] != (num_queries, num_keys) or given.shape[0] not in (1, batch):
        rows, cols = (given.shape[-2], given.shape[-1]) if given.dim() >= 2 else (0, 0)
        raise AttnvizError("given_shape", rows=rows, cols=cols, queries=num_queries, keys=num_keys)
    if not torch.isfinite(given).all():
        raise AttnvizError("given_finite")
    return given.expand(batch, num_queries, num_keys)


def dot_scores(queries: Tensor, keys: Tensor) -> Tensor:
    """q·k for every pair: (B, Q, K)."""
    return queries @ keys.transpose(-1, -2)


def cosine_scores(queries: Tensor, keys: Tensor) -> Tensor:
    """Cosine similarity; a zero vector has similarity 0 with everything (never NaN)."""
    return F.normalize(queries, dim=-1) @ F.normalize(keys, dim=-1).transpose(-1, -2)


def squared_distances(queries: Tensor, keys: Tensor) -> Tensor:
    """‖q − k‖² for every pair, computed from differences (exact for the notes' integers)."""
    batch, num_queries, dim = queries.shape
    if batch * num_queries * keys.shape[1] * dim <= 2**22:
        return (queries[:, :, None] - keys[:, None]).pow(2).sum(-1)  # (B, Q, K)
    # Large inputs: expand ‖q‖² + ‖k‖² − 2 q·k to avoid a (B, Q, K, d) temporary.
    sq = queries.pow(2).sum(-1, keepdim=True) + keys.pow(2).sum(-1).unsqueeze(1) - 2 * dot_scores(queries, keys)
    return sq.clamp_min(0.0)


def gaussian_scores(queries: Tensor, keys: Tensor, bandwidth: float) -> Tensor:
    """−‖q − k‖² / (2σ²): the log of a Gaussian kernel, so softmax gives Nadaraya–Watson weights."""
    return -squared_distances(queries, keys) / (2 * bandwidth**2)


@dataclass(frozen=True)
class ScoreSpec:
    """A scoring function with everything the app shows about it."""

    name: str
    formula: str
    params: tuple[ParamSpec, ...] = ()
    learned: bool = False
    same_dim: bool = True
    scaled: bool = False
    fn: Callable[..., Tensor] | None = None
    module: type[LearnedScore] | None = None

    label = prose("score", "name", "label")
    explanation = prose("score", "name", "explanation")

    def scale(self, dim: int) -> float:
        """Factor applied to raw scores before the softmax: 1/√d for scaled dot product, else 1."""
        return 1.0 / math.sqrt(dim) if self.scaled else 1.0

    @property
    def full_formula(self) -> str:
        """The score a(q, k) and, for a scaled score, the logit z it becomes (LaTeX). One notation everywhere: a is
        what the score function returns (the "score" of tables and hovers), z = a × scale / T is the logit."""
        if not self.scaled:
            return self.formula
        return self.formula + r", \quad z = \frac{a(\mathbf q, \mathbf k)}{\sqrt{d}}"


SCORES: dict[str, ScoreSpec] = {
    spec.name: spec
    for spec in (
        ScoreSpec(
            "dot",
            r"a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf k",
            fn=dot_scores,
        ),
        ScoreSpec(
            "scaled_dot",
            r"a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf k",  # then scaled: z = a / √d (full_formula)
            scaled=True,
            fn=dot_scores,
        ),
        ScoreSpec(
            "cosine",
            r"a(\mathbf q, \mathbf k) = "
            r"\frac{\mathbf q^\top \mathbf k}{\lVert \mathbf q \rVert \, \lVert \mathbf k \rVert}",
            fn=cosine_scores,
        ),
        ScoreSpec(
            "general",
            r"a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf W \mathbf k",
            params=(SEED,),
            learned=True,
            same_dim=False,
            module=GeneralScore,
        ),
        ScoreSpec(
            "additive",
            r"a(\mathbf q, \mathbf k) = \mathbf w_v^\top \tanh(\mathbf W_q \mathbf q + \mathbf W_k \mathbf k)",
            params=(SEED, HIDDENS),
            learned=True,
            same_dim=False,
            module=AdditiveScore,
        ),
        ScoreSpec(
            "concat",
            r"a(\mathbf q, \mathbf k) = \mathbf w^\top [\mathbf q; \mathbf k] + b",
            params=(SEED,),
            learned=True,
            same_dim=False,
            module=ConcatScore,
        ),
        ScoreSpec(
            "concat_tanh",
            r"a(\mathbf q, \mathbf k) = "
            r"\sum_{j=1}^{h} \tanh\left(\mathbf W [\mathbf q; \mathbf k] + \mathbf b\right)_j",
            params=(SEED, HIDDENS),
            learned=True,
            same_dim=False,
            module=ConcatTanhScore,
        ),
        ScoreSpec(
            "gaussian",
            r"a(\mathbf q, \mathbf k) = -\frac{\lVert \mathbf q - \mathbf k \rVert^2}{2\sigma^2}",
            params=(BANDWIDTH,),
            fn=gaussian_scores,
        ),
        ScoreSpec(
            "given",
            r"a(\mathbf q_i, \mathbf k_j) = S_{ij}",
            params=(SCORE_MATRIX,),
            same_dim=False,
            fn=given_scores,
        ),
    )
}


def get_score(name: str) -> ScoreSpec:
    """Look up a scoring function by name, with a helpful error for unknown names."""
    if not isinstance(name, str) or name not in SCORES:
        raise AttnvizError("unknown", name=Name("score"), value=short(name), choices=", ".join(SCORES))
    return SCORES[name]


def check_params(params: dict[str, Any], specs: tuple[Field, ...], owner: str) -> dict[str, Any]:
    """Validate keyword parameters against their fields; return them with defaults filled in."""
    known = {p.name: p for p in specs}
    for name in params:
        if name not in known:
            takes = ", ".join(known) or "-"
            raise AttnvizError("unknown_param", owner=owner, takes=takes, param=name)
    checked: dict[str, Any] = {}
    for spec in specs:
        value = params.get(spec.name, spec.default)
        if spec.kind == "int" and isinstance(value, numbers.Real) and not isinstance(value, bool | int):
            value = float(value)  # 3.0 is a whole number; numpy and torch scalars too
        elif isinstance(value, numbers.Real) and not isinstance(value, bool | int | float):
            value = float(value)
        checked[spec.name] = spec.check(value)
    return checked


def make_score_module(name: str, query_size: int, key_size: int, **params: Any) -> LearnedScore:
    """Build the seeded module of a learned score, exactly as `attend` does."""
    spec = get_score(name)
    if spec.module is None:
        learned = ", ".join(s.name for s in SCORES.values() if s.learned)
        raise AttnvizError("not_learned", score=short(name), learned=learned)
    return spec.module(query_size, key_size, **check_params(params, spec.params, f"score {name!r}"))


def seeded_module(
    name: str, query_size: int, key_size: int, params: dict[str, Any], dtype: torch.dtype
) -> LearnedScore:
    """The seeded module of a learned score, built once for its sizes, parameters and dtype and shared: a page rerun
    uses it twice (attend, then show-your-work's worked score), and building one (`nn.Linear`'s own initialisation,
    then the seeded weights) cost more than scoring eight tokens. Read only: it is never trained, and its parameters
    need no gradient. `make_score_module` gives a module of one's own."""
    return _shared_module(name, query_size, key_size, tuple(sorted(params.items())), dtype)


@functools.lru_cache(maxsize=64)
def _shared_module(
    name: str, query_size: int, key_size: int, params: tuple[tuple[str, Any], ...], dtype: torch.dtype
) -> LearnedScore:
    return make_score_module(name, query_size, key_size, **dict(params)).to(dtype).requires_grad_(False)
