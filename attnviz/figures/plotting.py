"""Building blocks of the figures: palettes, inputs as float32 arrays, figures without re-validation, axes.

Shared by every figure builder. Pure: numbers in, Plotly dicts out, no Streamlit. Their style (palettes, colour
ranges) is in attnviz.figures.style, without Plotly.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import html
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from attnviz.figures.style import (
    BACKGROUND,
    CELL_DARK,
    CELL_LIGHT,
    CELL_TEXT_SIZE,
    CHARACTER_EM,
    COLOUR_RANGES,
    GAP_EM,
    MAX_TEXT_CELLS,
    MIN_CELL_TEXT_SIZE,
    PHONE_PLOT_WIDTH,
    POSITION_MARK,
    TEXT_COLOUR,
    WEIGHT_GAMMA,
    WEIGHT_STOPS,
)
from attnviz.i18n import t

Labels = Sequence[str] | None


def float32(data: Any) -> np.ndarray:
    """Numbers as a new float32 array (values beyond float32 become ±inf, never an error)."""
    with np.errstate(over="ignore"):
        return np.array(data, dtype=np.float32)  # a copy: the caller's array is never modified


def as_array(data: Any, name: str, ndim: int) -> np.ndarray:
    """A float32 array that must have `ndim` axes."""
    values = float32(data)
    if values.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {values.shape}")
    return values


def as_vector(data: Any, name: str) -> np.ndarray:
    """A 1-D float32 array; a column (n, 1) is flattened."""
    values = float32(data)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {values.shape}")
    return values


def allowed_mask(mask: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """The mask as a bool array broadcast to `shape` (True = may attend), or None."""
    if mask is None:
        return None
    try:
        return np.broadcast_to(np.asarray(mask, dtype=bool), shape)
    except ValueError as error:
        raise ValueError(f"mask of shape {np.shape(mask)} does not fit weights of shape {shape}") from error


def log_axis(values: Any) -> dict[str, Any]:
    """A log axis over the positive `values`, labelled in full at 1, 2 and 5 times the powers of ten (only at the
    powers of ten when that makes more than 8 labels): Plotly's own labels between the powers read "5, 2, 1, 5, 2,
    0.1" on a loss falling from 5 to 0.1, as if the axis ran backwards."""
    data = np.asarray(values, dtype=np.float64)
    data = data[np.isfinite(data) & (data > 0)]
    if data.size == 0:
        return {"type": "log"}
    low, high = float(data.min()), float(data.max())
    decades = range(math.floor(math.log10(low)), math.floor(math.log10(high)) + 1)
    for steps in ((1, 2, 5), (1,)):
        ticks = [m * 10.0**e for e in decades for m in steps if low * (1 - 1e-6) <= m * 10.0**e <= high * (1 + 1e-6)]
        if len(ticks) <= 8:
            break
    ticks = ticks or [low, high]
    return {"type": "log", "tickvals": ticks, "ticktext": [f"{tick:g}" for tick in ticks]}


def unique_labels(labels: Labels, count: int, prefix: str = "") -> list[str]:
    """Escaped, unique category labels: `prefix1..` by default; duplicates get a 1-based position mark."""
    if labels is None:
        return [f"{prefix}{i + 1}" for i in range(count)]
    texts = [html.escape(str(label), quote=False) for label in labels]  # Plotly reads <b>, <br>, <a> in labels
    if len(texts) != count:
        raise ValueError(f"expected {count} labels, got {len(texts)}")
    return distinct_labels(texts)


def distinct_labels(labels: Sequence[str]) -> list[str]:
    """The labels with a 1-based position mark on each repeated one ("the·1", "the·7"), as the charts name them: a
    table or a worked step beside a chart names its rows the same way."""
    texts = [str(label) for label in labels]
    repeated = {text for text in texts if texts.count(text) > 1}
    texts = [f"{text}{POSITION_MARK}{i + 1}" if text in repeated else text for i, text in enumerate(texts)]
    seen: set[str] = set()
    for i, text in enumerate(texts):  # a user label may itself read "the·2": mark again until unique
        while text in seen:
            text = f"{text}{POSITION_MARK}{i + 1}"
        texts[i] = text
        seen.add(text)
    return texts


def cells_printed(show_values: bool | None, shape: tuple[int, ...], across: int = 1, characters: int = 4) -> bool:
    """Print numbers in the cells? Auto when None; only where they fit: at most MAX_TEXT_CELLS cells, and numbers of
    `characters` characters readable on a phone (`cell_text_size`) across the figure's width, counting the columns of
    `across` panels side by side (a 1 x 32 row printed 32 numbers over each other, and so did two heads of 10 keys)."""
    columns = shape[-1] * across if len(shape) >= 2 else 1
    small = math.prod(shape) <= MAX_TEXT_CELLS and cell_text_size(columns, characters) is not None
    return small if show_values is None else bool(show_values) and small


def cell_text_size(columns: int, characters: int, width: float = PHONE_PLOT_WIDTH) -> int | None:
    """The size in px of numbers of `characters` characters in `columns` columns across a plot `width` px wide on a
    phone: the largest up to CELL_TEXT_SIZE at which they fit, None when not even MIN_CELL_TEXT_SIZE does (Plotly's
    own size shrank them to 6 px on a phone)."""
    size = math.floor(width / (max(columns, 1) * (characters * CHARACTER_EM + GAP_EM)))
    return min(size, CELL_TEXT_SIZE) if size >= MIN_CELL_TEXT_SIZE else None


def rgb(colour: str) -> tuple[float, float, float]:
    """A Plotly colour ("#rrggbb", "rgb(r, g, b)", "rgba(...)") as its red, green and blue on 0..255."""
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:4])
        return tuple(float(int(digits[i : i + 2], 16)) for i in (0, 2, 4))  # type: ignore[return-value]
    red, green, blue = (float(v) for v in re.findall(r"[-+]?\d*\.?\d+", colour)[:3])
    return red, green, blue


def relative_luminance(colours: np.ndarray) -> np.ndarray:
    """WCAG 2's relative luminance of colours (..., 3) on 0..255."""
    channel = np.asarray(colours, dtype=np.float64) / 255
    linear = np.where(channel <= 0.04045, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def scale_colours(scale: Sequence[Any], positions: np.ndarray) -> np.ndarray:
    """The colours (..., 3) that a colour scale's [position, colour] stops give at `positions` on 0..1 (clipped),
    interpolated channel by channel as Plotly.js does."""
    stops = [float(position) for position, _ in scale]
    colours = np.array([rgb(str(colour)) for _, colour in scale])  # (stops, 3)
    at = np.clip(np.nan_to_num(np.asarray(positions, dtype=np.float64)), 0.0, 1.0)
    return np.stack([np.interp(at, stops, colours[:, channel]) for channel in range(3)], axis=-1)


def cell_texts(texts: np.ndarray, z: np.ndarray, low: float, high: float, scale: Sequence[Any], size: int) -> dict:
    """Numbers printed in heatmap cells, each in black or white, whichever contrasts more with its own cell's colour
    (z on the scale from `low` to `high`): at least 4.58:1 on any colour. A heatmap has one text colour (Plotly's
    automatic one was #444 on mid khaki, 3.9:1), so the white ones carry it in their markup. `size` in px."""
    luminance = relative_luminance(scale_colours(scale, (np.asarray(z, np.float64) - low) / ((high - low) or 1.0)))
    light = 1.05 / (luminance + 0.05) > (luminance + 0.05) / 0.05  # white's contrast beats black's
    marked = [f'<span style="color:{CELL_LIGHT}">{text}</span>' if text else text for text in np.ravel(texts)]
    text = np.where(light, np.array(marked, dtype=object).reshape(np.shape(texts)), texts).astype(object)
    return {"text": text, "texttemplate": "%{text}", "textfont": {"color": CELL_DARK, "size": size}}


def category_ticks(labels: Sequence[str], most: int) -> dict[str, Any]:
    """Tick settings of a category axis: every label up to `most`, else every k-th, chosen here on purpose (Plotly
    drops labels by itself where they crowd); the hover names every cell either way."""
    if len(labels) <= most:
        return {"tickmode": "linear", "dtick": 1}
    step = math.ceil(len(labels) / most)
    return {"tickmode": "array", "tickvals": list(labels[::step])}  # a category's label is its own text


# ---------------------------------------------------------------- shared pieces
#
# Figures are assembled from plain dicts and handed to Plotly with its per-property validation switched off: the

Trace = dict[str, Any]


def make_figure(data: list[Trace], layout: dict[str, Any]) -> go.Figure:
    """A Figure from trace and layout dicts (already in Plotly's final form), without re-validating them.

    The empty template keeps Plotly's default one (7 kB per chart, the bulk of a small heatmap's payload) out of the
    figure: Streamlit's chart theme styles the figure in the browser, and every colour here is set explicitly, the
    text's too (`readable`): the theme's grey is 3.7:1 on white.

    Inside `figure_specs()` it returns the dicts instead (a `FigureSpec`): what a page sends needs only its JSON.
    """
    blank = {"data": {"scatter": [{"type": "scatter"}]}}  # Plotly's own "none" template, as its validator writes it
    spec = FigureSpec(readable_traces(data), {"template": blank, **readable(layout)})
    return spec if _SPECS.get() else spec.figure()  # type: ignore[return-value]


_AXIS = re.compile(r"[xy]axis\d*$")


def _text(style: dict[str, Any] | None, colour: str = TEXT_COLOUR) -> dict[str, Any]:
    """A font's settings with its colour set (a colour given already is kept)."""
    return {"color": colour, **(style or {})}


def _titled(part: dict[str, Any]) -> dict[str, Any]:
    """An axis, a legend or a colour bar with its own text's colour set: its ticks' and its title's (Streamlit's
    theme sets these for the axes, the legend and the colour axis, so a figure's font colour alone would not reach
    them)."""
    title = part.get("title")
    title = {"text": title} if isinstance(title, str) else dict(title or {})
    return {**part, "tickfont": _text(part.get("tickfont")), "title": {**title, "font": _text(title.get("font"))}}


def readable(layout: dict[str, Any]) -> dict[str, Any]:
    """The layout with every text's colour set, TEXT_COLOUR unless given, on a white paper and plot: the title's,
    the axes', the legend's, the colour axis's and the hover's; annotations and bar labels take the font's."""
    out = {**layout, "font": _text(layout.get("font"))}
    out.setdefault("paper_bgcolor", BACKGROUND)
    out.setdefault("plot_bgcolor", BACKGROUND)
    title = dict(layout.get("title") or {})
    if title.get("subtitle"):
        title["subtitle"] = {**title["subtitle"], "font": _text(title["subtitle"].get("font"))}
    out["title"] = {**title, "font": _text(title.get("font"))}
    for key, value in layout.items():
        if _AXIS.match(key):
            out[key] = _titled(value)
    legend = layout.get("legend") or {}
    legend_title = dict(legend.get("title") or {})
    out["legend"] = {
        **legend,
        "font": _text(legend.get("font")),
        "title": {**legend_title, "font": _text(legend_title.get("font"))},
    }
    hover = layout.get("hoverlabel") or {}
    out["hoverlabel"] = {"bgcolor": BACKGROUND, "bordercolor": TEXT_COLOUR, **hover, "font": _text(hover.get("font"))}
    if "coloraxis" in layout:
        out["coloraxis"] = {**layout["coloraxis"], "colorbar": _titled(layout["coloraxis"].get("colorbar") or {})}
    return out


def readable_traces(data: list[Trace]) -> list[Trace]:
    """The traces with their own colour bars' text colour set (a heatmap that draws its colour bar)."""
    return [
        {**trace, "colorbar": _titled(trace.get("colorbar") or {})}
        if "colorscale" in trace and trace.get("showscale", True)
        else trace
        for trace in data
    ]


@dataclasses.dataclass(frozen=True)
class FigureSpec:
    """A figure as the trace and layout dicts `make_figure` hands to Plotly. Even without validation, Plotly's
    Figure builds an object per trace with every property the trace type has (~0.3 ms for one heatmap, a tenth of a
    rerun's own work on the self-attention page); a chart sent to the browser needs only the JSON of these dicts."""

    data: list[Trace]
    layout: dict[str, Any]

    def figure(self) -> go.Figure:
        """The Plotly Figure (for its tables, presentation mode's larger type, or a notebook)."""
        return go.Figure({"data": self.data, "layout": self.layout}, _validate=False)


_SPECS: contextvars.ContextVar[bool] = contextvars.ContextVar("attnviz_figure_specs", default=False)


@contextlib.contextmanager
def figure_specs() -> Iterator[None]:
    """Within this block, figure builders that end in `make_figure` return a `FigureSpec`, not a Figure."""
    token = _SPECS.set(True)
    try:
        yield
    finally:
        _SPECS.reset(token)


@functools.lru_cache(maxsize=64)
def named_scale(name: str) -> tuple[tuple[float, str], ...]:
    """A named colour scale ("Cividis", "RdBu_r") as explicit (position, colour) stops, as Plotly's validator makes."""
    return tuple((float(position), str(colour)) for position, colour in go.Heatmap(colorscale=name).colorscale)


def colorscale(palette: str | Sequence[Any]) -> list[list[Any]]:
    """A palette name or an explicit scale, as the list of [position, colour] stops that Plotly.js reads."""
    stops = named_scale(palette) if isinstance(palette, str) else palette
    return [[float(position), str(colour)] for position, colour in stops]


@functools.lru_cache(maxsize=16)
def _weight_stops(palette: str) -> tuple[tuple[float, str], ...]:
    positions = [i / (WEIGHT_STOPS - 1) for i in range(WEIGHT_STOPS)]
    colours = sample_colorscale(colorscale(palette), [p**WEIGHT_GAMMA for p in positions])
    return tuple(zip(positions, colours, strict=True))


def weights_colorscale(palette: str) -> list[list[Any]]:
    """The colour scale of attention weights: the palette, read at √weight. The range stays [0, 1] on every chart, so
    a colour means the same weight everywhere; the square root spreads the small weights of a soft row (0.1 against
    0.2) over a third of the palette instead of a tenth, so they are not one flat block."""
    return [[position, colour] for position, colour in _weight_stops(palette)]


def colour_positions(
    values: np.ndarray, allowed: np.ndarray | None, colour_range: str
) -> tuple[np.ndarray, float, float]:
    """Where each weight sits on the colour scale, and the scale's ends (zmin, zmax).

    "unit": the weight itself on [0, 1] (a colour means the same weight on every chart). "data": the weight on the
    chart's own range, smallest to largest allowed weight (a row of 0.09..0.20 uses the whole palette). "row": each
    weight on its row's range, 0 = the row's smallest, 1 = its largest (a flat row sits in the middle). `values` is
    (..., Q, K); masked and non-finite cells are left out of every range."""
    if colour_range not in COLOUR_RANGES:
        raise ValueError(f"colour_range must be one of {COLOUR_RANGES}, got {colour_range!r}")
    if colour_range == "unit":
        return values, 0.0, 1.0
    usable = np.isfinite(values) if allowed is None else np.isfinite(values) & allowed
    if colour_range == "data":
        if not usable.any():
            return values, 0.0, 1.0
        low, high = float(values[usable].min()), float(values[usable].max())
        if high - low < 1e-6:  # one flat value: nothing to stretch, show it on 0-1
            return values, 0.0, 1.0
        return values, low, high
    big = np.float32(np.inf)
    low = np.where(usable, values, big).min(axis=-1, keepdims=True)  # (..., Q, 1)
    high = np.where(usable, values, -big).max(axis=-1, keepdims=True)
    span = high - low
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(span > 1e-6, (values - low) / np.where(span > 1e-6, span, 1), np.float32(0.5))
    return np.where(usable, scaled, np.float32(np.nan)).astype(np.float32), 0.0, 1.0


def word(word: str, lang: str, /, **params: object) -> str:
    """A word of the figures ("keys", "weight", ...) in `lang`, made safe for Plotly's HTML-like labels."""
    return html.escape(t(f"fig.{word}", lang, **params), quote=False)


def axis_keys(panel: int) -> tuple[str, str]:
    """The layout keys of subplot panel 1, 2, ... ("xaxis", "yaxis" for panel 1; "xaxis2", "yaxis2" for panel 2)."""
    suffix = "" if panel == 1 else str(panel)
    return f"xaxis{suffix}", f"yaxis{suffix}"


def axes(panel: int) -> dict[str, str]:
    """The axis references of subplot panel 1, 2, ... ({"xaxis": "x2", "yaxis": "y2"} for panel 2)."""
    x_name, y_name = axis_keys(panel)
    return {"xaxis": x_name.replace("axis", ""), "yaxis": y_name.replace("axis", "")}


def matrix_axis(title: str = "", **extra: Any) -> dict[str, Any]:
    """A category axis (tokens are never parsed as numbers) without grid lines, titled if `title`."""
    axis: dict[str, Any] = {"type": "category", "showgrid": False, "zeroline": False, **extra}
    if title:
        axis["title"] = {"text": title}
    return axis
