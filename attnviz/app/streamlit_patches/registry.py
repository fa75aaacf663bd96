"""Every use of Streamlit's private API in attnviz: what it touches, what it gains, and where upstream discusses it.

Each entry names the module of this package that holds the patch (or the private read), the places in Streamlit it
replaces or relies on, each with a fingerprint of its source (the first 16 hex digits of the sha256 of its code), its
measured gain (the figures are those of the module's docstring and bench/README.md), and the upstream Streamlit issue
or pull request where one was found. tests/test_streamlit_patches.py recomputes every fingerprint: a Streamlit
release that changes one of these places fails there, naming the patch and what to check. After checking, record the
new fingerprints (`python -m attnviz.app.streamlit_patches.registry` prints them) and CHECKED_STREAMLIT (version.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.app.streamlit_patches.fingerprints import fingerprint

NONE_FOUND = "none found upstream"


@dataclass(frozen=True)
class Patch:
    """One use of Streamlit's private API: a patch that replaces something, or a read of private state."""

    name: str
    module: str  # the module of this package that holds it
    summary: str  # what it does
    gain: str  # what it was measured to gain (or why there is no figure)
    upstream: str  # the Streamlit issue or pull request about it, or NONE_FOUND
    recheck: str  # what to check when one of its targets changes
    targets: tuple[str, ...] = ()  # Streamlit's places it replaces or relies on, as dotted names (FINGERPRINTS)


_APP_SESSION = "streamlit.runtime.app_session.AppSession"
_RUN_CONTEXT = "streamlit.runtime.scriptrunner_utils.script_run_context"
_UPLOADS = "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager"
_WIDGETS = "streamlit.elements.widgets"


def changed(patch: Patch) -> dict[str, str]:
    """The targets of `patch` whose source is not the one recorded: name -> what is there now (or why it is gone)."""
    found = {}
    for target in patch.targets:
        try:
            now = fingerprint(target)
        except KeyError as gone:
            found[target] = f"gone ({gone.args[0]})"
            continue
        if now != FINGERPRINTS.get(target):
            found[target] = now
    return found


PATCHES: tuple[Patch, ...] = (
    Patch(
        name="tcp_nodelay",
        module="nodelay",
        summary="asyncio sets TCP_NODELAY on the connections Streamlit's protocol-0 listener accepts",
        gain="one user, a trivial page: 48 ms -> 15 ms a rerun (~40 ms off every interaction in the browser)",
        upstream=NONE_FOUND,
        recheck="whether Streamlit still binds its socket with protocol 0 (then asyncio leaves Nagle on); the "
        "asyncio side is pinned by tests/test_server.py's plain-asyncio test",
        targets=("streamlit.web.server.starlette.starlette_server._bind_socket",),
    ),
    Patch(
        name="fragment_input_after_reconnect",
        module="fragments",
        summary="a fragment rerun a session cannot serve becomes a whole-page rerun with the same widget values",
        gain="no lost input: without it a kernel-page change sent while the page reconnected was lost 2 times out "
        "of 2 in a 40-second class load test",
        upstream="https://github.com/streamlit/streamlit/pull/11890 (related: the frontend asks for a whole-page "
        "rerun after a reconnect; a fragment rerun that reaches a session without the fragment is still dropped)",
        recheck="request_rerun's early drop of an unknown fragment id, and the ClientState fields copied",
        targets=(f"{_APP_SESSION}.request_rerun", f"{_APP_SESSION}.has_fragment"),
    ),
    Patch(
        name="batched_script_events",
        module="script_events",
        summary="a run's script events reach the event loop in batches: one wake-up per batch, not per message",
        gain="self page 14.6 -> 13.3 ms of CPU a rerun; 42 -> 1 wake-ups for a 40-element run while the loop is busy",
        upstream=NONE_FOUND + " (the per-event hand-over came with https://github.com/streamlit/streamlit/pull/4467)",
        recheck="that every event still goes to _handle_scriptrunner_event_on_event_loop with the same arguments, "
        "and how _enqueued_some_message wakes the send loop",
        targets=(
            f"{_APP_SESSION}._on_scriptrunner_event",
            f"{_APP_SESSION}._handle_scriptrunner_event_on_event_loop",
            f"{_APP_SESSION}._call_soon_on_event_loop",
            "streamlit.runtime.runtime.Runtime._enqueued_some_message",
            "streamlit.runtime.runtime.Runtime._get_async_objs",
        ),
    ),
    Patch(
        name="widgets_look_up_their_key",
        module="widget_state",
        summary="select boxes, radios, sliders, number, text, date and time inputs read their own key, not a copy "
        "of the whole session state (filtered_state)",
        gain="44-81 us -> 2 us a widget with the cross page's 45 keys (about 0.6 ms a control change, 8 widgets)",
        upstream="https://github.com/streamlit/streamlit/issues/9415",
        recheck="that each widget still reads filtered_state only for `key in ...` and `...[key]`, through its "
        "module's get_session_state, and SafeSessionState's _lock and _state",
        targets=(
            "streamlit.runtime.state.session_state.SessionState.filtered_state",
            "streamlit.runtime.state.safe_session_state.SafeSessionState.__init__",
            "streamlit.runtime.state.session_state_proxy.get_session_state",
            f"{_WIDGETS}.number_input.NumberInputMixin._number_input",
            f"{_WIDGETS}.radio.RadioMixin._radio",
            f"{_WIDGETS}.selectbox.SelectboxMixin._selectbox",
            f"{_WIDGETS}.slider.SliderMixin._slider",
            f"{_WIDGETS}.text_widgets.TextWidgetsMixin._text_area",
            f"{_WIDGETS}.text_widgets.TextWidgetsMixin._text_input",
            f"{_WIDGETS}.time_widgets.TimeWidgetsMixin._date_input",
            f"{_WIDGETS}.time_widgets.TimeWidgetsMixin._datetime_input",
            f"{_WIDGETS}.time_widgets.TimeWidgetsMixin._time_input",
        ),
    ),
    Patch(
        name="developer_messages",
        module="developer_messages",
        summary="a class server drops the developer menu's messages (clear cache, git info, run on save) from clients",
        gain="200 git-info messages in one second took another student's change from 18 ms to over 3 s; now dropped",
        upstream=NONE_FOUND,
        recheck="the BackMsg types handle_backmsg dispatches, and the toolbar modes that hide the developer menu",
        targets=(f"{_APP_SESSION}.handle_backmsg",),
    ),
    Patch(
        name="upload_caps",
        module="uploads",
        summary="the upload manager keeps one file per session and 64 MiB in all; forget_upload drops a file read",
        gain="1,000 uploads of 0.99 MB straight to a replica: +985 MiB -> +12 MiB; 300 uploads of 4 MB from 31 "
        "sessions: +1,167 MiB -> +90 MiB",
        upstream="https://github.com/streamlit/streamlit/issues/6748 (and "
        "https://github.com/streamlit/streamlit/issues/9218)",
        recheck="MemoryUploadedFileManager's storage layout (file_storage, _total_bytes, _file_count, _lock) and "
        "how it adds and removes files",
        targets=(
            f"{_UPLOADS}.__init__",
            f"{_UPLOADS}.add_file",
            f"{_UPLOADS}.remove_file",
            f"{_UPLOADS}.remove_session_files",
            f"{_RUN_CONTEXT}.ScriptRunContext.uploaded_file_mgr",
        ),
    ),
    Patch(
        name="long_links",
        module="long_links",
        summary="the HTTP server reads request heads up to 1 MiB; a query string Streamlit ignores is reported",
        gain="a 20 KiB shared link, which did not open at all, opens; a link over 512 Ki characters or 1,000 "
        "fields is named on the page instead of silently ignored",
        upstream="https://github.com/streamlit/streamlit/issues/9916 (long links) and "
        "https://github.com/streamlit/streamlit/pull/15803 (the limits that drop a query string)",
        recheck="the uvicorn settings Streamlit passes, and the limits and counting of sanitize_query_string",
        targets=(
            "streamlit.web.server.starlette.starlette_server._get_uvicorn_config_kwargs",
            f"{_APP_SESSION}.request_rerun",
            "streamlit.runtime.state.query_params.CLIENT_STATE_QUERY_STRING_MAX_LENGTH",
            "streamlit.runtime.state.query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS",
            "streamlit.runtime.state.query_params.sanitize_query_string",
        ),
    ),
    Patch(
        name="plotly_chart_from_json",
        module="plotly_chart",
        summary="st.plotly_chart's element built from a figure's JSON made once (and kept)",
        gain="a third of the model page's rerun server time was st.plotly_chart's copy and JSON; chart JSON of an "
        "8x8 heatmap 0.49 -> 0.20 ms, none for a kept one",
        upstream="https://github.com/streamlit/streamlit/issues/6978 (related: redrawing a Plotly chart is slow)",
        recheck="PlotlyMixin.plotly_chart's element (its fields, id, layout and agent properties): "
        "tests/test_plotly_element.py compares the two messages byte for byte",
        targets=(
            "streamlit.elements.plotly_chart.PlotlyMixin.plotly_chart",
            "streamlit.elements.plotly_chart._plotly_data",
            "streamlit.elements.plotly_chart.parse_selection_mode",
            "streamlit.elements.plotly_chart.PlotlyChartSelectionSerde",
            "streamlit.elements.plotly_chart._SELECTION_MODE_FROM_PROTO",
            "streamlit.elements.lib.utils.compute_and_register_element_id",
            "streamlit.delta_generator.DeltaGenerator._enqueue",
        ),
    ),
    Patch(
        name="sent_widget_values",
        module="sent_widgets",
        summary="the widget values a reconnected browser sent with the first run, read before the widgets are drawn",
        gain="no figure: it keeps the latest change of a page that reconnects (tests/test_reconnect.py)",
        upstream=NONE_FOUND,
        recheck="where SessionState keeps the widget states not yet drawn, how a state is unpacked, and the "
        "keyed widget id format ($$ID-<hash>-<key>)",
        targets=(
            "streamlit.runtime.state.session_state.SessionState._new_widget_state",
            "streamlit.runtime.state.session_state.WStates",
            "streamlit.runtime.state.session_state.Value",
            "streamlit.runtime.state.common.unpack_widget_state_value",
            "streamlit.runtime.state.common.GENERATED_ELEMENT_ID_PREFIX",
            "streamlit.elements.lib.utils._compute_element_id",
        ),
    ),
    Patch(
        name="script_run",
        module="script_run",
        summary="this run, the running fragment, whether it is the fragment's own rerun, and the main container",
        gain="no figure: the rerun byte budget, the offline file's record and the first paint need them",
        upstream=NONE_FOUND,
        recheck="ScriptRunContext's cursors (new in every run), fragment_ids_this_run and session_id, "
        "ThreadState's fragment_id, and st._main",
        targets=(
            f"{_RUN_CONTEXT}.ScriptRunContext.cursors",
            f"{_RUN_CONTEXT}.ScriptRunContext.fragment_ids_this_run",
            f"{_RUN_CONTEXT}.ScriptRunContext.reset",
            f"{_RUN_CONTEXT}.ThreadState.get",
            f"{_RUN_CONTEXT}.get_script_run_ctx",
            "streamlit._main",
        ),
    ),
    Patch(
        name="component_trigger_id",
        module="components",
        summary="the widget id of a custom component's trigger, for clients that act as a browser",
        gain="no figure: the class load test's simulated browsers and the tests fire the first paint's watcher",
        upstream=NONE_FOUND,
        recheck="the trigger id format of components v2",
        targets=("streamlit.components.v2.bidi_component.main._make_trigger_id",),
    ),
    Patch(
        name="added_routes",
        module="routes",
        summary="attnviz's own HTTP routes (the live class's version endpoint) ahead of Streamlit's in its route list",
        gain="no figure: a student's browser asks for the class's version over HTTP instead of rerunning its page "
        "every second (the live-class benchmark measures what a follower costs)",
        upstream="https://github.com/streamlit/streamlit/pull/13537 (st.App(routes=...) adds routes, but only "
        "under the ASGI launcher, not the one these patches were checked against)",
        recheck="that create_streamlit_routes still builds the whole route list and create_starlette_app calls it "
        "by its module name",
        targets=(
            "streamlit.web.server.starlette.starlette_app.create_streamlit_routes",
            "streamlit.web.server.starlette.starlette_app.create_starlette_app",
        ),
    ),
)

# The source each target had in the Streamlit release checked (version.CHECKED_STREAMLIT), by `fingerprint`
FINGERPRINTS: dict[str, str] = {
    "streamlit.web.server.starlette.starlette_app.create_streamlit_routes": "3caa04acf55738ae",
    "streamlit.web.server.starlette.starlette_app.create_starlette_app": "9ac1368f83fd511f",
    "streamlit.web.server.starlette.starlette_server._bind_socket": "a688999b57449b67",
    "streamlit.runtime.app_session.AppSession.request_rerun": "9a3ffc8a4bdc4d7a",
    "streamlit.runtime.app_session.AppSession.has_fragment": "628afbc0503f37d4",
    "streamlit.runtime.app_session.AppSession._on_scriptrunner_event": "5c27ad3ca2af9395",
    "streamlit.runtime.app_session.AppSession._handle_scriptrunner_event_on_event_loop": "4af4e340aa760a34",
    "streamlit.runtime.app_session.AppSession._call_soon_on_event_loop": "20ffab4cab999e20",
    "streamlit.runtime.runtime.Runtime._enqueued_some_message": "d3e2913c6d4c9372",
    "streamlit.runtime.runtime.Runtime._get_async_objs": "ce750e98c97e651b",
    "streamlit.runtime.state.session_state.SessionState.filtered_state": "635feab3d3bcaf9e",
    "streamlit.runtime.state.safe_session_state.SafeSessionState.__init__": "396df0eeb8cf0c06",
    "streamlit.runtime.state.session_state_proxy.get_session_state": "6e2b773c831ad6f1",
    "streamlit.elements.widgets.number_input.NumberInputMixin._number_input": "ce03a2f53f4c90c4",
    "streamlit.elements.widgets.radio.RadioMixin._radio": "25423b4957aa6427",
    "streamlit.elements.widgets.selectbox.SelectboxMixin._selectbox": "116b184c5549c100",
    "streamlit.elements.widgets.slider.SliderMixin._slider": "2e303acea4aa6014",
    "streamlit.elements.widgets.text_widgets.TextWidgetsMixin._text_area": "341c8129929b3bbb",
    "streamlit.elements.widgets.text_widgets.TextWidgetsMixin._text_input": "d69207b1e10b8fb3",
    "streamlit.elements.widgets.time_widgets.TimeWidgetsMixin._date_input": "2d0553e007e49e3b",
    "streamlit.elements.widgets.time_widgets.TimeWidgetsMixin._datetime_input": "113b745548e49ba1",
    "streamlit.elements.widgets.time_widgets.TimeWidgetsMixin._time_input": "7c6b684d6c27c9bf",
    "streamlit.runtime.app_session.AppSession.handle_backmsg": "51a773b039d3a33e",
    "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.__init__": "a6e922eee5049683",
    "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.add_file": "a44ccc090562f7e1",
    "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.remove_file": "4ad26c0f45e8af39",
    "streamlit.runtime.memory_uploaded_file_manager.MemoryUploadedFileManager.remove_session_files": "347915f007b0cbe1",
    "streamlit.runtime.scriptrunner_utils.script_run_context.ScriptRunContext.uploaded_file_mgr": "817317e4bf5676ed",
    "streamlit.web.server.starlette.starlette_server._get_uvicorn_config_kwargs": "40282eb42b52ec66",
    "streamlit.runtime.state.query_params.CLIENT_STATE_QUERY_STRING_MAX_LENGTH": "bcdccf73344567ae",
    "streamlit.runtime.state.query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS": "5f32273d06c248bb",
    "streamlit.runtime.state.query_params.sanitize_query_string": "501dc9a2ae80155f",
    "streamlit.elements.plotly_chart.PlotlyMixin.plotly_chart": "20ab3ade0a60a72b",
    "streamlit.elements.plotly_chart._plotly_data": "b9358104077b9a92",
    "streamlit.elements.plotly_chart.parse_selection_mode": "c332bb7914c2e082",
    "streamlit.elements.plotly_chart.PlotlyChartSelectionSerde": "6c9b831190dabc3d",
    "streamlit.elements.plotly_chart._SELECTION_MODE_FROM_PROTO": "691d3d02efa86b4b",
    "streamlit.elements.lib.utils.compute_and_register_element_id": "65ad1e409a736c36",
    "streamlit.delta_generator.DeltaGenerator._enqueue": "19cc690782e10abc",
    "streamlit.runtime.state.session_state.SessionState._new_widget_state": "83b8045e38faa34e",
    "streamlit.runtime.state.session_state.WStates": "5d63fa2a46c90327",
    "streamlit.runtime.state.session_state.Value": "ec89f43562e31d1a",
    "streamlit.runtime.state.common.unpack_widget_state_value": "22eee6af8bbd60b2",
    "streamlit.runtime.state.common.GENERATED_ELEMENT_ID_PREFIX": "c6fd5513520ab84f",
    "streamlit.elements.lib.utils._compute_element_id": "7babf67b474f8733",
    "streamlit.runtime.scriptrunner_utils.script_run_context.ScriptRunContext.cursors": "69a4065c12e334c1",
    "streamlit.runtime.scriptrunner_utils.script_run_context.ScriptRunContext.fragment_ids_this_run": "34379ad881a748cc",  # noqa: E501
    "streamlit.runtime.scriptrunner_utils.script_run_context.ScriptRunContext.reset": "44bc9bb3d7e32c4f",
    "streamlit.runtime.scriptrunner_utils.script_run_context.ThreadState.get": "2b4566dd3be0e50b",
    "streamlit.runtime.scriptrunner_utils.script_run_context.get_script_run_ctx": "affa911b131ad9da",
    "streamlit._main": "1ae7050490ba54d0",
    "streamlit.components.v2.bidi_component.main._make_trigger_id": "75a53a30e59bde90",
}


def current_fingerprints() -> dict[str, str]:
    """Every target's fingerprint in the installed Streamlit (what FINGERPRINTS should hold after a check)."""
    return {target: fingerprint(target) for patch in PATCHES for target in patch.targets}


if __name__ == "__main__":
    print("FINGERPRINTS: dict[str, str] = {")
    for target, digest in current_fingerprints().items():
        line = f'    "{target}": "{digest}",'
        print(line + ("  # noqa: E501" if len(line) > 120 else ""))
    print("}")
