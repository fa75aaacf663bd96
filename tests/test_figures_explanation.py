"""The figures of "Is attention an explanation?": maps side by side with their ρ, and the share of the sinks."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.figures.attention import figure_tables
from attnviz.figures.explanation import maps_heatmap, rho_text, sink_bars
from attnviz.i18n import t


def test_each_row_is_coloured_by_its_own_largest_magnitude_and_labelled_with_its_rho():
    values = np.array([[0.2, 0.1, 0.4], [-3.0, 1.5, 0.0], [0.0, 0.0, 0.0]])
    fig = maps_heatmap(values, ["raw", "gradient", "blank"], [0.5, -0.123, None], tokens=["the", "cat", "the"])
    heat = fig.data[0]
    np.testing.assert_allclose(heat.z, [[0.5, 0.25, 1.0], [-1.0, 0.5, 0.0], [0.0, 0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(heat.customdata, values)  # the hover and the tables give the values themselves
    assert (heat.zmin, heat.zmax) == (-1.0, 1.0)
    assert list(heat.x) == ["the·1", "cat", "the·3"]  # a repeated token stays two columns
    assert list(heat.y) == ["raw  ρ = +0.50", "gradient  ρ = -0.12", "blank  ρ = —"]
    [(_, columns, rows)] = figure_tables(fig)
    assert columns == ["", "the·1", "cat", "the·3"] and rows[1] == ["gradient  ρ = -0.12", -3.0, 1.5, 0.0]
    go.Figure(fig.to_dict())  # valid for Plotly


def test_labels_are_escaped_and_the_words_translated():
    fig = maps_heatmap([[1.0, 2.0]], ["<b>x</b>"], [float("nan")], tokens=["<i>", "a"], lang="zh-Hans")
    assert list(fig.data[0].y) == ["&lt;b&gt;x&lt;/b&gt;  ρ = —"] and list(fig.data[0].x) == ["&lt;i&gt;", "a"]
    assert fig.layout.title.text == t("fig.maps_title", "zh-Hans")


def test_without_rhos_the_rows_carry_their_names_alone():
    """While a live class is asked which map agrees best with blank-out, the page draws the maps without ρ."""
    fig = maps_heatmap([[1.0, 2.0], [2.0, 1.0]], ["raw", "<b>blank</b>"], None, tokens=["a", "b"])
    assert list(fig.data[0].y) == ["raw", "&lt;b&gt;blank&lt;/b&gt;"]
    assert [a.text for a in fig.layout.annotations] == ["raw", "&lt;b&gt;blank&lt;/b&gt;"]
    assert "ρ" not in str(fig.to_dict())
    go.Figure(fig.to_dict())


def test_a_row_count_that_does_not_match_is_an_error():
    with pytest.raises(ValueError):
        maps_heatmap([[1.0, 2.0], [3.0, 4.0]], ["one"], [None])


def test_rho_text():
    assert rho_text(0.754) == "ρ = +0.75" and rho_text(-1.0) == "ρ = -1.00" and rho_text(None) == "ρ = —"
    assert rho_text(math.nan) == "ρ = —"


def test_sink_bars_give_two_bars_per_layer():
    fig = sink_bars([0.5, 0.6, 0.25], [0.1, 0.2, 0.05], lang="zh-Hant")
    assert [bar.type for bar in fig.data] == ["bar", "bar"] and fig.layout.barmode == "group"
    assert list(fig.data[0].x) == [t("fig.layer_n", "zh-Hant", n=n) for n in (1, 2, 3)]
    np.testing.assert_allclose(fig.data[0].y, [0.5, 0.6, 0.25])
    np.testing.assert_allclose(fig.data[1].y, [0.1, 0.2, 0.05])
    assert fig.data[0].name == t("fig.sink_weight", "zh-Hant") and fig.layout.yaxis.range == (0, 1)


def test_each_map_says_whether_it_ranks_blank_outs_first_token_first_and_the_tokens_are_on_top():
    fig = maps_heatmap(
        [[0.9, 0.1], [0.1, 0.2], [3.0, 1.0]], ["raw", "norm", "blank"], [0.4, -0.2, None], tops=[True, False, None],
        tokens=["a", "b"], lang="zh-Hans",
    )  # fmt: skip
    same, other = t("fig.first_same", "zh-Hans"), t("fig.first_other", "zh-Hans")
    assert list(fig.data[0].y) == [f"raw  {same}  ρ = +0.40", f"norm  {other}  ρ = -0.20", "blank  ρ = —"]
    assert "✓" in same and "✗" in other
    assert fig.layout.xaxis.side == "top"  # the tokens above the first maps: on a projector's first screen
    assert fig.layout.xaxis.title.text is None  # no axis title to collide with rotated tokens
    assert fig.data[0].colorbar.y == 0.0 and fig.data[0].colorbar.yanchor == "top"  # the colour bar below
