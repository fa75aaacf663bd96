"""The modern-attention page in AppTest: every preset, every control, bad input, and links."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.modern_state import PRESETS, ModernState, apply_modern_preset, decode_modern, encode_modern
from attnviz.app.ui.modern_steppers import check_text
from attnviz.lessons.working import number_prose
from tests.messages import message, pattern, says
from tests.test_app import _array, figures, run_page

PAGE = "app_pages/modern_attention.py"
SIXTEEN = "the cat sat on the mat and the dog lay on the rug by the door"


def _page(**params: str):
    return run_page(PAGE, **params)


def _rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at: AppTest) -> str:
    kinds = ("markdown", "caption", "subheader", "info", "success", "warning", "error")
    return "\n".join(str(element.value) for kind in kinds for element in at.get(kind))


def _table(at: AppTest, column: str):
    """The first table with that column."""
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with a column {column!r}")


def _widget(at: AppTest, kind: str, name: str):
    return getattr(at, kind)(key=f"w:modern:{name}")


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_draws_its_topic_without_an_error(preset):
    at = _page(pr=preset)
    state = apply_modern_preset(preset)
    assert not at.error and not at.warning
    heading = at.subheader[0].value
    wanted = {
        "positions": "modern.positions_heading",
        "masks": "modern.masks_heading",
        "heads": "modern.heads_heading" if state.kv_heads > 1 else "modern.heads_heading_one_kv",
        "kv_cache": "modern.kv_heading",
        "flash": "modern.flash_heading",
    }[state.topic]
    assert says(heading, wanted), heading
    assert _widget(at, "radio", "topic").value == state.topic
    assert at.get("plotly_chart"), "every topic draws a chart"
    if state.topic in ("kv_cache", "flash"):
        assert _checked_equal(at)


def _checked_equal(at: AppTest) -> bool:
    """The page says its result equals the ordinary computation's."""
    return bool(at.success) and says(at.success[0].value, "modern.check_equal")


def _rope_lines(at: AppTest) -> list[tuple[str, str, int, str, list[float], float, float]]:
    rope_line = pattern("modern.rope_line")
    found = [rope_line.match(line.removeprefix("- ")) for line in _text(at).splitlines() if line.startswith("- ")]
    return [
        (
            m["query"],
            m["key_token"],
            int(m["distance"]),
            m["pairs"],
            _floats(m["scores"]),
            *_floats(m["spread"], m["plain"]),
        )
        for m in found
        if m
    ]


def _floats(*texts: str) -> list[float]:
    return [float(v) for text in texts for v in text.split(", ")]


def test_rope_gives_a_repeated_pair_the_same_score_at_the_same_distance_only():
    lines = _rope_lines(_page(pr="rope_repeat"))
    assert len(lines) == 6  # the first six repeated (query, key, distance) triples
    assert all(max(scores) - min(scores) < 1e-3 and spread < 1e-5 for *_, scores, spread, _ in lines)
    assert lines[0][:4] == ("a", "a", 0, "1→1, 5→5, 9→9")
    # a and a at distance 0 and at distance 2 score differently with RoPE, the same without positions
    lines = _rope_lines(_page(pr="rope_repeat", s="a b a b a b"))
    pairs = [line for line in lines if line[:2] == ("a", "a")]
    assert [line[2] for line in pairs] == [0, 2]
    assert abs(pairs[0][4][0] - pairs[1][4][0]) > 0.1
    assert pairs[0][6] == pairs[1][6]
    lines = _rope_lines(_page(pr="rope_repeat", s="a x x x a"))
    assert [line[2] for line in lines if line[:2] == ("a", "a")] == [0]  # a→a at distance 4 occurs once: not listed


def test_one_repeated_pair_is_said_in_the_singular():
    at = _page(pr="rope_repeat", s="a b a")  # only a→a at distance 0 occurs twice
    assert says(_text(at), "modern.rope_check_one") and not says(_text(at), "modern.rope_check")


def test_without_repeats_the_page_says_what_to_try():
    at = _page(s="one two three four")
    assert at.info[0].value == message("modern.rope_no_repeats")


def test_alibi_lists_the_papers_slopes_and_adds_the_bias_in_the_worked_row():
    at = _page(pr="alibi_heads", r="5")  # query 6 ("mat") of head 1, slope 1/2
    table = _table(at, "slope")
    # 2^-1 ... 2^-8, written out exactly: the table rounded 0.03125 up and its bias -0.03125 down (0.0313, -0.0312)
    slopes = ["0.5", "0.25", "0.125", "0.0625", "0.03125", "0.015625", "0.0078125", "0.00390625"]
    assert list(table["slope"]) == slopes
    assert list(table[message("modern.bias_at", distance=1)]) == ["-" + slope for slope in slopes]
    at_4 = ["-2", "-1", "-0.5", "-0.25", "-0.125", "-0.0625", "-0.03125", "-0.015625"]
    assert list(table[message("modern.bias_at", distance=4)]) == at_4
    work = _text(at)
    assert "**2. Scale, add the position bias, apply the temperature**" in work
    header = next(line for line in work.splitlines() if line.startswith("| key |"))
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    bias = cells.index("bias b")
    rows = [line for line in work.splitlines() if line.startswith("| the·1 |") or line.startswith("| mat |")]
    assert [row.strip("|").split("|")[bias].strip() for row in rows] == ["-2.5", "0"]  # -(1/2) x 5, and itself


def test_sinusoidal_positions_show_the_encoding_beside_plain_causal_attention():
    at = _page(pr="sinusoidal")
    panels = [message("modern.plain_causal"), message("modern.positions_sinusoidal")]
    titles = [a["text"] for a in figures(at)[0]["layout"]["annotations"] if a["text"] in panels]
    assert titles == panels
    encoding = figures(at)[1]
    assert encoding["layout"]["title"]["text"] == message("modern.sinusoidal_chart")
    z = _array(encoding["data"][0]["z"])
    assert z.shape == (16, 16)
    assert np.allclose(z[0], [0, 1] * 8)  # position 0: sin 0 = 0, cos 0 = 1
    assert np.isclose(z[3, 0], math.sin(3)) and np.isclose(z[3, 1], math.cos(3))  # d2l's P[3, 0] and P[3, 1]


def test_the_sliding_window_of_3_on_16_tokens_scores_45_pairs():
    at = _page(pr="sliding_3")
    counted = message("modern.pair_count", scored=45, total=256, share="17.6%", causal=136)
    assert counted in _text(at)
    _widget(at, "number_input", "window").set_value(4)
    assert says(_text(_rerun(at)), "modern.pair_count", scored=58, total=256)  # 1 + 2 + 3 + 4 x 13


@pytest.mark.parametrize(
    ("params", "scored"),
    [
        (
            {"pr": "longformer"},
            16 + 2 * 15 + 2 * 15 - 2,
        ),  # the band |i - j| < 2, plus row and column 1 (minus overlaps)
        ({"pr": "prefix_lm"}, 136 + 15),  # causal, plus the 6 x 6 prefix's upper half
        # 8 blocks of 2: its own 3 causal pairs, 4 with the block before, 4 with the first (blocks 1 and 2: fewer)
        ({"pr": "block_sparse"}, 3 + (3 + 4) + 6 * (3 + 4 + 4)),
        ({"pr": "sliding_3", "vl": "10"}, 30),  # keys 11-16 are padding: 1 + 2 + 3 x 8, then 2 and 1 valid keys
        ({"tp": "masks", "m": "full", "s": SIXTEEN}, 256),
    ],
)
def test_each_mask_counts_its_scored_pairs(params, scored):
    at = _page(**params)
    count = pattern("modern.pair_count", total=256).search(_text(at))
    assert count
    assert int(count["scored"]) == scored


def test_global_tokens_are_typed_as_numbers_and_a_bad_one_is_named():
    at = _page(pr="longformer")
    box = at.text_input(key="w:modern:global_text")
    assert box.value == "1"
    box.set_value("1, 9")
    before = re.search(r"scores \*\*(\d+)", _text(_rerun(at)))[1]
    assert int(before) > 74
    assert at.query_params["gl"] == "1,9"
    at.text_input(key="w:modern:global_text").set_value("1, <b>x</b>")
    _rerun(at)
    assert len(at.error) == 1 and "\\<b\\>x\\</b\\>" in at.error[0].value
    assert at.get("plotly_chart")  # the page keeps working with the last good tokens


def test_heads_offer_only_key_value_counts_that_divide_them():
    at = _page()
    _widget(at, "number_input", "heads").set_value(8)
    _rerun(at)
    kv = _widget(at, "selectbox", "kv_heads")
    assert kv.options == ["1", "2", "4", "8"]
    _widget(at, "radio", "topic").set_value("heads")
    _widget(at, "selectbox", "kv_heads").set_value(4)
    text = _text(_rerun(at))
    assert "GQA: 8 query heads share 4 key/value heads" in text
    assert "key/value head 1 ← query heads 1, 2" in text and "key/value head 4 ← query heads 7, 8" in text
    assert at.query_params["g"] == "4" and at.query_params["h"] == "8"


def test_a_link_with_key_value_heads_that_do_not_divide_falls_back_with_a_warning():
    at = _page(h="8", g="3")
    assert "3 key/value heads do not divide 8 query heads" in at.warning[0].value
    assert _widget(at, "selectbox", "kv_heads").value == 2


MEMORY_LINE = re.compile(
    r"- \*\*(.+?)\*\* \((\w+), L × n_kv × d_head = ([\d ×]+)\): ([\d,]+) bytes per token, ([\d.e+-]+) GiB"
)


def _memory(at: AppTest) -> dict[str, tuple[str, str, int, float]]:
    return {m: (k, sizes, int(b.replace(",", "")), float(g)) for m, k, sizes, b, g in MEMORY_LINE.findall(_text(at))}


def test_the_memory_calculator_follows_the_context_and_the_bytes():
    at = _page(pr="gqa_8_2")
    rows = _memory(at)
    assert len(rows) == 7  # six published models and this page's layer
    assert rows["Llama 3 8B"] == ("GQA", "32 × 8 × 128", 2 * 32 * 8 * 128 * 2, 1.0)  # 128 KiB per token in fp16
    assert "GiB at 8,192 tokens · [config.json](https://huggingface.co/meta-llama/Meta-Llama-3-8B" in _text(at)
    assert rows[message("modern.this_layer")][2] == 2 * 1 * 2 * 4 * 2
    _widget(at, "number_input", "context").set_value(32768)
    _widget(at, "selectbox", "value_bytes").set_value("4")
    rows = _memory(_rerun(at))
    assert rows["Llama 3 8B"][3] == pytest.approx(8.0)
    assert rows["Falcon 7B"][:3] == ("MQA", "32 × 1 × 64", 2 * 32 * 1 * 64 * 4)


def test_rope_needs_an_even_head_size_and_says_so():
    at = _page(dh="3")
    assert says(at.error[0].value, "error.rope_odd", size=3)
    at = _page(dh="3", p="none")
    assert not at.error and at.get("plotly_chart")


def test_identity_projections_need_matching_sizes():
    at = _page(pj="identity")  # a sentence's 16 numbers, 2 heads of 4
    assert says(at.error[0].value, "error.identity_size", heads=2, head_dim=4)
    at = _page(pj="identity", **{"in": "numbers"}, dh="2")  # the default 6 x 4 numbers: 2 heads of 2
    assert not at.error and at.get("plotly_chart")


def test_the_seed_changes_the_projections_and_the_link_keeps_it():
    first = _rope_lines(_page(pr="rope_repeat"))
    at = _page(pr="rope_repeat")
    _widget(at, "number_input", "seed").set_value(7)
    _rerun(at)
    assert _rope_lines(at)[0][4] != first[0][4]
    assert at.query_params["sd"] == "7"


def test_the_worked_row_follows_the_head_and_the_row():
    at = _page(pr="alibi_heads")
    at.session_state["open:modern:work"] = True
    _widget(at, "selectbox", "head").set_value(8)
    _rerun(at)
    rows = [box for box in at.selectbox if box.label == message("modern.row")]
    rows[0].set_value(5)
    _rerun(at)
    assert at.query_params["hd"] == "8" and at.query_params["r"] == "5"
    assert "head 8" in _text(at)  # the bias chart's title names the head


def test_the_kv_cache_stepper_grows_the_cache_and_checks_each_step():
    at = _page(pr="kv_decode")
    slider = _widget(at, "slider", "decode_step")
    assert (slider.min, slider.max, slider.value) == (1, 7, 7)
    slider.set_value(3)
    _rerun(at)
    text = _text(at)
    assert says(text, "modern.kv_step", step=3, token="sat", rows=3, numbers=24)
    assert _checked_equal(at)
    assert len(_table(at, "K[1]")) == 3 and len(_table(at, "V[1]")) == 3
    assert at.query_params["t"] == "3"


def test_the_online_softmax_stepper_rescales_at_the_huge_logit():
    at = _page(pr="flash_rescale")
    table = _table(at, "e^(m − m')")
    assert list(table["block: keys"]) == ["1: 1…2", "2: 3…4", "3: 5…6"]
    assert table["e^(m − m')"].tolist()[0] == "—"
    rescale = float(table["e^(m − m')"].tolist()[2])
    assert rescale == pytest.approx(math.exp((1 - 20) / math.sqrt(2)), rel=1e-3)  # key 5's 20/sqrt 2 over key 1's
    assert float(table["m'"].tolist()[2]) == pytest.approx(20 / math.sqrt(2), rel=1e-3)
    assert says(_text(at), "modern.flash_check_once") and "(s)" not in _text(at)  # one rescale, said as once
    _widget(at, "slider", "block_step").set_value(2)
    _rerun(at)
    assert at.info[0].value == message("modern.flash_to_go_one") and not at.success
    assert len(_table(at, "e^(m − m')")) == 2
    _widget(at, "slider", "block_step").set_value(1)
    _rerun(at)
    assert at.info[0].value == message("modern.flash_to_go", left=2)
    _widget(at, "number_input", "block_size").set_value(3)
    _rerun(at)
    assert _widget(at, "slider", "block_step").max == 2


def test_the_traffic_lines_use_the_stated_model():
    at = _page(pr="flash_rescale")
    n, d = 6, 2  # 3 query blocks of B = 2
    naive, tiled = 4 * n * d + 4 * n * n, 2 * n * d + 2 * n * d * 3 + 2 * n
    assert (
        f"n = 6, d = 2, B = 2: naive {naive} numbers (the n² = 36 scores written and read twice), tiled {tiled}"
        in _text(at)
    )
    n, d, b = 4096, 128, 128
    naive, tiled = 4 * n * d + 4 * n * n, 2 * n * d + 2 * n * d * (n // b) + 2 * n
    assert f"naive {naive:,} numbers" in _text(at) and f"tiled {tiled:,}: {naive / tiled:.2f}× less" in _text(at)


def test_bad_sentences_and_numbers_are_named_and_the_page_keeps_working():
    at = _page(s="   ")
    assert at.error and not at.get("plotly_chart")
    at = _page(s=" ".join(["w"] * 33))
    assert "33" in at.error[0].value and "32" in at.error[0].value
    at = _page(tp="kv_cache", s="<b> **y**", t="1")  # tokens <, b, >, *, *, y, *, *
    text = _text(at)
    assert says(text, "modern.kv_step", token="\\<") and "“<”" not in text


def test_typed_numbers_drive_the_page():
    at = _page(**{"in": "numbers"}, x="1,0;0,1;1,1;2,0", dh="2", h="1", g="1", tp="flash", bs="2")
    assert _checked_equal(at)
    at = _page(**{"in": "numbers"}, x="1,a")
    assert says(at.warning[0].value, "error.cell_nan", row=1, col=2, value="a")
    assert at.get("plotly_chart")  # on the default numbers


def test_links_round_trip_and_a_reset_state_writes_no_parameters():
    state = ModernState(topic="masks", mask="local_global", global_tokens=(1, 5), window=2, heads=4, kv_heads=2)
    params = encode_modern(state)
    assert decode_modern(params).state == state
    at = _page(**params)
    assert _widget(at, "radio", "topic").value == "masks"
    assert at.text_input(key="w:modern:global_text").value == "1, 5"
    assert {key: at.query_params[key] for key in params} == params
    assert encode_modern(ModernState()) == {}


def test_presentation_mode_folds_the_inputs():
    at = _page(pm="1", pr="gqa_8_2")
    assert at.expander[0].label == message("frame.inputs")
    assert not at.error


def _pairs(at: AppTest) -> int:
    return int(pattern("modern.pair_count").search(_text(at))["scored"])


def test_the_preset_picker_and_the_mask_controls_drive_the_page():
    at = _page()
    _widget(at, "selectbox", "preset").set_value("sliding_3")
    _rerun(at)
    assert _widget(at, "radio", "topic").value == "masks" and _pairs(at) == 45
    assert at.query_params["pr"] == "sliding_3"
    _widget(at, "selectbox", "mask").set_value("prefix")
    _rerun(at)
    _widget(at, "number_input", "prefix").set_value(8)
    assert _pairs(_rerun(at)) == 136 + 8 * 7 // 2  # causal, plus the prefix's upper triangle
    _widget(at, "selectbox", "mask").set_value("block_sparse")
    _rerun(at)
    _widget(at, "number_input", "block").set_value(8)
    assert _pairs(_rerun(at)) == 136  # two blocks of 8: the first block is global, so every earlier key is seen
    _widget(at, "number_input", "block").set_value(2)
    wanted = sum(1 for i in range(16) for j in range(i + 1) if j // 2 in (i // 2, i // 2 - 1, 0))
    assert _pairs(_rerun(at)) == wanted
    _widget(at, "number_input", "valid").set_value(4)
    assert _pairs(_rerun(at)) == sum(
        1 for i in range(16) for j in range(min(i + 1, 4)) if j // 2 in (i // 2, i // 2 - 1, 0)
    )
    _widget(at, "selectbox", "preset").set_value("")
    _rerun(at)
    assert _widget(at, "radio", "topic").value == "positions" and "pr" not in at.query_params


def test_the_position_head_size_source_and_projection_controls_drive_the_page():
    at = _page(tp="kv_cache", s="a b c d", h="1", g="1")
    assert says(_text(at), "modern.kv_step", numbers=32)  # 2 x 4 tokens x 4
    _widget(at, "number_input", "head_dim").set_value(2)
    assert says(_text(_rerun(at)), "modern.kv_step", numbers=16)
    _widget(at, "selectbox", "positions").set_value("alibi")
    _rerun(at)
    assert _checked_equal(at) and at.query_params["p"] == "alibi"
    _widget(at, "radio", "source").set_value("numbers")
    _rerun(at)
    assert message("modern.x") in _text(at) and not says(_text(at), "modern.kv_step", numbers=16)  # the editor
    assert says(_text(at), "modern.kv_step", step=6)
    _widget(at, "selectbox", "projections").set_value("identity")
    _rerun(at)
    assert says(at.error[0].value, "error.identity_size", heads=1, head_dim=2)  # 1 x 2 for 4 numbers
    _widget(at, "number_input", "head_dim").set_value(4)
    _rerun(at)
    assert not at.error and _checked_equal(at)


def test_typing_a_sentence_redraws_the_page_and_keeps_it_in_the_link():
    at = _page(s="one two three four")
    assert at.info[0].value == message("modern.rope_no_repeats")
    _widget(at, "text_input", "sentence").set_value("a b a b a b")
    _rerun(at)
    assert not at.info and _rope_lines(at)[0][:4] == ("a", "a", 0, "1→1, 3→3, 5→5")
    assert at.query_params["s"] == "a b a b a b"


def test_the_kv_cache_check_ignores_the_pages_valid_length_and_mask():
    """Decoding reads every token so far: the reference it is checked against must too (it kept the valid length)."""
    at = _page(tp="kv_cache", vl="3", m="sliding", w="2")
    assert not at.error and _checked_equal(at)
    assert says(_text(at), "modern.kv_step", rows=12)  # all 12 tokens of the default sentence


SCIENTIFIC_E = re.compile(r"\de[-+]?\d")  # 1.5e-6: a browser may break it after its "-"


def test_numbers_in_the_flash_texts_never_break_inside():
    at = _page(pr="flash_rescale")
    text = _text(at)
    assert not SCIENTIFIC_E.search(text), SCIENTIFIC_E.search(text)
    rescale = math.exp((1 - 20) / math.sqrt(2))  # key 5's 20/sqrt 2 over key 1's 1/sqrt 2
    assert f"{rescale:.1e}" == "1.5e-06" and "≈ 1.5×10⁻⁶" in text  # the preset's note
    assert "5.136×10⁻⁷]" in text  # the output's second number, softmax over keys 1..6 of row 1 (below)
    scores = [1 / math.sqrt(2), 0, 0.5 / math.sqrt(2), -1 / math.sqrt(2), 20 / math.sqrt(2), 0]
    exps = [math.exp(s - max(scores)) for s in scores]
    second = sum(e * v for e, v in zip(exps, [0, 1, 0.5, 0, 0, -1], strict=True)) / sum(exps)
    assert f"{second:.4g}" == "5.136e-07"


@pytest.mark.parametrize("value", [1.5e-6, -2.5e-13, 6e-8, 1e20, 0.125, 20.0])
def test_a_number_in_running_text_has_no_place_to_break(value):
    text = number_prose(value, 2)
    assert not re.search(r"\s", text) and "-" not in text[1:] and "e" not in text
    mantissa, _, exponent = text.partition("×10")
    digits = exponent.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))
    assert float(mantissa) * 10 ** int(digits or 0) == pytest.approx(value, rel=0.05)


def test_the_flash_check_names_its_dtype_and_sets_the_difference_against_its_rounding():
    at = _page(pr="flash_rescale")
    found = pattern("modern.check_equal", dtype="float32").search(at.success[0].value)
    assert found, at.success[0].value
    difference = float(found["difference"].replace("×10⁻", "e-").translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")))
    step = 2.0**-23 * 20  # float32's machine epsilon times the largest value compared, the output's 20 (19.99998)
    assert 0 < difference < step
    ratio = float(f"{step / difference:.2g}")
    assert says(found["rounding"], "modern.check_below", dtype="float32", eps="1.2×10⁻⁷", magnitude="20")
    assert says(found["rounding"], "modern.check_below", ratio=f"{ratio:,.0f}", bound="2.4×10⁻⁶")
    assert "float32 rounding)" not in at.success[0].value


def test_the_check_text_follows_the_dtype_and_the_size_of_the_difference():
    both = torch.tensor([20.0, 0.5], dtype=torch.float64)
    text = check_text(1.7e-13, both, "en")  # a float64 computation: 1.7e-13 is many rounding steps at 20
    step = 2.0**-52 * 20  # 4.4e-15
    assert says(text, "modern.check_equal", dtype="float64", difference="1.7×10⁻¹³")
    assert says(text, "modern.check_above", steps=f"{1.7e-13 / step:.2g}", eps="2.2×10⁻¹⁶", bound="4.4×10⁻¹⁵")
    text = check_text(1.7e-13, both.float(), "zh-Hant")
    assert says(text, "modern.check_below", "zh-Hant", dtype="float32", ratio="14,000,000", magnitude="20")
    assert says(check_text(0.0, both.float(), "zh-Hans"), "modern.check_exact", "zh-Hans")


def test_the_block_sparse_preset_saves_a_large_share_of_the_causal_pairs_and_its_note_says_how_many():
    n, block = 16, 2
    own = block * (block + 1) // 2  # a block's causal pairs with itself
    blocks = n // block
    kept = own + (own + block**2) + (blocks - 2) * (own + 2 * block**2)  # block 1; block 2 (and block 1); the rest
    causal = n * (n + 1) // 2
    assert (kept, causal) == (76, 136) and causal - kept >= 0.4 * causal  # 60 of 136 saved, not 16
    at = _page(pr="block_sparse")
    assert says(_text(at), "modern.pair_count", scored=kept, total=n * n, causal=causal)
    for lang in ("en", "zh-Hans", "zh-Hant"):
        note = message("modern.preset_block_sparse_note", lang)
        saved = f"{(causal - kept) / causal:.0%}"
        assert all(str(number) in note for number in (n, block, kept, causal, causal - kept, saved)), (lang, note)


def test_the_traffic_ratio_reads_as_a_fraction_in_chinese():
    n, d, b = 6, 2, 2  # the preset's 6 keys of 2 numbers in blocks of 2: 3 query blocks
    naive, tiled = 4 * n * d + 4 * n * n, 2 * n * d + 2 * n * d * (n // b) + 2 * n
    for lang in ("zh-Hans", "zh-Hant"):
        lines = [line for line in _text(_page(pr="flash_rescale", lang=lang)).splitlines() if "B = " in line]
        assert len(lines) == 2
        assert lines[0].endswith(f"1/{naive / tiled:.2f}"), lines[0]  # 1/1.78: the tiled traffic is that share
        assert not any("倍" in line for line in lines)  # "少 1.78 倍" is not how Chinese says it


def test_the_heads_heading_is_singular_for_one_head_and_plural_for_more():
    expected = {
        ("8", "4"): "GQA: 8 query heads share 4 key/value heads",
        ("8", "1"): "MQA: 8 query heads share 1 key/value head",
        ("1", "1"): "MHA: 1 query head and 1 key/value head",
        ("2", "2"): "MHA: 2 query heads share 2 key/value heads",
    }
    for (heads, kv_heads), heading in expected.items():
        at = _page(tp="heads", h=heads, g=kv_heads)
        assert at.subheader[0].value == heading
        assert "(s)" not in at.subheader[0].value
    chinese = _page(tp="heads", h="8", g="1", lang="zh-Hans").subheader[0].value
    assert chinese == "MQA：8 个查询头共享 1 个键/值头"


def test_the_rope_angles_say_which_position_rope_calls_m():
    """Issue 40: "the query at position 5" used m = 4 with no word on the two ways of counting."""
    at = _page(pr="rope_repeat", r="4")
    assert message("modern.rope_angles", position=5, m=4) in _text(at)
    angles = _table(at, "m θ_i")
    assert float(angles["m θ_i"][0]) == pytest.approx(4.0)  # θ_0 = 1: the pair turned by m θ_0 = 4 radians


def test_show_your_work_opens_on_the_last_row_unless_the_link_names_one():
    """Issue 40: under a causal mask the first row has one key and weight 1, nothing to work out."""
    at = _page(pr="rope_repeat")
    [picker] = [s for s in at.selectbox if s.label == message("modern.row")]
    assert picker.value == len(picker.options) - 1 == 11  # "a b c d" three times: the last query sees all 12 keys
    at = _page(pr="rope_repeat", r="4")
    [picker] = [s for s in at.selectbox if s.label == message("modern.row")]
    assert picker.value == 4


def test_one_block_holds_every_key_so_nothing_is_rescaled():
    at = _page(pr="flash_rescale", bs="6")  # the six keys in one block: its maximum is the row's from the start
    assert says(_text(at), "modern.flash_check_none") and "(s)" not in _text(at)
