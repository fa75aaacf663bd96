"""The self- and cross-attention pages: controls -> state -> attnviz -> figures."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from attnviz import figures
from attnviz.bert import MODEL_NAME, ModelUnavailableError
from attnviz.explain import explain_row
from attnviz.figures import unique_labels
from attnviz.i18n import t
from attnviz.multihead import MultiHeadTrace
from attnviz.pipeline import (
    AttentionInputs,
    WordVectors,
    parse_guess,
    python_snippet,
    resolve_inputs,
    run_attention,
    total_variation,
    valid_lens_for,
    weights_csv,
)
from attnviz.presets import PRESETS
from attnviz.scores import SCORES
from attnviz.state import (
    EMBEDDINGS,
    MAX_DIM,
    MAX_HEADS,
    AttentionState,
    apply_preset,
    decode_attention,
    encode_attention,
    preset_batches,
)
from attnviz.ui.common import (
    bound_key,
    chart,
    chart_tables,
    controls_and_results,
    publish,
    push_state,
    sync_from_url,
    value,
    widget_key,
)
from attnviz.ui.model_page import get_model
from attnviz.ui.settings import begin_run, current_language, error_text, labeller, palette, tr
from attnviz.ui.widgets import (
    batch_selector,
    lazy_expander,
    lens_editor,
    matrix_editor,
    preset_label,
    score_params,
    score_picker,
    selected_row,
    share_box,
    work_panel,
)

NO_PRESET = ""


def _load_preset(page: str) -> None:
    """Callback of the preset picker: load the preset's inputs and settings into every control."""
    key = st.session_state[widget_key(page, "preset")]
    state = st.session_state[f"state:{page}"]
    if key:
        push_state(page, apply_preset(state, key))
    else:
        push_state(page, replace(state, preset="", batch=0))


def _load_batch(page: str) -> None:
    state = st.session_state[f"state:{page}"]
    push_state(
        page, apply_preset(state, state.preset, batch=st.session_state[widget_key(page, "batch")], keep_controls=True)
    )


def _inputs_panel(page: str, state: AttentionState) -> AttentionState:
    """Sentence or matrix inputs; returns the state with the typed inputs (the last good ones on error)."""
    mode = st.radio(
        tr("attention.input"),
        ["sentence", "numbers"],
        key=widget_key(page, "mode"),
        horizontal=True,
        format_func=labeller("attention.input_{}"),
    )
    changes = {"mode": mode}
    if mode == "sentence":
        label = tr("attention.sentence" if page == "self" else "attention.query_sentence")
        widths = [4, 2, 1, 1] if page == "self" else [3, 3, 2, 1, 1]
        columns = st.columns(widths, vertical_alignment="bottom")
        changes["sentence"] = columns[0].text_input(
            label,
            key=widget_key(page, "sentence"),
            max_chars=2000,
            help=tr("attention.sentence_help"),
        )
        if page == "cross":
            changes["source"] = columns[1].text_input(
                tr("attention.source_sentence"), key=widget_key(page, "source"), max_chars=2000
            )
        changes["embed"] = columns[-3].selectbox(
            tr("attention.embeddings"),
            EMBEDDINGS,
            key=widget_key(page, "embed"),
            format_func=labeller("attention.embed_{}", model=MODEL_NAME),
            help=tr("attention.embeddings_help"),
        )
        if changes["embed"] == "minilm":
            columns[-2].caption(tr("attention.model_dim"))
        else:
            changes["dim"] = columns[-2].number_input(
                tr("attention.embedding_size"), 1, MAX_DIM, key=widget_key(page, "dim")
            )
            changes["embed_seed"] = columns[-1].number_input(
                tr("attention.embedding_seed"), 0, 2**31 - 1, key=widget_key(page, "embed_seed")
            )
    elif page == "self":
        column, _ = st.columns(2)
        with column:
            matrix = matrix_editor(
                page,
                "queries",
                tr("attention.tokens_x"),
                "t",
                tr("attention.tokens_x_help"),
            )
        if matrix is not None:
            changes.update(queries=matrix, keys=matrix, values=matrix)
    else:
        editors = (
            ("queries", tr("attention.queries"), "q"),
            ("keys", tr("attention.keys"), "k"),
            ("values", tr("attention.values"), "k"),
        )
        for column, (name, label, prefix) in zip(st.columns(3), editors, strict=True):
            with column:
                matrix = matrix_editor(page, name, label, prefix, tr("attention.matrix_help", what=label))
            if matrix is not None:
                changes[name] = matrix
    return replace(state, **changes)


def _optional_score_label() -> Callable[[str], str]:
    """Score names as labels, "" as "off" (in this run's language)."""
    score, off = labeller("score.{}.label"), tr("attention.off")
    return lambda name: score(name) if name else off


def _head_label() -> Callable[[int], str]:
    """Head index 0, 1, ... as "head 1", "head 2", ... (in this run's language)."""
    lang = current_language()
    return lambda index: t("attention.head_n", lang, n=index + 1)


def _word_vectors(state: AttentionState) -> WordVectors | None:
    """The pretrained model's embedding of a sentence, when the page uses it (loads the shared model once)."""
    if state.mode != "sentence" or state.embed != "minilm":
        return None
    return get_model().word_vectors


def _controls(page: str, state: AttentionState, num_queries: int, num_keys: int) -> AttentionState:
    """Scoring, temperature, masks, projections and heads."""
    score = score_picker(page)
    score_params(page, score)
    temperature = st.number_input(
        tr("attention.temperature"),
        0.001,
        1000.0,
        key=widget_key(page, "temperature"),
        step=0.1,
        format="%.3g",
        help=tr("attention.temperature_help"),
    )
    causal = st.toggle(tr("attention.causal"), key=widget_key(page, "causal"))
    lens_mode, lens = lens_editor(page, num_queries, num_keys)
    open_key = f"open:{page}:proj"
    used = value(page, "heads") > 1 or value(page, "projections") != "identity" or value(page, "residual")
    if used or value(page, "compare") or value(page, "predict"):
        st.session_state.setdefault(open_key, True)  # a link or preset that uses them opens the section
    box = lazy_expander(tr("attention.more"), key=open_key)
    if box is not None:
        with box:
            projections = st.radio(
                "W_q, W_k, W_v",
                ["identity", "random"],
                key=bound_key(page, "projections"),
                horizontal=True,
                format_func=labeller("attention.projection_{}"),
            )
            if projections == "random":
                st.number_input(tr("attention.projection_seed"), 0, 2**31 - 1, key=bound_key(page, "proj_seed"))
            st.slider(
                tr("attention.heads"),
                1,
                MAX_HEADS,
                key=bound_key(page, "heads"),
                help=tr("attention.heads_help"),
            )
            if page == "cross":
                st.toggle(tr("attention.residual"), key=bound_key(page, "residual"))
            st.selectbox(
                tr("attention.compare"),
                ["", *SCORES],
                key=bound_key(page, "compare"),
                format_func=_optional_score_label(),
            )
            st.toggle(tr("attention.predict"), key=bound_key(page, "predict"), help=tr("attention.predict_help"))
    return replace(
        state,
        score=score,
        score_seed=int(value(page, "score_seed")),
        num_hiddens=int(value(page, "num_hiddens")),
        bandwidth=float(value(page, "bandwidth")),
        temperature=float(temperature),
        causal=bool(causal),
        lens_mode=lens_mode,
        lens=tuple(lens),
        projections=value(page, "projections"),
        proj_seed=int(value(page, "proj_seed")),
        heads=int(value(page, "heads")),
        residual=page == "cross" and bool(value(page, "residual")),
        compare=value(page, "compare"),
        row=int(value(page, "row")),
        predict=bool(value(page, "predict")),
    )


def _predicted(
    page: str, state: AttentionState, trace: MultiHeadTrace, q_labels: list[str], k_labels: list[str]
) -> int | None:
    """Predict, then reveal: ask for a guess of one query row's weights (the heads' average when there are
    several); once revealed, show it beside the truth.

    Returns the guessed row once the page may show the weights (the guess for exactly this state is revealed)."""
    st.subheader(tr("attention.predict_heading"))
    row = selected_row(page, q_labels)
    revealed_key = f"revealed:{page}"
    fingerprint = (tuple(sorted(encode_attention(replace(state, row=row)).items())), tuple(k_labels))
    revealed = st.session_state.get(revealed_key)
    if revealed is not None and revealed[0] == fingerprint:
        guess = revealed[1]
        truth = trace.mean_weights[row].numpy()
        chart(
            figures.guess_figure(
                guess,
                truth,
                key_labels=k_labels,
                title=tr("attention.guess_title", query=q_labels[row]),
                lang=current_language(),
            ),
            f"{page}_guess",
        )
        st.caption(tr("attention.guess_distance", distance=f"{total_variation(guess, truth):.2f}"))
        return row
    st.caption(tr("attention.predict_caption", query=q_labels[row]))
    labels = unique_labels(k_labels, len(k_labels))
    text = st.text_input(
        tr("attention.guess_input", count=len(k_labels)),
        key=f"guess:{page}:{hash(fingerprint)}",  # a fresh, empty answer for every new question
        help=tr("attention.guess_order", keys=", ".join(labels)),
    )
    guess, problem, typed = parse_guess(text, len(k_labels))
    st.button(
        tr("attention.reveal"),
        disabled=guess is None,
        type="primary",
        key=f"reveal:{page}",
        on_click=st.session_state.__setitem__,  # before the rerun it causes, so that rerun shows the answer
        args=(revealed_key, (fingerprint, guess)),
    )
    if problem == "count":
        st.caption(tr("attention.guess_count", count=typed, keys=len(k_labels)))
    elif problem:
        st.caption(tr("attention.guess_needed"))
    return None


def _draw(page: str, state: AttentionState, inputs: AttentionInputs) -> Callable[[], None] | None:
    """Compute and draw every figure of the page; return what draws the exports (for the share box)."""
    try:
        trace = run_attention(state, inputs)
    except ValueError as exc:
        st.error(error_text(exc), icon="🚫")
        return None
    q_labels, k_labels = inputs.query_labels, inputs.key_labels
    guessed_row = None
    if state.predict:
        guessed_row = _predicted(page, state, trace, q_labels, k_labels)
        if guessed_row is None:
            return None  # the weights stay hidden until the student's guess is in
    title = tr("attention.weights_title", score=tr(f"score.{state.score}.label"))
    shown = []  # the charts above the numbers section: their tables are in it (one folded section, not one each)
    if trace.num_heads == 1:
        head = trace.heads[0]
        shown.append(
            chart(
                figures.weights_heatmap(
                    head.weights.numpy(),
                    scores=head.scores.numpy(),
                    mask=head.mask.numpy(),
                    query_labels=q_labels,
                    key_labels=k_labels,
                    title=title,
                    palette=palette(),
                    lang=current_language(),
                ),
                f"{page}_attention_weights",
                table="elsewhere",
            )
        )
    else:
        shown.append(
            chart(
                figures.heads_grid(
                    trace.weights.numpy(),
                    mask=trace.heads[0].mask.numpy(),
                    query_labels=q_labels,
                    key_labels=k_labels,
                    head_titles=[tr("attention.head_n", n=h + 1) for h in range(trace.num_heads)],
                    palette=palette(),
                    lang=current_language(),
                ),
                f"{page}_attention_heads",
                table="elsewhere",
            )
        )
        shown.append(
            chart(
                figures.weights_heatmap(
                    trace.mean_weights.numpy(),
                    mask=trace.heads[0].mask.numpy(),
                    query_labels=q_labels,
                    key_labels=k_labels,
                    title=tr("attention.mean_title"),
                    palette=palette(),
                    lang=current_language(),
                ),
                f"{page}_attention_mean",
                table="elsewhere",
            )
        )
    head = trace.heads[0]
    raw = lazy_expander(tr("attention.raw"), key=f"open:{page}:raw")
    if raw is not None:
        with raw:
            for fig in shown:
                chart_tables(fig)
            chart(
                figures.matrix_heatmap(
                    head.scores.numpy(),
                    row_labels=q_labels,
                    col_labels=k_labels,
                    title=tr("attention.raw_title_head1" if trace.num_heads > 1 else "attention.raw_title"),
                    x_title=tr("fig.keys"),
                    y_title=tr("fig.queries"),
                    lang=current_language(),
                ),
                f"{page}_raw_scores",
                table="inline",
            )
            out_cols = [f"o{j + 1}" for j in range(trace.output.shape[-1])]
            out_title = tr("attention.output_residual" if trace.residual else "attention.output")
            chart(
                figures.matrix_heatmap(
                    trace.output.numpy(),
                    row_labels=q_labels,
                    col_labels=out_cols,
                    title=out_title,
                    x_title=tr("fig.features"),
                    y_title=tr("fig.queries"),
                    lang=current_language(),
                ),
                f"{page}_outputs",
                table="inline",
            )
            if state.projections == "random":
                cols = st.columns(4)
                for col, name in zip(cols, ("W_q", "W_k", "W_v", "W_o"), strict=True):
                    with col:
                        chart(
                            figures.matrix_heatmap(
                                getattr(trace, name).numpy(), title=name, show_values=False, lang=current_language()
                            ),
                            f"{page}_{name}",
                        )
    if state.compare:
        try:
            other = run_attention(state, inputs, score=state.compare)
        except ValueError as exc:
            st.error(
                tr(
                    "attention.comparison_error",
                    score=tr(f"score.{state.compare}.label"),
                    error=error_text(exc),
                ),
                icon="🚫",
            )
        else:
            st.subheader(tr("attention.side_by_side"))
            chart(
                figures.comparison_figure(
                    trace.mean_weights.numpy(),
                    other.mean_weights.numpy(),
                    label_a=tr(f"score.{state.score}.label"),
                    label_b=tr(f"score.{state.compare}.label"),
                    mask=head.mask.numpy(),
                    query_labels=q_labels,
                    key_labels=k_labels,
                    palette=palette(),
                    lang=current_language(),
                ),
                f"{page}_compare_{state.score}_{state.compare}",
            )
    st.subheader(tr("attention.show_work"))
    row = selected_row(page, q_labels) if guessed_row is None else guessed_row  # the guess chose the row already
    head_index = 0
    if trace.num_heads > 1:
        head_index = st.selectbox(
            tr("attention.head"),
            list(range(trace.num_heads)),
            format_func=_head_label(),
            key=f"workhead:{page}",
        )
    work_panel(explain_row(trace.heads[head_index], row, q_labels[row], k_labels, current_language()))

    def export() -> None:
        st.caption(tr("attention.export_caption"))
        st.download_button(
            tr("attention.download_csv"),
            weights_csv(head, q_labels, k_labels),
            file_name=f"attnviz_{page}_weights.csv",
            mime="text/csv",
        )
        st.code(python_snippet(state), language="python")

    return export


def attention_page(page: str) -> None:
    """Draw the self- (`page="self"`) or cross-attention (`page="cross"`) page."""
    state = sync_from_url(page, lambda params: decode_attention(params, page))
    page_presets = [
        k for k, p in PRESETS.items() if p.page in ("self", "cross") and (page == "cross" or p.page == "self")
    ]
    with st.sidebar:
        st.selectbox(
            tr("attention.preset"),
            [NO_PRESET, *page_presets],
            key=widget_key(page, "preset"),
            format_func=preset_label(),
            on_change=_load_preset,
            args=(page,),
        )
        if state.preset:
            st.caption(f"**{tr(f'preset.{state.preset}.source')}** · {tr(f'preset.{state.preset}.description')}")
            batch_selector(page, preset_batches(state.preset), on_change=_load_batch)
    state = _inputs_panel(page, state)
    try:
        inputs = resolve_inputs(replace(state, lens_mode="none"), word_vectors=_word_vectors(state))
    except (ValueError, ModelUnavailableError) as exc:
        st.error(error_text(exc), icon="🚫")
        inputs = None
    _controls_and_results(page, state, inputs)


@st.fragment
def _controls_and_results(page: str, state: AttentionState, inputs: AttentionInputs | None) -> None:
    """Controls and everything computed from them. A fragment: moving a control reruns only this part, not the
    page frame, the sidebar and the inputs above (their values arrive as the arguments of the last full run)."""
    begin_run()  # a fragment rerun does not pass through page_frame
    left, right = controls_and_results([2, 3])
    with left:
        num_q = inputs.queries.shape[0] if inputs else 1
        num_k = inputs.keys.shape[0] if inputs else 1
        state = _controls(page, state, num_q, num_k)
    params = publish(page, state, encode_attention)
    export = None
    with right:
        if inputs is not None:
            try:
                # Embeddings are already computed; only the valid lengths depend on the controls.
                lens = valid_lens_for(state, inputs.queries.shape[0], inputs.keys.shape[0])
                inputs = dataclasses.replace(inputs, valid_lens=lens)
            except ValueError as exc:
                st.error(error_text(exc), icon="🚫")
            else:
                if len(set(inputs.query_labels)) < len(inputs.query_labels):
                    st.caption(tr("attention.repeated_tokens"))
                export = _draw(page, state, inputs)
        share_box(params, page, extra=export)
