"""Counting the torch calls a block makes: each tensor operation lets another thread take Python's lock, and under a
class's load each such hand-over costs the server more than the arithmetic (CHANGELOG.md, Performance history)."""

from __future__ import annotations

import torch


class TorchCalls(torch.overrides.TorchFunctionMode):
    """The names of the torch functions and tensor methods called inside the `with` block, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))
