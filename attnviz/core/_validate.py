"""Input checks shared by the core: turn user data into tensors and say clearly what is wrong."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
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


# Up to this many numbers NumPy computes without letting go of Python's lock (it lets go above 500), where each torch
# call lets go: under a class's load each hand-over between threads costs more than the arithmetic (bench/README.md,
# items 19 and 27). So small checks and sums are NumPy's.
NUMPY_KEEPS_LOCK = 500
_NUMPY_DTYPES = (torch.float32, torch.float64)


def small_numpy(tensor: Tensor) -> np.ndarray | None:
    """The tensor's numbers as a NumPy array sharing its memory, when NumPy computes on them without letting go of
    Python's lock (at most NUMPY_KEEPS_LOCK float32 or float64 numbers on the CPU); else None: use torch."""
    small = tensor.numel() <= NUMPY_KEEPS_LOCK and tensor.dtype in _NUMPY_DTYPES
    if small and tensor.device.type == "cpu" and not tensor.is_neg():
        return tensor.detach().numpy()
    return None


def _all_finite(tensor: Tensor) -> bool:
    array = small_numpy(tensor)
    return bool(np.isfinite(array).all()) if array is not None else bool(torch.isfinite(tensor).all())


def check_finite(tensor: Tensor, name: str) -> None:
    """Raise an AttnvizError naming the first NaN or infinite entry of `tensor`."""
    if _all_finite(tensor):
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


def in_dtype(tensor: Tensor, dtype: torch.dtype) -> Tensor:
    """`tensor` in `dtype`, without a call into torch when it already is: each call lets another thread take
    Python's lock, which under a class's load costs more than small arithmetic (bench/README.md, item 19)."""
    return tensor if tensor.dtype == dtype else tensor.to(dtype)
