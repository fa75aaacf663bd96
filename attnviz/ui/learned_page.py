"""The learned-attention page: two small models trained on tasks with a known answer. Try them, look inside, switch
a head off, and watch the attention form while they learn."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st
import torch

from attnviz import figures, learned_figures
from attnviz.bert_views import token_labels
from attnviz.explain import explain_row
from attnviz.learned import dates, induction
from attnviz.learned.jobs import QUEUE, QueueFullError
from attnviz.learned.seq2seq import Translation, translate_texts
from attnviz.learned.train import MAX_STEPS, TASKS, Snapshot, TrainingRun, TrainSettings, checkpoint_path, load_run
from attnviz.learned_state import HEADS, LearnedState, decode_learned, default_steps, encode_learned
from attnviz.multihead import head_rows
from attnviz.plotting import POSITION_MARK
from attnviz.ui.common import chart, shared_value
from attnviz.ui.session import PageSession
from attnviz.ui.settings import current_language, labeller, md_escape, palette, tr
from attnviz.ui.widgets import selected_row, share_box, show_warning, work_panel, work_panel_content

SESSION = PageSession("learned")
ABLATION_EXAMPLES = 500  # held-out sequences for the heads' scores and the accuracy without each head
PROGRESS_EVERY_S = 1.0  # how often a page with a training under way asks for its progress


@st.cache_resource(show_spinner=False)
def shipped_run(task: str) -> TrainingRun:
    """The checkpoint the package ships for `task` (seed 0, default steps), shared by every session."""
    return load_run(checkpoint_path(task))


def model_run(state: LearnedState) -> tuple[TrainingRun, bool]:
    """The model for the state's seed and steps, and whether it is that one: the shipped model when they are the
    defaults (the probe does not change the weights), a finished training of them, else the shipped model."""
    shipped = shipped_run(state.task)
    settings = state.training()
    if (settings.seed, settings.steps) == (shipped.settings.seed, shipped.settings.steps):
        return shipped, True
    job = QUEUE.find_model(settings)
    return (job.run, True) if job is not None and job.run is not None else (shipped, False)


def learned_page() -> None:
    """Draw the learned-attention page."""
    state: LearnedState = SESSION.sync_from_link(decode_learned, LearnedState)
    for warning in SESSION.warnings:
        show_warning(warning)
    task = st.radio(
        tr("learned.task"),
        TASKS,
        key=SESSION.key("task"),
        format_func=labeller("learned.task_{}"),
        horizontal=True,
    )
    state = replace(state, task=task)
    if task == "dates":
        state, ready = _date_input(state)
    else:
        state, ready = _sequence_input(state)
    # The seed and the steps are drawn with the training, below; the model above already depends on them
    state = replace(state, seed=int(SESSION.value("seed")), steps=_capped_steps(task))
    run, exact = model_run(state)
    st.subheader(tr("learned.try_heading"))
    if not exact:
        st.info(tr("learned.shipped_until_trained", seed=state.seed, steps=run.settings.steps), icon="ℹ️")
    if ready:
        if task == "dates":
            _try_dates(state, run)
        else:
            _try_sequence(state, run)
    st.subheader(tr("learned.learn_heading"))
    state = _training_controls(state)
    state = _history(state, ready)
    params = SESSION.publish(state, encode_learned)
    share_box(SESSION, params, decode_learned)


def _date_input(state: LearnedState) -> tuple[LearnedState, bool]:
    """The date box; False (with the reason on the page) when the model cannot read it."""
    text = st.text_input(
        tr("learned.date"),
        key=SESSION.key("date"),
        max_chars=dates.MAX_PROBE_LENGTH,
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
        max_chars=4 * induction.MAX_LENGTH,
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


def _capped_steps(task: str) -> int:
    """The steps asked for, capped to what `task` allows (a link's steps may be another task's), with a warning."""
    most, key = MAX_STEPS[task], SESSION.bound("steps")
    if int(st.session_state[key]) > most:
        st.warning(tr("learned.steps_capped", steps=st.session_state[key], most=most), icon="⚠️")
        st.session_state[key] = most
    return int(st.session_state[key])


def _training_controls(state: LearnedState) -> LearnedState:
    """Seed and number of steps: the defaults name the shipped checkpoint, others a training of their own."""
    most = MAX_STEPS[state.task]
    left, right = st.columns(2)
    seed = left.number_input(tr("learned.seed"), 0, 9999, key=SESSION.bound("seed"), help=tr("learned.seed_help"))
    steps = right.number_input(
        tr("learned.steps"),
        0,
        most,
        key=SESSION.bound("steps"),
        help=tr("learned.steps_help", default=default_steps(state.task), most=most),
    )
    return replace(state, seed=int(seed), steps=int(steps))


def _visible(text: str) -> list[str]:
    """A date's characters as labels, a space shown as ␣ (an empty label reads as a missing one)."""
    return ["␣" if character == " " else character for character in text]


def _marked(characters: list[str]) -> list[str]:
    """Characters as labels for the worked steps: a repeated one marked with its position, counted from 1 (the
    text is shown literally there; the charts escape their own labels)."""
    return [
        f"{character}{POSITION_MARK}{index + 1}" if characters.count(character) > 1 else character
        for index, character in enumerate(characters)
    ]


def _translation(run: TrainingRun, text: str) -> Translation:
    """The model's output and attention for one date (a few ms; not kept in the session)."""
    return translate_texts(run.model, [text])[0]


def _try_dates(state: LearnedState, run: TrainingRun) -> None:
    """The translation, its cross-attention (output characters x input characters), and one row worked out."""
    result = _translation(run, state.date)
    shown = md_escape(state.date)
    st.markdown(tr("learned.translation", text=shown, output=result.output))
    st.caption(tr("learned.dates_accuracy", accuracy=f"{run.accuracy:.1%}", count=2000, steps=run.settings.steps))
    inputs = _visible(result.text)
    outputs = [f"{character}{POSITION_MARK}{index + 1}" for index, character in enumerate(result.output)]
    language = current_language()
    chart(
        lambda: figures.weights_heatmap(
            result.trace.weights.numpy(),
            scores=result.trace.scores.numpy(),
            query_labels=outputs,
            key_labels=inputs,
            title=tr("learned.dates_chart"),
            palette=palette(),
            lang=language,
        ),
        "attnviz_dates_attention",
    )
    with st.expander(tr("learned.work_heading")):
        row = selected_row(SESSION, outputs, tr("learned.row_date"))
        keys = _marked(inputs)
        steps = explain_row(result.trace, row, outputs[row], keys, language, run.model.decoder.attention)
        work_panel(work_panel_content(steps))
        st.caption(tr("learned.trained_weights"))
        attention = run.model.decoder.attention
        _weight_tables({"W_q": attention.W_q.weight, "W_k": attention.W_k.weight, "w_v": attention.w_v.weight})


def _head_rows(run: TrainingRun) -> list[tuple[induction.HeadPattern, float]]:
    """Each head's pattern scores and the held-out accuracy without it (shared by the sessions on one model)."""

    def build() -> list[tuple[induction.HeadPattern, float]]:
        examples = induction.held_out_examples(ABLATION_EXAMPLES)
        patterns = induction.head_patterns(run.model, examples)
        return [(p, induction.ablation_accuracy(run.model, examples, p.layer, p.head)) for p in patterns]

    return shared_value(("learned_heads", run.settings.seed, run.settings.steps), build)


def _head_title(pattern: induction.HeadPattern) -> str:
    label = tr(f"learned.pattern_{pattern.label}")
    return tr("learned.head_title", layer=pattern.layer + 1, head=pattern.head + 1, label=label)


def _try_sequence(state: LearnedState, run: TrainingRun) -> None:
    """Every head on the typed sequence, the model's guesses, each head's pattern and what switching it off costs."""
    symbols, _ = induction.parse_sequence(state.sequence)
    seen = induction.sequence_attention(run.model, symbols)
    weights, tokens = seen.weights, seen.tokens
    pairs = " ".join(f"{token}→{guess}" for token, guess in zip(tokens, seen.guesses, strict=True))
    st.markdown(tr("learned.guesses", pairs=md_escape(pairs)))
    st.caption(tr("learned.sequence_accuracy", accuracy=f"{run.accuracy:.1%}", count=2000, steps=run.settings.steps))
    rows = _head_rows(run)
    titles = [_head_title(pattern) for pattern, _ in rows]
    layers, heads = weights.shape[0], weights.shape[1]
    language = current_language()
    chart(
        lambda: figures.heads_grid(
            weights.reshape(layers * heads, len(tokens), len(tokens)).numpy(),
            query_labels=tokens,
            key_labels=tokens,
            head_titles=titles,
            palette=palette(),
            columns=heads,
            lang=language,
        ),
        "attnviz_induction_heads",
    )
    full = run.accuracy
    # One line per head, not a table: five columns did not fit a phone
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
    with st.expander(tr("learned.work_heading")):
        head = st.selectbox(
            tr("learned.head"),
            list(range(1, HEADS + 1)),
            key=SESSION.key("head"),
            format_func=lambda h: titles[h - 1],  # made in this run's language: Streamlit may call it later
        )
        labels = token_labels(tokens, POSITION_MARK)  # <s> is position 0, as on the chart's hover
        row = selected_row(SESSION, labels, tr("learned.row_sequence"))
        layer, index = divmod(head - 1, heads)
        trace = seen.traces[layer][index]
        work_panel(work_panel_content(explain_row(trace, row, labels[row], labels, language)))
        projections = run.model.layers[layer].attention
        rows = head_rows(projections.W_q.weight.shape[0], index, heads)
        st.caption(tr("learned.head_weights", layer=layer + 1, head=index + 1, first=rows.start + 1, last=rows.stop))
        _weight_tables(
            {name: getattr(projections, name).weight[rows.start : rows.stop] for name in ("W_q", "W_k", "W_v")}
        )


def _weight_tables(weights: dict[str, torch.Tensor]) -> None:
    """Trained weight matrices as scrolling tables, each titled with its name and shape."""
    for name, weight in weights.items():
        st.markdown(f"**{name}** {tuple(weight.shape)}")
        st.dataframe(weight.detach().numpy(), height=180)


def _history(state: LearnedState, ready: bool) -> LearnedState:
    """The recorded run of the state's settings: the shipped one, a finished training, one under way, or a button.
    Input the model cannot read records nothing: the shipped run is shown with its own probe."""
    shipped = shipped_run(state.task)
    settings = state.training() if ready else shipped.settings
    if settings == shipped.settings:
        return _snapshots(state, shipped)
    job = QUEUE.get(settings)
    if job is not None and job.status == "done" and job.run is not None:
        return _snapshots(state, job.run)
    if job is not None and job.active:
        _progress(settings)
        return state
    if job is not None:  # failed
        st.error(tr("learned.training_failed", error=md_escape(job.error)), icon="🚫")
    st.caption(tr("learned.not_recorded", seed=settings.seed, steps=settings.steps))
    if st.button(tr("learned.train"), type="primary", key=SESSION.part("train")):
        try:
            QUEUE.submit(settings)
        except QueueFullError as exc:
            st.warning(tr("learned.queue_full", waiting=exc.waiting), icon="⏳")
        else:
            st.rerun()
    return state


def _progress(settings: TrainSettings) -> None:
    """A training under way: its place in the queue or its progress, and the curves so far; every second."""

    @st.fragment(run_every=PROGRESS_EVERY_S)
    def progress() -> None:
        job = QUEUE.get(settings)
        if job is None or not job.active:
            st.rerun(scope="app")  # finished: the whole page shows the trained model
            return
        ahead = QUEUE.position(job)
        if job.status == "queued":  # behind others, or first but the server has no memory for it yet
            st.info(tr("learned.queued", ahead=ahead) if ahead else tr("learned.waiting_memory"), icon="⏳")
            return
        snapshots = list(job.snapshots)
        done = snapshots[-1].step if snapshots else 0
        st.progress(done / settings.steps, text=tr("learned.training", step=done, steps=settings.steps))
        if snapshots:
            _curves(snapshots, settings.steps, None)

    progress()


def _curves(snapshots: list[Snapshot], total: int, current: int | None) -> None:
    language = current_language()
    chart(
        lambda: learned_figures.learning_curves(
            [s.step for s in snapshots],
            [s.loss for s in snapshots],
            [s.accuracy for s in snapshots],
            current=current,
            total=total,
            lang=language,
        ),
        "attnviz_training_curves",
    )


def _snapshots(state: LearnedState, run: TrainingRun) -> LearnedState:
    """A step slider over the recorded snapshots, the curves, and the attention at step 0 beside the chosen step."""
    snapshots, total = run.snapshots, run.settings.steps
    steps = [snapshot.step for snapshot in snapshots]
    key = SESSION.key("step")
    if st.session_state.get(key) not in steps:  # the last recorded step at or before the one asked for
        asked = int(st.session_state.get(key, steps[-1]))
        st.session_state[key] = max((step for step in steps if step <= asked), default=steps[0])
    step = st.select_slider(tr("learned.step"), options=steps, key=key, help=tr("learned.step_help"))
    chosen = snapshots[steps.index(step)]
    st.caption(
        tr("learned.at_step", step=step, loss=f"{chosen.loss:.4g}", accuracy=f"{chosen.accuracy:.1%}", total=total)
    )
    _curves(snapshots, total, step)
    language = current_language()
    if state.task == "dates":
        probes = run.settings.probes
        probe = probes.index(state.date) if state.date in probes else 0
        text = probes[probe]
        target = _translation(run, text).output  # the rows: what the trained model writes
        labels = [f"{character}·{index + 1}" for index, character in enumerate(target)]
        first, second = (s.attention[probe, :, : len(text)].numpy() for s in (snapshots[0], chosen))
        keys = _visible(text)
    else:
        head = int(st.session_state.get(SESSION.key("head"), state.head))
        layer, index = divmod(head - 1, 2)
        first, second = (s.attention[layer, index].numpy() for s in (snapshots[0], chosen))
        keys = [induction.BOS, *induction.parse_sequence(run.settings.probes[0])[0]]
        labels = keys
        st.caption(tr("learned.followed_head", layer=layer + 1, head=index + 1))
    st.caption(tr("learned.two_steps_note"))
    chart(
        lambda: learned_figures.two_steps(
            first,
            second,
            first_title=tr("learned.step_n", step=0),
            second_title=tr("learned.step_n", step=step),
            query_labels=labels,
            key_labels=keys,
            palette=palette(),
            lang=language,
        ),
        "attnviz_attention_two_steps",
    )
    last = step == steps[-1]  # "the last step" stays that in the link, whatever the run's length
    return replace(state, step=LearnedState().step if last else int(step))
