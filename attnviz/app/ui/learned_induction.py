"""The induction model on the learned-attention page: the typed sequence, every head on it, the model's guesses
marked right or wrong, each head's pattern, what switching heads off costs, and one head's row worked out."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from attnviz.app.learned_state import ABLATION_EXAMPLES, HEADS, LEARNED_FIELDS, LearnedState
from attnviz.app.ui.common import PROJECTOR_FIT, chart, shared_value
from attnviz.app.ui.editors import last_row_unless_linked, selected_row
from attnviz.app.ui.learned_training import SESSION, weight_tables
from attnviz.app.ui.settings import PHONE_WIDTH, current_language, md_escape, on_a_phone, palette, presenting, tr
from attnviz.app.ui.work import work_panel, work_panel_content
from attnviz.core.fields import field
from attnviz.core.multihead import head_rows
from attnviz.figures import attention as figures
from attnviz.figures import learned as learned_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.figures.style import POSITION_MARK
from attnviz.lessons.explain import explain_row
from attnviz.models.bert_views import token_labels
from attnviz.models.learned import induction
from attnviz.models.learned.train import TrainingRun


def sequence_input(state: LearnedState) -> tuple[LearnedState, bool]:
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


def try_sequence(state: LearnedState, run: TrainingRun) -> LearnedState:
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
        weight_tables(
            {name: getattr(projections, name).weight[block.start : block.stop] for name in ("W_q", "W_k", "W_v")}
        )
