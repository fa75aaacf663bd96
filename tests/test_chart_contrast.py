"""Every text on a chart is at least WCAG AA's 4.5:1 against what it sits on, measured from the figure's own colours
(issue 40): titles, axes, tick labels, colour bars, legends, annotations, bar labels, hover labels, and the numbers in
heatmap cells against their own cell's colour; and no cell number is under 10 px.

Streamlit's chart theme fills in what a figure leaves unset, in its grey #808495 (3.7:1 on white) for the ticks, the
axis titles, the legend and the colour axis. So a text's colour counts only where the figure sets it itself, on the
very property the theme would set; annotations and bar labels, which the theme leaves alone, take the figure's font
colour. The luminance, the contrast and the colour scales' interpolation are written here, from WCAG 2.x and
Plotly.js's linear interpolation between stops, not taken from the app.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.figures import attention, classroom, explanation, kernel, learned, model, modern
from tests.test_app import ROOT, SELF, figures

AA = 4.5
MIN_CELL_PX = 10
RNG = np.random.default_rng(40)


# ---------------------------------------------------------------- WCAG 2.x, written out


def channels(colour: str) -> tuple[float, float, float]:
    """ "#rgb", "#rrggbb", "rgb(r, g, b)", "rgba(...)" or a few CSS names as 0..255 channels."""
    names = {"white": "#ffffff", "black": "#000000"}
    colour = names.get(colour.strip().lower(), colour.strip())
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:4])
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    red, green, blue = (float(v) for v in re.findall(r"\d*\.?\d+", colour)[:3])
    return red, green, blue


def luminance(rgb: tuple[float, float, float]) -> float:
    """Relative luminance: each sRGB channel linearised, weighted 0.2126 R + 0.7152 G + 0.0722 B."""

    def linear(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = rgb
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(first: str | tuple, second: str | tuple) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter over the darker."""
    a, b = (luminance(channels(c) if isinstance(c, str) else c) for c in (first, second))
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def test_the_formula_gives_wcags_own_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#808495", "#ffffff") == pytest.approx(3.72, abs=0.01)  # the theme's tick grey: the 3.7
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the lightest grey that passes AA


def scale_colour(scale: list, position: float) -> tuple[float, float, float]:
    """The colour a scale's [position, colour] stops give at `position` (clipped to 0..1), channel by channel."""
    stops = [float(p) for p, _ in scale]
    rgb = np.array([channels(str(c)) for _, c in scale], dtype=float)
    at = min(max(position, 0.0), 1.0)
    return tuple(float(np.interp(at, stops, rgb[:, i])) for i in range(3))  # type: ignore[return-value]


# ---------------------------------------------------------------- what a figure shows, and on what


def own(part: Any, *path: str) -> Any:
    """The value at `path` inside the figure's own dicts (None when unset)."""
    for key in path:
        if not isinstance(part, dict):
            return None
        part = part.get(key)
    return part


def themed_texts(layout: dict, data: list[dict]) -> list[tuple[str, Any]]:
    """(what, colour) of the texts whose colour Streamlit's theme sets unless the figure does: the figure's own."""
    texts = [("font", own(layout, "font", "color")), ("title", own(layout, "title", "font", "color"))]
    for key in sorted(layout):
        if re.fullmatch(r"[xy]axis\d*", key) and own(layout, key, "visible") is not False:
            texts.append((f"{key} ticks", own(layout, key, "tickfont", "color")))
            if own(layout, key, "title", "text"):
                texts.append((f"{key} title", own(layout, key, "title", "font", "color")))
    if layout.get("showlegend") or any(trace.get("showlegend") is not False for trace in data if len(data) > 1):
        texts.append(("legend", own(layout, "legend", "font", "color")))
    colour_bars = [("coloraxis", own(layout, "coloraxis", "colorbar"))] if "coloraxis" in layout else []
    colour_bars += [
        (f"trace {i} colour bar", trace.get("colorbar") or {})
        for i, trace in enumerate(data)
        if "colorscale" in trace and trace.get("showscale") is not False
    ]
    for name, bar in colour_bars:
        texts.append((f"{name} ticks", own(bar, "tickfont", "color")))
        if own(bar, "title", "text"):
            texts.append((f"{name} title", own(bar, "title", "font", "color")))
    return texts


def plain_texts(layout: dict, data: list[dict]) -> list[tuple[str, Any]]:
    """(what, colour) of the texts the theme leaves alone: their own colour, else the figure's font colour."""
    font = own(layout, "font", "color")
    texts = [("subtitle", own(layout, "title", "subtitle", "font", "color") or font)]
    for i, note in enumerate(layout.get("annotations") or []):
        texts.append((f"annotation {i} {note.get('text')!r}", own(note, "font", "color") or font))
    for i, trace in enumerate(data):
        if trace.get("type") == "bar" and (trace.get("text") is not None or trace.get("texttemplate")):
            texts.append(
                (f"bar {i} labels", own(trace, "outsidetextfont", "color") or own(trace, "textfont", "color") or font)
            )
    return texts


def numbers(value: Any) -> np.ndarray:
    """Plotly JSON numbers (a list, an array, or a typed array {dtype, bdata, shape}) as a float array."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return array.reshape([int(s) for s in str(shape).split(",")] if shape else -1).astype(float)
    return np.asarray(value, dtype=float)


def cell_problems(layout: dict, trace: dict, plot: str) -> list[str]:
    """Each printed cell number's contrast against its own cell's colour, and its size."""
    if trace.get("type") != "heatmap" or not trace.get("texttemplate"):
        return []
    name, problems = trace.get("name"), []
    colour, size = own(trace, "textfont", "color"), own(trace, "textfont", "size")
    if colour is None or size is None or size == "auto":  # Plotly's own: #444 or white, shrunk to fit the cell
        return [f"{name}: cell text colour {colour!r} and size {size!r} left to Plotly"]
    if size < MIN_CELL_PX:
        problems.append(f"{name}: cell numbers at {size} px")
    axis = layout.get("coloraxis") if trace.get("coloraxis") else None
    scale = axis["colorscale"] if axis else trace["colorscale"]
    low, high = (axis["cmin"], axis["cmax"]) if axis else (trace["zmin"], trace["zmax"])
    z = numbers(trace["z"])
    texts = np.asarray(trace["text"], dtype=object) if trace.get("text") is not None else None
    for (i, j), value in np.ndenumerate(z):
        shown = trace["texttemplate"] if texts is None else str(texts[i, j])
        if not re.sub(r"<[^>]*>", "", shown).strip():
            continue
        spans = re.findall(r"color:\s*([^;\"']+)", shown)
        text_colour = spans[-1].strip() if spans else colour
        cell = channels(plot) if np.isnan(value) else scale_colour(scale, (value - low) / ((high - low) or 1.0))
        ratio = contrast(text_colour, cell)
        if ratio < AA:
            problems.append(
                f"{name} cell ({i}, {j}): {text_colour} on rgb{tuple(round(c) for c in cell)} {ratio:.2f}:1"
            )
    return problems


def problems(fig: Any) -> list[str]:
    """Every text of `fig` below 4.5:1 (or whose colour the figure leaves to the theme), and every cell number under
    10 px."""
    spec = fig if isinstance(fig, dict) else fig.to_plotly_json()
    layout, data = spec["layout"], spec["data"]
    paper, plot = layout.get("paper_bgcolor"), layout.get("plot_bgcolor")
    found = [f"{name} background left to the theme" for name, bg in (("paper", paper), ("plot", plot)) if bg is None]
    paper, plot = paper or "#ffffff", plot or paper or "#ffffff"
    for what, colour in themed_texts(layout, data) + plain_texts(layout, data):
        if colour is None:
            found.append(f"{what}: colour left to the theme")
        elif contrast(colour, paper) < AA:
            found.append(f"{what}: {colour} on {paper} {contrast(colour, paper):.2f}:1")
    hover_bg, hover_text = own(layout, "hoverlabel", "bgcolor"), own(layout, "hoverlabel", "font", "color")
    if hover_bg is None or hover_text is None:
        found.append(f"hover label: {hover_text!r} on {hover_bg!r} left to the theme")
    elif contrast(hover_text, hover_bg) < AA:
        found.append(f"hover label: {hover_text} on {hover_bg} {contrast(hover_text, hover_bg):.2f}:1")
    for trace in data:
        found += cell_problems(layout, trace, plot)
    return found


# ---------------------------------------------------------------- the app's figures, with representative numbers


def _weights(rows: int, cols: int, sharp: float = 1.0) -> np.ndarray:
    return RNG.dirichlet(np.full(cols, sharp), size=rows).astype(np.float32)


def _attention_figures() -> dict[str, Any]:
    weights, causal = _weights(6, 6), np.tril(np.ones((6, 6), dtype=bool))
    near_uniform = (np.full((4, 4), 0.25) + RNG.uniform(-0.08, 0.08, (4, 4))).astype(np.float32)
    grid = attention.AttentionGrid(weights * causal / (weights * causal).sum(-1, keepdims=True), mask=causal)
    figures = {f"weights {r}": attention.weights_heatmap(grid, colour_range=r) for r in ("unit", "data", "row")}
    figures["weights near uniform, data"] = attention.weights_heatmap(near_uniform, colour_range="data")
    figures["weights 9 columns"] = attention.weights_heatmap(_weights(9, 9, 0.3))
    figures["heads"] = attention.heads_grid(np.stack([_weights(3, 3, 0.3) for _ in range(4)]), columns=2)
    comparison = attention.comparison_charts(weights, _weights(6, 6), label_a="dot", label_b="additive")
    figures.update({f"comparison {i}": chart for i, chart in enumerate(comparison)})
    figures["scores"] = attention.matrix_heatmap(RNG.normal(size=(5, 5)) * 2, title="scores")
    figures["sequential matrix"] = attention.matrix_heatmap(RNG.uniform(0, 3, (4, 6)), symmetric=False)
    figures["guess"] = attention.guess_figure([0.2, 0.3, 0.5], [0.1, 0.6, 0.3], title="guess")
    return figures


def _page_figures() -> dict[str, Any]:
    views = RNG.uniform(0, 1, (2, 4, 6, 6)).astype(np.float32)
    keys = RNG.normal(size=(6, 8)).astype(np.float32)
    scores = RNG.normal(size=6).astype(np.float32) * 3
    probs = np.exp(scores) / np.exp(scores).sum()
    x = np.linspace(0, 5, 40, dtype=np.float32)
    return {
        "model view": model.model_view(views, selected_layer=1, selected_heads=(2,)),
        "neuron view": model.neuron_view(keys[0], keys, scores, probs, key_labels=list("abcdef"), query_label="it"),
        "online softmax": modern.online_softmax_figure(np.r_[scores, -np.inf], 2, 2, float(scores[:4].max())),
        "kv share": modern.kv_share_map((0, 0, 1, 1), title="groups"),
        "kernel": kernel.kernel_regression_figure(
            x[::4], np.sin(x[::4]), x, np.sin(x), y_true=np.sin(x), no_support=x > 4.8, points=([1.0], [0.8])
        ),
        "loss": kernel.loss_curve(np.geomspace(5, 0.01, 30)),
        "learning curves": learned.learning_curves([0, 10, 20], [2.0, 1.0, 0.2], [0.1, 0.5, 0.9], current=10),
        "two steps": learned.two_steps(
            _weights(4, 4, 5.0), _weights(4, 4, 0.2), first_title="0", second_title="N", palette="Cividis"
        ),
        "maps": explanation.maps_heatmap(
            RNG.normal(size=(3, 6)), ["attention", "gradient", "blank-out"], [0.5, -0.2, None]
        ),
        "sinks": explanation.sink_bars([0.4, 0.6], [0.2, 0.1]),
        "matter": explanation.matter_bars(["trained", "uniform"], [0.9, 0.6]),
        "choices": classroom.choice_histogram(["a", "b", "c"], [3, 10, 2], [1], "Which key?"),
        "row": classroom.row_comparison(["k1", "k2", "k3"], [0.2, 0.5, 0.3], [0.3, 0.4, 0.3], [0.1, 0.1, 0.05], "Row"),
        "numbers": classroom.number_distribution(
            [1.0, 2.0, 2.5, 3.0], 2.0, "How much?", right=[0, 1, 1, 0], tolerance=0.5
        ),
    }


FIGURES = {**_attention_figures(), **_page_figures()}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_text_on_the_chart_is_at_least_4_5_to_1_and_cell_numbers_at_least_10_px(name):
    assert problems(FIGURES[name]) == []


def test_cell_numbers_take_black_or_white_by_their_own_cell():
    """On Cividis the darkest cells (navy) need white numbers and the lightest (yellow) black ones; the middle khaki,
    where Plotly's #444 was 3.9:1, gets whichever of the two is higher there."""
    weights = np.array([[0.0, 0.3, 1.0]], dtype=np.float32)
    trace = attention.weights_heatmap(weights, colour_range="data").to_plotly_json()["data"][0]
    colours = [
        (re.findall(r"color:\s*([^;\"']+)", str(text)) or [trace["textfont"]["color"]])[-1] for text in trace["text"][0]
    ]
    cells = [scale_colour(trace["colorscale"], float(z)) for z in numbers(trace["z"])[0]]
    assert contrast(colours[0], "#ffffff") == 1.0 and contrast(colours[2], "#000000") == 1.0
    for colour, cell in zip(colours, cells, strict=True):
        other = "#000000" if contrast(colour, "#ffffff") == 1.0 else "#ffffff"
        assert contrast(colour, cell) >= contrast(other, cell) >= 1.0


@pytest.mark.parametrize("presenting", ["0", "1"])
def test_the_charts_a_page_sends_pass_too(presenting):
    """The self-attention page's charts as sent to the browser, in presentation mode (larger type) too."""
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=90)
    at.query_params["pm"] = presenting
    at.run()
    sent = figures(at)
    assert sent and any(trace.get("texttemplate") for spec in sent for trace in spec["data"])  # numbers in cells
    assert [problem for spec in sent for problem in problems(spec)] == []
