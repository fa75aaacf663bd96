"""A Babel extraction method for attnviz's message ids (babel.cfg names it; `make i18n` and the tests use it).

It yields the first argument of every call to one of the keywords (t, tr, N_) when that argument is a literal id,
found with Python's own parser. Babel's built-in Python extractor reads tokens instead: it joins the two branches
of `tr("a" if c else "b")` into one id "ab", and takes the ".intro" of `tr(page + ".intro")` for an id. Here both
branches count, and an id computed at run time is skipped (dynamic_ids.py lists those).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

KEYWORDS = ("t", "tr", "N_")  # the functions whose first argument is a message id


def extract_message_ids(
    fileobj: IO[bytes], keywords: Collection[str], comment_tags: Collection[str], options: Mapping[str, Any]
) -> Iterator[tuple[int, str, str, list[str]]]:
    """Babel's extractor interface: (line number, function, message id, comments), in the order of the source."""
    calls = [
        node
        for node in ast.walk(ast.parse(fileobj.read()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in keywords and node.args
    ]
    for call in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
        for message_id in _literal_ids(call.args[0]):
            yield call.lineno, call.func.id, message_id, []
    yield from _declared_ids(fileobj)


# Calls that name a message without a keyword (reported to Babel as N_, a keyword it knows): an error's code,
# a name inside a message, a field's name, label and help.
CODED = {"AttnvizError": "error.", "ModelUnavailableError": "error.", "Name": "field."}
FIELD_IDS = ("label", "help")
# Declarations whose prose lives in the catalogue: the ids that the first argument (a name or key) implies.
DECLARED = {
    "ScoreSpec": ("score.{}.label", "score.{}.explanation"),
    "KernelSpec": ("kernel.{}.label", "kernel.{}.explanation"),
    "Preset": ("preset.{}.title", "preset.{}.source", "preset.{}.description"),
}


def _declared_ids(fileobj: IO[bytes]) -> Iterator[tuple[int, str, str, list[str]]]:
    fileobj.seek(0)
    for node in ast.walk(ast.parse(fileobj.read())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        prefix = CODED.get(node.func.id)
        if prefix and node.args:
            for code in _literal_ids(node.args[0]):
                yield node.lineno, "N_", prefix + code, []
        for part in DECLARED.get(node.func.id, ()) if node.args else ():  # ScoreSpec("dot", ...): its prose ids
            for name in _literal_ids(node.args[0]):
                yield node.lineno, "N_", part.format(name), []
        if node.func.id == "Field" and node.args:  # a field's name is also how messages name it
            for name in _literal_ids(node.args[0]):
                yield node.lineno, "N_", "field." + name, []
        if node.func.id == "replace":  # replace(SEED, name="score_seed"): the same field under another name
            for keyword in node.keywords:
                if keyword.arg == "name":
                    for name in _literal_ids(keyword.value):
                        yield node.lineno, "N_", "field." + name, []
        if node.func.id == "Field":
            for keyword in node.keywords:
                if keyword.arg in FIELD_IDS:
                    for message_id in _literal_ids(keyword.value):
                        yield node.lineno, "N_", message_id, []


def _literal_ids(node: ast.expr) -> Iterator[str]:
    """The ids an argument can be without running anything: a string, or either branch of `a if c else b`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _literal_ids(node.body)
        yield from _literal_ids(node.orelse)
