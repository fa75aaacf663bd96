"""The self- and cross-attention pages: controls -> state -> attnviz -> figures (attention_results.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from attnviz.app.pipeline import AttentionInputs, WordVectors, resolve_inputs, valid_lens_for
from attnviz.app.state import (
    MAX_HEADS,
    AttentionState,
    apply_preset,
    attention_fields,
    decode_attention,
    default_attention_state,
    encode_attention,
    preset_batches,
    score_param_fields,
)
from attnviz.app.ui import fieldwidgets, live_panels, live_sync
from attnviz.app.ui.attention_results import draw_results
from attnviz.app.ui.common import (
    below_main_chart,
    beside_chart,
    controls_and_results,
    first_paint,
    inputs_box,
    lazy_expander,
    pending,
)
from attnviz.app.ui.editors import (
    batch_selector,
    lens_editor,
    matrix_editor,
    preset_label,
    preset_note,
    score_params,
    score_picker,
)
from attnviz.app.ui.messages import show_error, show_warning
from attnviz.app.ui.models import get_model
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import begin_run, labeller, md_escape, presenting, tr
from attnviz.app.ui.share import share_box
from attnviz.core.fields import field
from attnviz.core.multihead import head_counts
from attnviz.figures.style import POSITION_MARK
from attnviz.models.bert import MODEL_NAME, ModelUnavailableError


def _load_preset(session: PageSession) -> None:
    """Callback of the preset picker: the preset's inputs and settings in every control; "none": the defaults."""
    key = st.session_state[session.key("preset")]
    default = default_attention_state(session.page)
    session.load(apply_preset(default, key) if key else default)
    session.warnings = []


def _load_batch(session: PageSession) -> None:
    """Callback of the batch row: that row's inputs and valid lengths, the user's scoring controls kept."""
    state = replace(session.state, **_scoring_values(session))
    row = int(st.session_state[session.key("batch")])
    session.load(apply_preset(state, state.preset, batch=row, keep_controls=True))
    # New inputs: the whole page reruns, also when the batch row sits beside the chart (presentation mode), inside
    # the fragment of the controls and results, whose own rerun would not redraw the inputs above it.
    st.rerun(scope="app")


def _scoring_values(session: PageSession) -> dict[str, object]:
    params = tuple(f.name for f in score_param_fields())
    names = ("score", *params, "temperature", "causal", "projections", "proj_seed")
    return {name: session.value(name) for name in names}


def _preset_note_and_batch(session: PageSession, state: AttentionState) -> None:
    """The preset's source and what it shows, and its batch row: in the sidebar, or beside the chart on a projector."""
    if state.preset:
        preset_note(state.preset)
        fields = attention_fields(session.page)
        batch_selector(
            session, field(fields, "batch"), preset_batches(state.preset), on_change=lambda: _load_batch(session)
        )


def _sidebar(session: PageSession, state: AttentionState) -> None:
    if first_paint():  # it follows the main chart
        return
    fields = attention_fields(session.page)
    with st.sidebar:
        fieldwidgets.choice(session, field(fields, "preset"), preset_label(), on_change=_load_preset, args=(session,))
        if not presenting():  # the sidebar is folded away on a projector: the note sits beside the chart there
            _preset_note_and_batch(session, state)
        st.button(
            tr("frame.reset"),
            on_click=session.reset,
            args=(default_attention_state(session.page),),
            help=tr("frame.reset_help"),
        )


def _inputs_panel(session: PageSession, state: AttentionState) -> AttentionState:
    """Sentence or matrix inputs; returns the state with the typed inputs (the last good ones on error)."""
    page, fields = session.page, attention_fields(session.page)
    mode = fieldwidgets.choice(session, field(fields, "mode"), "attention.input_{}", radio=True)
    changes: dict[str, object] = {"mode": mode}
    if mode == "sentence":
        widths = [4, 2, 1, 1] if page == "self" else [3, 3, 2, 1, 1]
        columns = st.columns(widths, vertical_alignment="bottom")
        sentence = field(fields, "sentence")
        label = tr("attention.sentence" if page == "self" else "attention.query_sentence")
        changes["sentence"] = columns[0].text_input(
            label, key=session.bound("sentence"), max_chars=sentence.max_len, help=tr(sentence.help)
        )
        if page == "cross":
            source = field(fields, "source")
            changes["source"] = columns[1].text_input(
                tr(source.label), key=session.bound("source"), max_chars=source.max_len
            )
        embed = fieldwidgets.choice(
            session, field(fields, "embed"), labeller("attention.embed_{}", model=MODEL_NAME), where=columns[-3]
        )
        changes["embed"] = embed
        if embed == "minilm":
            columns[-2].caption(tr("attention.model_dim"))
        elif embed == "trained":
            columns[-2].caption(tr("attention.trained_dim"))
        else:
            changes["dim"] = fieldwidgets.number(session, field(fields, "dim"), where=columns[-2])
            changes["embed_seed"] = fieldwidgets.number(session, field(fields, "embed_seed"), where=columns[-1])
    elif page == "self":
        column, _ = st.columns(2)
        with column:
            matrix = matrix_editor(session, "queries", tr("attention.tokens_x"), tr("attention.tokens_x_help"))
        if matrix is not None:
            changes.update(queries=matrix, keys=matrix, values=matrix)
    else:
        editors = (
            ("queries", tr("attention.queries")),
            ("keys", tr("attention.keys")),
            ("values", tr("attention.values")),
        )
        for column, (name, label) in zip(st.columns(3), editors, strict=True):
            with column:
                matrix = matrix_editor(session, name, label, tr("attention.matrix_help", what=md_escape(label)))
            if matrix is not None:
                changes[name] = matrix
    return replace(state, **changes)


def _optional_score_label() -> Callable[[str], str]:
    """Score names as labels, "" as "off" (in this run's language)."""
    score, off = labeller("score.{}.label"), tr("attention.off")
    return lambda name: score(name) if name else off


def _word_vectors(state: AttentionState) -> WordVectors | None:
    """The pretrained model's embedding of a sentence, when the page uses it (loads the shared model once)."""
    if state.mode != "sentence" or state.embed != "minilm":
        return None
    return get_model().word_vectors


def _heads(session: PageSession, sizes: tuple[int, ...]) -> int:
    """The number of heads: only counts that split every size evenly are offered."""
    allowed = head_counts(*sizes, limit=MAX_HEADS)
    key = session.bound("heads")
    wanted = session.current(key, int, 1)
    if wanted not in allowed:
        fitting = max((h for h in allowed if h <= wanted), default=1)
        st.session_state[key] = fitting
        st.caption(tr("attention.heads_adjusted", wanted=wanted, heads=fitting, sizes=", ".join(map(str, sizes))))
    f = field(attention_fields(session.page), "heads")
    if len(allowed) == 1:
        st.caption(tr("attention.heads_only_one", sizes=", ".join(map(str, sizes))))
        return 1
    return int(st.select_slider(tr(f.label), allowed, key=key, help=tr(f.help)))


def _more(session: PageSession, sizes: tuple[int, ...]) -> dict[str, object]:
    """The folded section: projections, heads, residual, comparison, predict-then-reveal."""
    names = ("projections", "proj_seed", "heads", "residual", "compare", "predict")
    values = {name: session.value(name) for name in names}
    open_key = session.part("open", "more")
    used = values["heads"] > 1 or values["projections"] != "identity" or values["residual"]
    if used or values["compare"] or values["predict"]:
        st.session_state.setdefault(open_key, True)  # a link or preset that uses them opens the section
    box = lazy_expander(tr("attention.more"), key=open_key)
    if box is None:
        return values
    fields = attention_fields(session.page)
    with box:
        values["projections"] = fieldwidgets.choice(
            session, field(fields, "projections"), "attention.projection_{}", radio=True, label="W_q, W_k, W_v"
        )
        if values["projections"] == "random":
            values["proj_seed"] = fieldwidgets.number(session, field(fields, "proj_seed"))
        elif values["projections"] == "trained":
            st.caption(tr("attention.projection_trained_help"))
        values["heads"] = _heads(session, sizes)
        if session.page == "cross":
            values["residual"] = fieldwidgets.toggle(session, field(fields, "residual"))
        values["compare"] = fieldwidgets.choice(session, field(fields, "compare"), _optional_score_label())
        values["predict"] = fieldwidgets.toggle(session, field(fields, "predict"))
    return values


def _controls(session: PageSession, state: AttentionState, inputs: AttentionInputs | None) -> AttentionState:
    """Scoring, temperature, masks, projections and heads, each drawn from its field."""
    fields = attention_fields(session.page)
    score = score_picker(session, field(fields, "score"))
    params = score_params(session, fields, score)
    temperature = fieldwidgets.log_number(session, field(fields, "temperature"), tr("widget.log_scale"))
    causal = fieldwidgets.toggle(session, field(fields, "causal"))
    num_q, num_k = (inputs.queries.shape[0], inputs.keys.shape[0]) if inputs else (1, 1)
    lens_mode, lens = lens_editor(session, num_q, num_k)
    sizes = (inputs.queries.shape[-1], inputs.keys.shape[-1], inputs.values.shape[-1]) if inputs else (1,)
    more = _more(session, sizes)
    unchanged = {f.name: session.value(f.name) for f in score_param_fields()}  # the other scores' parameters
    return replace(
        state,
        **{**unchanged, **params},
        score=score,
        temperature=temperature,
        causal=causal,
        lens_mode=lens_mode,
        lens=tuple(lens),
        projections=more["projections"],
        proj_seed=int(more["proj_seed"]),
        heads=int(more["heads"]),
        residual=session.page == "cross" and bool(more["residual"]),
        compare=more["compare"],
        predict=bool(more["predict"]),
        row=int(session.value("row")),
        crange=session.value("crange"),  # its control sits above the weights chart (attention_results)
    )


def attention_page(page: str) -> None:
    """Draw the self- (`page="self"`) or cross-attention (`page="cross"`) page."""
    session = PageSession(page)
    state = session.sync_from_link(lambda params: decode_attention(params, page), lambda: default_attention_state(page))
    for warning in session.warnings:
        show_warning(warning)
    _sidebar(session, state)
    with inputs_box():
        state = _inputs_panel(session, state)
    try:
        inputs = resolve_inputs(replace(state, lens_mode="none"), word_vectors=_word_vectors(state))
    except (ValueError, ModelUnavailableError) as exc:
        show_error(exc)
        inputs = None
    _controls_and_results(session, state, inputs)


def _fragment_fields() -> frozenset[str]:
    """The fields whose widgets the fragment draws (editors aside: a new value needs a new editor, a whole run)."""
    scoring = {f.name for f in score_param_fields()}
    more = {"projections", "proj_seed", "heads", "residual", "compare", "predict"}
    return frozenset({"score", *scoring, "temperature", "causal", *more, "row", "crange"} - {"score_matrix"})


@st.fragment
def _controls_and_results(session: PageSession, state: AttentionState, inputs: AttentionInputs | None) -> None:
    """Controls and everything computed from them. A fragment: moving a control reruns only this part, not the
    page frame, the sidebar and the inputs above (their values arrive as the arguments of the last full run)."""
    begin_run()  # a fragment rerun does not pass through page_frame
    session.follow_class(lambda p: decode_attention(p, session.page), _fragment_fields())
    live_panels.fragment_follower(session.page)
    left, right = controls_and_results([2, 3])
    with left:
        if first_paint():  # they follow the main chart, which their values (the stored state's) already drew
            pending("controls")
        else:
            state = _controls(session, state, inputs)
    params = session.publish(state, encode_attention)
    results = None
    with right:
        charts, side = beside_chart()
        if side is not None:
            with side:
                _preset_note_and_batch(session, state)
        with charts:
            if inputs is not None:
                try:
                    # Embeddings are already computed; only the valid lengths depend on the controls.
                    lens = valid_lens_for(state, inputs.queries.shape[0], inputs.keys.shape[0])
                    inputs = dataclasses.replace(inputs, valid_lens=lens)
                except ValueError as exc:
                    show_error(exc)
                else:
                    repeated = repeated_example(inputs.query_labels)
                    if repeated is not None:
                        (side or st).caption(tr("attention.repeated_tokens", first=repeated[0], second=repeated[1]))
                    if live_sync.answers_hidden():
                        live_sync.answer_hidden_note()
                    else:
                        results = draw_results(session, state, inputs, side=side)
    if results is not None:
        below_main_chart(results.below)
    share_box(session, params, lambda p: decode_attention(p, session.page), extra=results and results.export)


def repeated_example(labels: list[str]) -> tuple[str, str] | None:
    """The axis labels of the first token that occurs twice, as the charts mark them (1-based positions:
    ("the·1", "the·7")), escaped for Markdown; None when no token repeats."""
    seen: dict[str, int] = {}
    for position, label in enumerate(labels, start=1):
        if label in seen:
            text = md_escape(str(label))
            return f"{text}{POSITION_MARK}{seen[label]}", f"{text}{POSITION_MARK}{position}"
        seen[label] = position
    return None
