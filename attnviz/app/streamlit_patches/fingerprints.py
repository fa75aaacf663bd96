"""Fingerprints of Streamlit's code: the source of a dotted name, read from Streamlit's files, and its sha256.

A fingerprint is taken from the source file, not from the live object, so that it is the same before and after the
patches of this package are installed (they replace some of the very functions fingerprinted).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import textwrap
from pathlib import Path


def source_of(target: str) -> str:
    """The source code of `target` (a dotted name: module, then classes, then a function, method or assignment),
    read from Streamlit's files; KeyError when it is not there."""
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        module = ".".join(parts[:split])
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            break
    else:
        raise KeyError(f"{target}: no module of it found")
    text = Path(spec.origin).read_text(encoding="utf-8")
    node: ast.AST = ast.parse(text)
    for name in parts[split:]:
        found = _named(node, name)
        if found is None:
            raise KeyError(f"{target}: no {name!r} in {module}")
        node = found
    return textwrap.dedent(ast.get_source_segment(text, node, padded=True) or "")


def _named(scope: ast.AST, name: str) -> ast.AST | None:
    """The last definition of `name` directly in `scope`'s body (also inside its if/try blocks): after a function's
    `@overload` stubs, the function itself."""
    found = None
    for statement in getattr(scope, "body", []):
        if _defines(statement, name):
            found = statement
        elif isinstance(statement, ast.If | ast.Try):
            for block in (statement.body, getattr(statement, "orelse", [])):
                found = _named(ast.Module(body=block, type_ignores=[]), name) or found
    return found


def _defines(statement: ast.stmt, name: str) -> bool:
    """Whether `statement` defines `name`: a class, a function, or an assignment to it."""
    if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return statement.name == name
    if isinstance(statement, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
    if isinstance(statement, ast.AnnAssign):
        return isinstance(statement.target, ast.Name) and statement.target.id == name
    return False


def fingerprint(target: str) -> str:
    """The first 16 hex digits of the sha256 of `target`'s source."""
    return hashlib.sha256(source_of(target).encode("utf-8")).hexdigest()[:16]
