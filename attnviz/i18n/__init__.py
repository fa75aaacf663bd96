"""Interface languages: a small, typed message table (English, Simplified and Traditional Chinese).

Every text the app shows is a `Text` in `attnviz.i18n.messages.CATALOGUE`, looked up by key with `t(key, lang,
**params)`. Placeholders use `str.format` names ("{count} tokens"); a test checks that every key has all three
languages with the same placeholders. Pure Python: no Streamlit here.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass

LANGUAGES: dict[str, str] = {"en": "English", "zh-Hans": "简体中文", "zh-Hant": "繁體中文"}
DEFAULT_LANGUAGE = "en"


@dataclass(frozen=True)
class Text:
    """One message in every interface language."""

    en: str
    zh_hans: str
    zh_hant: str

    def get(self, lang: str) -> str:
        """The message in `lang` (English for an unknown language)."""
        return {"en": self.en, "zh-Hans": self.zh_hans, "zh-Hant": self.zh_hant}.get(lang, self.en)


def placeholders(template: str) -> set[str]:
    """The {names} a template fills in."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@functools.cache
def _template(key: str, lang: str) -> str:
    """One message's text in one language (cached: a page looks up dozens of messages on every rerun)."""
    from attnviz.i18n.messages import CATALOGUE

    return CATALOGUE[key].get(lang)


def t(key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> str:
    """The message `key` in `lang`, with `params` filled in. KeyError for an unknown key (a bug, caught by tests)."""
    template = _template(key, lang)
    return template.format(**params) if params else template
