"""The server's fast path (attnviz/app/fastpath.py) against the core it stands in for: the same traces, field for
field and bit for bit, and the same errors. Then the speed pins (marked perf): which torch calls the fast path no
longer makes."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch
from torchcalls import TorchCalls

from attnviz.app import fastpath
from attnviz.core import attention as plain_attention
from attnviz.core import kernel as plain_kernel
from attnviz.core import modern as plain_modern
from attnviz.core import multihead as plain
from attnviz.core.errors import AttnvizError

SCORE_OPTIONS = {
    "dot": {},
    "scaled_dot": {},
    "cosine": {},
    "general": {"seed": 3},
    "additive": {"seed": 1, "num_hiddens": 5},
    "concat": {"seed": 2},
    "concat_tanh": {"seed": 4, "num_hiddens": 3},
    "gaussian": {"bandwidth": 0.7},
    "given": {"scores": ((0.5, -1.0, 2.0, 0.0, 1.5), (1.0, 1.0, -3.0, 0.25, 0.0), (0.0, 2.0, 1.0, -1.0, 4.0))},
}
MASKS = {"none": {}, "lens": {"valid_lens": [[2, 5, 1], [4, 3, 5]]}, "causal": {"causal": True}}


def assert_same(mine: object, theirs: object, where: str) -> None:
    """Every field the same: tensors of the same dtype and shape, equal (torch.equal, with NaN where the other has
    NaN: a kernel's query without support), in dataclasses, dicts and lists at any depth; anything else equal."""
    assert type(mine) is type(theirs), where
    if isinstance(mine, torch.Tensor):
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, where
        if mine.is_floating_point():
            assert torch.equal(mine.isnan(), theirs.isnan()), where
            mine, theirs = mine.nan_to_num(0.0), theirs.nan_to_num(0.0)
        assert torch.equal(mine, theirs), where
    elif dataclasses.is_dataclass(mine):
        for field in dataclasses.fields(mine):
            assert_same(getattr(mine, field.name), getattr(theirs, field.name), f"{where}.{field.name}")
    elif isinstance(mine, dict):
        assert mine.keys() == theirs.keys(), where
        for key in mine:
            assert_same(mine[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(mine, list | tuple):
        assert len(mine) == len(theirs), where
        for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    else:
        assert mine == theirs, where


def _inputs(dtype: torch.dtype, batched: bool, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, n, 4, generator=generator, dtype=dtype) for n in (3, 5, 5))
    return (q, k, v) if batched else (q[0], k[0], v[0])


def _options(mask: str, batched: bool) -> dict[str, object]:
    options = dict(MASKS[mask])
    if "valid_lens" in options and not batched:
        options["valid_lens"] = options["valid_lens"][0]
    return options


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("score", sorted(SCORE_OPTIONS))
def test_the_fast_path_gives_the_cores_traces_bit_for_bit(dtype, score):
    """2,592 cases: both dtypes and nine scores (the parameters), and in the loop one and two heads, identity and
    random projections, no mask, valid lengths and a causal mask, three temperatures, with the residual or not,
    batched or not."""
    loops = ((1, 2), ("identity", "random"), MASKS, (1.0, 0.37, 2.5), (False, True), (False, True))
    count = 0
    for heads, projections, mask, temperature, residual, batched in itertools.product(*loops):
        q, k, v = _inputs(dtype, batched, seed=count)
        options = dict(
            num_heads=heads,
            projections=projections,
            proj_seed=count,
            score=score,
            temperature=temperature,
            residual=residual,
            **_options(mask, batched),
            **SCORE_OPTIONS[score],
        )
        where = f"{score} {dtype} {heads} heads, {projections}, {mask}, T={temperature}, {residual=}, {batched=}"
        assert_same(fastpath.multi_head_attend(q, k, v, **options), plain.multi_head_attend(q, k, v, **options), where)
        count += 1
    assert count == 2592 // (2 * len(SCORE_OPTIONS))


def test_the_fast_path_gives_the_cores_traces_with_given_matrices_a_residual_and_large_inputs():
    """Projections given as matrices (a trained model's), the residual, queries of a width other than the values',
    and inputs of more than 500 numbers (checked by torch, not NumPy)."""
    generator = torch.Generator().manual_seed(5)
    given = {name: torch.randn(4, 4, generator=generator) for name in ("W_q", "W_k", "W_v", "W_o")}
    q, k = torch.randn(6, 4, generator=generator), torch.randn(9, 4, generator=generator)
    for options in (
        dict(projections=given, num_heads=2, residual=True),
        dict(projections="random", num_heads=4, residual=True, causal=True),
        dict(projections="identity", num_heads=1, residual=True, valid_lens=3),
    ):
        assert_same(fastpath.multi_head_attend(q, k, k, **options), plain.multi_head_attend(q, k, k, **options), "")
    narrow = torch.randn(9, 2, generator=generator)
    assert_same(fastpath.multi_head_attend(q, k, narrow), plain.multi_head_attend(q, k, narrow), "narrow values")
    big = torch.randn(2, 40, 8, generator=generator)  # 640 numbers each
    for heads in (1, 2):
        options = dict(num_heads=heads, score="additive", valid_lens=[7, 40])
        assert_same(
            fastpath.multi_head_attend(big, big, big, **options),
            plain.multi_head_attend(big, big, big, **options),
            "big",
        )


def _error(function, *args, **kwargs) -> tuple[type, str, str | None]:
    """The type, message and code of the error `function(*args, **kwargs)` raises."""
    with pytest.raises(ValueError) as caught:
        function(*args, **kwargs)
    error = caught.value
    return type(error), str(error), getattr(error, "code", None)


Q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
K = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
BAD_CALLS = {
    "not an array": (([[1.0, 2.0], [3.0]], K, K), {}),
    "booleans": ((torch.ones(2, 2, dtype=torch.bool), K, K), {}),
    "NaN in the keys": ((Q, torch.tensor([[1.0, 0.0], [math.nan, 1.0], [1.0, 1.0]]), K), {}),
    "infinite queries, bad keys too": ((torch.tensor([[math.inf, 0.0]]), [[1.0], [2.0, 3.0]], K), {}),
    "empty": ((torch.zeros(0, 2), K, K), {}),
    "1-D": ((torch.ones(2), K, K), {}),
    "2-D and 3-D": ((Q[None], K, K), {}),
    "batch sizes": ((torch.ones(2, 2, 2), torch.ones(3, 3, 2), torch.ones(3, 3, 2)), {}),
    "keys and values": ((Q, K, K[:2]), {}),
    "heads": ((Q, K, K), {"num_heads": 0}),
    "heads a bool": ((Q, K, K), {"num_heads": True}),
    "heads do not divide": ((torch.ones(2, 3), torch.ones(3, 3), torch.ones(3, 3)), {"num_heads": 2}),
    "projections": ((Q, K, K), {"projections": "rotated"}),
    "given projections": ((Q, K, K), {"projections": {"W_q": torch.eye(3)}}),
    "overflow": (
        (torch.full((3, 4), 3e38), torch.full((3, 4), 3e38), torch.full((3, 4), 3e38)),
        {"projections": "random"},
    ),
    "temperature": ((Q, K, K), {"temperature": 0.0}),
    "temperature text": ((Q, K, K), {"temperature": "warm"}),
    "valid length too long": ((Q, K, K), {"valid_lens": 4}),
    "valid lengths count": ((Q, K, K), {"valid_lens": [1, 2, 3]}),
    "valid length negative": ((Q, K, K), {"valid_lens": [1, -1]}),
    "valid length not whole": ((Q, K, K), {"valid_lens": 1.5}),
    "unknown score": ((Q, K, K), {"score": "telepathy"}),
    "unknown parameter": ((Q, K, K), {"score": "dot", "seed": 3}),
    "parameter out of range": ((Q, K, K), {"score": "additive", "num_hiddens": 0}),
    "sizes differ": ((Q, torch.ones(3, 4), K), {"score": "dot", "num_heads": 1}),
    "given scores' shape": ((Q, K, K), {"score": "given", "scores": ((1.0,),)}),
    "residual widths": ((Q, K, torch.ones(3, 4)), {"residual": True}),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_the_fast_path_raises_the_cores_errors(name):
    (queries, keys, values), options = BAD_CALLS[name]
    mine = _error(fastpath.multi_head_attend, queries, keys, values, **options)
    assert mine == _error(plain.multi_head_attend, queries, keys, values, **options)
    assert mine[0] is AttnvizError


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("score", ["scaled_dot", "additive", "given"])
def test_the_fast_attend_gives_the_cores_traces_with_masks_and_biases(score, batched):
    """`attend` on its own (the modern page's heads): a mask, a bias, valid lengths and the causal mask, together and
    apart, for one sequence or a batch."""
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 4, 4, generator=generator) for _ in range(3))
    window = torch.ones(4, 4, dtype=torch.bool).triu(-1).tril(1)  # a sliding window
    bias = -torch.arange(4.0)[None, :].abs() * 0.5 + torch.arange(4.0)[:, None] * 0.1
    lens = [[3, 4, 1, 2], [4, 4, 4, 2]]
    for mask, added, valid, causal, temperature in itertools.product(
        (None, window), (None, bias), (None, lens), (False, True), (1.0, 0.5)
    ):
        args = (q, k, v) if batched else (q[0], k[0], v[0])
        options = dict(mask=mask, bias=added, causal=causal, temperature=temperature, score=score)
        options["valid_lens"] = valid if valid is None or batched else valid[0]
        options.update(SCORE_OPTIONS[score] if score != "given" else {"scores": ((1.0, 2.0, 3.0, 4.0),) * 4})
        assert_same(fastpath.attend(*args, **options), plain_attention.attend(*args, **options), str(options))


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "rope", "alibi"])
def test_the_fast_modern_attention_gives_the_cores_trace(positions):
    """The modern page's layer: each position scheme, MHA, GQA and MQA, masks beyond causal, a valid length, given
    (identity) projections."""
    from attnviz.core.sparse import scheme_mask

    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(2))
    for heads, kv_heads, mask, valid_len in itertools.product(
        (4,), (4, 2, 1), (None, scheme_mask("sliding", 6, window=2), scheme_mask("prefix", 6, prefix=3)), (None, 4)
    ):
        options = dict(num_heads=heads, kv_heads=kv_heads, head_dim=2, positions=positions, mask=mask)
        options.update(valid_len=valid_len, seed=heads + kv_heads)
        assert_same(fastpath.modern_attention(x, **options), plain_modern.modern_attention(x, **options), str(options))
    eye = {name: torch.eye(8) for name in ("W_q", "W_k", "W_v")}
    options = dict(num_heads=4, head_dim=2, positions=positions, weights=eye)
    assert_same(fastpath.modern_attention(x, **options), plain_modern.modern_attention(x, **options), "identity")


@pytest.mark.parametrize(
    "options",
    [
        {"mask": torch.ones(3, 3, dtype=torch.bool)},
        {"mask": torch.ones(3, 2, 3, dtype=torch.bool)},
        {"bias": torch.ones(2, 2)},
        {"bias": torch.tensor([[0.0, math.inf, 0.0], [0.0, 0.0, 0.0]])},
        {"bias": torch.tensor([[0.0, math.nan, 0.0], [0.0, 0.0, 0.0]]), "temperature": -1.0},
        {"valid_lens": 4, "mask": torch.ones(1, 1)},
    ],
)
def test_the_fast_attend_raises_the_cores_errors(options):
    mine = _error(fastpath.attend, Q, K, K, **options)
    assert mine == _error(plain_attention.attend, Q, K, K, **options)
    assert mine[0] is AttnvizError


def test_the_fast_modern_attention_raises_the_cores_errors():
    for options in (
        {"num_heads": 3, "kv_heads": 2},
        {"positions": "spiral"},
        {"positions": "rope", "head_dim": 3},
        {"mask": torch.ones(2, 2)},
        {"valid_len": 9},
    ):
        x = torch.ones(4, 8)
        assert _error(fastpath.modern_attention, x, **options) == _error(plain_modern.modern_attention, x, **options)
    nan = torch.tensor([[1.0, math.nan]])
    assert _error(fastpath.modern_attention, nan) == _error(plain_modern.modern_attention, nan)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kernel", sorted(plain_kernel.KERNELS))
def test_the_fast_kernel_regression_gives_the_cores_traces_bit_for_bit(dtype, kernel):
    """64 cases: four kernels, both dtypes, 1-D and 2-D points, four bandwidths; the queries reach past the keys,
    so that a compact kernel finds no key for some (their output is NaN in both)."""
    generator = torch.Generator().manual_seed(7)
    for dims, bandwidth in itertools.product((1, 2), (0.05, 0.5, 1.0, 3.0)):
        shape = (12,) if dims == 1 else (12, 2)
        keys = torch.rand(shape, generator=generator, dtype=dtype) * 5
        queries = torch.linspace(-3.0, 8.0, 30, dtype=dtype)
        queries = queries if dims == 1 else torch.stack((queries, queries.flip(0)), dim=1)
        values = torch.randn(12, generator=generator, dtype=dtype)
        for q, k, v in ((queries, keys, values), (queries, keys.tolist(), values.tolist())):
            options = dict(kernel=kernel, bandwidth=bandwidth)
            where = f"{kernel} {dtype} {dims}-D σ={bandwidth}"
            assert_same(
                fastpath.nadaraya_watson(q, k, v, **options), plain_kernel.nadaraya_watson(q, k, v, **options), where
            )


@pytest.mark.parametrize(
    "args, options",
    [
        (([1.0, math.nan], [0.0, 1.0], [1.0, 2.0]), {}),
        (([1.0], [0.0, 1.0], [1.0]), {}),
        (([[1.0, 2.0]], [0.0, 1.0], [1.0, 2.0]), {}),
        (([1.0], [], []), {}),
        ((torch.ones(2, 2, 2), [0.0], [1.0]), {}),
        (([1.0], [0.0], [1.0]), {"kernel": "triangle"}),
        (([1.0], [0.0], [1.0]), {"bandwidth": -1.0}),
        (([1.0, math.inf], [0.0], [1.0]), {"kernel": "triangle"}),
        ((["a"], [0.0], [1.0]), {}),
    ],
)
def test_the_fast_kernel_regression_raises_the_cores_errors(args, options):
    mine = _error(fastpath.nadaraya_watson, *args, **options)
    assert mine == _error(plain_kernel.nadaraya_watson, *args, **options)
    assert mine[0] is AttnvizError


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.zeros(4, 5),  # NumPy checks it
        lambda: torch.zeros(2, 3, 4, dtype=torch.float64),  # NumPy
        lambda: torch.zeros(30, 30),  # 900 numbers: torch checks it
        lambda: torch.zeros(4, 5, requires_grad=True),  # part of a graph
    ],
)
def test_the_fast_finite_check_names_the_first_bad_entry_as_the_core_does(make):
    from attnviz.core._validate import check_finite

    fastpath._check_finite(make(), "keys")  # all finite: no error
    for bad in (math.nan, math.inf, -math.inf):
        tensor = make().detach().clone()
        tensor[(1, 2) if tensor.dim() == 2 else (1, 0, 3)] = bad
        tensor[-1, -1] = math.nan  # a later bad entry: the first is named
        assert _error(fastpath._check_finite, tensor, "keys") == _error(check_finite, tensor, "keys")


# ------------------------------------------------------------------ speed pins: which torch calls are spared

# Torch calls that let go of Python's lock on every call (the tensor operations; indexing and getters such as dim()
# do not), which the page's default computation does not make on the fast path.
_REPLACED = {"isfinite", "all", "squeeze", "unsqueeze", "mean", "masked_fill", "zeros_like", "__invert__", "gt"}


@pytest.mark.perf
@pytest.mark.parametrize("score", ["scaled_dot", "additive"])
def test_a_page_trace_on_the_fast_path_makes_no_torch_call_that_indexing_replaces(score):
    """The self and cross pages' default: one sequence (no batch axis), one head, identity projections, no valid
    lengths. Adding and dropping the batch axis is indexing, the inputs are checked by NumPy, one head's mean is that
    head, and the softmax masks with `where`: none of the calls in `_REPLACED` is made, nor a product with I, nor a
    division by a temperature of 1. (Each trace has identity matrices of its own: a shared one let an edit of one
    trace's W_q show in every later trace.)"""
    q, k, v = torch.randn(6, 8), torch.randn(7, 8), torch.randn(7, 8)
    with TorchCalls() as calls:
        trace = fastpath.multi_head_attend(q, k, v, score=score)
    assert not _REPLACED & set(calls.names), sorted(_REPLACED & set(calls.names))
    if score == "scaled_dot":  # the scores q kᵀ and the output, weights @ v: no product with I
        assert sum(name in ("matmul", "__matmul__", "bmm") for name in calls.names) == 2, calls.names
    assert sum(name in ("div", "__truediv__") for name in calls.names) == 1, calls.names  # the softmax's sum only
    assert tuple(trace.weights.shape) == (1, 6, 7) and tuple(trace.heads[0].weights.shape) == (6, 7)
    assert torch.equal(trace.W_q, torch.eye(8)) and trace.W_q is not fastpath.multi_head_attend(q, k, v).W_q


@pytest.mark.perf
def test_the_fast_path_checks_its_inputs_once_not_again_per_head(monkeypatch):
    """The inputs are checked finite once, and each head's attention does not check its slice again; the core's
    reference checks what each head's `attend` is given."""
    checked: list[tuple[int, ...]] = []
    finite = fastpath._finite
    monkeypatch.setattr(fastpath, "_finite", lambda t: checked.append(tuple(t.shape)) or finite(t))
    q, k, v = _inputs(torch.float32, True, seed=5)
    for heads, projections, checks in ((1, "identity", 3), (2, "identity", 3), (2, "random", 6)):
        checked.clear()
        fastpath.multi_head_attend(q, k, v, num_heads=heads, projections=projections)
        assert checked == [(2, 3, 4), (2, 5, 4), (2, 5, 4), (2, 3, 4), (2, 5, 4), (2, 5, 4)][:checks], projections
    with TorchCalls() as calls:
        plain.multi_head_attend(q, k, v, num_heads=2)
    assert calls.names.count("isfinite") == 3 + 3 + 2 * 3  # inputs, projections, and each head's slices
