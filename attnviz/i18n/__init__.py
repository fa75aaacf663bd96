"""Interface languages: gettext catalogues in English, Simplified and Traditional Chinese, managed with Babel.

Every text the app shows is a message of `locale/<language>/LC_MESSAGES/attnviz.po`, looked up by a symbolic id
with `t(message_id, lang, **params)`, e.g. `t("score.dot.label", "zh-Hans")`. Placeholders use `str.format`
names ("{count} tokens"). `make i18n` extracts the ids the code uses into `locale/attnviz.pot`, merges them into
each .po and compiles the .po files to .mo files, which are read here with the standard library's gettext: Babel
is a build tool, never imported at run time. Pure Python: no Streamlit here.
"""

from __future__ import annotations

import ast
import functools
import gettext
import string
from pathlib import Path
from typing import BinaryIO

LANGUAGES: dict[str, str] = {"en": "English", "zh-Hans": "简体中文", "zh-Hant": "繁體中文"}
DEFAULT_LANGUAGE = "en"
DOMAIN = "attnviz"
LOCALE_DIR = Path(__file__).with_name("locale")


def N_(message_id: str) -> str:
    """Mark a message id for `pybabel extract` without looking it up (see dynamic_ids.py)."""
    return message_id


def placeholders(template: str) -> set[str]:
    """The {names} a template fills in."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def catalogue_path(lang: str, suffix: str = ".po") -> Path:
    """The catalogue file of an interface language: its .po source, or with suffix=".mo" the compiled one."""
    return LOCALE_DIR / lang.replace("-", "_") / "LC_MESSAGES" / f"{DOMAIN}{suffix}"


class _Unknown(gettext.NullTranslations):
    """The end of every fallback chain: an id that not even English has is a bug (a typo), not a message."""

    def gettext(self, message: str) -> str:
        raise KeyError(message)


class SourceCatalogue(gettext.NullTranslations):
    """A .po file read directly, when its .mo is missing or older (a checkout where `make i18n` has not run).

    Reads what `pybabel` writes for attnviz: one msgstr per msgid, no contexts, no plurals. Like `pybabel compile`,
    it leaves out fuzzy and untranslated messages. A test checks that both give the same catalogue."""

    def _parse(self, fp: BinaryIO) -> None:  # gettext's hook for a catalogue format of one's own
        self._catalog: dict[str, str] = {}
        entry: dict[str, str] = {}
        field, fuzzy = "", False
        for line in [*fp.read().decode("utf-8").splitlines(), ""]:
            if line.startswith('"'):  # a continuation line of the msgid or msgstr above
                entry[field] += ast.literal_eval(line)
            elif line.startswith(("msgid ", "msgstr ")):
                field, _, text = line.partition(" ")
                entry[field] = ast.literal_eval(text)  # a quoted string; literal_eval never runs code
            elif line.startswith("#,"):
                fuzzy = "fuzzy" in line
            elif not line.strip():  # a blank line ends an entry
                if entry.get("msgid") and entry.get("msgstr") and not fuzzy:
                    self._catalog[entry["msgid"]] = entry["msgstr"]
                entry, fuzzy = {}, False

    def gettext(self, message: str) -> str:
        if message in self._catalog:
            return self._catalog[message]
        return self._fallback.gettext(message) if self._fallback else message


def _load(lang: str) -> gettext.NullTranslations:
    """One language's catalogue: the compiled .mo when it is up to date, else its .po source."""
    source, compiled = catalogue_path(lang), catalogue_path(lang, ".mo")
    if compiled.exists() and (not source.exists() or compiled.stat().st_mtime >= source.stat().st_mtime):
        with compiled.open("rb") as fp:
            return gettext.GNUTranslations(fp)
    with source.open("rb") as fp:
        return SourceCatalogue(fp)


@functools.cache
def _translations(lang: str) -> gettext.NullTranslations:
    """The catalogue of `lang` (in LANGUAGES); a message it lacks comes from English, an unknown id raises."""
    catalogue = _load(lang)
    catalogue.add_fallback(_Unknown() if lang == DEFAULT_LANGUAGE else _translations(DEFAULT_LANGUAGE))
    return catalogue


def message_ids() -> list[str]:
    """Every message id, sorted (those of the English catalogue, which the tests keep complete)."""
    return sorted(key for key in _translations(DEFAULT_LANGUAGE)._catalog if key)  # "" is the header


@functools.cache
def _template(key: str, lang: str) -> str:
    """One message's text in one language (cached: a page looks up dozens of messages on every rerun)."""
    if not key:
        raise KeyError(key)  # gettext("") is the catalogue's header
    return _translations(lang).gettext(key)


def t(key: str, lang: str = DEFAULT_LANGUAGE, /, **params: object) -> str:
    """The message `key` in `lang`, with `params` filled in. KeyError for an unknown key (a bug, caught by tests)."""
    template = _template(key, lang if lang in LANGUAGES else DEFAULT_LANGUAGE)  # English for an unknown language
    return template.format(**params) if params else template


def sentences(first: str, second: str) -> str:
    """Two translated sentences as one text: a space between them in English, none after a Chinese full stop
    ("温度 T = 1。第一个键", not "温度 T = 1。 第一个键")."""
    if not first or not second:
        return first or second
    return first + ("" if first[-1] in "。！？；：）" else " ") + second


def prose(prefix: str, name_attribute: str, part: str) -> property:
    """A declaration's English text read from the catalogue, e.g. `label = prose("score", "name", "label")` reads
    "score.<its name>.label": the prose is written once, in the .po files, for every language."""
    return property(
        lambda self: t(f"{prefix}.{getattr(self, name_attribute)}.{part}"),
        doc=f"Its {part} in English (the catalogue's '{prefix}.<{name_attribute}>.{part}').",
    )
