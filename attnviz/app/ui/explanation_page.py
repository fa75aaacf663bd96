"""Is attention an explanation? The pretrained model's attention maps beside rollout, flow, norm-based attention and
two gradient maps, each ranking the word pieces of the student's sentence and each compared with blank-out by
Spearman's ρ; and how much of each layer lands on [CLS] and [SEP], by weight and by norm-based contribution."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from attnviz.app.budget import model_seconds
from attnviz.app.explanation_state import (
    MEAN_OF_HEADS,
    MODELS,
    ExplanationState,
    decode_explanation,
    encode_explanation,
)
from attnviz.app.model_state import NUM_HEADS, NUM_LAYERS
from attnviz.app.state import MAX_TEXT
from attnviz.app.ui.common import chart, controls_and_results, shared_result, shared_result_ready
from attnviz.app.ui.explanation_common import PAGE, SESSION, draw_maps, warn_first
from attnviz.app.ui.explanation_trained import trained_page
from attnviz.app.ui.explanation_work import explanation_work
from attnviz.app.ui.messages import show_warning
from attnviz.app.ui.models import get_model, model_or_error, sentence_input
from attnviz.app.ui.settings import begin_run, current_language, error_text, tr
from attnviz.app.ui.share import share_box
from attnviz.app.ui.turns import ServerBusyError, busy_note, turn
from attnviz.core.attribution import FLOW_MAX_TOKENS
from attnviz.core.errors import AttnvizError
from attnviz.figures.explanation import sink_bars
from attnviz.models.bert_attribution import pooled
from attnviz.models.bert_explanation import (
    SentenceMaps,
    layer_maps,
    sentence_maps,
    sink_column,
)

# Every map of a sentence, besides running the model: integrated gradients' 32 steps, blank-out's batched passes and
# the flow's maximum flows (bench/README.md: 0.3-1.6 s on a quiet machine, far more on a busy one). Over the gate's
# threshold for any sentence, so new maps always take their turn.
MAPS_SECONDS = 2.0


def explanation_page() -> None:
    """Draw the page: the model to explain, then its input and maps."""
    state: ExplanationState = SESSION.sync_from_link(decode_explanation, ExplanationState)
    for warning in SESSION.warnings:
        show_warning(warning)
    chosen = st.radio(
        tr("faithful.model"),
        MODELS,
        key=SESSION.key("model"),
        horizontal=True,
        format_func=lambda m: tr(f"faithful.model_{m}"),
    )
    state = replace(state, model=str(chosen))
    if state.model == "minilm":
        _minilm_page(state)
    else:
        trained_page(state)
    with st.expander(tr("faithful.findings_title")):
        st.markdown(tr("faithful.findings"))  # bench/faithfulness.py measured it (README.md's table)


def _minilm_page(state: ExplanationState) -> None:
    """The sentence boxes of the pretrained model, then its controls and maps."""
    model = model_or_error()
    if model is None:
        return
    left, right = st.columns(2)
    sentence = sentence_input(left, SESSION)
    pair = right.text_input(
        tr("faithful.pair"), key=SESSION.key("pair"), max_chars=MAX_TEXT, help=tr("faithful.pair_help")
    )
    state = replace(state, sentence=sentence, pair=pair)
    tokens = 0
    try:
        tokens = len(model.encode(sentence).tokens)  # ~1 ms: prices the run before it is computed
        if pair.strip():
            model.encode(pair)
    except ValueError as exc:
        if tokens:
            st.error(tr("faithful.pair_error", error=error_text(exc)), icon="🚫")
        else:
            st.error(tr("model.sentence_error", error=error_text(exc)), icon="🚫")
        tokens = -1
    _controls_and_results(state, tokens)


def _maps(state: ExplanationState, seconds: float) -> SentenceMaps:
    """Every map of the state's sentence, shared by the sessions that show the same sentences. Computing them
    (`seconds`, estimated) takes a turn at the server's gate, with a spinner; maps already kept are only read."""
    shared = (PAGE, state.sentence, state.pair.strip())

    def build() -> SentenceMaps:
        model = get_model()
        encoded = model.encode(state.sentence)
        trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
        other = pooled(model.run(state.pair)) if state.pair.strip() else None
        return sentence_maps(model, trace, encoded.ids, encoded.type_ids, other)

    if shared_result_ready(shared):
        return shared_result(shared, build)
    # Captum (and the matplotlib it imports) loads once per process, ~1 s: before the turn, so that the gate's pause
    # after it is charged for the maps, not for an import
    import attnviz.models.bert_gradients  # noqa: F401

    own = shared == (PAGE, ExplanationState().sentence, "")  # the page's default: once per process, no turn
    with turn(0.0 if own else seconds), st.spinner(tr("faithful.computing")):
        return shared_result(shared, build)


@st.fragment
def _controls_and_results(state: ExplanationState, tokens: int) -> None:
    """Layer and head beside the maps. A fragment: moving a control reruns only this part, from the shared maps."""
    begin_run()  # a fragment rerun does not pass through page_frame
    left, right = controls_and_results([1, 3])
    with left:
        layer = st.selectbox(tr("model.layer"), list(range(1, NUM_LAYERS + 1)), key=SESSION.key("layer"))
        head = st.selectbox(
            tr("faithful.head"),
            list(range(MEAN_OF_HEADS, NUM_HEADS + 1)),
            key=SESSION.key("head"),
            format_func=lambda h: tr("faithful.mean_of_heads") if h == MEAN_OF_HEADS else str(h),
        )
        st.caption(tr("faithful.controls_note"))
    state = replace(state, layer=int(layer), head=int(head))
    params = SESSION.publish(state, encode_explanation)
    with right:
        if tokens > 0:
            try:
                maps = _maps(state, model_seconds(tokens) + MAPS_SECONDS)
                _draw(state, maps)
            except ServerBusyError as exc:
                busy_note(exc)
        share_box(SESSION, params, decode_explanation)


def _draw(state: ExplanationState, maps: SentenceMaps) -> None:
    """The maps side by side with their ρ (hidden while a live class's question is open: it asks which is largest),
    the warnings they call for, and the share of [CLS] and [SEP]."""
    lang = current_language()
    layer, head = state.layer - 1, None if state.head == MEAN_OF_HEADS else state.head - 1
    by_method = layer_maps(maps, layer, head)
    which = tr("faithful.mean_of_heads") if head is None else tr("faithful.head_n", head=state.head)
    words = [maps.tokens[i] for i in maps.positions]
    if maps.flow is None:
        st.info(error_text(AttnvizError("flow_too_long", tokens=len(maps.tokens), limit=FLOW_MAX_TOKENS)), icon="ℹ️")
    st.caption(tr("faithful.layer_note", layer=state.layer, which=which))
    draw_maps(by_method, words)
    warn_first(by_method, words)  # below the chart: on a projector it starts on screen one
    _sink_warning(state, maps, head)
    st.caption(
        tr(
            "faithful.maps_caption",
            readout=tr("faithful.readout_cosine" if state.pair.strip() else "faithful.readout_self"),
        )
    )
    st.markdown(tr("faithful.sink_text"))
    chart(
        lambda: sink_bars([s.weight for s in maps.sinks], [s.norm for s in maps.sinks], lang=lang),
        "attnviz_explanation_sinks",
    )
    explanation_work(state, maps)


def _sink_warning(state: ExplanationState, maps: SentenceMaps, head: int | None) -> None:
    """A warning when [CLS] or [SEP] takes the most raw attention of the chosen layer and head."""
    sink = sink_column(maps, state.layer - 1, head)
    if sink is not None:
        token, share = sink
        st.warning(tr("faithful.sink_warning", token=token, share=f"{share:.0%}", layer=state.layer), icon="⚠️")
