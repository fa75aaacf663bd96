"""glibc's allocator, through ctypes: the two controls the server uses (nothing happens where libc is not glibc)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import Any

M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h


@functools.cache
def _libc_function(name: str) -> Callable[..., Any] | None:
    """A function of the C library, or None when there is no such library or function."""
    path = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(path) if path else None
    except OSError:
        return None
    return getattr(libc, name, None)


def set_arena_max(arenas: int) -> bool:
    """mallopt(M_ARENA_MAX, arenas): at most `arenas` malloc arenas from now on; True if glibc took it."""
    mallopt = _libc_function("mallopt")
    return bool(mallopt is not None and mallopt(M_ARENA_MAX, arenas) == 1)


def trim() -> None:
    """malloc_trim(0): give the heap's free pages back to the system."""
    malloc_trim = _libc_function("malloc_trim")
    if malloc_trim is not None:
        malloc_trim(0)
