"""Is attention an explanation? on the two models trained by the project: the induction model on the student's
repeat, the dates model on the student's date (attnviz/models/learned/explanation.py), each with its maps and
"does attention matter here?"."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from attnviz.app.explanation_state import (
    HEADS,
    LAYERS,
    MEAN_OF_HEADS,
    ExplanationState,
    decode_explanation,
    encode_explanation,
    shown_layer_head,
)
from attnviz.app.learned_state import MAX_SEQUENCE_TEXT
from attnviz.app.ui.common import chart, controls_and_results, shared_result, shared_result_ready
from attnviz.app.ui.explanation_common import PAGE, SESSION, draw_maps, warn_first
from attnviz.app.ui.learned_training import shipped_run
from attnviz.app.ui.settings import begin_run, current_language, error_text, md_escape, tr
from attnviz.app.ui.share import share_box
from attnviz.app.ui.turns import ServerBusyError, busy_note, turn
from attnviz.core.errors import AttnvizError
from attnviz.figures.explanation import matter_bars
from attnviz.models.learned.dates import MAX_PROBE_LENGTH, OUTPUT_LENGTH
from attnviz.models.learned.explanation import (
    Ablation,
    ModelMaps,
    attention_matters,
    check_date,
    dates_explanation,
    induction_explanation,
    layer_maps,
)
from attnviz.models.learned.seq2seq import translate_texts

# Estimated seconds for every map of one input (2 cores, quiet): the induction model's are ~0.1 s, the dates
# model's integrated gradients through its recurrent encoder ~0.8 s ("does attention matter", ~1 s, once per process).
MAPS_SECONDS = {"induction": 0.3, "dates": 1.5}


def trained_page(state: ExplanationState) -> None:
    """The input of the trained model the state names, then its controls and maps."""
    left, right = st.columns(2)
    if state.model == "induction":
        text = left.text_input(
            tr("learned.sequence"),
            key=SESSION.key("sequence"),
            max_chars=MAX_SEQUENCE_TEXT,
            help=tr("faithful.sequence_help"),
        )
        state = replace(state, sequence=text)
    else:
        text = left.text_input(
            tr("learned.date"), key=SESSION.key("date"), max_chars=MAX_PROBE_LENGTH, help=tr("faithful.date_help")
        )
        output = _output(text)
        character = right.selectbox(
            tr("faithful.character"),
            list(range(1, OUTPUT_LENGTH + 1)),
            key=SESSION.key("character"),
            format_func=lambda c: f"{c} · {output[c - 1]}" if output else str(c),
            help=tr("faithful.character_help"),
        )
        state = replace(state, date=text, character=int(character))
    _trained_results(state)


def _output(text: str) -> str | None:
    """What the dates model writes for `text` (10 characters), or None when it cannot read it."""
    try:
        check_date(text)
    except AttnvizError:
        return None
    return translate_texts(shipped_run("dates").model, [text])[0].output


def _capped(name: str, options: list[int]) -> None:
    """A link's layer or head beyond what this model has (MiniLM's 6 layers and 12 heads) becomes its last."""
    key = SESSION.key(name)
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[-1] if name == "layer" else MEAN_OF_HEADS


@st.fragment
def _trained_results(state: ExplanationState) -> None:
    """Layer and head (induction) beside the maps. A fragment: moving them reruns only this part."""
    begin_run()  # a fragment rerun does not pass through page_frame
    left, right = controls_and_results([1, 3])
    with left:
        state = _layer_and_head(state)
    params = SESSION.publish(state, encode_explanation)
    with right:
        try:
            maps, (trained, ablations) = _results(state)
            _draw(state, maps)
            _matters(state.model, trained, ablations)
        except AttnvizError as exc:
            st.error(error_text(exc), icon="🚫")
        except ServerBusyError as exc:
            busy_note(exc)
        share_box(SESSION, params, decode_explanation)


def _layer_and_head(state: ExplanationState) -> ExplanationState:
    """The induction model's layer and head selectors; the dates model has one attention, so none."""
    if state.model != "induction":
        st.caption(tr("faithful.one_attention"))
        return state
    layers, heads = list(range(1, LAYERS["induction"] + 1)), list(range(MEAN_OF_HEADS, HEADS["induction"] + 1))
    _capped("layer", layers)
    _capped("head", heads)
    layer = st.selectbox(tr("model.layer"), layers, key=SESSION.key("layer"))
    head = st.selectbox(
        tr("faithful.head"),
        heads,
        key=SESSION.key("head"),
        format_func=lambda h: tr("faithful.mean_of_heads") if h == MEAN_OF_HEADS else str(h),
    )
    st.caption(tr("faithful.controls_note"))
    return replace(state, layer=int(layer), head=int(head))


def _results(state: ExplanationState) -> tuple[ModelMaps, tuple[float, list[Ablation]]]:
    """Every map of the state's input, and "does attention matter" for its model, each shared by the sessions that
    show the same; what is not kept yet is computed in one turn at the gate (two turns in one run would wait for the
    gate to reopen after the first)."""
    task = state.model
    maps_key, matter_key = _input_key(state), (PAGE, "matter", task)
    own = maps_key == _input_key(
        replace(ExplanationState(), model=task)
    )  # the page's own default input = (PAGE, "matter", task)

    def maps() -> ModelMaps:
        model = shipped_run(task).model
        if task == "induction":
            return induction_explanation(model, state.sequence)
        return dates_explanation(model, state.date, state.character - 1)

    def matter() -> tuple[float, list[Ablation]]:
        return attention_matters(shipped_run(task).model, task)

    # What every session of a process shares and a link cannot vary (the model's ablations; the maps of the page's
    # own default input) is computed once per process and takes no turn at the gate, whose pause after a turn would
    # otherwise make a teacher who switches models wait for the last model's maps.
    measured = shared_result_ready(matter_key)
    if measured and shared_result_ready(maps_key):
        return shared_result(maps_key, maps), shared_result(matter_key, matter)
    with (
        turn(0.0 if own else MAPS_SECONDS[task]),
        st.spinner(tr("faithful.computing" if measured else "faithful.matter_computing")),
    ):
        return shared_result(maps_key, maps), shared_result(matter_key, matter)


def _input_key(state: ExplanationState) -> tuple:
    """What the maps of a trained model depend on: the model and its input."""
    if state.model == "induction":
        return (PAGE, state.model, state.sequence)
    return (PAGE, state.model, (state.date, state.character))


def _draw(state: ExplanationState, maps: ModelMaps) -> None:
    """The readout, the maps side by side with their ρ, and the warnings they call for."""
    shown_layer, shown_head = shown_layer_head(state)
    layer, head = shown_layer - 1, None if shown_head == MEAN_OF_HEADS else shown_head - 1
    if state.model == "induction":
        which = tr("faithful.mean_of_heads") if head is None else tr("faithful.head_n", head=head + 1)
        readout = tr("faithful.readout_induction", target=md_escape(maps.target), log_prob=f"{maps.log_prob:.3f}")
        st.caption(readout + " " + tr("faithful.induction_layer_note", layer=layer + 1, which=which))
    else:
        st.caption(
            tr(
                "faithful.readout_dates",
                target=md_escape(maps.target),
                character=state.character,
                log_prob=f"{maps.log_prob:.3f}",
            )
        )
    by_method = layer_maps(maps, layer, head)
    words = [t if t.strip() else "␣" for t in maps.tokens]  # a space, visible
    draw_maps(by_method, words)
    warn_first(by_method, maps.tokens)
    st.caption(tr(f"faithful.maps_caption_{state.model}"))


def _matters(task: str, trained: float, ablations: list[Ablation]) -> None:
    """Does attention matter here? The held-out accuracy as trained and with each layer's attention replaced."""
    st.markdown(f"**{tr('faithful.matter_title')}**")
    st.caption(tr(f"faithful.matter_text_{task}"))
    labels = [tr("faithful.as_trained")] + [
        tr(f"faithful.ablation_{a.how}", layer=a.layer + 1)
        if task == "induction"
        else tr(f"faithful.ablation_{a.how}_one")
        for a in ablations
    ]
    lang = current_language()
    chart(
        lambda: matter_bars(labels, [trained] + [a.accuracy for a in ablations], lang=lang),
        "attnviz_explanation_matters",
        shared=(PAGE, "matter", task, lang),
    )
