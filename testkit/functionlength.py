"""How long each function is, for the checks that keep functions short (DESIGN: "no function over ~60 lines without
a reason"): tests/test_short_functions.py over the app's pages and figures, bench/tests/test_function_length.py over
the load tools. A function's length runs from its `def` to its last line, docstring and comments counted; nested
functions and methods count on their own too."""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 60


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function in `source` longer than `limit` lines, nested ones and methods included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def too_long(
    root: Path, modules: list[Path], longer: dict[tuple[str, str], str], limit: int = MAX_LINES
) -> dict[str, int]:
    """`module:function` -> lines, for each function of `modules` longer than `limit` that `longer` does not name
    as (module, function), the module as its path below `root`."""
    found = {}
    for path in modules:
        module = path.relative_to(root).as_posix()
        for name, lines in long_functions(path.read_text(encoding="utf-8"), limit):
            if (module, name) not in longer:
                found[f"{module}:{name}"] = lines
    return found
