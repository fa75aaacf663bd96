"""What the models of "Is attention an explanation?" share on the page: its session, and the maps drawn side by
side with their ρ against blank-out and the warnings they call for."""

from __future__ import annotations

import numpy as np
import streamlit as st
from torch import Tensor

from attnviz.app.ui import live_sync, settings
from attnviz.app.ui.common import chart
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, md_escape, tr
from attnviz.figures.explanation import LABEL_SIZE, maps_heatmap
from attnviz.models.bert_explanation import METHODS, agreement, punctuation_first, top_token

PAGE = "faithful"
SESSION = PageSession(PAGE)
START_TOKENS = ("<s>",)  # the induction model's start token: where its heads park weight, like [CLS]


def method_names() -> dict[str, str]:
    """Each map's name in the interface language."""
    return {method: tr(f"faithful.method_{method}") for method in METHODS}


def draw_maps(by_method: dict[str, Tensor], words: list[str]) -> dict[str, float]:
    """The maps side by side, one row each with its ρ against blank-out, over `words` (what they rank); their ρ."""
    rhos = agreement(by_method)
    hidden = live_sync.answers_hidden()  # a live class's question "which map agrees best" is open: ρ is its answer
    if hidden:
        live_sync.answer_hidden_note()
    names = method_names()
    shown = list(by_method)
    values = np.stack([by_method[method].numpy() for method in shown])  # (maps, tokens)
    first = int(np.argmax(values[shown.index("blank")]))  # blank-out's first token
    tops = [None if m == "blank" else int(np.argmax(values[n])) == first for n, m in enumerate(shown)]
    lang = current_language()
    chart(
        lambda: maps_heatmap(
            values,
            [names[m] for m in shown],
            None if hidden else [rhos.get(m) for m in shown],
            tops=None if hidden else tops,
            tokens=words,
            label_size=settings.PRESENTATION_FONT if settings.presenting() else LABEL_SIZE,
            lang=lang,
        ),
        "attnviz_explanation_maps",
    )
    if not hidden:
        st.caption(tr("faithful.first_note"))
    return rhos


def warn_first(by_method: dict[str, Tensor], words: list[str]) -> None:
    """A warning when maps rank a punctuation mark first, and when they rank the start token <s> first."""
    names = method_names()
    separator = tr("faithful.list_separator")
    first = punctuation_first(by_method, words)
    if first:
        listed = separator.join(f"{names[method]} («{md_escape(token)}»)" for method, token in first.items())
        st.warning(tr("faithful.punctuation_first", maps=listed), icon="⚠️")
    starts = [m for m, values in by_method.items() if m != "blank" and top_token(values, words) in START_TOKENS]
    if starts:
        st.warning(tr("faithful.start_first", maps=separator.join(names[m] for m in starts)), icon="⚠️")
