"""The interface languages: message lookup, the language picker, and the language in every link.

The catalogues themselves (complete, consistent, in step with the code) are checked in test_catalogues.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.i18n import LANGUAGES, message_ids, placeholders, t
from tests.test_app import run_page


def test_every_preset_score_and_kernel_has_its_prose_in_the_catalogue_only():
    """Their English prose (for notebooks) is read from the catalogue: it is written once, in the .po files."""
    from attnviz.core.kernel import KERNELS
    from attnviz.core.scores import SCORES, ScoreSpec
    from attnviz.lessons.presets import PRESETS, Preset

    ids = set(message_ids())
    for key, preset in PRESETS.items():
        assert {f"preset.{key}.{part}" for part in ("title", "source", "description")} <= ids
        assert preset.title and preset.description and preset.source
    for prefix, specs in (("score", SCORES), ("kernel", KERNELS)):
        for name, spec in specs.items():
            assert {f"{prefix}.{name}.label", f"{prefix}.{name}.explanation"} <= ids
            assert spec.label and spec.explanation
    prose = {"title", "source", "description", "label", "explanation"}
    for spec_type in (Preset, ScoreSpec, KERNELS["gaussian"].__class__):
        assert not prose & set(spec_type.__dataclass_fields__), spec_type  # no second copy in the code


def test_placeholders_are_filled_in():
    assert placeholders(t("error.bad_setting", "zh-Hant")) == {"param", "value", "choices"}
    assert "'xx'" in t("error.bad_setting", "zh-Hant", param="lang", value="xx", choices="en")
    with pytest.raises(KeyError):
        t("no.such_key", "en")
    with pytest.raises(KeyError):
        t("no.such_key", "zh-Hans")  # not English's text for a typo either


def test_every_message_exists_in_every_language_and_an_unknown_language_gets_english():
    ids = message_ids()
    assert len(ids) > 300 and "home.title" in ids and "" not in ids
    for key in ids:
        texts = {lang: t(key, lang) for lang in LANGUAGES}
        assert all(text.strip() for text in texts.values()), key
    assert t("self.title", "zh-Hans") == "自注意力" and t("self.title", "zh-Hant") == "自注意力"
    assert t("home.open", "zh-Hans") == "打开" and t("home.open", "zh-Hant") == "開啟"
    assert t("home.open", "fr") == t("home.open", "en") == "Open"


@pytest.mark.parametrize("lang", list(LANGUAGES))
def test_home_page_in_every_language(lang):
    at = run_page("app.py", **({"lang": lang} if lang != "en" else {}))
    assert at.title[0].value == t("home.title", lang)
    headers = [h.value for h in at.header]
    assert headers[0] == t("home.soft_addressing", lang)
    assert at.selectbox(key="w:lang").value == lang
    assert not at.warning


def test_an_unknown_language_in_a_link_warns_and_falls_back_to_english():
    at = run_page("app.py", lang="<b>fr</b>")
    shown = [w.value.replace("\\", "") for w in at.warning]  # the markdown source, its escapes removed
    assert any("'lang'" in w and "zh-Hant" in w and "'<b>fr</b>'" in w for w in shown), shown
    assert at.header[0].value == t("home.soft_addressing", "en")


def test_choosing_a_language_puts_it_in_the_link_and_keeps_the_page_state():
    at = run_page("app_pages/self_attention.py", T="2")
    at.selectbox(key="w:lang").set_value("zh-Hans").run()
    assert not at.exception
    assert at.query_params["lang"] == "zh-Hans" and at.query_params["T"] == "2"
    assert at.title[0].value == t("self.title", "zh-Hans")
    at.number_input(key="w:self:temperature").set_value(3.0).run()
    assert at.query_params["lang"] == "zh-Hans" and at.query_params["T"] == "3"  # controls keep the language
    at.selectbox(key="w:lang").set_value("en").run()
    assert "lang" not in at.query_params and at.title[0].value == "Self-attention"


def test_a_link_in_chinese_opens_each_page_in_chinese():
    for path, page in (
        ("app_pages/self_attention.py", "self"),
        ("app_pages/cross_attention.py", "cross"),
        ("app_pages/kernel_attention.py", "kernel"),
        ("app_pages/pretrained_model.py", "model"),
        ("app_pages/is_attention_an_explanation.py", "faithful"),
        ("app_pages/learned_attention.py", "learned"),
        ("app_pages/modern_attention.py", "modern"),
    ):
        at = run_page(path, lang="zh-Hant")
        assert at.title[0].value == t(f"{page}.title", "zh-Hant"), path
        assert Path(path).name  # the page ran without an exception (run_page checks)


def test_figures_speak_the_chosen_language():
    import numpy as np
    import plotly.graph_objects as go

    from attnviz.figures import attention as figures
    from attnviz.figures import kernel as kernel_figures
    from attnviz.figures import model as model_figures

    weights = np.array([[0.25, 0.75], [1.0, 0.0]], dtype=np.float32)
    mask = np.array([[True, True], [True, False]])
    fig = figures.weights_heatmap(figures.AttentionGrid(weights, mask=mask), scores=weights, lang="zh-Hant")
    assert fig.layout.xaxis.title.text == "鍵" and fig.layout.yaxis.title.text == "查詢"
    assert fig.layout.title.text == "注意力權重"
    assert "權重" in fig.data[0].hovertemplate and "分數" in fig.data[0].hovertemplate
    assert any(trace.name == t("fig.masked", "zh-Hant") for trace in fig.data)
    go.Figure(fig.to_dict())  # still valid for Plotly
    kernel = kernel_figures.kernel_regression_figure([0, 1], [1, 2], [0.5], [1.5], lang="zh-Hans")
    assert kernel.layout.title.text == "Nadaraya–Watson 回归" and kernel.data[1].name == "预测"
    view = model_figures.model_view(np.full((1, 2, 2, 2), 0.5), row_labels=["a", "<b>"], lang="zh-Hans")
    assert view.data[0].y[1] == "第 1 层，查询 &lt;b&gt;"  # the token escaped once, the words translated
    assert list(view.layout.xaxis.ticktext) == ["头 1", "头 2"]


def _core_messages() -> list[str]:
    """Errors and link warnings the pages can show, produced by the real core code."""
    import torch

    from attnviz.app.model_state import decode_model
    from attnviz.app.pipeline import matrix_from_cells, resolve_inputs, valid_lens_for
    from attnviz.app.state import AttentionState, decode_attention, decode_kernel
    from attnviz.core.multihead import multi_head_attend
    from attnviz.core.text import tokenize
    from attnviz.models.bert import load_minilm

    messages = []
    for params in (
        {"T": "abc"},
        {"h": "99"},
        {"h": "1.5"},
        {"c": "2"},
        {"sc": "zzz"},
        {"s": "x" * 2001},
        {"s": "x" * 20_001},
        {"m": "numbers", "q": ";".join(["1"] * 65)},
        {"m": "numbers", "q": "1,a"},
        {"m": "numbers", "q": "1,2;3"},
        {"m": "numbers", "q": "1,1e9"},
        {"m": "numbers", "q": ",".join(["1"] * 300)},
        {"vl": ",".join(["1"] * 600)},
        {"q": ""},
    ):
        messages += decode_attention(params, "self").warnings
    messages += decode_kernel({"q": "1,x"}).warnings + decode_model({"hd": "", "l": "9"}).warnings

    def error_of(call) -> Exception:
        try:
            call()
        except ValueError as exc:
            return exc
        raise AssertionError("no error raised")

    state = AttentionState()
    messages += [
        error_of(lambda: tokenize("  ")),
        error_of(lambda: tokenize("a " * 600)),
        error_of(lambda: resolve_inputs(AttentionState(sentence=""))),
        error_of(lambda: resolve_inputs(AttentionState(page="cross", source="b " * 600))),
        error_of(
            lambda: resolve_inputs(
                AttentionState(mode="numbers", page="cross", keys=((1.0,),), values=((1.0,), (2.0,)))
            )
        ),
        error_of(lambda: resolve_inputs(AttentionState(embed="minilm"))),
        error_of(lambda: valid_lens_for(AttentionState(lens_mode="all", lens=(9,)), 2, 3)),
        error_of(lambda: valid_lens_for(AttentionState(lens_mode="per_query", lens=(1,)), 2, 3)),
        error_of(lambda: valid_lens_for(AttentionState(lens_mode="per_query", lens=(1, 9)), 2, 3)),
        error_of(lambda: matrix_from_cells([], "keys")),
        error_of(lambda: matrix_from_cells([[]], "keys")),
        error_of(lambda: matrix_from_cells([[1.0], [1.0, 2.0]], "keys")),
        error_of(lambda: matrix_from_cells([[None]], "keys", ["d1"])),
        error_of(lambda: matrix_from_cells([["x"]], "keys", ["d1"])),
        error_of(lambda: matrix_from_cells([[1e9]], "keys", ["d1"])),
        error_of(lambda: multi_head_attend(torch.ones(2, 6), torch.ones(2, 6), torch.ones(2, 6), num_heads=4)),
        error_of(lambda: multi_head_attend(torch.ones(2, 4), torch.ones(2, 4), torch.ones(2, 2), residual=True)),
        error_of(lambda: multi_head_attend(torch.ones(2, 4), torch.ones(2, 3), torch.ones(2, 2), score="dot")),
        error_of(lambda: load_minilm().encode("cat " * 300)),
        error_of(lambda: load_minilm().word_vectors("cat " * 300)),
    ]
    assert state.page == "self"
    return messages


@pytest.mark.parametrize("lang", ["zh-Hans", "zh-Hant"])
def test_the_errors_a_page_can_show_are_translated_by_code(lang):
    from attnviz.core.errors import render

    errors = _core_messages()
    assert len(errors) > 30
    for error in errors:
        assert hasattr(error, "code"), f"an error a page can show has no code: {error!r}"
        translated = render(error, lang)
        assert re.search(r"[\u4e00-\u9fff]", translated), translated
        leftover = re.search(r"\b(must|the limit|Using the default|is not a number|is empty)\b", translated)
        assert not leftover, f"English left in {translated!r} (from {error!r})"
        assert render(error, "en") == str(error)  # str() is the English message, for notebook users


PAGES = {
    "home": "app.py",
    "self": "app_pages/self_attention.py",
    "cross": "app_pages/cross_attention.py",
    "kernel": "app_pages/kernel_attention.py",
    "model": "app_pages/pretrained_model.py",
    "learned": "app_pages/learned_attention.py",
    "modern": "app_pages/modern_attention.py",
}
# English prose left on a Chinese page: three or more English words in a row. Allowed: the user's own example
# sentences, names of models, functions and formulas.
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{2,}(?:[ -][a-z]{2,}){2,}\b")
ALLOWED = (
    "the quick brown fox jumps over the dog",
    "the cat sat on the mat and the dog lay on the rug by the door",
    "the cat sat on the mat",
    "The cat sat on the mat because it was tired",
    "all-MiniLM-L6-v2",
    "pip install --no-deps",
)


def _texts(at) -> list[str]:
    """Every text a page run shows: markdown, captions, headers, alerts, and the labels and help of its widgets."""
    texts = []
    for kind in ("markdown", "caption", "header", "subheader", "title", "error", "warning", "info", "success"):
        texts += [element.value for element in getattr(at, kind)]
    kinds = ("selectbox", "radio", "toggle", "number_input", "text_input", "slider", "select_slider", "button", "pills")
    for kind in kinds:
        for widget in getattr(at, kind):
            texts += [widget.label, getattr(widget, "help", "") or ""]
            texts += [str(o) for o in getattr(widget, "options", [])]
    texts += [e.label for e in at.expander]
    return texts


LINKS = {  # links that bring out more of each page: several heads, a comparison, masks, a pair, a preset
    "home": {},
    "self": {"h": "2", "cmp": "additive", "c": "1", "lm": "all", "vl": "3", "p": "unit_sentences"},
    "cross": {"res": "1", "cmp": "cosine", "pr": "random", "guess": "1"},
    "kernel": {"kn": "boxcar", "bw": "0.5", "p": "waist_weight"},
    "model": {"s2": "Where is it?", "pt": "ab", "hs": "1", "hd": "1,2"},
    "learned": {"tk": "induction", "sd": "3"},  # the heads' table, and a seed not trained yet: its Train button
    "modern": {"pr": "rope_repeat", "tp": "flash", "bk": "1"},  # the online softmax half-way, its blocks to go
}


@pytest.mark.parametrize("lang", ["zh-Hans", "zh-Hant"])
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_in_chinese_has_no_english_left(page, lang):
    at = run_page(PAGES[page], lang=lang, **LINKS[page])
    assert at.title[0].value == t(f"{page}.title", lang)
    for key in (f"open:{page}:raw", f"open:{page}:share", f"open:{page}:proj"):
        at.session_state[key] = True  # open every folded section
    at.run()
    assert not at.exception
    for text in _texts(at):
        cleaned = text
        for allowed in ALLOWED:
            cleaned = cleaned.replace(allowed, "")
        cleaned = re.sub(r"\$\$.*?\$\$|\$.*?\$", "", cleaned, flags=re.S)  # formulas
        leftover = ENGLISH_RUN.search(cleaned)
        assert not leftover, f"{page} in {lang}: English left in {text[:120]!r}"


def test_the_english_detector_finds_english():
    at = run_page(PAGES["self"])  # the English page: the detector must fire, or the test above proves nothing
    assert any(ENGLISH_RUN.search(text) for text in _texts(at))


def test_the_english_catalogue_reads_in_english():
    """No Chinese on an English page (the study notes' Chinese titles were shown as they are), except where Chinese is
    the point: the language picker's own names and a Chinese date as an example input."""
    from babel.messages.pofile import read_po

    allowed = {"frame.language", "learned.date_empty", "faithful.date_help"}
    path = Path(__file__).resolve().parent.parent / "attnviz/i18n/locale/en/LC_MESSAGES/attnviz.po"
    with path.open("rb") as handle:
        catalogue = read_po(handle)
    chinese = [
        message.id
        for message in catalogue
        if message.id not in allowed
        and isinstance(message.string, str)
        and re.search(r"[\u4e00-\u9fff]", message.string)
    ]
    assert chinese == []
