"""The gettext catalogues: complete, consistent, in step with the code, and read the same compiled or not.

Each check is a function that returns the problems it finds. The tests run it on the real catalogues (no problem
allowed) and on a small broken example (every problem found), so a check that stops working cannot pass silently.
"""

from __future__ import annotations

import ast
import gettext
import io
import re
import shutil
import string
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from attnviz.i18n import DEFAULT_LANGUAGE, LANGUAGES, LOCALE_DIR, SourceCatalogue, catalogue_path, message_ids
from attnviz.i18n.dynamic_ids import DYNAMIC_IDS
from attnviz.i18n.extract import KEYWORDS

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = LOCALE_DIR / "attnviz.pot"
DYNAMIC_FILE = ROOT / "attnviz" / "i18n" / "dynamic_ids.py"
SOURCES = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "attnviz").rglob("*.py"))]
# Characters that exist only in one script: a Simplified text must not use the Traditional form and vice versa.
SIMPLIFIED_ONLY = set("这个们语键头为发关时来对说计权选择显输数据签态钮")
TRADITIONAL_ONLY = set("這個們語鍵頭為發關時來對說計權選擇顯輸數據籤態鈕")


def read(source: Path | str) -> Catalog:
    """A .po or .pot file, or the text of one."""
    data = source.read_bytes() if isinstance(source, Path) else source.encode()
    return read_po(io.BytesIO(data))


def real_catalogues() -> dict[str, Catalog]:
    return {lang: read(catalogue_path(lang)) for lang in LANGUAGES}


# ----- the checks ------------------------------------------------------------------------------------------------


def format_fields(template: str) -> set[str]:
    """The replacement fields of a `str.format` template as written: "{count}", "{value!r}", "{x:.2f}"."""
    fields = set()
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is not None:
            fields.add("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
    return fields


def catalogue_problems(template: Catalog, catalogues: dict[str, Catalog]) -> list[str]:
    """What is wrong with the translations (language -> catalogue, English included) of a template."""
    problems = []
    ids = {message.id for message in template if message.id}
    english = {message.id: message.string for message in catalogues[DEFAULT_LANGUAGE] if message.id}
    for lang, catalogue in catalogues.items():
        if catalogue.fuzzy:
            problems.append(f"{lang}: the catalogue's header is fuzzy, so pybabel compile skips the whole file")
        messages = {message.id: message for message in catalogue if message.id}
        problems += [f"{lang}: {key} is in the template but missing here" for key in sorted(ids - messages.keys())]
        problems += [f"{lang}: {key} is not in the template" for key in sorted(messages.keys() - ids)]
        for key, message in sorted(messages.items()):
            if not message.string.strip():
                problems.append(f"{lang}: {key} is empty")
            if message.fuzzy:
                problems.append(f"{lang}: {key} is fuzzy: check the translation, then remove the flag")
            try:
                fields, expected = format_fields(message.string), format_fields(english.get(key, ""))
            except ValueError as error:
                problems.append(f"{lang}: {key} is not a valid str.format template ({error})")
                continue
            if fields != expected:
                problems.append(f"{lang}: {key} has the placeholders {sorted(fields)}; English has {sorted(expected)}")
    return problems


def extracted_ids(root: Path = ROOT) -> dict[str, str]:
    """The literal message ids the code passes to t(), tr() and N_() -> where, found as `make i18n` finds them."""
    with (root / "babel.cfg").open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config)
    keywords = dict.fromkeys(KEYWORDS)
    found: dict[str, str] = {}
    for folder in ("attnviz", "app_pages"):
        for filename, line, message_id, _, _ in extract_from_dir(
            root / folder, method_map, options_map, keywords=keywords
        ):
            found.setdefault(message_id, f"{folder}/{filename}:{line}")
    for line, message_id, _, _ in extract_from_file(method_map[0][1], root / "app.py", keywords=keywords):
        found.setdefault(message_id, f"app.py:{line}")
    return found


def template_problems(template_ids: set[str], used: dict[str, str]) -> list[str]:
    """Differences between the template's ids and those the code uses (id -> where): `make i18n` was not run."""
    problems = [
        f"{key} (used at {where}) is not in the catalogue: run make i18n, then translate it"
        for key, where in sorted(used.items())
        if key not in template_ids
    ]
    problems += [
        f"{key} is in the catalogue but the code never uses it: run make i18n"
        for key in sorted(template_ids - used.keys())
    ]
    return problems


def _template_pattern(parts: list[str | None]) -> re.Pattern[str] | None:
    """A regular expression for the ids a template builds (None stands for a computed part), or None."""
    literal = "".join(part for part in parts if part is not None)
    if None not in parts or not re.search("[a-z]", literal):
        return None  # not computed, or nothing but computed parts (it could build any id)
    return re.compile("".join(r"\w+" if part is None else re.escape(part) for part in parts))


def _concatenation(node: ast.expr) -> list[str | None]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _concatenation(node.left) + _concatenation(node.right)
    return [node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None]


def names_and_templates(sources: list[Path]) -> tuple[set[str], list[re.Pattern[str]]]:
    """Every string the code names, and the ids its templates can build: f"score.{name}.label",
    page + ".intro", labeller("palette.{}")."""
    names, patterns = set(), []
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            parts: list[str | None] = []
            if isinstance(node, ast.JoinedStr):
                parts = [value.value if isinstance(value, ast.Constant) else None for value in node.values]
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                parts = _concatenation(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
                if "{" in node.value:
                    try:
                        parsed = list(string.Formatter().parse(node.value))
                    except ValueError:
                        continue
                    for text, field, _, _ in parsed:
                        parts += [text] if field is None else [text, None]
            pattern = _template_pattern(parts)
            if pattern is not None:
                patterns.append(pattern)
    return names, patterns


def not_built(ids: list[str], sources: list[Path]) -> list[str]:
    """The ids that no template of the code builds and no code names (so listing them as dynamic is wrong)."""
    names, patterns = names_and_templates(sources)
    return [key for key in ids if key not in names and not any(p.fullmatch(key) for p in patterns)]


# ----- the real catalogues ---------------------------------------------------------------------------------------


def test_every_message_is_in_every_language_with_the_same_placeholders():
    template, catalogues = read(TEMPLATE), real_catalogues()
    assert len([message for message in template if message.id]) > 300, "the template lost its messages"
    assert catalogue_problems(template, catalogues) == []


def test_each_catalogue_declares_its_language():
    languages = {path.name for path in LOCALE_DIR.iterdir() if path.is_dir()}
    assert languages == {lang.replace("-", "_") for lang in LANGUAGES}, "a catalogue without a language or vice versa"
    for lang, catalogue in real_catalogues().items():
        assert str(catalogue.locale) == lang.replace("-", "_")
        assert catalogue.charset == "utf-8" and catalogue.plural_forms.startswith("nplurals=")


def test_chinese_texts_use_their_own_script():
    catalogues = real_catalogues()
    for message in catalogues["zh-Hant"]:
        assert not SIMPLIFIED_ONLY & set(message.string), f"{message.id}: Simplified characters in Traditional Chinese"
    for message in catalogues["zh-Hans"]:
        assert not TRADITIONAL_ONLY & set(message.string), f"{message.id}: Traditional characters in Simplified Chinese"


def test_no_english_message_hedges_a_plural_with_s_in_brackets():
    """Issue 40: "1 time(s)", "head(s)", "2 training(s)" read as unfinished; a count is said in words or the message
    has a form of its own for one."""
    hedged = [message.id for message in real_catalogues()["en"] if "(s)" in str(message.string)]
    assert hedged == []


def test_the_template_holds_exactly_the_ids_the_code_uses():
    used = extracted_ids()
    assert len(used) > 300, "too few ids extracted: the extraction is broken"
    template_ids = {message.id for message in read(TEMPLATE) if message.id}
    assert template_problems(template_ids, used) == []
    assert set(message_ids()) == template_ids, "the compiled catalogues are stale: run make i18n"


def test_every_id_listed_as_dynamic_is_built_or_named_in_the_code():
    assert len(DYNAMIC_IDS) == len(set(DYNAMIC_IDS)), "an id listed twice"
    sources = [source for source in SOURCES if source != DYNAMIC_FILE]
    assert not_built(list(DYNAMIC_IDS), sources) == [], "listed in dynamic_ids.py but built nowhere: remove them"


def test_a_po_file_reads_the_same_compiled_or_not():
    for lang in LANGUAGES:
        path = catalogue_path(lang)
        compiled = io.BytesIO()
        write_mo(compiled, read(path))
        compiled.seek(0)
        expected = {key: text for key, text in gettext.GNUTranslations(compiled)._catalog.items() if key}
        with path.open("rb") as fp:
            assert SourceCatalogue(fp)._catalog == expected, lang


# ----- each check finds what it should ---------------------------------------------------------------------------

HEADER = r"""msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\n"
"""
BROKEN_TEMPLATE = """
msgid "a.count"
msgstr ""

msgid "a.value"
msgstr ""

msgid "a.plain"
msgstr ""

msgid "a.later"
msgstr ""
"""
BROKEN = {
    "en": HEADER
    + """
msgid "a.count"
msgstr "{count} tokens"

msgid "a.value"
msgstr "unknown value {value!r}"

msgid "a.plain"
msgstr "Plain"

msgid "a.later"
msgstr "Later"
""",
    "zh-Hans": HEADER
    + """
#, fuzzy
msgid "a.count"
msgstr "{count} 个词元"

msgid "a.value"
msgstr "未知的值 {value}"

msgid "a.plain"
msgstr ""

msgid "b.extra"
msgstr "多余"
""",
    "zh-Hant": """
#, fuzzy
msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\\n"

msgid "a.count"
msgstr "{number} 個詞元"

msgid "a.value"
msgstr "未知的值 {value!r"

msgid "a.plain"
msgstr "平"

msgid "a.later"
msgstr "{later}"
""",
}


def test_the_catalogue_check_finds_every_kind_of_problem():
    problems = catalogue_problems(read(BROKEN_TEMPLATE), {lang: read(text) for lang, text in BROKEN.items()})
    expected = [
        "zh-Hans: a.later is in the template but missing here",
        "zh-Hans: b.extra is not in the template",
        "zh-Hans: a.plain is empty",
        "zh-Hans: a.count is fuzzy",
        "zh-Hans: a.value has the placeholders ['{value}']; English has ['{value!r}']",  # the conversion counts
        "zh-Hant: the catalogue's header is fuzzy",
        "zh-Hant: a.count has the placeholders ['{number}']; English has ['{count}']",
        "zh-Hant: a.value is not a valid str.format template",
        "zh-Hant: a.later has the placeholders ['{later}']; English has []",
    ]
    for problem in expected:
        assert any(found.startswith(problem) for found in problems), f"not found: {problem}\nfound: {problems}"
    assert len(problems) == len(expected), problems
    assert not [problem for problem in problems if problem.startswith("en:")]


def test_the_extraction_sees_literal_ids_only_and_both_branches_of_a_choice(tmp_path):
    shutil.copy(ROOT / "babel.cfg", tmp_path)
    (tmp_path / "app_pages").mkdir()
    (tmp_path / "attnviz").mkdir()
    (tmp_path / "app.py").write_text('tr("app.title")\n', encoding="utf-8")
    (tmp_path / "attnviz" / "page.py").write_text(
        "from attnviz.i18n import N_, t\n"
        'label = t("a.one", lang)\n'
        'title = tr("a.two" if heads > 1 else "a.three")\n'
        'marked = N_("a.four")\n'
        'computed = tr(f"score.{name}.label"), tr(page + ".intro"), t(key, lang)\n'
        '_("not an id"), other("b.other"), self.t("b.method")\n',
        encoding="utf-8",
    )
    used = extracted_ids(tmp_path)
    assert set(used) == {"app.title", "a.one", "a.two", "a.three", "a.four"}
    assert used["a.three"] == "attnviz/page.py:3"


def test_the_template_check_finds_unknown_and_unused_ids():
    problems = template_problems({"a.used", "a.unused"}, {"a.used": "app.py:1", "a.typo": "app_pages/x.py:7"})
    assert problems == [
        "a.typo (used at app_pages/x.py:7) is not in the catalogue: run make i18n, then translate it",
        "a.unused is in the catalogue but the code never uses it: run make i18n",
    ]


def test_the_dynamic_id_check_finds_an_id_nothing_builds(tmp_path):
    source = tmp_path / "code.py"
    source.write_text(
        'tr(f"score.{name}.label"), tr(page + ".intro"), labeller("palette.{}"), f"{anything}"\n'
        'PATTERNS = [("pattern", "error.between")]\n',
        encoding="utf-8",
    )
    ids = ["score.dot.label", "self.intro", "palette.greys", "error.between", "score.dot.help", "zzz.nowhere"]
    assert not_built(ids, [source]) == ["score.dot.help", "zzz.nowhere"]


def test_a_po_file_read_directly_leaves_out_what_compiling_leaves_out():
    text = r"""# A comment
#, fuzzy
msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\n"

msgid "a.long"
msgstr ""
"A message on "
"two lines with \"quotes\", a backslash \\ and a\n"
"new line"

#, fuzzy
msgid "a.fuzzy"
msgstr "Not checked yet"

msgid "a.empty"
msgstr ""

#, python-format
msgid "a.plain"
msgstr "平"

#~ msgid "a.obsolete"
#~ msgstr "Gone"
"""
    source = SourceCatalogue(io.BytesIO(text.encode()))
    assert source._catalog == {
        "a.long": 'A message on two lines with "quotes", a backslash \\ and a\nnew line',
        "a.plain": "平",
    }
    compiled = io.BytesIO()
    write_mo(compiled, read(text))
    compiled.seek(0)
    assert {key: value for key, value in gettext.GNUTranslations(compiled)._catalog.items() if key} == source._catalog
