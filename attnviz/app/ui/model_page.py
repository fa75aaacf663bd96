"""The pretrained-model page: all-MiniLM-L6-v2's 72 real heads, one head up close, one query's q·k step by step."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import cachetools
import streamlit as st

from attnviz.app.budget import model_seconds
from attnviz.app.exports import attentions_npz, model_snippet, view_csv
from attnviz.app.model_state import NUM_HEADS, NUM_LAYERS, PARTS, ModelState, decode_model, encode_model
from attnviz.app.state import MAX_TEXT
from attnviz.app.ui import live_sync
from attnviz.app.ui.common import below_main_chart, controls_and_results, first_paint, pending, shared_value
from attnviz.app.ui.messages import show_warning
from attnviz.app.ui.model_views import head_view_section, model_view_section, neuron_view_section
from attnviz.app.ui.models import get_model, model_or_error, sentence_input
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import begin_run, error_text, labeller, md_escape, tr
from attnviz.app.ui.share import share_box
from attnviz.app.ui.turns import ServerBusyError, busy_note, turn
from attnviz.figures.style import POSITION_MARK
from attnviz.models.bert import BertTrace, unknown_tokens
from attnviz.models.bert_views import (
    find_heads,
    head_view,
    head_weights,
    token_labels,
    token_selection,
)

PAGE = "model"
SESSION = PageSession("model", convert={"heads": list})  # the multiselect holds a list; the state a tuple


# The traces of the sentences typed last, shared by every session: at most MODEL_CACHE_MB of tensors (a trace is
# ~0.1 MB at the default 13 tokens and ~66 MB at 254), each kept 10 minutes. A byte budget, not a count: eight
# long sentences held 530 MB, which with the model and a class's sessions went past a pod's memory limit.
MODEL_CACHE_MB = 320
_TRACES: cachetools.TTLCache[Any, BertTrace] = cachetools.TTLCache(
    maxsize=MODEL_CACHE_MB * 2**20, ttl=600, getsizeof=lambda trace: trace.nbytes
)
_TRACES_LOCK = threading.Condition()  # one computation per sentence: sessions asking for it meanwhile wait


@cachetools.cached(_TRACES, lock=_TRACES_LOCK, condition=_TRACES_LOCK)
def run_model(sentence: str, pair: str) -> BertTrace:
    """Every layer and head for one input: a pure result, shared by sessions that type the same sentence."""
    return get_model().run(sentence, pair or None)


def model_page() -> None:
    """Draw the pretrained-model page."""
    state: ModelState = SESSION.sync_from_link(decode_model, ModelState)
    for warning in SESSION.warnings:
        show_warning(warning)
    if model_or_error() is None:
        return
    left, right = st.columns(2)
    sentence = sentence_input(left, SESSION)
    pair = right.text_input(
        tr("model.pair"),
        key=SESSION.key("pair"),
        max_chars=MAX_TEXT,
        help=tr("model.pair_help"),
    )
    state = replace(state, sentence=sentence, pair=pair)
    try:
        encoded = get_model().encode(sentence, pair).tokens  # ~1 ms: prices the run before it is computed
    except ValueError as exc:
        st.error(tr("model.sentence_error", error=error_text(exc)), icon="🚫")
        encoded = []
    tokens = len(encoded)
    unknown = unknown_tokens(encoded)
    if unknown:  # Chinese, emoji, ...: the vocabulary is English WordPiece; say so, and what it could not read
        shown = md_escape(" ".join(unknown[:8]) + (" …" if len(unknown) > 8 else ""))
        st.warning(tr("model.unknown", count=len(unknown), total=tokens, tokens=shown), icon="⚠️")
    _controls_and_results(state, model_seconds(tokens))


def _trace(state: ModelState) -> BertTrace | None:
    """The shared trace of the state's sentences (None when the model refused them: the page said why).

    Nothing of a session holds a trace between runs: not a fragment's arguments (Streamlit keeps them for the
    fragment's reruns), not a download's data. Each run asks the shared cache, so a class's memory is the cache's
    eight traces, not one per student (a 254-token trace is ~60 MB)."""
    try:
        return run_model(state.sentence, state.pair)
    except ValueError:
        return None


def _controls(state: ModelState, trace: BertTrace | None) -> ModelState:
    """Layer, heads, token filters and the followed token."""
    layer = st.selectbox(tr("model.layer"), list(range(1, NUM_LAYERS + 1)), key=SESSION.key("layer"))
    # One pill per head, all twelve in view: a multiselect's chips ("head 12 ×") were cut off in this column
    heads = st.pills(
        tr("model.heads"),
        list(range(1, NUM_HEADS + 1)),
        selection_mode="multi",
        key=SESSION.key("heads"),
        format_func=str,
    )
    if not heads:
        st.warning(tr("model.no_head", head=state.heads[0]))
        heads = list(state.heads)
    hide = st.toggle(tr("model.hide_special"), key=SESSION.key("hide_special"))
    renormalise = st.toggle(
        tr("model.renormalise"),
        key=SESSION.key("renormalise"),
        help=tr("model.renormalise_help"),
    )
    part = "all"
    if state.pair.strip():
        part = st.radio(
            tr("model.between"),
            PARTS,
            key=SESSION.key("part"),
            format_func=labeller("model.part_{}"),
        )
    token = state.token
    if trace is not None:
        key = SESSION.key("token")
        if st.session_state.get(key, 0) >= len(trace.tokens):
            st.session_state[key] = 1 if len(trace.tokens) > 2 else 0  # the first word of a shorter sentence
        tokens = trace.tokens
        token = st.selectbox(
            tr("model.token"),
            list(range(len(tokens))),
            key=key,
            format_func=lambda i: f"{i}: {tokens[i]}",
        )
    return replace(
        state,
        layer=int(layer),
        heads=tuple(sorted(int(h) for h in heads)),
        hide_special=bool(hide),
        renormalise=bool(renormalise),
        part=part,
        token=int(token),
    )


VIEW_KEY = "model:view"  # the model view's chart: a click on a head's thumbnail opens that head


def _open_head(layer: int, head: int) -> None:
    """Show one head in the head view and the neuron view (a click on its thumbnail, or its button)."""
    st.session_state[SESSION.key("layer")] = int(layer)
    st.session_state[SESSION.key("heads")] = [int(head)]


def _open_clicked_head() -> None:
    """Callback of the model view: the clicked thumbnail's head, from its point's (layer, head)."""
    event = st.session_state.get(VIEW_KEY)
    points = event.selection.points if event is not None else []
    if points and points[0].get("customdata"):
        layer, head = points[0]["customdata"][:2]
        _open_head(layer, head)


def _finder(state: ModelState, trace: BertTrace) -> None:
    """The heads of this sentence that do something recognisable, each with a button that opens it."""
    found = shared_value(("finder", state.sentence, state.pair), lambda: find_heads(trace))
    if not found:
        return
    st.markdown(tr("model.finder"))
    for pattern, layer, head, weight in found:
        label = tr("model.finder_button", target=tr(f"model.pattern.{pattern}"), layer=layer, head=head,
                   weight=f"{weight:.2f}")  # fmt: skip
        st.button(
            label,
            key=SESSION.part("open_head", pattern, layer, head),  # one head may do two things
            on_click=_open_head,
            args=(layer, head),
            help=tr("model.open_head_help"),
        )


def _draw(state: ModelState, trace: BertTrace) -> Callable[[], None]:
    """Model view, head view and neuron view; returns what draws the exports.

    Each view is a shared figure (`chart(..., shared=...)`), found by what it shows: the sentence and the options
    that change it. A control that a view does not read does not rebuild it (the model view stays as it is when the
    followed token changes), and the sessions of a class on one sentence share every view."""
    tokens = token_labels(trace.tokens, POSITION_MARK)
    rows, cols = token_selection(trace.tokens, trace.type_ids, state.hide_special, state.part)
    if not rows or not cols:
        st.info(tr("model.nothing"))
        neuron_view_section(state, trace, tokens)
    else:
        model_view_section(state, trace, tokens, rows, cols, key=VIEW_KEY, on_select=_open_clicked_head)

        def below() -> None:  # it may run in the next run: it asks the shared cache, it holds no trace itself
            shared = _trace(state)
            if shared is not None:
                head_view_section(state, shared, tokens, rows, cols)
                neuron_view_section(state, shared, tokens)

        below_main_chart(below)
    return partial(_export, state, rows, cols)


def _export(state: ModelState, rows: list[int], cols: list[int]) -> None:
    """The download buttons and the code that reproduces the views.

    The files are made when a button is pressed, from the shared trace: a download's data would otherwise stay in
    this session's memory (the .npz of all heads is 19 MB at 256 tokens)."""
    st.caption(tr("model.export_caption", count=NUM_LAYERS * NUM_HEADS))
    st.download_button(
        tr("model.download_csv"),
        partial(_head_view_csv, state, rows, cols),
        file_name=f"attnviz_minilm_layer{state.layer}_heads{'-'.join(map(str, state.heads))}.csv",
        mime="text/csv",
    )
    st.download_button(
        tr("model.download_npz"),
        partial(_all_heads_npz, state),
        file_name="attnviz_minilm_attentions.npz",
        mime="application/octet-stream",
    )
    st.code(model_snippet(state), language="python")


def _head_view_csv(state: ModelState, rows: list[int], cols: list[int]) -> str:
    """The head view's weights as CSV, made when its download button is pressed."""
    trace = run_model(state.sentence, state.pair)
    block = head_view(head_weights(trace, state.layer, state.heads), rows, cols, state.renormalise)
    return view_csv(block, trace.tokens, rows, cols)


def _all_heads_npz(state: ModelState) -> bytes:
    """Every head's weights as .npz, made when its download button is pressed."""
    return attentions_npz(run_model(state.sentence, state.pair))


@st.fragment
def _controls_and_results(state: ModelState, seconds: float) -> None:
    """Controls and every view. A fragment: moving a control reruns only this part, not the sentence inputs.

    A long sentence (`seconds`, the estimate of running and drawing it) takes its turn at the server's gate; when
    the server is too busy for it, the controls and the link stay, without the views."""
    begin_run()  # a fragment rerun does not pass through page_frame
    try:
        with turn(seconds):
            _views(state, _trace(state))
    except ServerBusyError as exc:
        busy_note(exc)
        _views(state, None)


def _views(state: ModelState, trace: BertTrace | None) -> None:
    left, right = controls_and_results([1, 3])
    with left:
        if first_paint():  # they follow the main chart, which their values (the stored state's) already drew
            pending("controls")
        else:
            state = _controls(state, trace)
            if trace is not None:
                _finder(state, trace)
    params = SESSION.publish(state, encode_model)
    export = None
    with right:
        if trace is not None and live_sync.answers_hidden():
            live_sync.answer_hidden_note()
        elif trace is not None:
            export = _draw(state, trace)
        share_box(SESSION, params, decode_model, extra=export)
