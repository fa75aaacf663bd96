"""attnviz.figures.attention: the numbers in the figures are the numbers given, labels are safe, payloads are
compact."""

import json
import re

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import pytest

from attnviz.figures import attention as figures
from attnviz.figures import kernel as kernel_figures
from attnviz.figures import learned as learned_figures
from attnviz.figures import model as model_figures
from attnviz.figures import plotting, style
from attnviz.i18n import t
from tests.messages import message, says

RNG = np.random.default_rng(0)


def cell_numbers(trace) -> list[list[str]]:
    """A heatmap's printed numbers without the markup that colours some of them white."""
    return [[re.sub(r"<[^>]*>", "", str(text)) for text in row] for row in trace.text]


def figure_arrays(fig: go.Figure) -> list[np.ndarray]:
    """The z arrays of a figure's heatmap traces, in trace order."""
    return [np.asarray(trace.z) for trace in fig.data if trace.type == "heatmap"]


def softmax_rows(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Row softmax over allowed cells, exactly 0 elsewhere (an independent reference for the tests)."""
    shifted = np.where(allowed, scores, -np.inf)
    exps = np.exp(shifted - shifted.max(axis=1, keepdims=True))
    return (exps / exps.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def causal_3x4():
    """Scores (3, 4), a causal mask with cells masked in every row but the last, and the softmax weights."""
    scores = np.array([[1.0, 2.0, 0.5, -1.0], [0.1, -0.3, 2.2, 0.0], [3.0, 1.0, -2.0, 0.25]], dtype=np.float32)
    allowed = np.tril(np.ones((3, 4), dtype=bool), k=1)  # row i may attend to keys 0..i+1
    return scores, allowed, softmax_rows(scores, allowed)


def traces(fig: go.Figure, name: str) -> list:
    """The traces of `fig` with this name."""
    return [trace for trace in fig.data if trace.name == name]


# ---------------------------------------------------------------- weights_heatmap


def test_weight_trace_holds_the_weights_and_nan_where_masked(causal_3x4):
    scores, allowed, weights = causal_3x4
    fig = figures.weights_heatmap(figures.AttentionGrid(weights, mask=allowed), scores=scores)
    z = fig.data[0].z
    assert fig.data[0].type == "heatmap" and z.shape == (3, 4)
    np.testing.assert_array_equal(z[allowed], weights[allowed])
    assert np.isnan(z[~allowed]).all() and not np.isnan(z[allowed]).any()


def test_masked_trace_marks_exactly_the_masked_cells(causal_3x4):
    _, allowed, weights = causal_3x4
    fig = figures.weights_heatmap(figures.AttentionGrid(weights, mask=allowed))
    (masked,) = traces(fig, "masked")
    np.testing.assert_array_equal(~np.isnan(masked.z), ~allowed)
    assert masked.showscale is False
    assert {color for _, color in masked.colorscale} == {style.MASK_COLOUR}
    assert list(masked.text[~allowed]) == ["×"] * int((~allowed).sum())  # small: a cross in each masked cell
    (legend,) = traces(fig, style.MASK_NAME)
    assert legend.type == "scatter" and legend.marker.color == style.MASK_COLOUR


def test_no_mask_trace_when_nothing_is_masked(causal_3x4):
    _, _, weights = causal_3x4
    fig = figures.weights_heatmap(figures.AttentionGrid(weights, mask=np.ones((3, 4), dtype=bool)))
    assert [trace.name for trace in fig.data] == ["weights"]


def test_mask_broadcasts_from_key_padding_shape():
    weights = np.full((2, 3), 0.5, dtype=np.float32)
    padded = figures.AttentionGrid(weights, mask=[True, True, False])  # (K,): the last key is padding
    fig = figures.weights_heatmap(padded)
    np.testing.assert_array_equal(np.isnan(fig.data[0].z), [[False, False, True], [False, False, True]])


def test_colour_range_is_fixed_to_0_1_with_a_colour_blind_safe_default(causal_3x4):
    _, _, weights = causal_3x4
    trace = figures.weights_heatmap(weights * 0.1).data[0]  # small weights must not be stretched to full colour
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    cividis = [list(stop) for stop in go.Heatmap(colorscale="Cividis").colorscale]
    assert trace.colorscale[0][1] == plotly.colors.sample_colorscale(cividis, [0.0])[0]  # the palette's own ends
    assert trace.colorscale[-1][1] == plotly.colors.sample_colorscale(cividis, [1.0])[0]


def test_soft_rows_are_not_one_flat_block():
    """A weight w is drawn with the palette's colour at √w: a soft row's 0.1 and 0.2 sit at 32 % and 45 % of the
    palette (mid-tones), not in its darkest fifth, while the range stays [0, 1] on every chart."""
    cividis = [list(stop) for stop in go.Heatmap(colorscale="Cividis").colorscale]
    stops = plotting.weights_colorscale("Cividis")
    assert [position for position, _ in stops] == pytest.approx([i / 20 for i in range(21)])
    for position, colour in stops:
        assert colour == plotly.colors.sample_colorscale(cividis, [position**0.5])[0]
    scale = plotly.colors.make_colorscale([colour for _, colour in stops])
    assert plotly.colors.sample_colorscale(scale, [0.1])[0] != plotly.colors.sample_colorscale(cividis, [0.1])[0]


SOFT = np.array([[0.09, 0.2, 0.15, 0.56], [0.3, 0.3, 0.2, 0.2], [0.5, 0.25, 0.25, 0.0]], dtype=np.float32)


def test_data_range_stretches_the_colours_over_the_charts_own_weights():
    """The default self demo's weights span 0.09-0.20: on the chart's own range the smallest allowed weight is the
    palette's first colour and the largest its last, and the colour bar says which range it is."""
    soft = np.array([[0.09, 0.2, 0.15], [0.12, 0.1, 0.18]], dtype=np.float32)
    trace = figures.weights_heatmap(soft, colour_range="data").data[0]
    assert (trace.zmin, trace.zmax) == (pytest.approx(0.09), pytest.approx(0.2))
    np.testing.assert_array_equal(trace.z, soft)  # the weights themselves: hover and tables read them
    assert says(trace.colorbar.title.text, "fig.range_data")
    assert trace.colorscale[0][1] == go.Heatmap(colorscale="Cividis").colorscale[0][1]  # linear: no √ on this range
    fixed = figures.weights_heatmap(soft, colour_range="unit").data[0]
    assert (fixed.zmin, fixed.zmax) == (0.0, 1.0) and "0–1" in fixed.colorbar.title.text
    # masked cells (weight exactly 0) are left out of the range: the allowed weights still span the whole palette
    allowed = SOFT > 0
    masked = figures.weights_heatmap(figures.AttentionGrid(SOFT, mask=allowed), colour_range="data").data[0]
    assert (masked.zmin, masked.zmax) == (pytest.approx(0.09), pytest.approx(0.56))
    flat = figures.weights_heatmap(np.full((2, 2), 0.5, np.float32), colour_range="data").data[0]
    assert (flat.zmin, flat.zmax) == (0.0, 1.0)  # nothing to stretch


def test_row_range_puts_each_rows_smallest_and_largest_weight_at_the_palettes_ends():
    allowed = SOFT > 0
    scores = np.log(np.where(allowed, SOFT, 1.0)).astype(np.float32)
    fig = figures.weights_heatmap(figures.AttentionGrid(SOFT, mask=allowed), scores=scores, colour_range="row")
    trace = fig.data[0]
    z = np.asarray(trace.z, dtype=np.float64)
    expected = [[0.0, (0.2 - 0.09) / 0.47, (0.15 - 0.09) / 0.47, 1.0], [1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, np.nan]]
    np.testing.assert_allclose(z, expected, atol=1e-6)  # row 3's masked key is out of its range and of the chart
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert list(trace.colorbar.ticktext) == ["row's min", "row's max"]
    # the weights and the scores travel beside the colours: hover, cell text and the chart's table show them
    np.testing.assert_array_equal(trace.customdata[..., 0], SOFT)
    np.testing.assert_array_equal(trace.customdata[..., 1], scores)
    assert "%{customdata[0]:.6~g}" in trace.hovertemplate and "%{customdata[1]:.6~g}" in trace.hovertemplate
    assert cell_numbers(trace)[0][0] == "0.09" and cell_numbers(trace)[2][3] == ""
    _, _columns, rows = figures.figure_tables(fig)[0]
    assert rows[0][1:] == pytest.approx([0.09, 0.2, 0.15, 0.56]) and rows[2][4] is None
    flat = figures.weights_heatmap(np.full((1, 3), 1 / 3, np.float32), colour_range="row").data[0]
    np.testing.assert_allclose(np.asarray(flat.z, dtype=np.float64), [[0.5, 0.5, 0.5]])  # a flat row: the middle


def test_heads_and_comparison_share_one_colour_range():
    heads = np.stack([SOFT, SOFT * 0.5])
    grid = figures.heads_grid(heads, colour_range="data")
    assert (grid.layout.coloraxis.cmin, grid.layout.coloraxis.cmax) == (0.0, pytest.approx(0.56))
    rows = figures.heads_grid(heads, colour_range="row")
    np.testing.assert_allclose(np.asarray(rows.data[1].z, dtype=np.float64)[0, 3], 1.0)
    np.testing.assert_array_equal(rows.data[1].customdata, SOFT * 0.5)
    compare = figures.comparison_charts(SOFT, SOFT[::-1], label_a="a", label_b="b", colour_range="data")
    for chart in compare[:2]:  # A and B on one range, over both
        assert (chart.data[0].zmin, chart.data[0].zmax) == (0.0, pytest.approx(0.56))
    largest = float(np.abs(SOFT - SOFT[::-1]).max())  # A − B on its own range, around 0
    assert (compare[2].data[0].zmin, compare[2].data[0].zmax) == (-largest, largest)
    fixed = figures.comparison_charts(SOFT, SOFT[::-1], label_a="a", label_b="b", colour_range="unit")
    assert (fixed[2].data[0].zmin, fixed[2].data[0].zmax) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="colour_range"):
        figures.weights_heatmap(SOFT, colour_range="log")


def test_hover_shows_labels_weight_and_raw_scores(causal_3x4):
    scores, allowed, weights = causal_3x4
    trace = figures.weights_heatmap(figures.AttentionGrid(weights, mask=allowed), scores=scores).data[0]
    assert isinstance(trace.customdata, np.ndarray) and trace.customdata.dtype == np.float32
    np.testing.assert_array_equal(trace.customdata, scores)
    for part in ("%{y}", "%{x}", "%{z:.6~g}", "%{customdata:.6~g}"):
        assert part in trace.hovertemplate
    assert "customdata" not in figures.weights_heatmap(weights).data[0].hovertemplate


def test_axes_are_categories_with_query_1_at_the_top(causal_3x4):
    _, _, weights = causal_3x4
    fig = figures.weights_heatmap(weights)
    assert fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"
    assert fig.layout.xaxis.title.text == "keys" and fig.layout.yaxis.title.text == "queries"
    assert list(fig.data[0].y) == ["q1", "q2", "q3"]


def test_cell_text_only_on_small_matrices():
    small = RNG.dirichlet(np.ones(3), size=3)
    large = RNG.dirichlet(np.ones(20), size=20)
    assert figures.weights_heatmap(small).data[0].texttemplate
    assert figures.weights_heatmap(small, show_values=False).data[0].texttemplate is None
    for show in (None, True):  # never on 400 cells, even when asked
        fig = figures.weights_heatmap(
            figures.AttentionGrid(large, mask=np.tril(np.ones((20, 20), dtype=bool))), show_values=show
        )
        assert all(trace.texttemplate is None and trace.text is None for trace in fig.data if trace.type == "heatmap")


def test_inputs_are_not_modified(causal_3x4):
    scores, allowed, weights = causal_3x4
    before = weights.copy()
    figures.weights_heatmap(figures.AttentionGrid(weights, mask=allowed), scores=scores)
    np.testing.assert_array_equal(weights, before)


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match="2 axes"):
        figures.weights_heatmap(np.zeros(3))
    with pytest.raises(ValueError, match="labels"):
        figures.weights_heatmap(figures.AttentionGrid(np.zeros((2, 2)), key_labels=["a"]))
    with pytest.raises(ValueError, match="scores"):
        figures.weights_heatmap(np.zeros((2, 2)), scores=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="mask"):
        figures.weights_heatmap(figures.AttentionGrid(np.zeros((2, 2)), mask=np.ones((3, 3), dtype=bool)))


# ---------------------------------------------------------------- labels


def test_html_in_labels_is_escaped():
    tokens = ["<img src=x onerror=alert(1)>", "a&b", "<b>bold</b>"]
    fig = figures.weights_heatmap(figures.AttentionGrid(np.eye(3), query_labels=tokens, key_labels=tokens))
    expected = ["&lt;img src=x onerror=alert(1)&gt;", "a&amp;b", "&lt;b&gt;bold&lt;/b&gt;"]
    assert list(fig.data[0].x) == expected and list(fig.data[0].y) == expected
    grid = figures.heads_grid(
        figures.AttentionGrid(np.stack([np.eye(3)] * 2), key_labels=tokens), head_titles=["<b>h</b>", "h2"]
    )
    assert "<b>" not in json.dumps([annotation.text for annotation in grid.layout.annotations])
    comparison = figures.comparison_charts(np.eye(2), np.eye(2), label_a="<i>a</i>", label_b="b")
    assert "<i>" not in comparison[0].data[0].hovertemplate
    assert [chart.layout.title.text for chart in comparison] == [
        "&lt;i&gt;a&lt;/i&gt;",
        "b",
        "&lt;i&gt;a&lt;/i&gt; − b",
    ]


def test_duplicate_tokens_stay_distinct_categories():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    fig = figures.weights_heatmap(figures.AttentionGrid(np.full((6, 6), 1 / 6), query_labels=tokens, key_labels=tokens))
    x = list(fig.data[0].x)
    assert len(set(x)) == len(tokens)
    assert x == ["the·1", "cat", "sat", "on", "the·5", "mat"]


def test_labels_unique_even_when_a_token_looks_like_a_marked_one():
    labels = figures.unique_labels(["a·2", "a", "a"], 3)
    assert len(set(labels)) == 3


# ---------------------------------------------------------------- payload


def test_arrays_are_float32_numpy_in_every_heatmap(causal_3x4):
    scores, allowed, weights = causal_3x4
    figs = [
        figures.weights_heatmap(figures.AttentionGrid(weights.astype(np.float64), mask=allowed), scores=scores),
        figures.matrix_heatmap(scores.astype(np.float64).tolist()),
        figures.heads_grid(figures.AttentionGrid(np.stack([weights, weights]), mask=allowed)),
        *figures.comparison_charts(
            figures.AttentionGrid(weights, mask=allowed), weights[::-1], label_a="a", label_b="b"
        ),
    ]
    for fig in figs:
        for trace in fig.data:
            if trace.type == "heatmap":
                assert isinstance(trace.z, np.ndarray) and trace.z.dtype == np.float32


def test_json_payload_of_64x64_is_binary_and_compact():
    weights = RNG.dirichlet(np.ones(64), size=64)  # (64, 64) float64 from the caller
    fig = figures.weights_heatmap(weights, scores=RNG.normal(size=(64, 64)))
    payload = fig.to_json()
    z = json.loads(payload)["data"][0]["z"]
    assert z["dtype"] == "f4" and "bdata" in z
    as_lists = len(json.dumps(weights.tolist())) + len(json.dumps(RNG.normal(size=(64, 64)).tolist()))
    assert len(payload) < 0.5 * as_lists


# ---------------------------------------------------------------- matrix_heatmap


def test_matrix_heatmap_is_diverging_and_centred_on_signed_data():
    matrix = np.array([[-3.0, 1.0], [2.0, 0.5]])
    trace = figures.matrix_heatmap(matrix).data[0]
    np.testing.assert_array_equal(trace.z, matrix.astype(np.float32))
    assert (trace.zmin, trace.zmax, trace.zmid) == (-3.0, 3.0, 0.0)
    assert trace.colorscale == go.Heatmap(colorscale=style.DIVERGING_PALETTE).colorscale
    plain = figures.matrix_heatmap(matrix, symmetric=False).data[0]
    assert (plain.zmin, plain.zmax, plain.zmid) == (-3.0, 2.0, None)


def test_matrix_heatmap_handles_nan_and_huge_values():
    matrix = np.array([[np.nan, 1e40, -np.inf], [2.0, -1e300, 0.5], [1.0, 1.0, 1.0]])
    fig = figures.matrix_heatmap(matrix, title="scores")
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (-2.0, 2.0)  # the range comes from the finite values
    assert np.isnan(trace.z[0, 0])
    assert trace.z[0, 1] == 2.0 and trace.z[0, 2] == -2.0 and trace.z[1, 1] == -2.0  # ±inf: the ends of the scale
    assert np.isposinf(trace.customdata[0, 1]) and np.isneginf(trace.customdata[1, 1])  # true values for hover
    assert cell_numbers(trace)[0] == ["", "inf", "-inf"]
    json.loads(fig.to_json())  # serialises


def test_matrix_heatmap_given_bounds_and_palette():
    trace = figures.matrix_heatmap(np.eye(2), zmax=5, palette="PuOr").data[0]
    assert (trace.zmin, trace.zmax) == (-5.0, 5.0)
    assert trace.colorscale == go.Heatmap(colorscale="PuOr").colorscale


def test_matrix_heatmap_with_mask_greys_masked_scores(causal_3x4):
    scores, allowed, _ = causal_3x4
    fig = figures.matrix_heatmap(scores, mask=allowed, x_title="keys", y_title="queries")
    values, masked = figure_arrays(fig)
    np.testing.assert_array_equal(values[allowed], scores[allowed])
    np.testing.assert_array_equal(~np.isnan(masked), ~allowed)
    assert (fig.data[0].text[~allowed] == "").all()


# ---------------------------------------------------------------- heads_grid and comparison


def test_heads_grid_has_one_heatmap_per_head_on_a_shared_axis():
    weights = RNG.dirichlet(np.ones(5), size=(6, 4))  # (h=6, Q=4, K=5)
    fig = figures.heads_grid(weights, columns=4)
    heatmaps = figure_arrays(fig)
    assert len(heatmaps) == 6
    for head, z in enumerate(heatmaps):
        np.testing.assert_allclose(z, weights[head], rtol=1e-6)
    assert {trace.coloraxis for trace in fig.data} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert [annotation.text for annotation in fig.layout.annotations] == [f"head {i}" for i in range(1, 7)]


def test_heads_grid_masks_every_head(causal_3x4):
    _, allowed, weights = causal_3x4
    fig = figures.heads_grid(figures.AttentionGrid(np.stack([weights] * 3), mask=allowed))
    assert len(traces(fig, "masked")) == 3 and len(traces(fig, style.MASK_NAME)) == 1
    for trace in fig.data[:3]:
        assert np.isnan(trace.z[~allowed]).all()


def test_comparison_difference_panel_is_a_minus_b(causal_3x4):
    _, allowed, weights_a = causal_3x4
    weights_b = softmax_rows(np.zeros((3, 4)), allowed)  # uniform over the allowed keys
    charts = figures.comparison_charts(
        figures.AttentionGrid(weights_a, mask=allowed), weights_b, label_a="dot", label_b="additive"
    )
    panel_a, panel_b, difference = (figure_arrays(chart)[0] for chart in charts)
    np.testing.assert_allclose(difference[allowed], (weights_a - weights_b)[allowed], atol=1e-7)
    np.testing.assert_array_equal(panel_a[allowed], weights_a[allowed])
    np.testing.assert_array_equal(panel_b[allowed], weights_b[allowed])
    assert np.isnan(difference[~allowed]).all()
    assert (charts[2].data[0].zmin, charts[2].data[0].zmax) == (-1.0, 1.0)
    assert [chart.layout.title.text for chart in charts] == ["dot", "additive", "dot − additive"]


def test_comparison_labels_every_token_of_each_chart():
    """Issue 14, point 10: every token labels its row and its column (Plotly skipped every second one of 16)."""
    weights = RNG.dirichlet(np.ones(16), size=16).astype(np.float32)
    for chart in figures.comparison_charts(weights, weights[::-1], label_a="Scaled dot product", label_b="Additive"):
        for axis in (chart.layout.xaxis, chart.layout.yaxis):
            assert axis.tickmode == "linear" and axis.dtick == 1


def test_comparison_rejects_different_shapes():
    with pytest.raises(ValueError, match="differs"):
        figures.comparison_charts(np.eye(2), np.eye(3), label_a="a", label_b="b")


# ---------------------------------------------------------------- kernel regression, loss, bars


def test_kernel_figure_breaks_the_prediction_where_no_key_is_in_reach():
    x_query = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    y_pred = np.array([0.5, 0.7, 0.9, 1.1, 1.3])
    no_support = np.array([True, False, False, True, False])
    fig = kernel_figures.kernel_regression_figure(
        [0.5, 1.5, 2.5], [1.0, 2.0, 3.0], x_query, y_pred, y_true=np.sin(x_query), no_support=no_support
    )
    (prediction,) = traces(fig, "prediction")
    np.testing.assert_array_equal(np.isnan(prediction.y), no_support)
    np.testing.assert_array_equal(prediction.y[~no_support], y_pred[~no_support].astype(np.float32))
    assert prediction.connectgaps is False
    (marks,) = traces(fig, style.NO_SUPPORT_NAME)
    np.testing.assert_array_equal(marks.x, [0.0, 3.0])
    assert {trace.name for trace in fig.data} >= {message("fig.training_data"), message("fig.true_function")}


def test_kernel_figure_sorts_queries_consistently():
    fig = kernel_figures.kernel_regression_figure(
        [0.0], [1.0], [2.0, 0.0, 1.0], [20.0, 0.0, 10.0], no_support=[1, 0, 0]
    )
    (prediction,) = traces(fig, "prediction")
    np.testing.assert_array_equal(prediction.x, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(prediction.y, [0.0, 10.0, np.nan])
    assert not traces(kernel_figures.kernel_regression_figure([0.0], [1.0], [1.0], [1.0]), style.NO_SUPPORT_NAME)


def test_loss_curve_epochs_and_log_scale():
    losses = np.geomspace(10.0, 0.01, 20)  # three decades
    fig = kernel_figures.loss_curve(losses)
    np.testing.assert_array_equal(fig.data[0].x, np.arange(1, 21))
    np.testing.assert_allclose(fig.data[0].y, losses, rtol=1e-6)
    assert fig.layout.yaxis.type == "log"
    assert kernel_figures.loss_curve([2.0, 1.5, 1.2]).layout.yaxis.type != "log"
    assert kernel_figures.loss_curve([1.0, 0.0]).layout.yaxis.type != "log"  # zero cannot go on a log axis


def test_a_log_loss_axis_is_labelled_in_full_and_in_order():
    """A loss falling from 5 to 0.1 was labelled "5, 2, 1, 5, 2, 0.1" (Plotly's digits between the powers of ten)."""
    fig = learned_figures.learning_curves([1, 50, 100], [5.0, 0.6, 0.1], [10.0, 60.0, 100.0])
    axis = fig.layout.yaxis
    assert axis.type == "log"
    assert list(axis.ticktext) == ["0.1", "0.2", "0.5", "1", "2", "5"]
    np.testing.assert_allclose(axis.tickvals, [0.1, 0.2, 0.5, 1, 2, 5])
    wide = kernel_figures.loss_curve(np.geomspace(1000.0, 0.001, 30)).layout.yaxis  # six decades: the powers only
    assert list(wide.ticktext) == ["0.001", "0.01", "0.1", "1", "10", "100", "1000"]


# ---------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("name", "slug"),
    [("Self attention: weights!", "self_attention_weights"), ("../../etc/passwd", "etc_passwd"), ("注意力", "figure")],
)
def test_chart_config_slugifies_the_file_name(name, slug):
    config = figures.chart_config(name)
    assert config == {"toImageButtonOptions": {"format": "png", "filename": slug, "scale": 2}, "displaylogo": False}


def test_figures_show_the_cores_numbers():
    attnviz = pytest.importorskip("attnviz")
    queries = RNG.normal(size=(3, 4)).astype(np.float32)
    keys = RNG.normal(size=(5, 4)).astype(np.float32)
    trace = attnviz.attend(queries, keys, np.eye(5, dtype=np.float32), causal=True)
    weights, mask = trace.weights.numpy(), trace.mask.numpy()
    fig = figures.weights_heatmap(figures.AttentionGrid(weights, mask=mask), scores=trace.scores.numpy())
    z = figure_arrays(fig)[0]
    np.testing.assert_array_equal(z[mask], weights[mask])
    assert (weights[~mask] == 0).all() and np.isnan(z[~mask]).all()


# ---------------------------------------------------------------- built without Plotly's validators


def every_builder(causal_3x4) -> dict[str, go.Figure]:
    """One figure from each builder, with masks, labels, infinities and several panels where they apply."""
    scores, allowed, weights = causal_3x4
    with_inf = np.where(allowed, scores, -np.inf)
    labels = ["<b>the</b>", "cat", "the", "mat"]
    return {
        "weights": figures.weights_heatmap(
            figures.AttentionGrid(weights, mask=allowed, key_labels=labels), scores=scores, title="w"
        ),
        "weights_plain": figures.weights_heatmap(weights[:, :3], palette="Viridis"),
        "weights_row": figures.weights_heatmap(
            figures.AttentionGrid(weights, mask=allowed), scores=scores, colour_range="row"
        ),
        "weights_data": figures.weights_heatmap(figures.AttentionGrid(weights, mask=allowed), colour_range="data"),
        "matrix": figures.matrix_heatmap(with_inf, mask=allowed, x_title="keys", y_title="queries", title="s"),
        "matrix_plain": figures.matrix_heatmap(weights, symmetric=False, show_values=False),
        "heads": figures.heads_grid(
            figures.AttentionGrid(np.stack([weights] * 6), mask=allowed, key_labels=labels), columns=4
        ),
        "heads_open": figures.heads_grid(np.stack([weights] * 3), columns=2),
        "heads_row": figures.heads_grid(
            figures.AttentionGrid(np.stack([weights] * 2), mask=allowed), colour_range="row"
        ),
        **{
            f"compare_{part}": chart
            for part, chart in zip(
                ("a", "b", "difference"),
                figures.comparison_charts(
                    figures.AttentionGrid(weights, mask=allowed), weights[::-1], label_a="a", label_b="b"
                ),
                strict=True,
            )
        },
        "compare_row": figures.comparison_charts(weights, weights[::-1], label_a="a", label_b="b", colour_range="row")[
            0
        ],
        "kernel": kernel_figures.kernel_regression_figure(
            [0, 1, 2],
            [1, 2, 3],
            [0.5, 5.0],
            [1.5, 0.0],
            y_true=[1.5, 6.0],
            no_support=[False, True],
            points=([0.5], [1.5]),
            extra_curve=([1.4, 2.0], "learned σ = <b>1</b>"),
        ),
        "loss": kernel_figures.loss_curve([3.0, 2.0, 0.01]),
        "model_view": model_figures.model_view(
            np.stack([np.stack([weights] * 3)] * 2), selected_layer=2, selected_heads=(1, 3)
        ),
        "neuron_view": model_figures.neuron_view(
            scores[:, 0], scores.T, scores[0], weights[0], key_labels=labels, query_label="<b>q</b>"
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "weights",
        "weights_plain",
        "weights_row",
        "weights_data",
        "matrix",
        "matrix_plain",
        "heads",
        "heads_open",
        "heads_row",
        "compare_a",
        "compare_b",
        "compare_difference",
        "compare_row",
        "kernel",
        "loss",
        "model_view",
        "neuron_view",
    ],
)
def test_every_figure_passes_plotlys_validators_unchanged(causal_3x4, name):
    fig = every_builder(causal_3x4)[name]
    payload = json.loads(fig.to_json())
    validated = go.Figure(fig.to_dict())  # validate=True: raises on any property Plotly does not know
    assert json.loads(validated.to_json()) == payload


@pytest.mark.parametrize(("heads", "columns"), [(1, 4), (3, 2), (6, 4), (8, 4), (5, 1)])
def test_heads_grid_geometry_matches_make_subplots(heads, columns):
    from plotly.subplots import make_subplots

    fig = figures.heads_grid(np.full((heads, 2, 2), 0.5), columns=columns)
    cols = min(columns, heads)
    rows = -(-heads // cols)
    specs = [[{} if r * cols + c < heads else None for c in range(cols)] for r in range(rows)]
    titles = [f"head {h + 1}" for h in range(heads)]
    spacing = min(0.12, 0.5 / max(rows - 1, 1))
    reference = make_subplots(
        rows, cols, specs=specs, subplot_titles=titles, horizontal_spacing=0.03, vertical_spacing=spacing
    ).layout
    for panel in range(1, heads + 1):
        suffix = "" if panel == 1 else str(panel)
        for axis in (f"xaxis{suffix}", f"yaxis{suffix}"):
            np.testing.assert_allclose(fig.layout[axis].domain, reference[axis].domain, atol=1e-9)
            assert fig.layout[axis].anchor == reference[axis].anchor
    ours = [(a.text, a.x, a.y) for a in fig.layout.annotations]
    theirs = [(a.text, a.x, a.y) for a in reference.annotations]
    assert [t for t, _, _ in ours] == [t for t, _, _ in theirs]
    np.testing.assert_allclose([xy for _, *xy in ours], [xy for _, *xy in theirs], atol=1e-9)


def test_large_heatmaps_leave_raw_scores_out_of_the_hover_to_halve_the_payload():
    rng = np.random.default_rng(80)  # its own numbers, whatever ran before
    weights = rng.dirichlet(np.ones(80), size=80).astype(np.float32)  # 6,400 cells > 64 x 64
    small = figures.weights_heatmap(weights[:8, :8], scores=weights[:8, :8])
    large = figures.weights_heatmap(weights, scores=rng.normal(size=(80, 80)))
    assert small.data[0].customdata is not None and "score" in small.data[0].hovertemplate
    assert large.data[0].customdata is None and "score" not in large.data[0].hovertemplate
    # one float32 array (base64: 4/3 of its bytes) and little else; the raw scores would add as much again
    assert len(large.to_json()) < 1.2 * (4 / 3) * weights.nbytes


def test_kernel_figure_marks_queries_and_draws_the_extra_curve_over_the_sorted_grid():
    fig = kernel_figures.kernel_regression_figure(
        [0, 1], [0, 1], [2.0, 0.0, 1.0], [0.2, 0.0, 0.1], points=([1.0], [0.1]), extra_curve=([20, 0, 10], "σ<b>")
    )
    extra = next(trace for trace in fig.data if trace.name == "σ&lt;b&gt;")  # escaped: shown, not markup
    np.testing.assert_array_equal(extra.x, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(extra.y, [0, 10, 20])  # reordered with the grid
    marked = next(trace for trace in fig.data if trace.name == "queries")
    assert list(marked.x) == [1.0] and list(marked.y) == pytest.approx([0.1])
    with pytest.raises(ValueError, match="one value per grid point"):
        kernel_figures.kernel_regression_figure([0], [0], [0.0, 1.0], [0, 0], extra_curve=([1], "x"))


# ---------------------------------------------------------------- the pretrained-model page


def test_model_view_tiles_every_head_as_bytes_and_outlines_the_chosen_ones():
    views = RNG.dirichlet(np.ones(5), size=(6, 12, 4)).astype(np.float32)  # (L, h, r, c): 4 queries, 5 keys
    queries, keys = ["[CLS]", "a", "b", "[SEP]"], ["[CLS]", "a", "b", "c", "[SEP]"]
    fig = model_figures.model_view(views, row_labels=queries, col_labels=keys, selected_layer=3, selected_heads=(2, 7))
    assert [trace.type for trace in fig.data] == ["heatmap", "scatter"]  # the tiles, and a point per head to click
    targets = fig.data[1]
    assert len(targets.x) == 6 * 12 and list(targets.customdata[13]) == [2, 2]  # layer 2, head 2
    assert targets.x[13] == fig.data[0].x[1 * 5 + 2] and targets.y[13] == fig.data[0].y[1 * 4 + 2]  # its centre
    z = np.asarray(fig.data[0].z)
    assert z.dtype == np.uint8 and z.shape == (6 * 4, 12 * 5)
    tile = z[2 * 4 : 3 * 4, 6 * 5 : 7 * 5]  # layer 3, head 7
    np.testing.assert_array_equal(tile, np.rint(views[2, 6] * model_figures.LEVELS))
    assert fig.data[0].y[2 * 4 + 1] == "layer 3, query a" and fig.data[0].x[6 * 5 + 3] == "head 7, key c"
    assert fig.layout.coloraxis.cmax is None and fig.data[0].zmax == model_figures.LEVELS
    assert list(fig.data[0].colorbar.ticktext) == ["0", "0.25", "0.5", "0.75", "1"]
    assert list(fig.layout.xaxis.ticktext) == [f"head {h}" for h in range(1, 13)]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 11 + 5  # white lines between the heads and between the layers
    boxes = [(s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes if s.type == "rect"]
    assert boxes == [(4.5, 9.5, 7.5, 11.5), (29.5, 34.5, 7.5, 11.5)]  # exactly around head 2 and head 7 of layer 3
    big = model_figures.model_view(RNG.dirichlet(np.ones(64), size=(6, 12, 64)).astype(np.float32))
    cells = 6 * 12 * 64 * 64
    assert len(big.to_json()) < 1.4 * cells + 60_000  # a byte a cell in base64 (float32 would be 5.3 bytes a cell)


@pytest.mark.parametrize(("count", "named"), [(13, 13), (24, 24), (60, 20)])
def test_neuron_view_names_every_key_up_to_the_tick_limit_then_every_kth(count, named):
    rng = np.random.default_rng(0)
    labels = [f"w{i}" for i in range(count)]
    fig = model_figures.neuron_view(
        rng.normal(size=4), rng.normal(size=(count, 4)), rng.normal(size=count), np.full(count, 1 / count),
        key_labels=labels,
    )  # fmt: skip
    axis = fig.to_plotly_json()["layout"]["yaxis2"]  # the keys' panel, whose labels are shown
    shown = labels if axis.get("tickmode") == "linear" and axis.get("dtick") == 1 else axis.get("tickvals")
    assert shown is not None and len(shown) == named and shown[0] == "w0"


def test_neuron_view_products_sum_to_the_dot_products():
    query = RNG.normal(size=8).astype(np.float32)
    keys = RNG.normal(size=(5, 8)).astype(np.float32)
    scaled = keys @ query / np.sqrt(8)
    weights = np.exp(scaled) / np.exp(scaled).sum()
    fig = model_figures.neuron_view(query, keys, scaled, weights, key_labels=list("abcde"), query_label="it")
    q, k, products, scores, probs = (np.asarray(t.z) for t in fig.data)
    np.testing.assert_array_equal(q[0], query)
    np.testing.assert_array_equal(k, keys)
    np.testing.assert_allclose(products.sum(axis=1) / np.sqrt(8), scores[:, 0], rtol=1e-5)
    np.testing.assert_array_equal(probs[:, 0], weights.astype(np.float32))
    assert "it" in fig.layout.title.text
    with pytest.raises(ValueError, match="features"):
        model_figures.neuron_view(query[:3], keys, scaled, weights)
    with pytest.raises(ValueError, match="one score and one weight per key"):
        model_figures.neuron_view(query, keys, scaled[:2], weights)


def _rgb(colour: str) -> np.ndarray:
    return np.array(
        plotly.colors.hex_to_rgb(colour) if colour.startswith("#") else plotly.colors.unlabel_rgb(colour), dtype=float
    )


@pytest.mark.parametrize("palette", ["Cividis", "Viridis", "Magma", "Greys", "RdBu_r"])
def test_masked_cells_have_a_colour_that_no_weight_has_in_any_palette(palette):
    """Issue 14, point 11: in Greys, the old light grey of masked cells was the colour of a weight of 0.25."""
    stops = [list(stop) for stop in go.Heatmap(colorscale=palette).colorscale]
    colours = np.array([_rgb(c) for c in plotly.colors.sample_colorscale(stops, list(np.linspace(0, 1, 201)))])
    distance = np.linalg.norm(colours - _rgb(style.MASK_COLOUR), axis=1).min()
    assert distance > 100, (palette, distance)  # of 441 between black and white


def test_numbers_are_printed_in_cells_only_where_they_fit():
    """The 1 x 32 concat heatmap printed 32 overlapping numbers; on a 390 px phone 12 columns of "0.14" were 6 px
    (issue 40): numbers are printed only where they fit a phone at 10 px or more."""
    assert figures.weights_heatmap(RNG.dirichlet(np.ones(32), size=1)).data[0].texttemplate is None
    nine = figures.weights_heatmap(RNG.dirichlet(np.ones(9), size=9)).data[0]
    assert nine.texttemplate == "%{text}" and nine.textfont.size >= 10
    assert figures.weights_heatmap(RNG.dirichlet(np.ones(12), size=12)).data[0].texttemplate is None
    assert figures.matrix_heatmap(RNG.normal(size=(2, 13))).data[0].texttemplate is None
    assert figures.matrix_heatmap(RNG.normal(size=(6, 5))).data[0].texttemplate == "%{text}"
    long = RNG.uniform(-0.9, -0.2, size=(6, 8))  # "-0.523": 8 columns of 6 characters do not fit at 10 px
    assert figures.matrix_heatmap(long).data[0].texttemplate is None


def test_tick_labels_are_thinned_on_purpose_and_all_stay_in_the_hover():
    few = figures.weights_heatmap(RNG.dirichlet(np.ones(16), size=16))
    assert few.layout.xaxis.tickmode == "linear" and few.layout.xaxis.dtick == 1  # every one of 16 tokens
    labels = [f"t{i}" for i in range(64)]
    many = figures.weights_heatmap(
        figures.AttentionGrid(RNG.dirichlet(np.ones(64), size=64), query_labels=labels, key_labels=labels)
    )
    for axis in (many.layout.xaxis, many.layout.yaxis):
        assert axis.tickmode == "array" and list(axis.tickvals) == labels[::3]  # 22 of 64, evenly
    assert list(many.data[0].x) == labels and "%{x}" in many.data[0].hovertemplate  # every label in the hover
    grid = figures.heads_grid(figures.AttentionGrid(RNG.dirichlet(np.ones(20), size=(2, 20)), key_labels=labels[:20]))
    assert list(grid.layout.xaxis.tickvals) == labels[:20:2]  # small panels: at most 12 labels


def test_a_grid_prints_numbers_only_where_they_fit_across_its_panels():
    """Two heads of 10 keys side by side printed "0.500.50×××" over each other in two narrow panels."""
    allowed = np.tile(np.arange(10) < 2, (1, 1))
    wide = figures.heads_grid(
        figures.AttentionGrid(np.stack([np.full((1, 10), 0.1, np.float32)] * 2), mask=allowed), columns=4
    )
    assert all(trace.text is None for trace in wide.data if trace.type == "heatmap")  # neither numbers nor "×"
    narrow = figures.heads_grid(np.stack([np.full((2, 4), 0.25, np.float32)] * 2), columns=4)
    assert narrow.data[0].texttemplate == "%{text}"  # 8 columns across: they fit
    assert figures.weights_heatmap(np.full((1, 9), 0.1, np.float32)).data[0].texttemplate == "%{text}"


def test_a_charts_own_range_says_how_far_apart_its_weights_are():
    """Issue 40: 0.09-0.20 spans the whole palette and looks decisive; the colour bar says the spread in words."""
    soft = np.array([[0.09, 0.2, 0.15], [0.12, 0.1, 0.18]], dtype=np.float32)
    title = figures.weights_heatmap(soft, colour_range="data").data[0].colorbar.title.text
    assert t("fig.nearly_uniform", "en", spread=t("fig.spread_ratio", "en", ratio="2.2")) in title  # 0.20 / 0.09
    sharp = np.array([[0.01, 0.4], [0.5, 0.09]], dtype=np.float32)
    title = figures.weights_heatmap(sharp, colour_range="data", lang="zh-Hans").data[0].colorbar.title.text
    assert (
        t("fig.spread_ratio", "zh-Hans", ratio="50") in title
        and t("fig.nearly_uniform", "zh-Hans", spread="") not in title
    )
    tiny = figures.weights_heatmap(np.array([[1.26e-8, 0.5, 0.5]], np.float32), colour_range="data").data[0]
    assert t("fig.spread_range", "en", low="1.3e-08", high="0.5") in tiny.colorbar.title.text  # not "39824783×"
    zero = figures.weights_heatmap(np.array([[0.0, 1.0]], np.float32), colour_range="data").data[0]
    assert t("fig.spread_range", "en", low="0", high="1") in zero.colorbar.title.text
    flat = figures.weights_heatmap(np.full((2, 2), 0.5, np.float32), colour_range="data").data[0]
    assert "×" not in flat.colorbar.title.text  # nothing to compare
    grid = figures.heads_grid(np.stack([soft, soft]), colour_range="data")
    assert t("fig.spread_ratio", "en", ratio="2.2") in grid.layout.coloraxis.colorbar.title.text
    assert "×" not in figures.weights_heatmap(soft, colour_range="unit").data[0].colorbar.title.text


def test_two_steps_of_training_share_one_scale():
    """Issue 40: scaled row by row, the untrained model's near-uniform weights looked sharply striped."""
    from attnviz.figures import learned

    untrained = np.array([[0.26, 0.24, 0.25, 0.25], [0.24, 0.26, 0.25, 0.25]], np.float32)
    trained = np.array([[0.97, 0.01, 0.01, 0.01], [0.01, 0.01, 0.97, 0.01]], np.float32)
    fig = learned.two_steps(untrained, trained, first_title="0", second_title="300", palette="cividis")
    axis = fig.layout.coloraxis
    assert (axis.cmin, axis.cmax) == (0.0, 1.0)  # one 0-1 scale for both panels
    assert all(trace.coloraxis == "coloraxis" for trace in fig.data if trace.type == "heatmap")
    z = [np.asarray(trace.z, dtype=float) for trace in fig.data if trace.type == "heatmap"]
    np.testing.assert_allclose(z[0], untrained, atol=1e-6)  # the weights themselves, not their place on each row
    assert says(axis.colorbar.title.text, "fig.range_unit")


def test_a_heads_grid_can_keep_its_cells_square_at_any_width():
    """Issue 40 §4: on a phone the induction model's 2x2 grid stretched each 17 x 17 panel into a tall strip."""
    weights = np.full((4, 17, 17), 1 / 17, np.float32)
    fig = figures.heads_grid(weights, columns=2, square=True)
    for panel in range(1, 5):
        y, x = fig.layout[f"yaxis{panel if panel > 1 else ''}"], fig.layout[f"xaxis{panel if panel > 1 else ''}"]
        assert y.scaleanchor == (f"x{panel}" if panel > 1 else "x") and y.scaleratio == 1
        assert y.constrain == x.constrain == "domain"
    assert figures.heads_grid(weights, columns=2).layout.yaxis.scaleanchor is None
    phone = figures.heads_grid(weights, columns=1, square=True, width=360).layout.height
    assert phone == 4 * ((360 - 150) + 60 + 50) + 120  # four panels as tall as they are wide, each with its keys
    # 10 queries, 16 keys (a date's output against its input): each panel 10/16 as tall as it is wide
    flat = figures.heads_grid(np.full((2, 10, 16), 1 / 16, np.float32), columns=1, square=True, width=360)
    assert flat.layout.height == int(2 * ((360 - 150) * 10 / 16 + 60 + 50) + 120)


def test_on_a_phone_every_panel_of_a_heads_grid_names_its_keys():
    """One panel per row on a phone: a student scrolled past the first panels' keys, which only the bottom panel
    named; on a wide screen the bottom row names them for the panels above."""
    weights = np.full((4, 6, 6), 1 / 6, np.float32)

    def labelled(fig) -> list[bool]:
        return [bool(fig.layout[f"xaxis{panel if panel > 1 else ''}"].showticklabels) for panel in range(1, 5)]

    assert labelled(figures.heads_grid(weights, columns=1, square=True, width=360)) == [True] * 4
    assert labelled(figures.heads_grid(weights, columns=1)) == [False, False, False, True]
    assert labelled(figures.heads_grid(weights, columns=2)) == [False, False, True, True]


def test_a_heads_grids_panels_without_labels_have_no_tick_marks_and_the_mask_legend_clears_the_toolbar():
    """A right panel's query tick marks fell on its left neighbour's last column (white dashes over its cells); the
    mask's legend sat at the figure's top edge, under Plotly's toolbar, which a phone always shows."""
    weights = np.tril(np.ones((4, 6, 6), np.float32))
    weights /= weights.sum(-1, keepdims=True)
    fig = figures.heads_grid(figures.AttentionGrid(weights, mask=weights > 0), columns=2)
    y = [fig.layout[f"yaxis{panel if panel > 1 else ''}"] for panel in range(1, 5)]
    x = [fig.layout[f"xaxis{panel if panel > 1 else ''}"] for panel in range(1, 5)]
    assert [axis.ticks for axis in y] == [None, "", None, ""]  # the left column keeps the template's marks
    assert [axis.ticks for axis in x] == ["", "", None, None]
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.yanchor == "top"
    assert (1 - legend.y) * fig.layout.height >= 36  # below the toolbar's 36 px
