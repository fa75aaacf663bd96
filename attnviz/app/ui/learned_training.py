"""The learned-attention page's training part: seed and steps, the recorded run (shipped or trained here) with its
step slider and curves, and a training's place in the queue and progress while it runs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import streamlit as st
import torch

from attnviz.app.learned_state import (
    LEARNED_FIELDS,
    LearnedState,
    default_steps,
    output_labels,
    recorded_step,
    visible,
)
from attnviz.app.training.jobs import QUEUE, OneAtATimeError, QueueFullError, Requester
from attnviz.app.ui import fieldwidgets
from attnviz.app.ui.client import client_address, session_token
from attnviz.app.ui.common import chart
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import PHONE_WIDTH, current_language, error_text, md_escape, on_a_phone, palette, tr
from attnviz.core.fields import field
from attnviz.figures import learned as learned_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.models.learned import induction, replay
from attnviz.models.learned.seq2seq import Translation, translate_texts
from attnviz.models.learned.train import MAX_STEPS, Snapshot, TrainingRun, TrainSettings, checkpoint_path, load_run

SESSION = PageSession("learned", convert={"off": list})  # the pills hold a list; the state a tuple
PROGRESS_EVERY_S = 1.0  # how often a page with a training under way asks for its progress


@st.cache_resource(show_spinner=False)
def shipped_run(task: str) -> TrainingRun:
    """The checkpoint the package ships for `task` (seed 0, default steps), shared by every session."""
    return load_run(checkpoint_path(task))


def capped_steps(task: str) -> int:
    """The steps asked for, capped to what `task` allows (a link's steps may be another task's), with a warning."""
    most, key = MAX_STEPS[task], SESSION.bound("steps")
    steps = SESSION.current(key, int, SESSION.value("steps"))
    if steps > most:
        st.warning(tr("learned.steps_capped", steps=steps, most=most), icon="⚠️")
        st.session_state[key] = steps = most
    return steps


def training_controls(state: LearnedState) -> LearnedState:
    """Seed and number of steps: the defaults name the shipped checkpoint, others a training of their own."""
    most = MAX_STEPS[state.task]
    left, right = st.columns(2)
    seed = fieldwidgets.number(SESSION, field(LEARNED_FIELDS, "seed"), where=left)
    steps = right.number_input(
        tr("learned.steps"),
        0,
        most,
        key=SESSION.bound("steps"),
        help=tr("learned.steps_help", default=default_steps(state.task), most=most),
    )
    return replace(state, seed=int(seed), steps=int(steps))


def translation(run: TrainingRun, text: str) -> Translation:
    """The model's output and attention for one date (a few ms; not kept in the session)."""
    return translate_texts(run.model, [text])[0]


def history(state: LearnedState) -> LearnedState:
    """The recorded run of the state's seed and steps: the shipped one, a finished training, one under way, or a
    button. Every run records the attention on the task's own probes, whatever the student typed."""
    shipped = shipped_run(state.task)
    settings = state.training()
    if settings == shipped.settings:
        return _snapshots(state, shipped)
    job = QUEUE.get(settings)
    if job is not None and job.status == "done" and job.run is not None:
        return _snapshots(state, job.run)
    if job is not None and job.active:
        _progress(settings)
        return state
    if job is not None:  # failed
        st.error(tr("learned.training_failed", error=error_text(job.error)), icon="🚫")
    _, ready = QUEUE.estimate(settings)
    st.caption(
        tr(
            "learned.not_recorded",
            seed=settings.seed,
            steps=settings.steps,
            ready=about(ready),
            ahead=trainings(QUEUE.in_line()),
        )
    )
    if st.button(tr("learned.train"), type="primary", key=SESSION.part("train")):
        try:
            QUEUE.submit(settings, Requester(session_token(), client_address()))
        except OneAtATimeError as exc:
            st.warning(_one_at_a_time(exc), icon="⏳")
        except QueueFullError as exc:
            st.warning(tr("learned.queue_full", waiting=exc.waiting), icon="⏳")
        else:
            st.rerun()
    return state


def about(seconds: float) -> str:
    """A wait in words, rounded up ("about 35 s", "about 3 min"): never sooner than it will be."""
    if seconds < 60:
        return tr("learned.about_seconds", seconds=max(5, 5 * math.ceil(seconds / 5)))
    return tr("learned.about_minutes", minutes=math.ceil(seconds / 60))


def trainings(count: int) -> str:
    """A number of trainings in words ("no training", "1 training", "3 trainings")."""
    if count == 0:
        return tr("learned.trainings_none")
    if count == 1:
        return tr("learned.trainings_one")
    return tr("learned.trainings_many", count=count)


def _one_at_a_time(refused: OneAtATimeError) -> str:
    """Why Train was refused: the training this student (or this address) has in line or running, and where."""
    job = refused.job
    if job.status == "running":
        where = tr("learned.where_running")
    else:
        where = tr("learned.where_place", place=QUEUE.position(job) + 1)
    named = {"task": tr(f"learned.task_{job.settings.task}"), "seed": job.settings.seed, "steps": job.settings.steps}
    if refused.by == "session":
        return tr("learned.one_per_session", where=where, **named)
    return tr("learned.one_per_client", where=where, **named)


def _progress(settings: TrainSettings) -> None:
    """A training under way: its place in the queue or its progress, and the curves so far; every second."""

    @st.fragment(run_every=PROGRESS_EVERY_S)
    def progress() -> None:
        job = QUEUE.get(settings)
        if job is None or not job.active:
            st.rerun(scope="app")  # finished: the whole page shows the trained model
            return
        ahead = QUEUE.position(job)
        starts, ready = QUEUE.estimate(settings)
        if job.status == "queued" and ahead:  # behind others
            text = tr(
                "learned.queued", place=ahead + 1, ahead=trainings(ahead), starts=about(starts), ready=about(ready)
            )
            st.info(text, icon="⏳")
            return
        if job.status == "queued":  # first, but the server has no memory for it yet
            st.info(tr("learned.waiting_memory"), icon="⏳")
            return
        snapshots = list(job.snapshots)
        done = snapshots[-1].step if snapshots else 0
        text = tr("learned.training", step=done, steps=settings.steps, ready=about(ready))
        st.progress(done / settings.steps, text=text)
        if snapshots:
            _curves(snapshots, settings.steps, None)

    progress()


def _typed_is_recorded(state: LearnedState, recorded: str) -> bool:
    """Whether the history shown is on the student's own input (a sequence compared symbol by symbol)."""
    if state.task == "dates":
        return state.date == recorded
    return induction.parse_sequence(state.sequence)[0] == induction.parse_sequence(recorded)[0]


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


@st.cache_resource(max_entries=256, show_spinner=False)
def replayed_attention(task: str, index: int, text: str) -> np.ndarray:
    """The attention of `text` at snapshot `index` of the shipped run of `task`, from the weights it kept (a few ms,
    shared by every session: a class typing the same date computes it once)."""
    return replay.attention_at(shipped_run(task), index, text).numpy()


def _two_steps_data(
    state: LearnedState, run: TrainingRun, index: int
) -> tuple[np.ndarray, np.ndarray, list[str], list[str], str, bool]:
    """The attention at step 0 and at snapshot `index` (dates (10, T); induction (layers, heads, T, T)), the rows' and
    columns' labels, the input they are on, and whether it is the student's own input put through the recorded
    weights. The student's input when it is a recorded probe or the run kept its weights, else the task's probe."""
    snapshots, typed, recorded = run.snapshots, state.probe, run.settings.probes
    if state.task == "dates":
        text = typed if typed in recorded else recorded[0]
    else:
        text = typed if _typed_is_recorded(state, recorded[0]) else recorded[0]
    own = text != typed and run is shipped_run(state.task) and replay.replayable(run)
    own = own and replay.readable(state.task, typed)
    if own:
        text = typed
        first, second = (replayed_attention(state.task, i, typed) for i in (0, index))
    elif state.task == "dates":
        probe = recorded.index(text)
        first, second = (s.attention[probe, :, : len(text)].numpy() for s in (snapshots[0], snapshots[index]))
    else:
        first, second = (s.attention.numpy() for s in (snapshots[0], snapshots[index]))
    if state.task == "dates":
        return first, second, output_labels(translation(run, text).output), visible(text), text, own
    keys = [induction.BOS, *induction.parse_sequence(text)[0]]
    return first, second, keys, keys, text, own


def _snapshots(state: LearnedState, run: TrainingRun) -> LearnedState:
    """A step slider over the recorded snapshots, the curves, and the attention at step 0 beside the chosen step."""
    snapshots, total = run.snapshots, run.settings.steps
    steps = [snapshot.step for snapshot in snapshots]
    key = SESSION.key("step")
    asked = SESSION.current(key, int, steps[-1])
    if asked not in steps or key not in st.session_state:  # the last recorded step at or before the one asked for
        st.session_state[key] = recorded_step(steps, asked)
    step = st.select_slider(tr("learned.step"), options=steps, key=key, help=tr("learned.step_help"))
    chosen = snapshots[steps.index(step)]
    st.caption(
        tr("learned.at_step", step=step, loss=f"{chosen.loss:.4g}", accuracy=f"{chosen.accuracy:.1%}", total=total)
    )
    _curves(snapshots, total, step)
    language = current_language()
    index = steps.index(step)
    first, second, labels, keys, text, replayed = _two_steps_data(state, run, index)
    if state.task == "induction":
        head = int(st.session_state.get(SESSION.key("head"), state.head))
        layer, number = divmod(head - 1, 2)
        first, second = first[layer, number], second[layer, number]
        st.caption(tr("learned.followed_head", layer=layer + 1, head=number + 1))
    if replayed:
        st.caption(tr("learned.replayed"))
    elif not _typed_is_recorded(state, text):
        st.caption(tr("learned.recorded_on", probe=md_escape(text)))
    st.caption(tr("learned.two_steps_note"))
    phone = on_a_phone()
    chart(
        lambda: learned_figures.two_steps(
            AttentionGrid(first, query_labels=labels, key_labels=keys),
            second,
            first_title=tr("learned.step_n", step=0),
            second_title=tr("learned.step_n", step=step),
            palette=palette(),
            width=PHONE_WIDTH if phone else None,
            lang=language,
        ),
        "attnviz_attention_two_steps",
    )
    last = step == steps[-1]  # "the last step" stays that in the link, whatever the run's length
    return replace(state, step=LearnedState().step if last else int(step))


def weight_tables(weights: dict[str, torch.Tensor]) -> None:
    """Trained weight matrices as scrolling tables, each titled with its name and shape."""
    for name, weight in weights.items():
        st.markdown(f"**{name}** {tuple(weight.shape)}")
        st.dataframe(weight.detach().numpy(), height=180)
