"""AppTest: every page runs, its charts hold the core's numbers, links restore state, bad input is reported."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz.app.state import decode_attention
from attnviz.i18n import t as t_
from tests.messages import says

ROOT = Path(__file__).resolve().parent.parent
SELF, CROSS, KERNEL = "app_pages/self_attention.py", "app_pages/cross_attention.py", "app_pages/kernel_attention.py"


def run_page(path: str, **params: str) -> AppTest:
    """Run a page as a fresh session opened from a link with `params`."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _array(data) -> np.ndarray:
    """Plotly JSON data (a list or a typed-array {dtype, bdata, shape}) as a float array."""
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        shape = data.get("shape")
        if shape:
            array = array.reshape([int(s) for s in str(shape).split(",")])
        return array.astype(np.float64)
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=np.float64)


def figures(at: AppTest) -> list[dict]:
    """The Plotly figures a run drew, as dicts."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def first_weights(at: AppTest) -> np.ndarray:
    """z of the weights trace of the page's first chart (masked cells are NaN there)."""
    trace = figures(at)[0]["data"][0]
    return _array(trace["z"])


def core_weights(state) -> np.ndarray:
    """Recompute the page's weights with the public API, independently of the page code."""
    x = attnviz.embed_tokens(attnviz.tokenize(state.sentence), dim=state.dim, seed=state.embed_seed)
    params = state.score_params()
    trace = attnviz.attend(x, x, x, score=state.score, temperature=state.temperature, causal=state.causal, **params)
    return trace.weights.numpy()


def test_home_page_runs_and_works_the_waist_example():
    at = run_page("app.py")
    assert any("45.5" in latex.value for latex in at.latex)
    weights = first_weights(at)
    np.testing.assert_allclose(weights, [[0.0, 0.5, 0.5]], atol=1e-6)


TYPED_8X8 = ";".join(",".join(str((i * 3 + j * 5) % 7 - 3) for j in range(8)) for i in range(8))  # the 8 tokens


@pytest.mark.parametrize("score", list(attnviz.SCORES))
def test_self_attention_chart_matches_core_for_every_score(score):
    params = {"sc": score, **({"S": TYPED_8X8} if score == "given" else {})}
    at = run_page(SELF, **params)
    state = decode_attention(params, "self").state
    np.testing.assert_allclose(first_weights(at), core_weights(state), atol=1e-6)


def test_typed_scores_of_the_wrong_shape_are_reported_and_the_page_keeps_working():
    at = run_page(SELF, sc="given", S="1,2;3,4")
    assert any("2 rows and 2 columns" in e.value and "8 queries and 8 keys" in e.value for e in at.error)
    at = run_page(SELF, sc="given", S=TYPED_8X8, lang="zh-Hans")
    assert not at.error and first_weights(at).shape == (8, 8)


@pytest.mark.parametrize(
    ("key", "lens"), [("masked_softmax", [[2, 2], [3, 3]]), ("masked_softmax_per_query", [[1, 3], [2, 4]])]
)
def test_note_004_masked_softmax_presets_show_the_notes_valid_lengths(key, lens):
    """Issue 14, point 13: note 004's mask_softmax on a typed (2, 2, 4) score tensor, with valid_lens [2, 3] and
    [[1, 3], [2, 4]]; each batch row's weights are the softmax of its first n scores, exactly 0 beyond."""
    scores = attnviz.PRESETS[key].settings["scores"].numpy()
    for batch in (0, 1):
        at = run_page(CROSS, p=key, b=str(batch))
        assert at.selectbox(key="w:cross:score").value == "given"
        weights = np.nan_to_num(first_weights(at))
        for query, n in enumerate(lens[batch]):
            row = np.exp(scores[batch, query, :n]) / np.exp(scores[batch, query, :n]).sum()
            np.testing.assert_allclose(weights[query], np.concatenate([row, np.zeros(4 - n)]), atol=1e-6)


def test_self_attention_causal_mask_is_drawn_as_masked():
    at = run_page(SELF, c="1")
    weights = first_weights(at)
    upper = np.triu(np.ones_like(weights, dtype=bool), k=1)
    assert np.isnan(weights[upper]).all()
    assert not np.isnan(weights[~upper]).any()
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0, atol=1e-5)


def test_valid_length_per_query_masks_and_zero_length_row():
    at = run_page(SELF, m="numbers", q="1,0;0,1;1,1", lm="per_query", vl="1,0,3")
    weights = first_weights(at)
    assert np.isnan(weights[0, 1:]).all() and weights[0, 0] == pytest.approx(1.0)
    assert np.isnan(weights[1]).all()  # a valid length of 0: nothing to attend to
    expected = attnviz.attend(
        torch.tensor([[1.0, 0], [0, 1], [1, 1]]),
        torch.tensor([[1.0, 0], [0, 1], [1, 1]]),
        torch.tensor([[1.0, 0], [0, 1], [1, 1]]),
        valid_lens=[1, 0, 3],
    ).weights.numpy()
    np.testing.assert_allclose(weights[2], expected[2], atol=1e-6)


@pytest.mark.parametrize("key", [k for k, p in attnviz.PRESETS.items() if p.page in ("self", "cross")])
def test_attention_presets_draw_the_core_result(key):
    preset = attnviz.PRESETS[key]
    path = SELF if preset.page == "self" else CROSS
    at = run_page(path, p=key, m="numbers", sc=preset.settings.get("score", "scaled_dot"))
    assert figures(at), "no chart drawn"
    if key in ("d2l_additive", "d2l_dot_product"):
        weights = first_weights(at)
        np.testing.assert_allclose(weights[0, :2], [0.5, 0.5], atol=1e-6)  # batch row 0: valid length 2
        assert np.isnan(weights[0, 2:]).all()


def test_unit_sentences_preset_shows_the_notes_weights():
    at = run_page(SELF, p="unit_sentences", m="numbers", sc="dot")
    printed = attnviz.lessons.presets.UNIT_WEIGHTS[0].numpy()  # the note's printed softmax, batch row 0
    np.testing.assert_allclose(first_weights(at), printed, atol=2e-3)


def test_kernel_page_predicts_45_5_for_waist_57():
    at = run_page(KERNEL)
    assert any("f(57) = 45.5" in md.value for md in at.markdown)
    weights = first_weights_by_title(at, t_("kernel.weights_title"))
    np.testing.assert_allclose(weights, [[0.0, 0.5, 0.5]], atol=1e-6)


def first_weights_by_title(at: AppTest, title: str) -> np.ndarray:
    for fig in figures(at):
        if title in str(fig.get("layout", {}).get("title", {}).get("text", "")):
            return _array(fig["data"][0]["z"])
    raise AssertionError(f"no chart titled {title!r}")


@pytest.mark.parametrize("kernel", list(attnviz.KERNELS))
def test_kernel_page_every_kernel_matches_core(kernel):
    at = run_page(KERNEL, kn=kernel, bw="3")
    expected = attnviz.nadaraya_watson([57.0], [51.0, 56.0, 58.0], [40.0, 43.0, 48.0], kernel=kernel, bandwidth=3)
    weights = first_weights_by_title(at, t_("kernel.weights_title"))
    np.testing.assert_allclose(weights, expected.weights.numpy(), atol=1e-6)


def test_kernel_page_boxcar_without_support_says_so():
    at = run_page(KERNEL, kn="boxcar", bw="0.1")
    assert any(says(w.value, "kernel.no_support") for w in at.warning)


def test_hostile_link_parameters_warn_and_fall_back():
    at = run_page(SELF, sc="evil", T="abc", h="999", q="1,2;3", s="x" * 5000, m="numbers")
    warnings = " ".join(w.value for w in at.warning)
    for key in ("'sc'", "'T'", "'h'", "'q'", "'s'"):
        assert key in warnings
    assert figures(at), "the page must still draw with the defaults"


def test_link_restores_state_into_the_controls():
    at = run_page(SELF, sc="cosine", T="0.5", c="1", s="hello world again")
    assert at.selectbox(key="w:self:score").value == "cosine"
    assert at.number_input(key="w:self:temperature").value == pytest.approx(0.5)
    assert at.toggle(key="w:self:causal").value is True
    assert at.text_input(key="w:self:sentence").value == "hello world again"


def test_changing_a_control_updates_the_url():
    at = run_page(SELF)
    at.selectbox(key="w:self:score").set_value("dot").run()
    assert at.query_params["sc"] in ("dot", ["dot"])


def test_bad_sentence_and_too_many_tokens_are_reported():
    at = run_page(SELF, s="   ")
    assert any(says(e.value, "error.sentence_empty") for e in at.error)
    at = run_page(SELF, s=" ".join(["w"] * 600))
    assert any(says(e.value, "error.sentence_long", count=600) for e in at.error)


def test_heads_that_do_not_divide_the_features_are_adjusted_with_a_note():
    at = run_page(SELF, h="3")  # 8-dimensional embeddings, 3 heads: 2 fit
    assert any(says(c.value, "attention.heads_adjusted", wanted=3, sizes="8, 8, 8", heads=2) for c in at.caption)
    assert not at.error


def test_multi_head_page_shows_each_head():
    at = run_page(SELF, h="2", pr="random")
    grid = figures(at)[0]
    assert sum(trace.get("type") == "heatmap" and trace.get("name") != "masked" for trace in grid["data"]) >= 2


def test_cross_attention_residual_output():
    at = run_page(CROSS, res="1", h="1")
    assert figures(at)


def open_expander(at: AppTest, key: str) -> AppTest:
    """Open a lazy expander (its content is only built while open), as a click in the browser does."""
    at.session_state[key] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_closed_expanders_build_nothing_and_open_ones_build_their_content():
    at = run_page(SELF)
    assert [len(figures(at)), len(at.code), len(at.get("download_button"))] == [1, 0, 0]
    open_expander(at, "self:open:raw")
    titles = [fig["layout"]["title"]["text"] for fig in figures(at)]
    assert titles[1:] == [t_("attention.raw_title"), t_("attention.output")], titles
    open_expander(at, "self:open:share")
    assert any(says(caption.value, "widget.link_length") for caption in at.caption)
    assert len(at.get("image")) == 1  # the QR code


@pytest.mark.parametrize(
    "link",
    [
        {"sc": "cosine", "c": "1"},
        {"T": "0.5", "h": "2", "pr": "random", "ps": "3"},  # every setting that changes the weights at T != 1
        {"sc": "additive", "nh": "4", "sd": "5", "T": "2", "lm": "all", "vl": "3"},
    ],
)
def test_python_snippet_reproduces_the_page(tmp_path, link):
    at = open_expander(run_page(SELF, **link), "self:open:share")
    snippet = next(code.value for code in at.code if "attnviz.self_attention" in code.value)
    namespace: dict = {}
    exec(compile(snippet, "snippet", "exec"), namespace)  # the app's own generated code, not user input
    weights = namespace["trace"].weights[0].numpy()
    np.testing.assert_allclose(np.nan_to_num(first_weights(at)), weights, atol=1e-6)


def test_learn_bandwidth_button_trains_and_draws_loss_and_fitted_curve():
    at = run_page(KERNEL, p="d2l_toy_regression")
    next(b for b in at.button if "Learn σ" in b.label).click().run()
    assert not at.exception
    success = " ".join(s.value for s in at.success)
    assert "Learned σ" in success
    data = attnviz.make_toy_data()
    expected = attnviz.fit_bandwidth(data.x_train, data.y_train, kernel="gaussian", epochs=200, lr=0.05)
    assert f"{expected.bandwidth:.4g}" in success
    loss = first_weights_by_title_any(at, "Leave-one-out loss")
    np.testing.assert_allclose(
        loss["data"][0]["y"] if isinstance(loss["data"][0]["y"], list) else _array([_array(loss["data"][0]["y"])])[0],
        expected.losses,
        rtol=1e-4,
    )
    names = [trace.get("name", "") for trace in figures(at)[0]["data"]]
    assert any(name.startswith("learned σ") for name in names)


def first_weights_by_title_any(at: AppTest, title: str) -> dict:
    for fig in figures(at):
        if title in str(fig.get("layout", {}).get("title", {}).get("text", "")):
            return fig
    raise AssertionError(f"no chart titled {title!r}")


def test_features_column_count_can_be_changed():
    at = run_page(SELF, m="numbers", q="1,0;0,1")
    next(n for n in at.number_input if n.label.startswith("Features (columns)")).set_value(3).run()
    assert not at.exception
    assert at.query_params["q"] in ("1,0,0;0,1,0", ["1,0,0;0,1,0"])
    assert first_weights(at).shape == (2, 2)


def work_table(at: AppTest) -> dict[str, list[str]]:
    """The 'show your work' numbers table (a markdown table), as {column name: cells}."""
    block = next(m.value for m in at.markdown if "\n| key |" in m.value or m.value.startswith("| key |"))
    lines = [line for line in block.splitlines() if line.startswith("| ")]
    header, *body = ([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines)
    return {name: [row[i] for row in body[1:]] for i, name in enumerate(header)}  # body[0] is the alignment rule


def recipe(at: AppTest) -> str:
    """The 'show your work' recipe: the markdown element with the steps' formulas."""
    return next(m.value for m in at.markdown if "Softmax" in m.value and "$$" in m.value)


def test_work_panel_table_shows_the_heatmaps_numbers_and_tokens_literally():
    at = run_page(SELF, s="the cat | sat *on*", c="1", row="2")
    weights = first_weights(at)  # (Q, K), NaN where masked
    table = work_table(at)
    assert table["key"][:4] == ["the", "cat", "\\|", "sat"] and table["key"][4].startswith("\\*")  # escaped
    shown = np.array([float(x) for x in table["weight α"]])
    np.testing.assert_allclose(shown, np.nan_to_num(weights[2]), rtol=1e-3, atol=1e-4)
    assert table["allowed"][3:] == ["no \\(masked\\)"] * (weights.shape[1] - 3)  # causal: row 3 sees keys 1..3
    assert "score" not in table and "score a\\(q, k\\)" in table  # step 2's repeated score column is left out


def test_work_panel_recipe_stays_the_same_when_the_temperature_moves():
    at = run_page(SELF)
    before_recipe, before_weights = recipe(at), work_table(at)["weight α"]
    at.number_input(key="w:self:temperature").set_value(0.5).run()
    assert recipe(at) == before_recipe  # the browser need not typeset the formulas again
    assert work_table(at)["weight α"] != before_weights
    assert any("temperature T = 0.5" in re.sub(r"\\(.)", r"\1", m.value) for m in at.markdown)


def test_work_panel_puts_a_long_table_in_a_dataframe_with_the_same_numbers():
    sentence = " ".join(f"w{i}" for i in range(20))  # 20 keys: more than a text table holds
    at = run_page(SELF, s=sentence)
    (frame,) = [df.value for df in at.dataframe]
    np.testing.assert_allclose(frame["weight α"].to_numpy(), first_weights(at)[0], rtol=1e-5, atol=1e-7)
    assert frame["key"].tolist() == sentence.split()


def test_projection_controls_open_for_a_link_that_uses_them_and_keep_their_values():
    at = run_page(SELF, h="2", pr="random", ps="7")
    assert at.select_slider(key="w:self:heads").value == 2
    assert at.number_input(key="w:self:proj_seed").value == 7
    assert len(first_weights_heads(at)) == 2
    at.number_input(key="w:self:temperature").set_value(2.0).run()
    assert len(first_weights_heads(at)) == 2 and at.query_params["h"] == "2"
    at.session_state["self:open:more"] = False  # closing the section keeps the heads
    at.run()
    heads_slider = [s for s in at.select_slider if s.key == "w:self:heads"]
    assert not heads_slider and len(first_weights_heads(at)) == 2 and at.query_params["ps"] == "7"


def test_default_page_keeps_the_projection_controls_closed():
    at = run_page(SELF)
    assert [s.key for s in at.select_slider] == ["w:self:temperature_log@1"]  # the heads' slider is folded away
    assert at.session_state["self:open:more"] is False


def first_weights_heads(at: AppTest) -> list:
    """The per-head heatmaps of the heads grid (the first chart when heads > 1)."""
    return [trace for trace in figures(at)[0]["data"] if trace.get("name", "").startswith("head")]


def test_a_comparison_link_opens_the_more_section_and_draws_both_scores_and_their_difference():
    at = run_page(SELF, cmp="additive")
    assert at.selectbox(key="w:self:compare").value == "additive"
    titles = [fig["layout"]["title"]["text"] for fig in figures(at)]
    a, b, d = (titles.index(name) for name in ("Scaled dot product", "Additive (Bahdanau)",
                                                "Scaled dot product − Additive (Bahdanau)"))  # fmt: skip
    first, second, difference = (_array(figures(at)[i]["data"][0]["z"]) for i in (a, b, d))
    np.testing.assert_allclose(first, first_weights(at), atol=1e-6)
    np.testing.assert_allclose(first - second, difference, atol=1e-6)
    both = [figures(at)[i]["data"][0] for i in (a, b)]  # one colour range for A and B: the range of both
    assert both[0]["zmin"] == both[1]["zmin"] == pytest.approx(min(first.min(), second.min()))
    assert both[0]["zmax"] == both[1]["zmax"] == pytest.approx(max(first.max(), second.max()))
    at.session_state["self:open:more"] = False  # closed, the comparison stays
    at.run()
    assert not at.exception and len(figures(at)) == 4 and at.query_params["cmp"] == "additive"


@pytest.mark.parametrize(
    ("path", "params"),
    [(SELF, {}), (CROSS, {}), (KERNEL, {}), (SELF, {"p": "unit_sentences"}), (CROSS, {"p": "decoder_state"})],
)
def test_first_chart_spreads_its_weights_over_at_least_half_of_its_colour_scale(path, params):
    """Issue 14, point 7: a first chart is never a uniform block. The default self demo's weights (0.09-0.20) used
    11 % of a fixed 0-1 scale; each page now opens on its chart's own range, said on the colour bar."""
    at = run_page(path, **params)
    trace = figures(at)[0]["data"][0] if path != KERNEL else first_weights_trace(at)
    weights = _array(trace["z"])
    finite = weights[np.isfinite(weights)]
    used = (finite.max() - finite.min()) / (trace["zmax"] - trace["zmin"])
    assert used >= 0.5, (trace["zmin"], trace["zmax"], finite.min(), finite.max())
    assert at.radio(key=f"w:{ {SELF: 'self', CROSS: 'cross', KERNEL: 'kernel'}[path] }:crange").value == "data"


def first_weights_trace(at: AppTest) -> dict:
    """The kernel page's weights heatmap (its first chart is the regression curve)."""
    return next(fig["data"][0] for fig in figures(at) if fig["data"][0]["type"] == "heatmap")


def test_colour_range_control_and_link_switch_every_weights_chart():
    at = run_page(SELF, cr="unit", h="2", pr="random", cmp="dot")
    charts = figures(at)
    assert charts[0]["layout"]["coloraxis"]["cmin"] == 0.0 and charts[0]["layout"]["coloraxis"]["cmax"] == 1.0
    assert charts[1]["data"][0]["zmin"] == 0.0 and charts[1]["data"][0]["zmax"] == 1.0  # the heads' mean
    at.radio(key="w:self:crange").set_value("row").run()
    assert "cr=row" in "&".join(f"{k}={v}" for k, v in at.query_params.items())
    for fig in figures(at)[:3]:  # heads, mean, comparison: every row of every panel spans its row's range
        bar = fig["layout"]["coloraxis"]["colorbar"] if "coloraxis" in fig["layout"] else fig["data"][0]["colorbar"]
        assert bar["ticktext"] == ["row's min", "row's max"]
    mean = _array(figures(at)[1]["data"][0]["z"])
    np.testing.assert_allclose(np.nanmax(mean, axis=1), 1.0)
    np.testing.assert_allclose(np.nanmin(mean, axis=1), 0.0)


def test_temperature_is_a_log_slider_beside_its_exact_value():
    """Issue 14, point 8: the slider's steps are even on a log scale (0.1 and 10 as far from 1 as each other); moving
    it sets the exact value and the link; a typed value stays exact, and the slider sits on the nearest step."""
    at = run_page(SELF)
    slider = at.select_slider(key="w:self:temperature_log@1")  # the slider of the step it sits on
    stops = list(slider.options)
    assert slider.value == 1.0 and stops[0] == "0.001" and stops[-1] == "1000"  # options as the slider shows them
    one = stops.index("1")
    assert stops[one - 6] == "0.1" and stops[one + 6] == "10"  # six steps per decade, either side of 1
    ratios = np.diff(np.log10([float(s) for s in stops]))
    assert ratios.max() < 2 * ratios.min()  # no step is twice as long as another on the log scale
    soft = first_weights(at)
    slider.set_value(0.1).run()
    assert at.number_input(key="w:self:temperature").value == pytest.approx(0.1)
    assert at.query_params["T"] == "0.1"
    assert np.nanmax(first_weights(at), axis=1).min() > np.nanmax(soft, axis=1).max()  # sharper in every row
    at.number_input(key="w:self:temperature").set_value(0.25).run()
    assert at.select_slider(key="w:self:temperature_log@0.3").value == pytest.approx(0.3)
    assert at.number_input(key="w:self:temperature").value == pytest.approx(0.25)


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_learning_sigma_says_why_it_is_off(lang):
    """Issue 14, point 21: the greyed-out button said why only in a tooltip."""
    at = run_page(KERNEL, kn="boxcar", lang=lang)
    button = next(b for b in at.button if b.label == t_("kernel.learn_button", lang))
    assert button.disabled
    assert any(
        t_("kernel.learn_off_boxcar", lang, kernel=t_("kernel.boxcar.label", lang)) == c.value for c in at.caption
    )
    at = run_page(KERNEL, lang=lang)  # the Gaussian kernel: on, and nothing to explain
    assert not next(b for b in at.button if b.label == t_("kernel.learn_button", lang)).disabled
    assert not any(t_("kernel.learn_off_points", lang) == c.value for c in at.caption)


@pytest.mark.parametrize("key", ["d2l_additive", "d2l_dot_product"])
def test_d2l_presets_show_every_batch_row_as_show_heatmaps_does(key):
    """Issue 14, point 16: d2l's show_heatmaps(attention_weights.reshape((1, 1, 2, 10))) draws both batch rows."""
    at = run_page(CROSS, p=key)
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"] == t_("attention.batch_rows_title"))
    z = _array(fig["data"][0]["z"])
    assert z.shape == (2, 10)
    assert fig["data"][0]["y"] == [t_("attention.batch_row_label", row=row, query="q1") for row in (0, 1)]
    expected = attnviz.PRESETS[key].run().weights.numpy().reshape(2, 10)  # d2l's valid_lens [2, 6]
    np.testing.assert_allclose(np.nan_to_num(z), expected, atol=1e-6)
    assert np.isnan(z[0, 2:]).all() and np.isnan(z[1, 6:]).all()  # masked beyond each row's valid length
    at = run_page(CROSS, p="concat_linear")  # one batch row: no such chart
    assert not [f for f in figures(at) if f["layout"]["title"]["text"] == t_("attention.batch_rows_title")]


def test_random_projections_show_w_q_w_k_w_v_with_the_heads_rows_marked():
    """Issue 14, point 1: step 1 multiplied numbers that appeared nowhere; the W's are beside step 0 now."""
    at = run_page(SELF, pr="random", h="2", ps="5")
    box = next(e for e in at.expander if says(e.label, "explain.matrices", first=1, last=4))
    text = " ".join(m.value for m in box.markdown).replace("\\", "")
    state = decode_attention({"pr": "random", "h": "2", "ps": "5"}, "self").state
    inputs = attnviz.app.pipeline.resolve_inputs(state)
    trace = attnviz.app.pipeline.run_attention(state, inputs)
    first = f"{float(trace.W_q[0, 0]):.4g}"
    assert "▶ 1" in text and "▶ 4" in text and "▶ 5" not in text  # head 1 of 2: rows 1-4 of 8
    assert first in text and text.count("**W_") == 3
    work = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "q[1] = (row 1 of W_q)" in work


def test_the_self_page_with_the_trained_models_inputs_shows_its_previous_token_head_and_its_snippet_agrees():
    """Issue "Watch attention learn": the attention pages offer the trained model's embeddings and projections."""
    sequence = "D H A Q K M D H A Q K M"
    at = run_page(SELF, m="sentence", s=sequence, emb="trained", pr="trained", h="2", c="1")
    assert not at.error
    assert any(t_("attention.trained_dim") in caption.value for caption in at.caption)
    at = open_expander(at, "self:open:share")
    snippet = next(code.value for code in at.code if "attnviz.self_attention" in code.value)
    assert "trained_embeddings" in snippet
    namespace: dict = {}
    exec(compile(snippet, "snippet", "exec"), namespace)  # the app's own generated code, not user input
    heads = namespace["trace"].weights  # (2, T, T)
    assert heads.shape == (2, 13, 13)
    previous = float(torch.diagonal(heads[0], offset=-1).mean())
    assert previous > 0.5  # the model's previous-token head, computed by the page's own pipeline
    shown = run_page(SELF, m="sentence", s="the cat sat", emb="trained")
    said = [error.value for error in shown.error]
    assert any(says(text, "error.trained_symbols", first="A", last="T") and "the cat sat" in text for text in said)


@pytest.mark.parametrize("preset", ["d2l_additive", "d2l_dot_product", "decoder_state"])
def test_a_batched_preset_switched_to_a_sentence_shows_the_sentence_alone(preset):
    """The preset's batch rows (its own numbers and keys) used to be drawn with the sentence's key labels, and failed
    ('expected 10 labels, got 6'). Under a sentence, the page shows the sentence's weights and no batch rows."""
    batch_title = t_("attention.batch_rows_title", "en")
    at = run_page(CROSS, p=preset, m="sentence")
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles and batch_title not in titles
    numbers = run_page(CROSS, p=preset)  # the preset's own numbers: every batch row, as before
    assert batch_title in [f["layout"]["title"]["text"] for f in figures(numbers)]


# ----- the share box's state file ------------------------------------------------------------------------------


def upload_state_file(at: AppTest, data: bytes) -> AppTest:
    """Load `data` through the open share box's uploader, as a student picking a file does."""
    (uploader,) = at.file_uploader
    uploader.set_value(("attnviz_self.json", data, "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_state_file_loads_into_the_page_and_the_server_keeps_no_copy():
    """The page takes the file's state (controls, charts and link) without an error, and drops the file once read:
    the uploader is empty again and the session holds no upload."""
    from attnviz.app.links import state_file

    at = open_expander(run_page(SELF), "self:open:share")
    upload_state_file(at, state_file("self", {"T": "0.5", "s": "one two three"}))
    assert at.query_params["T"] == "0.5" and at.query_params["s"] == "one two three"
    assert at.number_input(key="w:self:temperature").value == 0.5
    assert first_weights(at).shape == (3, 3)
    (uploader,) = at.file_uploader
    assert uploader.value is None
    assert at.session_state["self:state"].temperature == 0.5


def test_a_bad_state_file_is_named_on_the_page_and_the_page_keeps_its_state():
    at = open_expander(run_page(SELF, T="2"), "self:open:share")
    upload_state_file(at, b"not json at all")
    assert [e.value for e in at.error] == [t_("error.file_not_json", "en")]
    assert at.query_params["T"] == "2"
    at.run()  # the message was said; the file is gone
    assert not at.error and at.query_params["T"] == "2"


@pytest.mark.parametrize("page", [SELF, CROSS])
def test_the_repeated_tokens_note_names_this_sentences_repeated_tokens(page):
    """The note under the chart named "the·1 and the·7" on every page, also on the cross page, whose sentence repeats
    "the" at 1 and 5. It names the first repeated token at its first two positions, counted from 1 as the axes do."""
    at = run_page(page, s="a cat saw a dog and a bird")
    captions = [caption.value for caption in at.caption]
    assert any(says(text, "attention.repeated_tokens", first="a·1", second="a·4") for text in captions), captions
    unique = run_page(page, s="one cat saw two dogs")
    assert not any(says(caption.value, "attention.repeated_tokens") for caption in unique.caption)
