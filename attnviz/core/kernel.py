"""Nadaraya–Watson kernel regression: attention pooling with a fixed kernel, and learning its width."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz.core._validate import as_float_tensor, check_finite, check_nonempty, check_positive, common_dtype
from attnviz.core.errors import AttnvizError, Name, short
from attnviz.core.masking import softmax_where
from attnviz.core.scores import BANDWIDTH, ParamSpec, squared_distances
from attnviz.core.trace import AttentionTrace
from attnviz.i18n import prose


@dataclass(frozen=True)
class KernelSpec:
    """A kernel K(u) of the scaled distance u = |q − k| / σ, with what the app shows about it."""

    name: str
    formula: str
    fn: Callable[[Tensor], Tensor]
    compact: bool  # zero outside |u| <= 1: a query can find no key in its window
    log_fn: Callable[[Tensor], Tensor] | None = None  # log K(u) for smooth kernels: weights without underflow
    params: tuple[ParamSpec, ...] = (BANDWIDTH,)

    label = prose("kernel", "name", "label")
    explanation = prose("kernel", "name", "explanation")


KERNELS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec(
            "gaussian",
            r"K(u) = \exp\left(-\tfrac{u^2}{2}\right)",
            lambda u: torch.exp(-0.5 * u**2),
            False,
            lambda u: -0.5 * u**2,
        ),
        KernelSpec(
            "laplace",
            r"K(u) = \exp(-|u|)",
            lambda u: torch.exp(-u.abs()),
            False,
            lambda u: -u.abs(),
        ),
        KernelSpec(
            "boxcar",
            r"K(u) = \mathbb{1}[|u| \le 1]",
            lambda u: (u.abs() <= 1).to(u.dtype),
            True,
        ),
        KernelSpec(
            "epanechnikov",
            r"K(u) = \max(0,\ 1 - u^2)",
            lambda u: (1 - u**2).clamp_min(0.0),
            True,
        ),
    )
}


def get_kernel(name: str) -> KernelSpec:
    """Look up a kernel by name, with a helpful error for unknown names."""
    if not isinstance(name, str) or name not in KERNELS:
        raise AttnvizError("unknown", name=Name("kernel"), value=short(name), choices=", ".join(KERNELS))
    return KERNELS[name]


def _as_points(data: Any, name: str) -> tuple[Tensor, bool]:
    """1-D scalars become (n, 1); (n, d) stays. Returns the tensor and whether it was 1-D."""
    tensor = as_float_tensor(data, name)
    if tensor.dim() == 0:
        tensor = tensor.reshape(1)
    if tensor.dim() not in (1, 2):
        raise AttnvizError("points_shape", name=name, shape=tuple(tensor.shape))
    check_nonempty(tensor, name)
    check_finite(tensor, name)
    return (tensor[:, None], True) if tensor.dim() == 1 else (tensor, False)  # (n,) -> (n, 1)


def nadaraya_watson(
    queries: Any, keys: Any, values: Any, *, kernel: str = "gaussian", bandwidth: float = 1.0
) -> AttentionTrace:
    """Predict f(q) = Σᵢ K((q − kᵢ)/σ) vᵢ / Σⱼ K((q − kⱼ)/σ), traced like `attend` (unbatched)."""
    spec = get_kernel(kernel)
    sigma = check_positive(bandwidth, "bandwidth")
    q, _ = _as_points(queries, "queries")  # (Q, d)
    k, _ = _as_points(keys, "keys")  # (K, d)
    v, values_1d = _as_points(values, "values")  # (K, v)
    return kernel_regression(q, k, v, spec, sigma, values_1d)


def kernel_regression(
    q: Tensor, k: Tensor, v: Tensor, spec: KernelSpec, sigma: float, values_1d: bool = False
) -> AttentionTrace:
    """`nadaraya_watson` on points already read and checked finite: (Q, d) queries, (K, d) keys, (K, v) values;
    `values_1d` gives the output the values' 1-D shape, (Q,)."""
    if q.shape[-1] != k.shape[-1]:
        raise AttnvizError("features", query=q.shape[-1], key=k.shape[-1])
    if k.shape[0] != v.shape[0]:
        raise AttnvizError("kv_items", keys=k.shape[0], values=v.shape[0])
    dtype = common_dtype(q, k, v)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    distances = squared_distances(q[None], k[None])[0].sqrt()  # (Q, K)
    u = distances / sigma
    kernel_values = spec.fn(u)  # (Q, K), >= 0
    if spec.log_fn is not None:
        # Smooth kernels: normalise in log space, so a far query (every K(u) underflowing to 0) still
        # weights its nearest keys, exactly as the maths says.
        weights = softmax_where(spec.log_fn(u), None)
        no_support = torch.zeros(q.shape[0], dtype=torch.bool)
    else:
        totals = kernel_values.sum(dim=-1, keepdim=True)  # (Q, 1)
        no_support = totals[:, 0] <= 0  # (Q,)
        weights = torch.where(totals > 0, kernel_values / totals.clamp_min(torch.finfo(dtype).tiny), 0.0)
    output = weights @ v  # (Q, v)
    # No key in the window: no estimate. NaN, not 0, so that plots leave a gap instead of a wrong value.
    output = output.masked_fill(no_support[:, None], float("nan"))
    if values_1d:
        output = output[:, 0]
    return AttentionTrace(
        queries=q,
        keys=k,
        values=v,
        scores=kernel_values,
        logits=kernel_values,
        mask=kernel_values > 0,
        weights=weights,
        output=output,
        score=spec.name,
        score_params={"bandwidth": sigma},
        no_support=no_support,
        distances=distances,
    )


@dataclass(frozen=True)
class BandwidthFit:
    """The learned kernel width and the leave-one-out loss after each epoch."""

    bandwidth: float
    losses: list[float]
    kernel: str
    rows: int = 0  # how many points' leave-one-out errors made the loss (all of them unless a budget cut it)


def leave_one_out_loss(
    keys: Tensor,
    values: Tensor,
    log_sigma: Tensor,
    kernel: str,
    distances: Tensor | None = None,
    rows: Tensor | None = None,
) -> Tensor:
    """Mean squared error of predicting each training value from all the *other* points.

    `distances` (the keys' pairwise distances) may be passed in when the same keys are scored again and again;
    `rows` (indices) limits the loss to those points' errors, each still predicted from all the others."""
    spec = get_kernel(kernel)
    if distances is None:
        distances = pairwise_distances(keys)
    if rows is None:
        rows = torch.arange(len(keys))
    distances = distances[rows]  # (m, n)
    others = rows.unsqueeze(1) != torch.arange(len(keys)).unsqueeze(0)  # a point may not see itself
    u = distances / log_sigma.exp()
    if spec.log_fn is not None:
        weights = softmax_where(spec.log_fn(u), others)
    else:
        kernel_values = spec.fn(u) * others
        weights = kernel_values / kernel_values.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    predictions = weights @ values
    return ((predictions - values[rows]) ** 2).mean()


def pairwise_distances(keys: Tensor) -> Tensor:
    """|k_i - k_j| for every pair of training points, (n, n)."""
    return squared_distances(keys.unsqueeze(0), keys.unsqueeze(0)).squeeze(0).clamp_min(1e-12).sqrt()


def fit_bandwidth(
    keys: Any,
    values: Any,
    *,
    kernel: str = "gaussian",
    init: float = 1.0,
    epochs: int = 200,
    lr: float = 0.05,
    progress: Callable[[int, float], Any] | None = None,
    max_rows: int | None = None,
) -> BandwidthFit:
    """Learn σ by gradient descent on the leave-one-out loss (d2l: without leaving one out, σ → 0).

    With `max_rows`, the loss is the errors of at most that many points, evenly spaced in the given order (each
    predicted from all the others): the app's budget per change (attnviz/app/budget.py) sets it for many points."""
    if get_kernel(kernel).compact and kernel == "boxcar":
        raise AttnvizError("boxcar_gradient")
    k, _ = _as_points(keys, "keys")
    v, _ = _as_points(values, "values")
    if k.shape[0] != v.shape[0]:
        raise AttnvizError("kv_items", keys=k.shape[0], values=v.shape[0])
    if k.shape[0] < 2:
        raise AttnvizError("loo_points", count=k.shape[0])
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= 10_000:
        raise AttnvizError("whole_range", name="epochs", low=1, high=10_000, value=short(repr(epochs)))
    lr = check_positive(lr, "lr")
    k, v = k.to(torch.float64), v.to(torch.float64)
    log_sigma = torch.tensor(float(check_positive(init, "init")), dtype=torch.float64).log().requires_grad_()
    optimizer = torch.optim.Adam([log_sigma], lr=lr)
    losses: list[float] = []
    distances = pairwise_distances(k)  # the same every epoch: only σ changes
    count = k.shape[0]
    rows = torch.arange(count)
    if max_rows is not None and max_rows < count:
        rows = torch.linspace(0, count - 1, max(2, max_rows), dtype=torch.float64).round().long().unique()
    for epoch in range(1, epochs + 1):
        optimizer.zero_grad()
        loss = leave_one_out_loss(k, v, log_sigma, kernel, distances, rows)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(epoch, losses[-1])
    return BandwidthFit(bandwidth=float(log_sigma.detach().exp()), losses=losses, kernel=kernel, rows=len(rows))


@dataclass(frozen=True)
class ToyData:
    """d2l's kernel-regression data: noisy samples of f(x) = 2 sin(x) + x^0.8 on [0, 5)."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor  # the true function at x_test


def toy_function(x: Tensor) -> Tensor:
    """d2l's target function 2 sin(x) + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


def make_toy_data(n_train: int = 50, seed: int = 0, noise: float = 0.5, n_test: int = 50) -> ToyData:
    """Seeded toy data as in d2l: sorted uniform x on [0, 5), y = f(x) + N(0, noise²)."""
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100_000:
            raise AttnvizError("whole_range", name=name, low=1, high=100_000, value=short(repr(n)))
    generator = torch.Generator().manual_seed(int(seed))
    x_train, _ = torch.sort(torch.rand(n_train, generator=generator) * 5)
    y_train = toy_function(x_train) + torch.normal(0.0, float(noise), (n_train,), generator=generator)
    x_test = torch.arange(n_test, dtype=torch.float32) * (5.0 / n_test)
    return ToyData(x_train, y_train, x_test, toy_function(x_test))
