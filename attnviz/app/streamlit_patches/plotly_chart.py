"""Streamlit's Plotly chart element, sent from a figure's JSON made once.

`st.plotly_chart` copies a figure (`to_dict`) and encodes it to JSON on every call. On the pretrained-model page
that was a third of a rerun's server time for figures that had not changed: the 72 thumbnails of a 128-token
sentence are 0.46 MB of JSON. Here the element is built exactly as `st.plotly_chart` builds it, from the same
Streamlit functions, from JSON made once (attnviz/app/ui/plotly_element.py: `figure_json`) that can be kept and sent
again. The message it makes is the same, byte for byte: `tests/test_plotly_element.py` draws a figure both ways and
compares them, so a Streamlit upgrade that changes the element fails there, not in a browser.

Measured (bench/README.md, items 10 and 15): the chart JSON of an 8x8 heatmap 0.49 -> 0.20 ms, and no figure work at
all for a chart whose JSON is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

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


def plotly_json_chart(
    spec: str,
    height: int,
    *,
    config: dict[str, Any] | None = None,
    key: str | None = None,
    on_select: str | Callable[[], None] = "ignore",
    selection_mode: str | Iterable[str] = ("points", "box", "lasso"),
    dg: DeltaGenerator | None = None,
) -> Any:
    """`dg.plotly_chart(fig, width="stretch", theme="streamlit", config=config, key=key, ...)` for the figure whose
    JSON is `spec` and height `height` (from `figure_json`); `dg` is the current container unless given. Returns what
    st.plotly_chart returns."""
    import streamlit as st

    dg = st._main if dg is None else dg
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
    proto = _chart_proto(dg, spec, config, key, selection_mode, selecting)
    layout_config = LayoutConfig(width="stretch", height=height)
    if selecting:
        return _enqueue_selectable(dg, proto, layout_config, on_select_callback, selection_mode)
    return dg._enqueue(
        "plotly_chart",
        proto,
        layout_config=layout_config,
        agent_props=agent_spec.element(
            "plotly_chart", key=key, data_builder=lambda: _plotly_data(proto.spec), alt=None
        ),
    )


def _chart_proto(
    dg: DeltaGenerator,
    spec: str,
    config: dict[str, Any] | None,
    key: str | None,
    selection_mode: str | Iterable[str],
    selecting: bool,
) -> PlotlyChartProto:
    """The element's message, with the id st.plotly_chart gives it (registered for this run)."""
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
    return proto


def _enqueue_selectable(
    dg: DeltaGenerator,
    proto: PlotlyChartProto,
    layout_config: LayoutConfig,
    on_select_callback: Callable[..., None] | None,
    selection_mode: str | Iterable[str],
) -> Any:
    """Send a chart that takes selections, registered as st.plotly_chart registers it; its selection state."""
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
