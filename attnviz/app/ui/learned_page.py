"""The learned-attention page: two small models trained on tasks with a known answer. Try them, look inside, and
switch a head off (this module); watch the attention form while they learn (learned_training.py)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import streamlit as st
import torch

from attnviz.app.learned_state import (
    ABLATION_EXAMPLES,
    HEADS,
    LEARNED_FIELDS,
    LearnedState,
    decode_learned,
    encode_learned,
    output_labels,
    visible,
)
from attnviz.app.training.jobs import QUEUE
from attnviz.app.ui import fieldwidgets, learned_dates, live
from attnviz.app.ui.common import PROJECTOR_FIT, beside_chart, chart, inputs_box, shared_value
from attnviz.app.ui.editors import last_row_unless_linked, selected_row
from attnviz.app.ui.learned_training import (
    SESSION,
    capped_steps,
    history,
    shipped_run,
    training_controls,
    translation,
)
from attnviz.app.ui.messages import show_warning
from attnviz.app.ui.settings import PHONE_WIDTH, current_language, md_escape, on_a_phone, palette, presenting, tr
from attnviz.app.ui.share import share_box
from attnviz.app.ui.work import work_panel, work_panel_content
from attnviz.core.fields import field
from attnviz.core.multihead import head_rows
from attnviz.figures import attention as figures
from attnviz.figures import learned as learned_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.figures.style import POSITION_MARK
from attnviz.lessons.explain import explain_row
from attnviz.models.bert_views import token_labels
from attnviz.models.learned import dates, induction
from attnviz.models.learned.date_reading import read_date
from attnviz.models.learned.seq2seq import Translation
from attnviz.models.learned.train import DEFAULT_PROBES, TrainingRun


def model_run(state: LearnedState) -> tuple[TrainingRun, bool]:
    """The model for the state's seed and steps, and whether it is that one: the shipped model when they are the
    defaults, a finished training of them, else the shipped model."""
    shipped = shipped_run(state.task)
    settings = state.training()
    if settings == shipped.settings:
        return shipped, True
    job = QUEUE.get(settings)
    return (job.run, True) if job is not None and job.status == "done" and job.run is not None else (shipped, False)


def fresh_state() -> LearnedState:
    """The page opened with no link: in Chinese, the date box holds the Chinese date (the second recorded probe).
    The link then names that date, so it shows the same in any language. A session in a live class starts from the
    teacher's state instead, whose link leaves the English date unnamed."""
    if current_language() != "en" and live.member() is None:
        return LearnedState(date=DEFAULT_PROBES["dates"][1])
    return LearnedState()


def learned_page() -> None:
    """Draw the learned-attention page."""
    state: LearnedState = SESSION.sync_from_link(decode_learned, fresh_state)
    for warning in SESSION.warnings:
        show_warning(warning)
    with inputs_box():  # folded on a projector, so that the first chart starts on the first screen
        task = fieldwidgets.choice(SESSION, field(LEARNED_FIELDS, "task"), "learned.task_{}", radio=True)
        state = replace(state, task=task)
        if task == "dates":
            state, ready = _date_input(state)
        else:
            state, ready = _sequence_input(state)
    # The seed and the steps are drawn with the training, below; the model above already depends on them
    state = replace(state, seed=int(SESSION.value("seed")), steps=capped_steps(task))
    run, exact = model_run(state)
    st.subheader(tr("learned.try_heading"))
    if not exact:
        job = QUEUE.get(state.training())
        training = job is not None and job.active  # under way (this tab may only have joined it): no button below
        if training:
            st.info(tr("learned.shipped_while_training", steps=run.settings.steps), icon="ℹ️")
        else:
            st.info(tr("learned.shipped_until_trained", seed=state.seed, steps=run.settings.steps), icon="ℹ️")
    hidden = live.answers_hidden()
    if hidden:
        live.answer_hidden_note()
    elif ready:
        if task == "dates":
            _try_dates(state, run)
        else:
            state = _try_sequence(state, run)
    st.subheader(tr("learned.learn_heading"))
    state = training_controls(state)
    state = state if hidden else history(state)
    params = SESSION.publish(state, encode_learned)
    share_box(SESSION, params, decode_learned)


def _date_input(state: LearnedState) -> tuple[LearnedState, bool]:
    """The examples and the date box; False (with the reason on the page) when the model cannot read it."""
    learned_dates.date_presets(str(SESSION.value("date")))
    text = st.text_input(
        tr("learned.date"),
        key=SESSION.key("date"),
        max_chars=field(LEARNED_FIELDS, "date").max_len,
        help=tr("learned.date_help", examples=" · ".join(f.example for f in dates.FORMATS)),
    )
    state = replace(state, date=text)
    unknown = dates.unknown_characters(text)
    if not text.strip():
        st.info(tr("learned.date_empty"), icon="✍️")
        return state, False
    if unknown:
        st.error(tr("learned.unknown_characters", characters=md_escape(" ".join(unknown))), icon="🚫")
        return state, False
    return state, True


def _sequence_input(state: LearnedState) -> tuple[LearnedState, bool]:
    """The sequence box; False (with the reason on the page) when it has unknown symbols or a bad length."""
    text = st.text_input(
        tr("learned.sequence"),
        key=SESSION.key("sequence"),
        max_chars=field(LEARNED_FIELDS, "sequence").max_len,
        help=tr("learned.sequence_help", first=induction.SYMBOLS[0], last=induction.SYMBOLS[-1]),
    )
    state = replace(state, sequence=text)
    symbols, unknown = induction.parse_sequence(text)
    if unknown:
        shown = md_escape(" ".join(unknown))
        st.error(
            tr("learned.unknown_symbols", symbols=shown, first=induction.SYMBOLS[0], last=induction.SYMBOLS[-1]),
            icon="🚫",
        )
        return state, False
    most = induction.MAX_LENGTH - 1
    if not 2 <= len(symbols) <= most:
        st.error(tr("learned.sequence_length", count=len(symbols), most=most), icon="🚫")
        return state, False
    return state, True


def _try_dates(state: LearnedState, run: TrainingRun) -> None:
    """The translation checked against the true date, its cross-attention (output characters x input characters)
    with the wrong rows marked, one row worked out (the first wrong one), and the accuracy of each format."""
    result = translation(run, state.date)
    reading = read_date(state.date)
    charts, side = beside_chart()  # on a projector the check beside the chart: the chart on the first screen
    with side if side is not None else contextlib.nullcontext():
        wrong = learned_dates.checked_translation(result, reading)
        learned_dates.reading_message(state.date, reading)
        st.caption(tr("learned.dates_accuracy", accuracy=f"{run.accuracy:.1%}", count=2000, steps=run.settings.steps))
    inputs = visible(result.text)
    outputs = output_labels(result.output, [row.row for row in wrong])
    language = current_language()
    with charts:
        _dates_chart(result, outputs, inputs, [row.row for row in wrong], language)
    with st.expander(tr("learned.work_heading"), expanded=bool(wrong)):
        row = selected_row(SESSION, outputs, tr("learned.row_date"), first=learned_dates.opening_row(wrong))
        keys = token_labels(inputs, POSITION_MARK, start=1)  # shown literally in the steps (the chart escapes its own)
        steps = explain_row(result.trace, row, outputs[row], keys, language, run.model.decoder.attention)
        work_panel(work_panel_content(steps), heading=f"{tr('learned.work_heading')} · {outputs[row]}")
        st.caption(tr("learned.trained_weights"))
        attention = run.model.decoder.attention
        _weight_tables({"W_q": attention.W_q.weight, "W_k": attention.W_k.weight, "w_v": attention.w_v.weight})
    learned_dates.format_table(run)


def _dates_chart(result: Translation, outputs: list[str], inputs: list[str], wrong: list[int], language: str) -> None:
    """The cross-attention of the date, output characters x input characters, the wrong rows marked; on a projector
    no taller than what the first screen has left below the heading (PROJECTOR_FIT)."""
    chart(
        lambda: learned_figures.mark_rows(
            figures.weights_heatmap(
                AttentionGrid(result.trace.weights.numpy(), query_labels=outputs, key_labels=inputs),
                scores=result.trace.scores.numpy(),
                title=tr("learned.dates_chart"),
                palette=palette(),
                lang=language,
            ),
            wrong,
        ),
        "attnviz_dates_attention",
        fit=PROJECTOR_FIT,
    )


def _head_rows(run: TrainingRun) -> list[tuple[induction.HeadPattern, float]]:
    """Each head's pattern scores and the held-out accuracy without it (shared by the sessions on one model)."""

    def build() -> list[tuple[induction.HeadPattern, float]]:
        examples = induction.held_out_examples(ABLATION_EXAMPLES)
        patterns = induction.head_patterns(run.model, examples)
        return [(p, induction.ablation_accuracy(run.model, examples, p.layer, p.head)) for p in patterns]

    return shared_value(("learned_heads", run.settings.seed, run.settings.steps), build)


def _grid_titles(layers: int, heads: int, off: tuple[int, ...]) -> list[str]:
    """Short panel titles ("L1 H2"; the switched-off ones marked): the labels are in the lines below the chart, and
    a full label as a title overlapped the next panel's on a phone."""
    titles = [
        tr("learned.head_short", layer=layer + 1, head=head + 1) for layer in range(layers) for head in range(heads)
    ]
    return [tr("learned.head_off", title=title) if number in off else title for number, title in enumerate(titles, 1)]


def _head_title(pattern: induction.HeadPattern) -> str:
    label = tr(f"learned.pattern_{pattern.label}")
    return tr("learned.head_title", layer=pattern.layer + 1, head=pattern.head + 1, label=label)


def _try_sequence(state: LearnedState, run: TrainingRun) -> LearnedState:
    """Every head on the typed sequence, the model's guesses (each marked right or wrong where the repeat says what
    comes next), each head's pattern and what switching heads off costs."""
    symbols, _ = induction.parse_sequence(state.sequence)
    rows = _head_rows(run)
    titles = [_head_title(pattern) for pattern, _ in rows]
    layers, heads = run.model.config.layers, run.model.config.heads
    chosen = st.pills(
        tr("learned.off"),
        list(range(1, HEADS + 1)),
        selection_mode="multi",
        key=SESSION.key("off"),
        format_func=lambda h: titles[h - 1],  # made in this run's language
        help=tr("learned.off_help"),
    )
    off = tuple(sorted(int(h) for h in chosen or ()))
    pairs = [divmod(h - 1, heads) for h in off]
    head_mask = induction.without_heads(run.model.config, pairs) if off else None
    seen = induction.sequence_attention(run.model, symbols, head_mask)
    weights, tokens = seen.weights, seen.tokens
    projected = presenting()  # on a projector the four heads in one row, first, and what they guessed below them
    phone = on_a_phone()  # on a phone one head per row, each as tall as it is wide
    if not projected:
        _guesses(run, seen, rows, titles, off)
    language = current_language()
    chart(
        lambda: learned_figures.grey_panels(
            figures.heads_grid(
                AttentionGrid(weights.reshape(layers * heads, len(tokens), len(tokens)).numpy(), None, tokens, tokens),
                head_titles=_grid_titles(layers, heads, off),
                palette=palette(),
                columns=layers * heads if projected else 1 if phone else heads,
                square=True,  # a phone's two columns stretched each cell into a tall strip
                width=PHONE_WIDTH if phone else None,
                lang=language,
            ),
            [h - 1 for h in off],
        ),
        "attnviz_induction_heads",
        fit=PROJECTOR_FIT - 70,  # below the pills
    )
    if projected:
        _guesses(run, seen, rows, titles, off)
    _head_lines(titles, rows, run.accuracy)
    _sequence_work(run, seen, titles, language)
    return replace(state, off=off)


def _guesses(
    run: TrainingRun,
    seen: induction.SequenceAttention,
    rows: list[tuple[induction.HeadPattern, float]],
    titles: list[str],
    off: tuple[int, ...],
) -> None:
    """The model's guess after each token, marked right or wrong, and what the heads switched off cost."""
    st.markdown(tr("learned.guesses", pairs=md_escape(marked_guesses(seen.tokens, seen.guesses))))
    st.caption(tr("learned.guesses_marks"))
    _off_note(run, rows, titles, off)


def marked_guesses(tokens: list[str], guesses: list[str]) -> str:
    """ "A→B ✓ B→C ✗ ...": each position's guess of the next token, marked right (✓) or wrong (✗) where the sequence
    says what comes next and the token came before (the repeat: an induction head can know it); unmarked where no
    rule can know it (a token's first occurrence, the last position)."""
    shown = []
    for position, (token, guess) in enumerate(zip(tokens, guesses, strict=True)):
        known = position + 1 < len(tokens) and position > 0 and token in tokens[1:position]
        mark = (" ✓" if guess == tokens[position + 1] else " ✗") if known else ""
        shown.append(f"{token}→{guess}{mark}")
    return " ".join(shown)


def _off_note(run: TrainingRun, rows: list[tuple[induction.HeadPattern, float]], titles: list[str], off: tuple) -> None:
    """The held-out accuracy without the heads switched off (one head: its row's; several: measured once for them)."""
    if not off:
        st.caption(
            tr("learned.sequence_accuracy", accuracy=f"{run.accuracy:.1%}", count=2000, steps=run.settings.steps)
        )
        return
    if len(off) == 1:
        accuracy = rows[off[0] - 1][1]
    else:

        def build() -> float:
            examples = induction.held_out_examples(ABLATION_EXAMPLES)
            mask = induction.without_heads(run.model.config, [divmod(h - 1, run.model.config.heads) for h in off])
            return induction.token_accuracy(run.model, examples, mask)

        accuracy = shared_value(("learned_heads_off", run.settings.seed, run.settings.steps, off), build)
    change = f"{(accuracy - run.accuracy) * 100:+.1f}"
    named = tr("faithful.list_separator").join(titles[h - 1] for h in off)
    if len(off) == 1:
        text = tr("learned.switched_off", head=named, accuracy=f"{accuracy:.1%}", change=change)
    else:
        text = tr("learned.switched_off_several", heads=named, accuracy=f"{accuracy:.1%}", change=change)
    st.warning(text, icon="🔌")


def _head_lines(titles: list[str], rows: list[tuple[induction.HeadPattern, float]], full: float) -> None:
    """Each head's scores and the accuracy without it, one line per head (five columns did not fit a phone)."""
    lines = [
        "- "
        + tr(
            "learned.head_line",
            head=title,
            previous=f"{pattern.previous_token:.3f}",
            induction=f"{pattern.induction:.3f}",
            without=f"{accuracy:.1%}",
            change=f"{(accuracy - full) * 100:+.1f}",
        )
        for title, (pattern, accuracy) in zip(titles, rows, strict=True)
    ]
    st.markdown("\n".join(lines))
    st.caption(tr("learned.labels_note", threshold=induction.LABEL_THRESHOLD, count=ABLATION_EXAMPLES))


def _sequence_work(run: TrainingRun, seen: induction.SequenceAttention, titles: list[str], language: str) -> None:
    """Show-your-work on one head and query of the sequence model, with that head's trained weights."""
    heads, tokens = run.model.config.heads, seen.tokens
    with st.expander(tr("learned.work_heading")):
        head = st.selectbox(
            tr("learned.head"),
            list(range(1, HEADS + 1)),
            key=SESSION.key("head"),
            format_func=lambda h: titles[h - 1],  # made in this run's language: Streamlit may call it later
        )
        labels = token_labels(tokens, POSITION_MARK, start=1)  # as the charts mark a repeat: <s> is position 1
        first = last_row_unless_linked(SESSION, labels)  # in the repeat: the induction head at work, not <s>
        row = selected_row(SESSION, labels, tr("learned.row_sequence"), first=first)
        layer, index = divmod(head - 1, heads)
        trace = seen.traces[layer][index]
        steps = explain_row(trace, row, labels[row], labels, language)
        work_panel(
            work_panel_content(steps), heading=f"{tr('learned.work_heading')} · {titles[head - 1]} · {labels[row]}"
        )
        projections = run.model.layers[layer].attention
        block = head_rows(projections.W_q.weight.shape[0], index, heads)
        st.caption(tr("learned.head_weights", layer=layer + 1, head=index + 1, first=block.start + 1, last=block.stop))
        _weight_tables(
            {name: getattr(projections, name).weight[block.start : block.stop] for name in ("W_q", "W_k", "W_v")}
        )


def _weight_tables(weights: dict[str, torch.Tensor]) -> None:
    """Trained weight matrices as scrolling tables, each titled with its name and shape."""
    for name, weight in weights.items():
        st.markdown(f"**{name}** {tuple(weight.shape)}")
        st.dataframe(weight.detach().numpy(), height=180)
