"""Pure Plotly builders for the kernel-attention page: the Nadaraya–Watson regression, and the loss while σ is
learned."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.plotting import Trace, as_vector, log_axis, make_figure, word
from attnviz.figures.style import BLACK, BLUE, GREEN, ORANGE, VERMILLION
from attnviz.i18n import DEFAULT_LANGUAGE


def _scatter(x: np.ndarray, y: np.ndarray, name: str, x_name: str, y_name: str, **style: Any) -> Trace:
    """Points (default) or a line, NaN drawn as a gap, with a hover naming both coordinates (y_name "" hides y)."""
    y_part = f"<br>{y_name}: %{{y:.4~g}}" if y_name else f"<br>{name}"
    hover = f"{x_name}: %{{x:.4~g}}{y_part}<extra></extra>"
    style = {"mode": "markers", **style}
    return {"type": "scatter", "x": x, "y": y, "name": name, "hovertemplate": hover, "connectgaps": False, **style}


def kernel_regression_figure(
    x_train: Any,
    y_train: Any,
    x_query: Any,
    y_pred: Any,
    *,
    y_true: Any = None,
    no_support: Any = None,
    points: tuple[Any, Any] | None = None,
    extra_curve: tuple[Any, str] | None = None,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Training points, the true function and the prediction; gaps and × marks where no key was in reach.

    `points` = (x, y) marks chosen queries and their predictions; `extra_curve` = (y, name) adds a dashed curve
    over the query grid `x_query` (e.g. the prediction with a learned σ).
    """
    title = word("nadaraya_watson", lang) if title is None else title
    keys, values = as_vector(x_train, "x_train"), as_vector(y_train, "y_train")  # (n,) each
    queries, predictions = as_vector(x_query, "x_query"), as_vector(y_pred, "y_pred")  # (m,) each
    if keys.shape != values.shape or queries.shape != predictions.shape:
        raise ValueError("x_train/y_train and x_query/y_pred must have matching lengths")
    order = np.argsort(queries, kind="stable")  # lines are drawn left to right
    queries, predictions = queries[order], predictions[order]
    empty = np.zeros(queries.shape, bool) if no_support is None else np.asarray(no_support, bool).ravel()
    if empty.shape != queries.shape:
        raise ValueError("no_support must have one flag per query")
    empty = empty[order]
    predictions = np.where(empty, np.float32(np.nan), predictions).astype(np.float32)  # NaN: a gap in the line
    dots = {"color": ORANGE, "size": 7, "opacity": 0.8}
    data = [
        _scatter(keys, values, word("training_data", lang), word("key_x", lang), word("value_y", lang), marker=dots)
    ]
    data += _regression_curves(queries, order, predictions, y_true, extra_curve, lang)
    if points is not None:
        marked_x, marked_y = as_vector(points[0], "points x"), as_vector(points[1], "points y")
        if marked_x.shape != marked_y.shape:
            raise ValueError("points x and y must have the same length")
        diamond = {"symbol": "diamond", "size": 11, "color": VERMILLION}
        query_x, prediction = word("query_x", lang), word("prediction", lang)
        data.append(_scatter(marked_x, marked_y, word("queries", lang), query_x, prediction, marker=diamond))
    layout: dict[str, Any] = {
        "title": {"text": title},
        # below the x axis: on a phone the entries wrap onto several lines, which above the plot ran into the title
        "legend": {"orientation": "h", "x": 0.0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
        "margin": {"t": 60},
        "showlegend": True,
        "xaxis": {"title": {"text": word("x_axis", lang)}},
        "yaxis": {"title": {"text": word("y_axis", lang)}},
    }
    if empty.any():
        data.append(_no_support_marks(queries[empty], lang))
        layout["yaxis2"] = {"overlaying": "y", "range": [0.0, 1.0], "visible": False, "fixedrange": True}
    return make_figure(data, layout)


def _regression_curves(
    queries: np.ndarray,
    order: np.ndarray,
    predictions: np.ndarray,
    y_true: Any,
    extra_curve: tuple[Any, str] | None,
    lang: str,
) -> list[Trace]:
    """The lines over the sorted query grid (`order` sorts the given one): the true function (dashed, if given),
    the prediction, and the extra curve (dashed, if given)."""
    query_x, prediction = word("query_x", lang), word("prediction", lang)
    data = []
    if y_true is not None:
        truth = as_vector(y_true, "y_true")
        if truth.shape != queries.shape:
            raise ValueError("y_true must have one value per query")
        dashed = {"color": BLACK, "dash": "dash", "width": 2}
        truth_name = word("true_function", lang)
        data.append(_scatter(queries, truth[order], truth_name, "x", word("true_y", lang), mode="lines", line=dashed))
    solid = {"color": BLUE, "width": 3}
    data.append(_scatter(queries, predictions, prediction, query_x, prediction, mode="lines", line=solid))
    if extra_curve is not None:
        curve = as_vector(extra_curve[0], "extra_curve y")
        if curve.shape != queries.shape:
            raise ValueError("extra_curve must have one value per grid point")
        dashed = {"color": GREEN, "dash": "dash", "width": 2}
        name = html.escape(str(extra_curve[1]), quote=False)
        data.append(_scatter(queries, curve[order], name, query_x, prediction, mode="lines", line=dashed))
    return data


def _no_support_marks(queries: np.ndarray, lang: str) -> Trace:
    """A × on the plot's bottom edge at each query no key was in reach of (on the invisible 0..1 axis y2)."""
    cross = {"symbol": "x-thin", "size": 11, "line": {"color": VERMILLION, "width": 2}}
    rug = np.full(queries.size, 0.02, dtype=np.float32)  # on an invisible 0..1 axis: the plot's bottom edge
    name, query_x = word("no_support", lang), word("query_x", lang)
    return _scatter(queries, rug, name, query_x, "", yaxis="y2", marker=cross, cliponaxis=False)


def loss_curve(losses: Any, *, title: str | None = None, lang: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Loss per epoch (1-based); a log y axis when the losses span more than two decades."""
    title = word("loss_title", lang) if title is None else title
    epoch, loss = word("epoch", lang), word("loss", lang)
    values = as_vector(losses, "losses")  # (epochs,)
    epochs = np.arange(1, values.size + 1, dtype=np.int32)
    mode = "lines+markers" if values.size <= 50 else "lines"
    hover = f"{epoch} %{{x}}<br>{loss} %{{y:.6~g}}<extra></extra>"
    trace = {"type": "scatter", "x": epochs, "y": values, "mode": mode, "name": "loss", "line": {"color": BLUE}}
    positive = values[np.isfinite(values) & (values > 0)]
    log = positive.size == values.size > 0 and float(positive.max()) > 100 * float(positive.min())
    y_axis: dict[str, Any] = {"title": {"text": loss}, **(log_axis(values) if log else {})}
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": epoch}}, "yaxis": y_axis}
    return make_figure([{**trace, "hovertemplate": hover}], layout)
