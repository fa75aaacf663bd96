"""The pretrained model, loaded once per server process and shared by every session and page."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attnviz.app.state import MAX_TEXT
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import error_text, tr
from attnviz.models.bert import MAX_MODEL_TOKENS, MODEL_NAME, BertEncoder, ModelUnavailableError, load_minilm


@st.cache_resource(show_spinner=False)
def _cached_model() -> BertEncoder:
    return load_minilm()


_loaded: list[BertEncoder] = []  # this process has loaded the model: no spinner (and no spinner timer) any more


def get_model() -> BertEncoder:
    """The model, loaded once per server and shared by every session (about 0.1 s), with a spinner the first time
    (in the page's language, which a cached function's own spinner text cannot follow)."""
    if _loaded:
        return _cached_model()
    with st.spinner(tr("model.loading", model=MODEL_NAME)):
        model = _cached_model()
    _loaded.append(model)
    return model


def model_or_error() -> BertEncoder | None:
    """The model, or None after saying on the page why it is not there (its package is not installed)."""
    try:
        return get_model()
    except ModelUnavailableError as exc:
        st.error(error_text(exc), icon="🚫")
        return None


def sentence_input(where: Any, session: PageSession) -> str:
    """The sentence box of a page on the pretrained model, in `where` (a column), bound to the state's `sentence`."""
    return str(
        where.text_input(
            tr("attention.sentence"),
            key=session.key("sentence"),
            max_chars=MAX_TEXT,
            help=tr("model.sentence_help", limit=MAX_MODEL_TOKENS),
        )
    )
