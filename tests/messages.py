"""What a page should say, by message id: tests compare with the catalogue's text, not with a copy of its English.

Rewording a message in the .po files then breaks no test, while a page that shows another message, or none, still
fails one. `message` fills in every placeholder; `pattern`, `text_pattern` and `says` leave out those a test cannot
know (a measured figure, a rounding), which then match any text, and `pattern` captures them by name.
"""

from __future__ import annotations

import re
import string

from attnviz.i18n import DEFAULT_LANGUAGE, t


def message(key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> str:
    """The message `key` in `lang` with its placeholders filled in, as the page shows it."""
    return t(key, lang, **params)


def pattern(key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> re.Pattern[str]:
    """The message `key` as a regular expression: the placeholders in `params` filled in, each other one any text,
    captured as a group of its name."""
    return re.compile(_regex(key, lang, params, capture=True), re.S)


def text_pattern(key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> re.Pattern[str]:
    """`pattern` without named groups, which JavaScript writes otherwise: for Playwright's `get_by_text`."""
    return re.compile(_regex(key, lang, params, capture=False), re.S)


def _regex(key: str, lang: str, params: dict[str, object], capture: bool) -> str:
    parts: list[str] = []
    seen: set[str] = set()
    pieces = list(string.Formatter().parse(t(key, lang)))
    for index, (literal, name, spec, conversion) in enumerate(pieces):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in params:
            value = params[name]
            value = repr(value) if conversion == "r" else value
            parts.append(re.escape(format(value, spec or "")))
            continue
        last = index == len(pieces) - 1  # nothing after it to stop at: the rest of the line
        any_text = "[^\\n]+" if last else ".+?"
        if not capture:
            parts.append(f"(?:{any_text})")
        elif name in seen:
            parts.append(f"(?P={name})")
        else:
            parts.append(f"(?P<{name}>{any_text})")
            seen.add(name)
    return "".join(parts)


def says(text: str, key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> bool:
    """Whether `text` holds the message `key` (its placeholders not in `params`: any text)."""
    return pattern(key, lang, **params).search(str(text)) is not None
