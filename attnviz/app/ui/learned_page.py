"""The learned-attention page: two small models trained on tasks with a known answer. Try them and look inside (the
dates model: learned_dates.py; the induction model, with its heads to switch off: learned_induction.py), and watch
the attention form while they learn (learned_training.py). This module lays the page out."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from attnviz.app.learned_state import LEARNED_FIELDS, LearnedState, decode_learned, encode_learned
from attnviz.app.training.jobs import QUEUE
from attnviz.app.ui import fieldwidgets, learned_dates, learned_induction, live, live_sync
from attnviz.app.ui.common import inputs_box
from attnviz.app.ui.learned_training import SESSION, capped_steps, history, shipped_run, training_controls
from attnviz.app.ui.messages import show_warning
from attnviz.app.ui.settings import current_language, tr
from attnviz.app.ui.share import share_box
from attnviz.core.fields import field
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
            state, ready = learned_dates.date_input(state)
        else:
            state, ready = learned_induction.sequence_input(state)
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
    hidden = live_sync.answers_hidden()
    if hidden:
        live_sync.answer_hidden_note()
    elif ready:
        if task == "dates":
            learned_dates.try_dates(state, run)
        else:
            state = learned_induction.try_sequence(state, run)
    st.subheader(tr("learned.learn_heading"))
    state = training_controls(state)
    state = state if hidden else history(state)
    params = SESSION.publish(state, encode_learned)
    share_box(SESSION, params, decode_learned)
