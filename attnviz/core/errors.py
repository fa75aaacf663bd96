"""Errors with a code and parameters, translated by code (never by parsing their English text).

Shaped like Django's `ValidationError(message, code, params)`: `AttnvizError("between", name=Name("temperature"),
low=0.001, high=1000, value="abc")`. Its `str()` is the English message, for notebook users; the app renders the
same code in the interface language with `render`. The prose of every message lives in the gettext catalogue
(`attnviz/i18n/locale`), under the message id "error.<code>".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.i18n import DEFAULT_LANGUAGE, t


@dataclass(frozen=True)
class Name:
    """The name of a thing inside a message (a field, a sentence): translated through the catalogue's
    "field.<key>" message."""

    key: str


class AttnvizError(ValueError):
    """A user-facing error: `code` names its message, `params` fill it in. A ValueError, so that existing
    `except ValueError` keeps working."""

    def __init__(self, code: str, /, **params: Any) -> None:
        self.code = code
        self.params = params
        super().__init__(render(self, DEFAULT_LANGUAGE))

    def __reduce__(self):  # picklable like a plain exception (multiprocessing, pytest-xdist)
        return (_rebuild, (self.code, self.params))


def _rebuild(code: str, params: Mapping[str, Any]) -> AttnvizError:
    return AttnvizError(code, **params)


def short(text: Any, limit: int = 40) -> str:
    """At most `limit` characters of a user's text, for echoing it in a message."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _plain(text: str) -> str:
    return text


def render(error: Any, lang: str, escape: Callable[[str], str] = _plain) -> str:
    """The error's message in `lang`. Names are translated; nested errors rendered in the same language; every
    other parameter (numbers, the user's own text) is passed through `escape` (the app shows it literally)."""
    params = {key: _param(value, lang, escape) for key, value in error.params.items()}
    return t(f"error.{error.code}", lang, **params)


def _param(value: Any, lang: str, escape: Callable[[str], str]) -> str:
    if isinstance(value, Name):
        return t(f"field.{value.key}", lang)
    if hasattr(value, "code") and hasattr(value, "params"):  # a nested error
        return render(value, lang, escape)
    if isinstance(value, float):
        value = f"{value:g}"
    return escape(str(value))
