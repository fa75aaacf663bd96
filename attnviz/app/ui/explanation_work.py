"""Show-your-work on "Is attention an explanation?": one cell of rollout and one of norm-based attention, worked out
with the numbers of the student's sentence (attnviz/lessons/explanation_work.py), in a section folded until opened.
The page calls `explanation_work` once, below its charts."""

from __future__ import annotations

import hashlib

import streamlit as st

from attnviz.app.explanation_state import MEAN_OF_HEADS, ExplanationState
from attnviz.app.ui.common import lazy_expander
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, md_escape, tr
from attnviz.app.ui.work import work_panel
from attnviz.figures.style import POSITION_MARK
from attnviz.lessons.explanation_work import default_cell, rollout_cell, rollout_steps
from attnviz.lessons.norm_work import norm_cell, norm_steps
from attnviz.models.bert_explanation import SentenceMaps, is_punctuation
from attnviz.models.bert_views import token_labels

SESSION = PageSession("faithful")  # the page's own keys (attnviz/app/ui/explanation_page.py, PAGE)


def explanation_work(state: ExplanationState, maps: SentenceMaps) -> None:
    """'Show your work' for the chosen layer and head: rollout[i, j] as one step of its product, and ‖α_ij f(x_j)‖
    as a weight times a length beside the key with the most weight. Built only while its section is open."""
    box = lazy_expander(tr("faithful.work_heading"), key=SESSION.part("open", "work"))
    if box is None:
        return
    with box:
        head = None if state.head == MEAN_OF_HEADS else state.head
        which = tr("faithful.mean_of_heads") if head is None else tr("faithful.head_n", head=state.head)
        st.caption(tr("faithful.work_intro", layer=state.layer, which=which))
        labels = token_labels(maps.tokens, POSITION_MARK)
        row, key = _cell_pickers(state, maps, labels, head)
        lang = current_language()
        cell = f"{md_escape(labels[row])} → {md_escape(labels[key])}"
        st.markdown(f"#### {tr('faithful.method_rollout')}")
        steps = rollout_steps(rollout_cell(maps.attentions, state.layer, row, key), labels, lang)
        work_panel(steps, heading=f"{tr('faithful.method_rollout')} · {cell}")
        st.markdown(f"#### {tr('faithful.method_norm')}")
        if maps.lengths is None:
            st.info(tr("faithful.work_no_lengths"), icon="ℹ️")
            return
        norm = norm_cell(maps.attentions, maps.norms, maps.lengths, state.layer, head, row, key)
        work_panel(norm_steps(norm, labels, lang), heading=f"{tr('faithful.method_norm')} · {cell}")


def _cell_pickers(state: ExplanationState, maps: SentenceMaps, labels: list[str], head: int | None) -> tuple[int, int]:
    """The query row and the key column to work out, side by side (one above the other on a phone). They open on
    `default_cell` of the layer and head shown when the sentence's pickers are first drawn; a new sentence gets new
    pickers (their keys name its tokens), so a kept choice never points past its end."""
    digest = hashlib.blake2b("\x1f".join(labels).encode(), digest_size=6).hexdigest()
    query_key, key_key = SESSION.key(f"work_query:{digest}"), SESSION.key(f"work_key:{digest}")
    if query_key not in st.session_state or key_key not in st.session_state:
        words = [i for i in maps.positions if not is_punctuation(maps.tokens[i])]
        st.session_state[query_key], st.session_state[key_key] = default_cell(maps.norms[state.layer - 1], head, words)
    options = list(range(len(labels)))
    left, right = st.columns(2)
    row = left.selectbox(tr("faithful.work_query"), options, key=query_key, format_func=labels.__getitem__)
    key = right.selectbox(tr("faithful.work_key"), options, key=key_key, format_func=labels.__getitem__)
    return int(row), int(key)
