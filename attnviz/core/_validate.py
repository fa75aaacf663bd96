"""Input checks shared by the core: turn user data into tensors and say clearly what is wrong."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from attnviz.core.errors import AttnvizError, short


def as_float_tensor(data: Any, name: str) -> Tensor:
    """Convert tensors, arrays or nested lists to a floating tensor, with a clear error."""
    if isinstance(data, Tensor):
        tensor = data
    else:
        try:
            tensor = torch.as_tensor(data)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise AttnvizError("not_array", name=name) from exc
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise AttnvizError("real_numbers", name=name, dtype=tensor.dtype)
    if not tensor.is_floating_point() or tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.to(torch.float32)
    return tensor


def check_finite(tensor: Tensor, name: str) -> None:
    """Raise an AttnvizError naming the first NaN or infinite entry of `tensor`."""
    # A finite sum has no NaN and no infinity among its terms (either would make it NaN or infinite), and a sum is
    # ten times quicker than testing every entry; a sum that overflowed is tested entry by entry.
    if bool(torch.isfinite(tensor.detach().sum())) or bool(torch.isfinite(tensor).all()):
        return
    index = tuple(int(i) for i in (~torch.isfinite(tensor)).nonzero()[0])
    value = tensor[index].item()
    where = list(index) if len(index) != 1 else index[0]
    raise AttnvizError("not_finite", name=name, value=value, index=where)


def check_nonempty(tensor: Tensor, name: str) -> None:
    """Raise an AttnvizError if any axis of `tensor` has length 0."""
    if tensor.numel() == 0:
        raise AttnvizError("empty_tensor", name=name, shape=tuple(tensor.shape))


def check_positive(value: Any, name: str) -> float:
    """Return `value` as a float, raising an AttnvizError unless it is finite and > 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise AttnvizError("positive", name=name, value=short(repr(value))) from None
    if not math.isfinite(number) or number <= 0:
        raise AttnvizError("positive_finite", name=name, value=short(repr(value)))
    return number


def common_dtype(*tensors: Tensor) -> torch.dtype:
    """The floating dtype all `tensors` should share (float64 wins over float32)."""
    return torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32
