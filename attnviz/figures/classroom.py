"""Pure Plotly builders for a live class's revealed answers: numbers in, `go.Figure` out. No Streamlit, no torch.

The truth is blue and hatched, the class's answers orange (Okabe–Ito, colour-blind safe; the hatching and a ✓ keep
them apart in greyscale too). Each chart is a bar chart with one category per option or key, so that it reads on a
390 px phone (options run down the side, long labels shortened) and with presentation mode's larger type.
Titles and labels come in as arguments (the page translates them); the axis words are the catalogue's, in `lang`.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.plotting import as_vector, category_ticks, make_figure, unique_labels
from attnviz.figures.style import BLACK, BLUE, ORANGE
from attnviz.i18n import DEFAULT_LANGUAGE, N_, t

MAX_LABEL = 18  # characters of an option's label on the axis (the hover shows it whole)
MAX_BINS = 20  # bars of a number histogram
ROW_HEIGHT = 30  # px per option of a choice histogram ...
MAX_ROWS = 40  # ... up to this many options; more share the height, every k-th labelled (the hover names each)
RIGHT = "✓ "
# The truth's bars are also told by their pattern: white stripes over the bar's own colour
HATCH = {"shape": "/", "fillmode": "overlay", "fgcolor": "#ffffff", "fgopacity": 0.6, "size": 8, "solidity": 0.3}
TITLE_COLUMNS = 36  # a title's line at most this wide (a CJK character counts 2): it fits a 390 px phone


def _word(key: str, lang: str) -> str:
    """A catalogue text for a figure, safe in Plotly's HTML-like labels."""
    return html.escape(t(key, lang), quote=False)


def _title(title: str) -> tuple[dict[str, Any], int]:
    """A title as plain text (escaped: it carries the students' tokens), wrapped to lines of TITLE_COLUMNS (Plotly
    does not wrap, and cut a question off at 390 px); the title's layout and the top margin it needs."""
    lines, line, width, space = [], "", 0, -1
    for character in str(title):
        line += character
        width += 2 if unicodedata.east_asian_width(character) in "WF" else 1
        space = len(line) - 1 if character == " " else space
        if width > TITLE_COLUMNS:
            cut = space if space > len(line) // 2 else len(line) - 1  # at a late space, else before this character
            lines.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
            width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
            space = line.rfind(" ")
    lines.append(line)
    text = "<br>".join(html.escape(part, quote=False) for part in lines if part)
    return {"text": text}, 90 + 24 * (len(lines) - 1)


def _shortened(labels: Sequence[str]) -> list[str]:
    """Labels cut to MAX_LABEL characters with "…", then escaped and made unique (plotting.unique_labels)."""
    cut = [str(label) if len(str(label)) <= MAX_LABEL else str(label)[: MAX_LABEL - 1] + "…" for label in labels]
    return unique_labels(cut, len(cut))


def _legend() -> dict[str, Any]:
    return {"orientation": "h", "x": 0.0, "y": 1.0, "yanchor": "bottom", "traceorder": "normal"}


def choice_histogram(
    labels: Sequence[str],
    counts: Any,
    truth_indices: Sequence[int],
    title: str,
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """How many students chose each option: one horizontal bar per option, top to bottom in the options' order,
    the right option(s) blue, hatched and ticked ✓, the others orange."""
    values = as_vector(counts, "counts")  # (n,)
    if values.size != len(labels):
        raise ValueError(f"one count per option: {len(labels)} options, {values.size} counts")
    right = {int(i) for i in truth_indices}
    names = _shortened(labels)
    ticks = [RIGHT + name if i in right else name for i, name in enumerate(names)]
    full = [html.escape(str(label), quote=False) for label in labels]
    students = _word(N_("class.students"), lang)
    data = []
    for group, name, colour, pattern in (
        (sorted(right), _word(N_("class.right"), lang), BLUE, HATCH),
        ([i for i in range(len(names)) if i not in right], _word(N_("class.other"), lang), ORANGE, {}),
    ):
        if not group:
            continue
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "x": values[group],
                "y": [ticks[i] for i in group],
                "customdata": [full[i] for i in group],
                "name": name,
                "marker": {"color": colour, "line": {"color": BLACK, "width": 1}, "pattern": pattern},
                **(
                    {"text": [f"{int(v)}" for v in values[group]], "textposition": "outside", "cliponaxis": False}
                    if len(names) <= MAX_ROWS
                    else {}
                ),
                "hovertemplate": f"%{{customdata}}<br>{students}: %{{x}}<extra></extra>",
            }
        )
    top = float(values.max()) if values.size else 0.0
    heading, margin = _title(title)
    layout = {
        "title": heading,
        "barmode": "overlay",
        "bargap": 0.25,
        "xaxis": {"title": {"text": students}, "rangemode": "tozero", "range": [0, max(1.0, top * 1.15)],
                  "tickformat": "d", "dtick": max(1, math.ceil(top / 5))},
        "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": ticks, "autorange": "reversed",
                  "automargin": True, **category_ticks(ticks, MAX_ROWS)},
        "legend": _legend(),
        "height": 150 + ROW_HEIGHT * min(len(names), MAX_ROWS) + margin - 90,
        "margin": {"t": margin, "r": 30},
    }  # fmt: skip
    return make_figure(data, layout)


def row_comparison(
    key_labels: Sequence[str],
    truth: Any,
    mean: Any,
    std: Any,
    title: str,
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """The true row of weights beside the class's mean, one pair of bars per key, the mean with error bars of one
    standard deviation of the class's answers."""
    true, average, spread = as_vector(truth, "truth"), as_vector(mean, "mean"), as_vector(std, "std")  # (K,) each
    if not true.shape == average.shape == spread.shape or true.size != len(key_labels):
        raise ValueError(f"one truth, mean and spread per key: {len(key_labels)} keys")
    x = _shortened(key_labels)
    key, weight = _word(N_("class.key"), lang), _word(N_("class.weight"), lang)
    truth_name, mean_name, spread_name = (
        _word(k, lang) for k in (N_("class.truth"), N_("class.class_mean"), N_("class.spread"))
    )
    hover = f"%{{fullData.name}}<br>{key}: %{{x}}<br>{weight}: %{{y:.3f}}"
    data = [
        {
            "type": "bar",
            "x": x,
            "y": true,
            "name": truth_name,
            "marker": {"color": BLUE, "line": {"color": BLACK, "width": 1}, "pattern": HATCH},
            "hovertemplate": hover + "<extra></extra>",
        },
        {
            "type": "bar",
            "x": x,
            "y": average,
            "name": mean_name,
            "marker": {"color": ORANGE, "line": {"color": BLACK, "width": 1}},
            "error_y": {"type": "data", "array": spread, "visible": True, "color": BLACK, "thickness": 1.5},
            "customdata": spread,
            "hovertemplate": hover + f"<br>{spread_name}: %{{customdata:.3f}}<extra></extra>",
        },
    ]
    high = float(np.nanmax(average + spread)) if average.size else 1.0
    heading, margin = _title(title)
    layout = {
        "title": heading,
        "barmode": "group",
        "xaxis": {"type": "category", "title": {"text": key}, "automargin": True},
        "yaxis": {"title": {"text": weight}, "range": [0.0, max(1.05, high + 0.05)]},
        "legend": _legend(),
        "height": 380 + margin - 90,
        "margin": {"t": margin},
    }
    return make_figure(data, layout)


def _bins(values: np.ndarray, truth: float, tolerance: float | None = None) -> np.ndarray:
    """Bin edges over the answers and the truth, never of zero width. With the marking's `tolerance`, the truth's bin
    is the range of right answers, truth ± tolerance, and the others as wide beside it (an odd multiple of that width
    when MAX_BINS would not hold them: the truth's bin stays centred on it); without, numpy's "auto" rule."""
    low, high = float(min(values.min(initial=truth), truth)), float(max(values.max(initial=truth), truth))
    if tolerance is not None and tolerance > 0:
        half = tolerance * (1 + 1e-9) + 1e-12  # an answer on the tolerance's edge is right: inside the bin
        width = 2 * half
        below, above = (max(0, math.ceil((gap - half) / width - 1e-9)) for gap in (truth - low, high - truth))
        if below + above + 1 > MAX_BINS:
            factor = math.ceil((below + above + 1) / MAX_BINS)
            factor += 1 - factor % 2  # odd: one bin is centred on the truth
            half, width = half * factor, width * factor
            below, above = (max(0, math.ceil((gap - half) / width - 1e-9)) for gap in (truth - low, high - truth))
        return truth - half - below * width + width * np.arange(below + above + 2)
    if high - low < 1e-9:
        half = max(abs(low) * 0.05, 0.5)
        low, high = low - half, high + half
    edges = np.histogram_bin_edges(values if values.size else np.array([truth]), bins="auto", range=(low, high))
    if edges.size - 1 > MAX_BINS:
        edges = np.linspace(low, high, MAX_BINS + 1)
    return edges


def number_distribution(
    values: Any,
    truth: float,
    title: str,
    *,
    right: Any = None,
    tolerance: float | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """The class's numbers as a histogram, and the truth as a dashed blue line across it. With `right` (one flag per
    value: marked right), the right answers are stacked in blue and hatched below the others in orange, as the
    choice histogram colours them. With the marking's `tolerance`, the bar around the truth spans exactly the right
    answers (truth ± tolerance)."""
    answers = as_vector(values, "values")
    marks = np.zeros(answers.shape, dtype=bool) if right is None else np.asarray(right, dtype=bool).reshape(-1)
    if marks.shape != answers.shape:
        raise ValueError(f"one mark per value: {answers.size} values, {marks.size} marks")
    finite = np.isfinite(answers)
    answers, marks = answers[finite], marks[finite]  # (n,)
    edges = _bins(answers.astype(np.float64), float(truth), tolerance)
    counts, _ = np.histogram(answers, bins=edges)
    widths = np.diff(edges)
    answer, students = (_word(k, lang) for k in (N_("class.answer"), N_("class.students")))
    truth_label = html.escape(t(N_("class.truth_value"), lang, value=f"{float(truth):.6g}"), quote=False)
    top = float(max(1, counts.max(initial=0)))
    data = _number_bars(answers, marks, edges, right is not None, lang)
    data.append(
        {
            "type": "scatter",
            "x": np.array([truth, truth], dtype=np.float32),
            "y": np.array([0.0, top * 1.1], dtype=np.float32),
            "mode": "lines",
            "name": truth_label,
            "line": {"color": BLUE, "width": 3, "dash": "dash"},
            "hovertemplate": f"{truth_label}<extra></extra>",
        }
    )
    heading, margin = _title(title)
    layout = {
        "title": heading,
        "barmode": "stack",
        "bargap": 0.05,
        # half a bin of room on each side: a truth at the smallest or largest answer is not drawn on the frame
        "xaxis": {"title": {"text": answer}, "automargin": True,
                  "range": [float(edges[0] - widths.max() / 2), float(edges[-1] + widths.max() / 2)]},
        "yaxis": {"title": {"text": students}, "range": [0, top * 1.15], "tickformat": "d",
                  "dtick": max(1, math.ceil(top / 5))},
        "legend": _legend(),
        "height": 360 + margin - 90,
        "margin": {"t": margin},
    }  # fmt: skip
    return make_figure(data, layout)


def _number_bars(answers: np.ndarray, marks: np.ndarray, edges: np.ndarray, marked: bool, lang: str) -> list[dict]:
    """The histogram's bars: one orange series, or (`marked`) the right answers blue and hatched, the others orange."""
    answer, students = (_word(k, lang) for k in (N_("class.answer"), N_("class.students")))
    centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    groups = [
        (marks, _word(N_("class.right"), lang), BLUE, HATCH),
        (~marks, _word(N_("class.other"), lang), ORANGE, {}),
    ]
    if not marked:
        groups = [(~marks, _word(N_("class.answers"), lang), ORANGE, {})]
    bars: list[dict] = []
    for chosen, name, colour, pattern in groups:
        if marked and not chosen.any():
            continue
        part, _ = np.histogram(answers[chosen], bins=edges)
        bars.append(
            {
                "type": "bar",
                "x": centres.astype(np.float32),
                "y": part.astype(np.float32),
                "width": widths.astype(np.float32),
                "customdata": np.stack([edges[:-1], edges[1:]], axis=-1).astype(np.float32),
                "name": name,
                "marker": {"color": colour, "line": {"color": BLACK, "width": 1}, "pattern": pattern},
                "hovertemplate": f"{answer}: %{{customdata[0]:.4~g}} – %{{customdata[1]:.4~g}}<br>{students}: "
                "%{y}<extra></extra>",
            }
        )
    return bars
