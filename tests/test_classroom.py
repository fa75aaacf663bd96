"""Classroom settings: colour palettes, text alternatives of the charts, presentation mode."""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import pytest

from attnviz.figures import attention as figures
from attnviz.figures import kernel as kernel_figures
from attnviz.i18n import t
from tests.test_app import CROSS, SELF, _array, run_page
from tests.test_app import figures as page_figures


def test_every_chart_has_a_table_of_its_numbers():
    weights = np.array([[1.0, 0.0], [0.25, 0.75]], dtype=np.float32)
    mask = np.array([[True, False], [True, True]])
    fig = figures.weights_heatmap(
        figures.AttentionGrid(weights, mask=mask, query_labels=["a", "b"], key_labels=["x", "<y>"])
    )
    ((name, columns, rows),) = figures.figure_tables(fig)  # the grey mask trace is only looks: left out
    assert name == "weights" and columns == ["", "x", "&lt;y&gt;"]
    assert rows == [["a", 1.0, None], ["b", 0.25, 0.75]]  # the masked cell is empty, not 0
    kernel = kernel_figures.kernel_regression_figure([1.0, 2.0], [3.0, 4.0], [1.5], [3.5])
    tables = figures.figure_tables(kernel)
    assert tables[0][2] == [[1.0, 3.0], [2.0, 4.0]] and tables[1][2] == [[1.5, 3.5]]
    big = figures.weights_heatmap(np.full((200, 200), 0.005, dtype=np.float32))
    assert figures.figure_tables(big) == [("weights", [], [])]  # too large: the page says where the numbers are


def test_the_numbers_section_has_the_heatmap_as_a_table():
    at = run_page(SELF)
    key = "self:open:raw"  # the weights' text alternative sits with the raw scores and outputs
    assert not at.dataframe  # closed: nothing built
    at.session_state[key] = True
    at.run()
    z = _array(page_figures(at)[0]["data"][0]["z"])
    table = at.dataframe[0].value
    np.testing.assert_allclose(table.iloc[:, 1:].to_numpy(dtype=float), z, rtol=1e-6)
    assert list(table.iloc[:, 0]) == page_figures(at)[0]["data"][0]["y"]
    raw = _array(page_figures(at)[1]["data"][0]["z"])  # the raw scores chart, with its own table right below
    np.testing.assert_allclose(at.dataframe[1].value.iloc[:, 1:].to_numpy(dtype=float), raw, rtol=1e-6)


def test_other_charts_fold_their_table_below_them():
    at = run_page("app_pages/kernel_attention.py")
    assert len(at.dataframe) == 1  # only the training points' editor
    at.session_state["open:table:kernel_weights"] = True
    at.run()
    weights = _array(page_figures(at)[1]["data"][0]["z"])
    np.testing.assert_allclose(at.dataframe[-1].value.iloc[:, 1:].to_numpy(dtype=float), weights, rtol=1e-6)


def _palette_at_sqrt(plotly_name: str) -> list[list]:
    """The weights' colour scale: the named palette read at √weight, 21 stops (computed here, independently)."""
    stops = [list(stop) for stop in go.Heatmap(colorscale=plotly_name).colorscale]
    positions = [i / 20 for i in range(21)]
    colours = plotly.colors.sample_colorscale(stops, [p**0.5 for p in positions])
    return [[p, c] for p, c in zip(positions, colours, strict=True)]


def _palette(name: str) -> list[list]:
    """A named Plotly palette's own stops."""
    return [[float(p), c] for p, c in go.Heatmap(colorscale=name).colorscale]


@pytest.mark.parametrize(("code", "plotly_name"), [("greys", "Greys"), ("magma", "Magma"), ("viridis", "Viridis")])
def test_a_palette_from_the_link_colours_the_weights_and_stays_in_the_link(code, plotly_name):
    at = run_page(SELF, pal=code, cr="unit")  # on 0-1, the palette is read at √weight
    scale = page_figures(at)[0]["data"][0]["colorscale"]
    assert scale == _palette_at_sqrt(plotly_name)
    at = run_page(SELF, pal=code)  # on the chart's own range (the default), the palette as it is
    assert page_figures(at)[0]["data"][0]["colorscale"] == _palette(plotly_name)
    at.number_input(key="w:self:temperature").set_value(2.0).run()
    assert at.query_params["pal"] == code and at.query_params["T"] == "2"


def test_the_default_palette_is_cividis_and_a_bad_one_warns():
    at = run_page(SELF)
    assert page_figures(at)[0]["data"][0]["colorscale"] == _palette("Cividis")
    at = run_page(SELF, pal="rainbow")
    assert any("'pal'" in w.value for w in at.warning)


def test_presentation_mode_enlarges_the_figures_and_folds_the_controls():
    at = run_page(SELF, pm="1", lang="zh-Hans")
    fig = page_figures(at)[0]
    assert fig["layout"]["font"]["size"] == 20
    labels = [e.label for e in at.expander]
    assert t("frame.controls", "zh-Hans") in labels
    assert at.toggle(key="w:pm").value is True
    at.toggle(key="w:pm").set_value(False).run()
    assert "pm" not in at.query_params and "size" not in page_figures(at)[0]["layout"]["font"]  # (only its colour)


def test_predict_then_reveal_hides_the_weights_until_a_guess_and_then_shows_both():
    from attnviz.i18n import t as message

    at = run_page(SELF, guess="1", s="a b c", row="1")
    assert not page_figures(at)  # nothing to peek at
    reveal = at.button(key="self:reveal")
    assert reveal.disabled
    box = next(w for w in at.text_input if w.key.startswith("self:guess:"))
    box.set_value("1, 2").run()
    assert any(message("attention.guess_count", "en", count=2, keys=3) in c.value for c in at.caption)
    next(w for w in at.text_input if w.key.startswith("self:guess:")).set_value("0, 1, 1").run()
    assert not at.button(key="self:reveal").disabled
    at.button(key="self:reveal").click().run()
    assert not at.exception
    shown = page_figures(at)
    guess_chart = shown[0]
    assert guess_chart["data"][0]["name"] == "your guess"
    np.testing.assert_allclose(_array(guess_chart["data"][0]["y"]), [0.0, 0.5, 0.5])
    truth = _array(guess_chart["data"][1]["y"])
    weights = _array(shown[1]["data"][0]["z"])  # then the usual heatmap, with the same numbers
    np.testing.assert_allclose(truth, weights[1], rtol=1e-6)
    at.number_input(key="w:self:temperature").set_value(0.5).run()  # a new question: hidden again
    assert not page_figures(at)


@pytest.mark.parametrize(
    ("text", "weights", "problem", "typed"),
    [
        ("1, 1, 2", [0.25, 0.25, 0.5], "", 3),
        ("0.2，0.3、0.5", [0.2, 0.3, 0.5], "", 3),  # Chinese commas
        ("1, 2", None, "count", 2),
        ("1, x, 2", None, "values", 3),
        ("1, -1, 2", None, "values", 3),
        ("0, 0, 0", None, "values", 3),
        ("1, nan, 1", None, "values", 3),
        ("1, inf, 1", None, "values", 3),
        ("", None, "count", 0),
    ],
)
def test_a_typed_guess_is_read_or_says_what_is_wrong(text, weights, problem, typed):
    from attnviz.app.pipeline import parse_guess

    guess = parse_guess(text, 3)
    assert (guess.problem, guess.typed) == (problem, typed)
    if weights is None:
        assert guess.weights is None
    else:
        assert guess.weights == pytest.approx(weights)


def test_total_variation_distance():
    from attnviz.app.pipeline import total_variation

    assert total_variation([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert total_variation([1.0, 0.0], [0.0, 1.0]) == 1.0
    assert total_variation([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]) == pytest.approx(0.5)


def test_presentation_mode_puts_the_chart_first_and_its_explanation_beside_it():
    """Issue 14, point 9: on a projector, the inputs fold away like the controls, the intro gives its room to the
    chart, every text on the chart is at least 18 px, and the preset's note and batch row sit beside the chart
    (the sidebar is folded away)."""
    at = run_page(CROSS, pm="1", p="d2l_dot_product")
    labels = [e.label for e in at.expander]
    assert labels[:2] == [t("frame.inputs", "en"), t("frame.controls", "en")]
    assert not any(t("cross.intro", "en") in c.value for c in at.caption)
    assert not [c for c in at.sidebar.caption if t("preset.d2l_dot_product.source", "en") in c.value]
    note = [c for c in at.main.caption if t("preset.d2l_dot_product.source", "en") in c.value]
    assert note and at.main.number_input(key="w:cross:batch")  # beside the chart, not in the folded sidebar
    fig = page_figures(at)[0]
    layout = fig["layout"]
    for axis in ("xaxis", "yaxis"):
        assert layout[axis]["tickfont"]["size"] >= 18 and layout[axis]["title"]["font"]["size"] >= 18
    assert layout["font"]["size"] >= 18 and layout["legend"]["font"]["size"] >= 18
    at.main.number_input(key="w:cross:batch").set_value(1).run()  # the batch row beside the chart loads row 2
    second_row = run_page(CROSS, p="d2l_dot_product", b="1")
    np.testing.assert_array_equal(
        _array(page_figures(at)[0]["data"][0]["z"]), _array(page_figures(second_row)[0]["data"][0]["z"])
    )
    assert at.query_params["b"] == "1"
    at = run_page(SELF)  # out of presentation mode: all of it where it was
    assert t("frame.inputs", "en") not in [e.label for e in at.expander]
    assert any(t("self.intro", "en") in c.value for c in at.caption)


def test_presentation_mode_titles_every_subplot_at_18_px_or_more():
    at = run_page(SELF, pm="1", h="2", pr="random", cmp="dot")
    for fig in page_figures(at):
        for note in fig["layout"].get("annotations", []):
            assert note["font"]["size"] >= 18
