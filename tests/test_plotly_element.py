"""The chart element sent from a figure's JSON (attnviz.app.ui.plotly_element and
attnviz.app.streamlit_patches.plotly_chart) is the element st.plotly_chart makes."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.figures import attention as figures
from attnviz.figures import kernel as kernel_figures
from attnviz.figures import model as model_figures


def _script(method: str, which: str, key: str | None, on_select: str) -> None:
    import numpy as np
    import streamlit as st

    from attnviz.app.streamlit_patches.plotly_chart import plotly_json_chart
    from attnviz.app.ui.plotly_element import figure_json
    from attnviz.figures import attention as figures
    from attnviz.figures import model as model_figures
    from attnviz.figures.attention import chart_config

    rng = np.random.default_rng(0)
    if which == "weights":
        weights = rng.dirichlet(np.ones(5), size=4).astype("float32")
        fig = figures.weights_heatmap(
            figures.AttentionGrid(weights, query_labels=list("abcd"), key_labels=list("vwxyz")),
            scores=rng.normal(size=(4, 5)),
            title="t",
        )
    elif which == "grid":  # masked heads with their cells' numbers printed: object text arrays, mask traces
        weights = rng.dirichlet(np.ones(6), size=(4, 6)).astype("float32")
        fig = figures.heads_grid(
            figures.AttentionGrid(weights, mask=np.tril(np.ones((6, 6), bool)), query_labels=list("abcdef"))
        )
    elif which == "mixed":  # every kind of array the base64 step meets, and the places it leaves alone, kept as
        import pandas as pd  # they are given (as attnviz's figures are made: plotting.make_figure, no validation)
        import plotly.graph_objects as go

        grid = rng.normal(size=(5, 4))
        data = [
            {"type": "heatmap", "z": grid.T, "x": np.arange(5), "y": np.arange(4, dtype="int64") * 2**40},
            {"type": "heatmap", "z": grid.astype("float32"), "text": grid.astype(str),
             "customdata": grid.astype(object)},
            {"type": "scatter", "x": pd.Series([1.5, 2.5]), "y": np.array([1, 2], dtype="uint64"),
             "customdata": [np.ones(2)], "marker": {"size": np.array([3, 4], dtype="int8")}},
            {"type": "bar", "x": np.array(["a", "b"]), "y": np.array([1, 300], dtype="int64"),
             "width": np.float64(0.5)},
            {"type": "scatter", "x": np.array([], dtype="float32"), "y": np.zeros(3, dtype=">f8")},
        ]  # fmt: skip
        layout = {"xaxis": {"range": np.array([0.0, 4.0])}, "meta": [{"a": np.arange(3, dtype="int16")}], "height": 300}
        fig = go.Figure({"data": data, "layout": layout}, _validate=False)
        fig.frames = [go.Frame(data=[go.Scatter(y=np.arange(3, dtype="float32"))])]
    else:
        views = rng.integers(0, 255, size=(6, 12, 8, 8)).astype("uint8")
        fig = model_figures.model_view(
            views, row_labels=list("abcdefgh"), col_labels=list("abcdefgh"), selected_layer=2, selected_heads=(3,)
        )
    select = {} if on_select == "ignore" else {"on_select": on_select, "selection_mode": "points"}
    if method == "streamlit":
        st.plotly_chart(fig, width="stretch", config=chart_config("x"), key=key, **select)
    else:
        spec, height = figure_json(fig)
        plotly_json_chart(spec, height, config=chart_config("x"), key=key, **select)
    st.session_state["z_after"] = fig.data[0].z


def _element(method: str, which: str, key: str | None, on_select: str) -> tuple[object, dict]:
    at = AppTest.from_function(_script, args=(method, which, key, on_select)).run()
    assert not at.exception, at.exception
    (element,) = at.get("plotly_chart")
    return element.proto, at.session_state["z_after"]


@pytest.mark.parametrize("which", ["weights", "grid", "mixed", "model_view"])
@pytest.mark.parametrize(("key", "on_select"), [(None, "ignore"), ("view", "rerun")])
def test_same_element_as_st_plotly_chart(which: str, key: str | None, on_select: str) -> None:
    ours, z_after = _element("json", which, key, on_select)
    theirs, _ = _element("streamlit", which, key, on_select)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert len(ours.spec) > 1000 and ours.id
    # Making the JSON does not change the figure (the base64 step replaces arrays in a copy of their containers)
    assert isinstance(z_after, np.ndarray)


def test_height_from_the_layout() -> None:
    """The height st.plotly_chart gives the element's layout (its own function, on the figure it would send)."""
    from streamlit.elements.plotly_chart import _resolve_content_height

    from attnviz.app.ui.plotly_element import figure_json

    fig = figures.weights_heatmap(
        figures.AttentionGrid(np.full((2, 3), 1 / 3), query_labels=["a", "b"], key_labels=["x", "y", "z"])
    )
    for height in (321, None):
        fig.update_layout(height=height)
        assert figure_json(fig)[1] == _resolve_content_height("content", fig.to_dict())
    assert figure_json(fig)[1] == 450
    views = np.zeros((6, 12, 2, 2), dtype="uint8")
    assert figure_json(model_figures.model_view(views, row_labels=["a", "b"], col_labels=["a", "b"]))[1] > 0


def _spec_cases() -> list:
    rng = np.random.default_rng(3)
    weights = rng.dirichlet(np.ones(6), size=5).astype("float32")
    mask = np.tril(np.ones((5, 6), bool))
    scores, keys, values = rng.normal(size=(5, 6)), np.sort(rng.uniform(0, 5, 12)), rng.normal(size=12)
    grid = np.linspace(0, 5, 40)
    return [
        lambda: figures.weights_heatmap(figures.AttentionGrid(weights, query_labels=list("abcde")), scores=scores),
        lambda: figures.weights_heatmap(figures.AttentionGrid(weights, mask=mask), colour_range="row", lang="zh_Hans"),
        lambda: figures.weights_heatmap(weights, colour_range="data", show_values=True, title="<b>x</b>"),
        lambda: kernel_figures.kernel_regression_figure(
            keys,
            values,
            grid,
            np.sin(grid),
            y_true=np.cos(grid),
            no_support=grid > 4.5,
            points=([1.0, 2.0], [0.3, 0.4]),
        ),
    ]


@pytest.mark.parametrize("case", range(4))
def test_a_figure_spec_sends_the_same_figure_as_its_plotly_figure(case: int) -> None:
    """Inside figure_specs() a builder gives its dicts; their JSON is the Figure's, up to the order of keys."""
    import json

    from attnviz.app.ui.plotly_element import figure_json
    from attnviz.figures.plotting import FigureSpec, figure_specs

    build = _spec_cases()[case]
    with figure_specs():
        spec = build()
    assert isinstance(spec, FigureSpec)
    figure = build()  # outside the block: a Plotly Figure, as before
    assert not isinstance(figure, FigureSpec)
    (spec_json, spec_height), (figure_json_, figure_height) = figure_json(spec), figure_json(figure)
    assert json.loads(spec_json) == json.loads(figure_json_) and spec_height == figure_height
    assert json.loads(figure_json(spec.figure())[0]) == json.loads(figure_json_)


def test_the_self_attention_pages_main_chart_makes_no_plotly_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A control change on the self-attention page sends its weights chart from the builder's dicts: no Plotly
    Figure (~0.3 ms each) is made, unless its tables are opened."""
    import plotly.graph_objects as go

    from tests.test_app import ROOT, SELF

    made = []
    init = go.Figure.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(go.Figure, "__init__", counting)
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=90).run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    made.clear()
    next(n for n in at.number_input if n.key == "w:self:temperature").set_value(1.7).run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    assert made == []
    at.session_state["self:open:raw"] = True  # the numbers' section builds the Figure for its tables
    at.run()
    assert not at.exception and made
