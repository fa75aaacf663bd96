"""Streamlit's Plotly chart element, sent from a figure's JSON made once.

`st.plotly_chart` copies a figure (`to_dict`) and encodes it to JSON on every call. On the pretrained-model page
that was a third of a rerun's server time for figures that had not changed: the 72 thumbnails of a 128-token
sentence are 0.46 MB of JSON. Here the JSON is made once (`figure_json`) and can be kept and sent again; the element
is built exactly as `st.plotly_chart` builds it, from the same Streamlit functions. The message it makes is the
same, byte for byte: `tests/test_plotly_element.py` draws a figure both ways and compares them, so a Streamlit
upgrade that changes the element fails there, not in a browser.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import plotly.graph_objects as go
import plotly.io
from _plotly_utils.utils import convert_to_base64
from streamlit.delta_generator import DeltaGenerator
from streamlit.elements.lib import agent_spec
from streamlit.elements.lib.form_utils import current_form_id
from streamlit.elements.lib.layout_utils import LayoutConfig
from streamlit.elements.lib.policies import check_widget_policies
from streamlit.elements.lib.utils import compute_and_register_element_id, to_key
from streamlit.elements.plotly_chart import (
    _SELECTION_MODE_FROM_PROTO,
    PlotlyChartSelectionSerde,
    _plotly_data,
    parse_selection_mode,
)
from streamlit.proto.PlotlyChart_pb2 import PlotlyChart as PlotlyChartProto
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state import register_widget, validate_on_change_mode

DEFAULT_HEIGHT = 450  # Plotly.js's, which st.plotly_chart uses for a figure without a height


def figure_json(fig: go.Figure) -> tuple[str, int]:
    """(the figure's JSON as st.plotly_chart makes it, its height in pixels).

    `fig.to_dict()` deep-copies every array before encoding it; here only the dicts and lists around them are
    copied (Plotly's base64 step replaces arrays in their container, it never changes an array)."""
    res: dict[str, Any] = {"data": _containers(fig._data), "layout": _containers(fig._layout)}
    frames = [_containers(frame._props) for frame in fig._frame_objs]
    if frames:
        res["frames"] = frames
    convert_to_base64(res)
    height = fig.layout.height
    return plotly.io.to_json(res, validate=False), int(height) if height and height > 0 else DEFAULT_HEIGHT


def _containers(value: Any) -> Any:
    """A copy of the dicts and lists in `value`; anything else (arrays, strings, numbers) is shared."""
    if isinstance(value, dict):
        return {name: _containers(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_containers(item) for item in value]
    return value


def plotly_json_chart(
    dg: DeltaGenerator,
    spec: str,
    height: int,
    *,
    config: dict[str, Any] | None = None,
    key: str | None = None,
    on_select: str | Callable[[], None] = "ignore",
    selection_mode: str | Iterable[str] = ("points", "box", "lasso"),
) -> Any:
    """`dg.plotly_chart(fig, width="stretch", theme="streamlit", config=config, key=key, ...)` for the figure whose
    JSON is `spec` and height `height` (from `figure_json`). Returns what st.plotly_chart returns."""
    on_select_callback = validate_on_change_mode(
        on_select, supported_modes=("rerun", "ignore"), none_supported=False, param_name="on_select"
    )
    key = to_key(key)
    selecting = on_select != "ignore"
    if selecting:
        check_widget_policies(
            dg,
            key,
            on_change=on_select_callback,
            default_value=None,
            writes_allowed=False,
            enable_check_callback_rules=on_select_callback is not None,
        )
    proto = PlotlyChartProto()
    proto.theme = "streamlit"
    proto.form_id = current_form_id(dg)
    proto.spec = spec
    proto.config = json.dumps(config or {})
    proto.id = compute_and_register_element_id(
        "plotly_chart",
        user_key=key,
        key_as_main_identity=False,
        dg=dg,
        plotly_spec=proto.spec,
        plotly_config=proto.config,
        selection_mode=selection_mode,
        is_selection_activated=selecting,
        theme="streamlit",
        width="stretch",
        height="content",
        alt=None,
    )
    layout_config = LayoutConfig(width="stretch", height=height)
    if selecting:
        proto.selection_mode.extend(parse_selection_mode(selection_mode))  # type: ignore[arg-type]
        serde = PlotlyChartSelectionSerde()
        widget_state = register_widget(
            proto.id,
            on_change_handler=on_select_callback,
            deserializer=serde.deserialize,
            serializer=serde.serialize,
            ctx=get_script_run_ctx(),
            value_type="string_value",
        )
        dg._enqueue(
            "plotly_chart",
            proto,
            layout_config=layout_config,
            agent_props=agent_spec.element(
                "plotly_chart",
                key=proto.id,
                data_builder=lambda: _plotly_data(proto.spec),
                support="action_unsupported",
                selection_mode=sorted(_SELECTION_MODE_FROM_PROTO[mode] for mode in proto.selection_mode) or None,
                on_select="rerun",
                alt=None,
            ),
        )
        return widget_state.value
    return dg._enqueue(
        "plotly_chart",
        proto,
        layout_config=layout_config,
        agent_props=agent_spec.element(
            "plotly_chart", key=key, data_builder=lambda: _plotly_data(proto.spec), alt=None
        ),
    )
