"""Links and page state: every defect of the old hand-built state layer, the field table, and round trips."""

from __future__ import annotations

import html
import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from attnviz.app.links import (
    LINK_MAX_CHARS,
    LINK_MAX_FIELDS,
    link_problem,
    link_too_long_page,
    read_state_file,
    state_file,
)
from attnviz.app.state import (
    KERNEL_FIELDS,
    TEMPERATURE,
    AttentionState,
    KernelState,
    apply_preset,
    attention_fields,
    decode_attention,
    decode_kernel,
    default_attention_state,
    encode_attention,
    encode_kernel,
)
from attnviz.app.ui.settings import md_escape
from attnviz.core.errors import AttnvizError, Name, render
from attnviz.core.fields import MAX_CELL, Field, format_matrix, parse_matrix
from attnviz.core.scores import BANDWIDTH
from attnviz.i18n import LANGUAGES
from attnviz.i18n import t as t_
from attnviz.lessons.presets import PRESET_PAGES, presets_for
from tests.messages import says
from tests.test_app import CROSS, KERNEL, ROOT, SELF, first_weights, run_page

MODEL = "app_pages/pretrained_model.py"
PAGE_FILES = {"self": SELF, "cross": CROSS, "kernel": KERNEL}


def _texts(at) -> list[str]:
    return [e.value for kind in ("warning", "error", "caption", "markdown") for e in at.get(kind)]


# --- 1. a batched preset's valid lengths belong to each batch row -----------------------------------------------


@pytest.mark.parametrize("preset", ["d2l_additive", "d2l_dot_product"])
def test_the_batch_row_brings_its_own_valid_length(preset):
    at = run_page(CROSS, p=preset)
    np.testing.assert_allclose(np.nan_to_num(first_weights(at))[0, :2], [0.5, 0.5], atol=1e-6)  # valid_lens[0] = 2
    at.number_input(key="w:cross:batch").increment().run()
    weights = first_weights(at)[0]
    np.testing.assert_allclose(weights[:6], [1 / 6] * 6, atol=1e-6)  # valid_lens[1] = 6: outputs 10..13
    assert np.isnan(weights[6:]).all()
    link = at.query_params.to_dict() if hasattr(at.query_params, "to_dict") else dict(at.query_params)
    state = decode_attention({k: v[-1] if isinstance(v, list) else v for k, v in link.items()}, "cross").state
    assert (state.batch, state.lens_mode, state.lens) == (1, "all", (6,))  # the link made here reproduces row 1
    at.number_input(key="w:cross:batch").decrement().run()
    np.testing.assert_allclose(np.nan_to_num(first_weights(at))[0, :2], [0.5, 0.5], atol=1e-6)


def test_apply_preset_takes_each_rows_valid_length():
    default = default_attention_state("cross")
    assert apply_preset(default, "d2l_additive", batch=1).lens == (6,)
    assert apply_preset(apply_preset(default, "d2l_additive"), "d2l_additive", 1, keep_controls=True).lens == (6,)


# --- 2. every state the page accepts comes back from its link ---------------------------------------------------------


def test_the_seq2seq_preset_and_its_edits_round_trip_through_a_short_link():
    state = apply_preset(default_attention_state("cross"), "decoder_state")
    edited = replace(state, preset="", keys=((state.keys[0][0] + 0.5, *state.keys[0][1:]), *state.keys[1:]))
    for candidate in (state, replace(state, preset=""), edited):
        params = encode_attention(candidate)
        assert link_problem(params) is None
        assert len(urlencode(params)) < 60_000, len(urlencode(params))  # packed: was 71,502 characters
        assert decode_attention(params, "cross") == type(decode_attention(params, "cross"))(candidate, [])


def test_a_matrix_packs_exactly_and_reads_back_the_same_numbers():
    rng = np.random.default_rng(0)
    for matrix in (rng.normal(size=(12, 256)), rng.normal(size=(3, 3)).astype(np.float32).astype(float)):
        value = tuple(tuple(float(x) for x in row) for row in matrix)
        text = format_matrix(value)
        assert text.startswith("~"), text[:20]
        assert parse_matrix(text, "keys") == value
    assert format_matrix(((1.0, 0.0), (0.5, -2.0))) == "1,0;0.5,-2"  # small ones stay readable


def test_a_state_too_large_for_a_link_is_said_plainly_and_kept_in_a_file():
    rng = np.random.default_rng(1)
    huge = [tuple(tuple(float(x) for x in row) for row in rng.normal(size=(64, 256))) for _ in range(3)]
    state = replace(default_attention_state("cross"), mode="numbers", queries=huge[0], keys=huge[1], values=huge[2])
    params = encode_attention(state)  # the largest state the editors accept: 3 x 64 x 256 float64 numbers
    problem = link_problem(params)
    assert (problem is None) == (len(urlencode(params)) <= LINK_MAX_CHARS)
    assert link_problem({**params, "s": "x" * LINK_MAX_CHARS}).code == "link_too_long"
    back = read_state_file(state_file("cross", params), "cross")
    assert decode_attention(back, "cross").state == state


def test_too_many_link_fields_are_reported():
    assert link_problem({f"x{i}": "1" for i in range(1001)}).code == "link_too_many"


@pytest.mark.parametrize(
    "params",
    [
        {"s": "x" * (LINK_MAX_CHARS - 2)},  # "s=" and 512 Ki - 2 characters: the longest link read
        {"s": "x" * (LINK_MAX_CHARS - 1)},
        {"s": "é" * (LINK_MAX_CHARS // 6)},  # percent-encoded: 6 characters each
        {"s": "é" * (LINK_MAX_CHARS // 6 + 1)},
        {f"x{i}": "1" for i in range(LINK_MAX_FIELDS)},
        {f"x{i}": "1" for i in range(LINK_MAX_FIELDS + 1)},
        {"s": "a&b=c" * 1000},  # an "&" in a value is encoded: one field
    ],
    ids=["longest", "one-over", "encoded-fits", "encoded-over", "most-fields", "one-field-over", "ampersands"],
)
def test_the_share_box_refuses_exactly_the_links_streamlit_would_ignore(params):
    """A link the app writes is one Streamlit reads back: link_problem (the share box, the address bar) agrees with
    Streamlit's own check of a query string, as the browser sends it, at both limits."""
    from streamlit.runtime.state.query_params import (
        CLIENT_STATE_QUERY_STRING_MAX_FIELDS,
        CLIENT_STATE_QUERY_STRING_MAX_LENGTH,
        sanitize_query_string,
    )

    assert (LINK_MAX_CHARS, LINK_MAX_FIELDS) == (
        CLIENT_STATE_QUERY_STRING_MAX_LENGTH,
        CLIENT_STATE_QUERY_STRING_MAX_FIELDS,
    )
    query = urlencode(params)
    assert (link_problem(params) is None) == (sanitize_query_string(query) == query)


def test_the_proxys_page_for_an_over_long_link_is_the_catalogues_and_is_up_to_date():
    """deploy/nginx/compose/link-too-long.html is what `make i18n` writes from the catalogues: every language's text,
    the limits, and a way back to the page without the link."""
    committed = (Path(__file__).resolve().parents[1] / "deploy" / "nginx" / "compose" / "link-too-long.html").read_text(
        encoding="utf-8"
    )
    assert committed == link_too_long_page(), "run `make i18n` (it writes the page)"
    for lang in LANGUAGES:
        assert f'<section lang="{lang}">' in committed
        assert html.escape(t_("proxy.link_too_long.advice", lang)) in committed
        assert html.escape(t_("proxy.link_too_long.body", lang, characters="524,288", fields="1,000")) in committed
    assert committed.count('<a href="?">') == len(LANGUAGES)
    assert "<script" not in committed and "http" not in committed  # nothing runs, nothing is fetched


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"\xff\xfe", "file_not_json"),
        (b"[1, 2]", "file_not_state"),
        (json.dumps({"app": "attnviz", "page": "kernel", "params": {}}).encode(), "file_other_page"),
        (json.dumps({"app": "attnviz", "page": "cross", "params": {"T": 3}}).encode(), "file_not_state"),
        (b" " * (5 * 1024 * 1024), "file_large"),
    ],
)
def test_a_bad_state_file_is_refused_with_what_is_wrong(data, code):
    with pytest.raises(AttnvizError) as info:
        read_state_file(data, "cross")
    assert info.value.code == code


@pytest.mark.parametrize("page", ["faithful", "modern"])
def test_a_state_file_of_another_page_names_that_page(page):
    with pytest.raises(AttnvizError) as info:
        read_state_file(json.dumps({"app": "attnviz", "page": page, "params": {}}).encode(), "cross")
    assert info.value.params["page"] == Name(f"page_{page}")
    assert t_(f"field.page_{page}", "zh-Hans") in render(info.value, "zh-Hans")


# --- 3. the Back button does not carry one page's settings to another ------------------------------------------------


def test_another_pages_parameters_in_the_address_do_not_change_this_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.switch_page(SELF)
    at.query_params["T"] = "0.3"
    at.run()
    at.switch_page(CROSS)  # the sidebar's link: no parameters
    at.query_params.clear()
    at.run()
    at.switch_page(SELF)
    at.query_params.clear()
    at.run()
    assert at.query_params["T"] in ("0.3", ["0.3"])  # back on Self, its own temperature is kept
    at.switch_page(CROSS)
    at.query_params["T"] = "0.3"  # what the browser's Back button sends: Self's query string on Cross's path
    at.run()
    assert not at.exception
    assert at.number_input(key="w:cross:temperature").value == 1.0
    assert "T" not in at.query_params


def test_leaving_a_page_drops_its_kept_widget_keys_and_coming_back_restores_every_field():
    """Streamlit copies the whole session state for every select box, radio and number input of a run: the other
    pages' leftover widget keys are not kept, and a page fills its own again from its stored state."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.switch_page(SELF)
    at.query_params.update({"T": "0.3", "sc": "general"})
    at.run()
    fields = [f.name for f in attention_fields("self")]
    stored = at.session_state["self:state"]
    assert "w:self:heads" in at.session_state  # in the closed "More" section: kept as a plain key
    at.switch_page(CROSS)
    at.query_params.clear()
    at.run()
    assert not at.exception
    assert [key for key in at.session_state if key.startswith("w:self:")] == []
    assert at.session_state["self:state"] == stored  # the page's own state stays
    at.switch_page(SELF)
    at.query_params.clear()
    at.run()
    assert not at.exception
    assert at.session_state["self:state"] == stored
    assert at.number_input(key="w:self:temperature").value == 0.3
    assert at.selectbox(key="w:self:score").value == "general"
    for name in fields:
        assert at.session_state[f"w:self:{name}"] == getattr(stored, name), name
    assert [key for key in at.session_state if key.startswith("w:cross:")] == []


# --- 4. the row picker lists the new tokens ---------------------------------------------------------------


def test_the_query_row_picker_follows_a_new_sentence():
    at = run_page(SELF)
    picker = next(s for s in at.selectbox if s.label == t_("widget.query_row"))
    first_key = picker.key
    at.text_input(key="w:self:sentence").input("a b c").run()
    picker = next(s for s in at.selectbox if s.label == t_("widget.query_row"))
    assert picker.options == ["1: a", "2: b", "3: c"]
    assert picker.key != first_key  # a new widget: the browser cannot keep showing the old option texts
    assert picker.value == 0


# --- 5. only head counts that divide d are offered ----------------------------------------------------------------


def test_only_head_counts_that_divide_the_size_are_offered():
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=90)
    at.query_params["dim"] = "10"
    at.session_state["self:open:more"] = True
    at.run()
    slider = next(s for s in at.select_slider if s.key == "w:self:heads")
    assert list(slider.options) == ["1", "2", "5"]
    at = run_page(SELF, dim="10", h="3")  # a link asking for 3: the nearest count that fits, and a note
    assert not at.error
    assert any(says(c.value, "attention.heads_adjusted", wanted=3) for c in at.caption)
    assert next(s for s in at.select_slider if s.key == "w:self:heads").value == 2


# --- 6. back to the defaults -----------------------------------------------------------------------------------------


def test_reset_and_none_bring_back_the_page_defaults():
    at = run_page(CROSS, p="decoder_state", T="2")
    at.selectbox(key="w:cross:preset").select("").run()
    assert not at.exception
    assert at.radio(key="w:cross:mode").value == "sentence"
    assert dict(at.query_params) == {} or all(k in ("lang", "pal", "pm") for k in at.query_params)
    at = run_page(SELF, T="0.5", c="1", sc="cosine")
    next(b for b in at.button if b.label == t_("frame.reset")).click().run()
    assert next(n for n in at.number_input if n.key == "w:self:temperature").value == 1.0
    assert at.toggle(key="w:self:causal").value is False
    assert not [k for k in at.query_params if k not in ("lang", "pal", "pm")]


# --- 7. an incomplete new row is left out quietly --------------------------------------------------------------------


def test_an_incomplete_row_is_left_out_until_it_is_complete():
    from attnviz.app.pipeline import matrix_from_cells

    read = matrix_from_cells([[51.0, 40.0], [56.0, 43.0], [58.0, 48.0], [60.0, None]], "points")
    assert read.matrix == ((51.0, 40.0), (56.0, 43.0), (58.0, 48.0)) and read.incomplete == [4]
    read = matrix_from_cells([[1.0, float("nan")], [2.0, 3.0]], "keys")
    assert read.matrix == ((2.0, 3.0),) and read.incomplete == [1]
    with pytest.raises(AttnvizError) as info:
        matrix_from_cells([[None, None]], "keys")
    assert info.value.code == "no_complete_rows"
    with pytest.raises(AttnvizError) as info:
        matrix_from_cells([[1.0, "x"]], "keys")
    assert info.value.code == "cell_text"


# --- 8, 9, 11. hostile and mismatched links ---------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["self", "cross", "kernel"])
@pytest.mark.parametrize("preset", list(PRESET_PAGES))
def test_every_preset_on_every_page(page, preset):
    at = run_page(PAGE_FILES[page], p=preset)
    assert not at.exception
    warnings = [w.value for w in at.warning]
    if preset in (presets_for(page) if page != "kernel" else presets_for("kernel")):
        assert not warnings, warnings
        decoded = decode_attention({"p": preset}, page) if page != "kernel" else decode_kernel({"p": preset})
        encode = encode_kernel if page == "kernel" else encode_attention
        assert encode(decoded.state).get("p") == preset or (page == "kernel" and preset == "waist_weight")
    else:
        assert any(says(w, "error.preset_other_page", value=md_escape(preset)) for w in warnings), warnings
        assert len(at.get("plotly_chart")) >= 1  # the page's default is shown


@pytest.mark.parametrize("params", [{"k": "1,2"}, {"v": "1"}, {"p": "", "k": "1,2", "v": "1,2,3"}])
def test_kernel_keys_and_values_of_different_lengths_fall_back_with_a_warning(params):
    at = run_page(KERNEL, **params)
    assert any(says(w.value, "error.points_mismatch") for w in at.warning)
    assert len(at.get("plotly_chart")) >= 2


def test_query_points_are_capped():
    queries = next(f for f in KERNEL_FIELDS if f.name == "queries")
    with pytest.raises(AttnvizError):
        queries.parse(",".join(["1"] * 513))
    at = run_page(KERNEL, q="1," * 20_000 + "1")
    assert any(
        says(w.value, "error.link", param="q") or says(w.value, "error.link_long", param="q") for w in at.warning
    )


# --- 10. echoed user text is literal in every language ----------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh-Hans", "zh-Hant"])
def test_link_text_is_echoed_literally_never_as_markdown(lang):
    at = run_page(SELF, sc="[Log in again](http://attacker/p)", pal="![x](http://attacker/x.png)", lang=lang)
    shown = [w.value for w in at.warning]
    assert len(shown) == 2, shown
    # Text with a URL goes in a code span (Markdown links a bare URL even when it is escaped), the rest is escaped
    for span in ("`[Log in again](http://attacker/p)`", "`![x](http://attacker/x.png)`"):
        assert any(span in text for text in shown), (span, shown)
    assert not at.get("imgs")
    at = run_page(SELF, sc="[Log in again](/p)", lang=lang)
    (text,) = [w.value for w in at.warning]
    assert "](/p" not in text and "\\[" in text and "\\]\\(" in text  # Markdown shows them as text


def test_the_escaper_leaves_no_markup():
    for text in ("[a](b)", "![x](y)", "<img src=x>", "**b**", "`c`", "$x$", "&lt;"):
        escaped = md_escape(text)
        assert all(escaped[i - 1] == "\\" for i, ch in enumerate(escaped) if ch in "[]()!<>*`$&" and i > 0)
    for text in ("http://a.b/c", "see www.a.b", "x@a.b", "`www.a`", "p|q https://a"):  # linked even when escaped
        span = md_escape(text)
        assert span.startswith("`") and span.endswith("`") and span.strip("` ") == text.strip("`")
    assert md_escape("p|q https://a", in_table=True) == "`p\\|q https://a`"  # a table cell keeps its pipe


# --- the field table ------------------------------------------------------------------------------------------


def test_fields_have_unique_keys_and_names_and_cover_the_state():
    for state_type, fields in (
        (AttentionState, attention_fields("self")),
        (AttentionState, attention_fields("cross")),
        (KernelState, KERNEL_FIELDS),
    ):
        assert len({f.key for f in fields}) == len(fields)
        assert {f.name for f in fields} == set(state_type.__dataclass_fields__) - {"page"}


def test_every_scores_parameter_is_a_field_of_both_attention_pages():
    from attnviz.core.scores import SCORES

    for page in ("self", "cross"):
        by_key = {f.key: f for f in attention_fields(page)}
        for spec in SCORES.values():
            for param in spec.params:
                assert by_key[param.key].low == param.low and by_key[param.key].high == param.high
        state = default_attention_state(page)
        for name, spec in SCORES.items():
            assert set(state.score_params(name)) == {p.name for p in spec.params}


def test_a_range_is_written_once_and_read_by_codec_and_core():
    assert TEMPERATURE.parse("0.001") == 0.001
    with pytest.raises(AttnvizError) as info:
        TEMPERATURE.parse("5000")
    assert info.value.code == "between"
    assert says(str(info.value), "error.between", name=t_("field.temperature"), low=0.001, high=1000)
    import attnviz

    with pytest.raises(AttnvizError) as info:
        attnviz.attend([[1.0]], [[1.0]], [[1.0]], score="gaussian", bandwidth=BANDWIDTH.high * 2)
    assert says(str(info.value), "error.between", name=t_("field.bandwidth"), low=0.001, high=10000)
    assert next(f for f in KERNEL_FIELDS if f.name == "bandwidth") is BANDWIDTH
    assert next(f for f in attention_fields("self") if f.name == "bandwidth") is BANDWIDTH


def test_errors_are_translated_by_code_not_by_their_english():
    error = AttnvizError("between", name=Name("temperature"), low=0.001, high=1000, value="x")
    assert str(error) == "temperature must be between 0.001 and 1000; got 'x'"
    assert render(error, "zh-Hans") == "温度必须在 0.001 和 1000 之间；收到的是 'x'"
    assert render(error, "zh-Hant") == "溫度必須在 0.001 和 1000 之間；收到的是 'x'"


# --- round trip of any state the widgets can produce --------------------------------------------------------------

_finite = st.floats(min_value=-MAX_CELL, max_value=MAX_CELL, allow_nan=False, allow_infinity=False)


def _matrices(rows: int, cols: int):
    return st.lists(st.tuples(*[_finite] * cols), min_size=rows, max_size=rows).map(tuple)


def _field_value(f: Field):
    if f.kind == "int":
        return st.integers(int(f.low), int(f.high))
    if f.kind == "float":
        return st.floats(f.low, f.high, allow_nan=False, exclude_min=f.exclusive_low)
    if f.kind == "bool":
        return st.booleans()
    if f.kind == "choice":
        return st.sampled_from(f.choices)
    if f.kind == "text":
        return st.text(max_size=60)
    if f.kind == "ints":
        return st.lists(st.integers(int(f.low), int(f.high)), max_size=6).map(tuple)
    raise AssertionError(f.kind)


@st.composite
def attention_states(draw, page: str):
    fields = attention_fields(page)
    state = default_attention_state(page)
    preset = draw(st.sampled_from(("", *presets_for(page))))
    if preset:
        state = apply_preset(state, preset, batch=draw(st.integers(0, 9)))
    changes = {}
    for f in fields:
        if f.kind in ("matrix",) or f.name in ("preset", "batch") or not draw(st.booleans()):
            continue
        changes[f.name] = draw(_field_value(f))
    if draw(st.booleans()):
        rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 5))
        changes.update(mode="numbers", queries=draw(_matrices(rows, cols)))
        if page == "cross":
            keys = draw(st.integers(1, 6))
            changes.update(keys=draw(_matrices(keys, cols)), values=draw(_matrices(keys, draw(st.integers(1, 4)))))
    state = replace(state, **changes)
    if page == "self":  # the self page has no keys, values, source or residual of its own
        base = default_attention_state("self")
        state = replace(state, keys=state.queries, values=state.queries, residual=False, source=base.source)
    return state


@pytest.mark.parametrize("page", ["self", "cross"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_state_the_widgets_can_produce_round_trips_through_its_link(page, data):
    state = data.draw(attention_states(page))
    params = encode_attention(state)
    assert link_problem(params) is None
    decoded = decode_attention(params, page)
    assert decoded.warnings == []
    assert decoded.state == state


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(_finite, min_size=1, max_size=20),
    data=st.data(),
    kernel=st.sampled_from(next(f for f in KERNEL_FIELDS if f.name == "kernel").choices),
    bandwidth=_field_value(BANDWIDTH),
)
def test_any_kernel_state_round_trips_through_its_link(keys, data, kernel, bandwidth):
    values = data.draw(st.lists(_finite, min_size=len(keys), max_size=len(keys)))
    queries = data.draw(st.lists(_finite, min_size=1, max_size=20))
    preset = data.draw(st.sampled_from(("", "waist_weight", "d2l_toy_regression")))
    state = KernelState(
        preset=preset,
        keys=tuple(keys),
        values=tuple(values),
        queries=tuple(queries),
        kernel=kernel,
        bandwidth=bandwidth,
    )
    params = encode_kernel(state)
    assert link_problem(params) is None
    assert decode_kernel(params) == type(decode_kernel(params))(state, [])


# --- numbers typed as text (issue: the number column dropped the "e") ---------------------------------------------


@pytest.mark.parametrize(
    ("typed", "value"), [("1e-3", 0.001), ("1e7", None), ("1e309", None), ("-2.5E2", -250.0), (" 3 ", 3.0)]
)
def test_editor_text_is_read_as_the_number_typed_or_refused(typed, value):
    from attnviz.app.pipeline import matrix_from_cells

    if value is None:
        with pytest.raises(AttnvizError) as info:
            matrix_from_cells([[typed]], "keys", ["d1"])
        assert info.value.code == "cell_large"
    else:
        assert matrix_from_cells([[typed]], "keys", ["d1"]).matrix == ((value,),)


def test_preset_numbers_are_the_shortest_decimals_of_their_float32():
    from attnviz.core.fields import shortest32

    assert shortest32(0.16959999501705170) == 0.1696  # what the note printed, not float32's binary expansion
    assert shortest32(1 / 3) == 0.33333334 and shortest32(-13.0) == -13.0
    state = apply_preset(default_attention_state("self"), "unit_sentences")
    assert state.queries[0][:3] == (0.1696, 0.0125, 0.1379)
    import torch

    from attnviz.lessons.presets import PRESETS

    exact = torch.tensor(state.queries, dtype=torch.float32)
    assert torch.equal(exact, PRESETS["unit_sentences"].queries[0])  # the same float32 numbers the notes computed


def test_float32_numbers_pack_in_four_bytes_and_read_back_exactly():
    from attnviz.core.fields import shortest32

    rng = np.random.default_rng(3)
    matrix = tuple(tuple(shortest32(float(x)) for x in row) for row in rng.normal(size=(12, 256)).astype(np.float32))
    text = format_matrix(matrix)
    assert text.startswith("~f4.12x256.") and len(text) < 16_000
    assert parse_matrix(text, "keys") == matrix
    typed = ((0.1, 1 / 3),)  # 1/3 is no float32's shortest decimal: eight bytes keep it exact
    assert parse_matrix(format_matrix(typed * 20), "keys") == typed * 20


def test_a_links_bad_setting_stays_with_its_link_and_goes_with_the_next():
    """A bad setting's warning is kept with the page's link warnings (the first run writes the address without it,
    and a page's first paint is followed by another run); a new link without it shows no stale warning."""
    at = run_page(SELF, pal="nope", T="abc")
    assert sorted(w.value.split("'")[1] for w in at.warning) == ["T", "pal"]
    at.run()  # the next run, from the address the first one wrote
    assert sorted(w.value.split("'")[1] for w in at.warning) == ["T", "pal"]
    at.query_params.clear()
    at.query_params["h"] = "zz"
    at.run()
    assert [w.value.split("'")[1] for w in at.warning] == ["h"]
