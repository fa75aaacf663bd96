"""A figure's JSON as st.plotly_chart makes it, made once.

`st.plotly_chart` copies a figure (`to_dict`) and encodes it to JSON on every call. On the pretrained-model page
that was a third of a rerun's server time for figures that had not changed: the 72 thumbnails of a 128-token
sentence are 0.46 MB of JSON. Here the JSON is made once (`figure_json`) and can be kept and sent again; the element
itself is built from it by attnviz/app/streamlit_patches/plotly_chart.py exactly as `st.plotly_chart` builds it. The
message is the same, byte for byte: `tests/test_plotly_element.py` draws a figure both ways and compares them, so a
Streamlit (or Plotly) upgrade that changes the element fails there, not in a browser.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io
from _plotly_utils.basevalidators import is_homogeneous_array
from _plotly_utils.utils import plotlyjsShortTypes, to_typed_array_spec

from attnviz.figures.plotting import FigureSpec

DEFAULT_HEIGHT = 450  # Plotly.js's, which st.plotly_chart uses for a figure without a height


def figure_json(fig: go.Figure | FigureSpec) -> tuple[str, int]:
    """(the figure's JSON as st.plotly_chart makes it, its height in pixels).

    `fig.to_dict()` deep-copies every array, then Plotly's `convert_to_base64` visits every value of the copy (every
    hover text of every cell) to find the arrays it sends as base64. Here one pass does both: it copies only the
    dicts and lists that hold something to replace, and replaces exactly what `convert_to_base64` replaces. A
    `FigureSpec` gives the same figure from its dicts (the same JSON, up to the order of keys)."""
    if isinstance(fig, FigureSpec):  # the dicts make_figure would give Plotly, as they are
        res: dict[str, Any] = {"data": _encoded(fig.data), "layout": _encoded(fig.layout)}
        height = fig.layout.get("height")
    else:
        res = {"data": _encoded(fig._data), "layout": _encoded(fig._layout)}
        frames = [_encoded(frame._props) for frame in fig._frame_objs]
        if frames:
            res["frames"] = frames
        height = fig.layout.height
    return plotly.io.to_json(res, validate=False), int(height) if height and height > 0 else DEFAULT_HEIGHT


_SKIPPED_KEYS = frozenset(("geojson", "layer", "layers", "range"))  # _plotly_utils.utils.is_skipped_key's
_PLAIN = (str, int, float, bool, type(None))  # values convert_to_base64 leaves as they are


def _typed_array(array: np.ndarray) -> Any:
    """`to_typed_array_spec(array)`, without its detour through narwhals for the arrays the figures hold: a
    C-ordered array of a type Plotly.js reads as it is goes straight to base64; text (object) arrays are sent as
    they are; anything else (int64, a strided view, ...) is left to Plotly."""
    short = plotlyjsShortTypes.get(array.dtype.name)
    if short is not None and array.size and array.flags.c_contiguous and array.dtype.isnative:
        spec = {"dtype": short, "bdata": base64.b64encode(array).decode("ascii")}
        if array.ndim > 1:
            spec["shape"] = str(array.shape)[1:-1]
        return spec
    if array.dtype.kind == "O":
        return array
    return to_typed_array_spec(array)


def _encoded(value: Any) -> Any:
    """`value` as `convert_to_base64` would leave a copy of it: a dict's numpy (or pandas) arrays replaced by their
    typed-array specs, at any depth below dicts and lists, except under the keys it skips. What holds nothing to
    replace (text, numbers, lists of them, and arrays inside lists, which it leaves too) is shared, not copied."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _SKIPPED_KEYS or isinstance(item, _PLAIN):
                out[key] = item
            elif isinstance(item, dict | list | tuple):
                out[key] = _encoded(item)
            elif type(item) is np.ndarray:
                out[key] = _typed_array(item)
            elif is_homogeneous_array(item):
                out[key] = to_typed_array_spec(item)
            else:
                out[key] = item
        return out
    if isinstance(value, list | tuple):
        if all(isinstance(item, _PLAIN) for item in value):
            return value
        return [_encoded(item) if isinstance(item, dict | list | tuple) else item for item in value]
    return value
