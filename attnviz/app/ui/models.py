"""The pretrained model, loaded once per server process and shared by every session and page."""

from __future__ import annotations

import streamlit as st

from attnviz.app.ui.settings import tr
from attnviz.models.bert import MODEL_NAME, BertEncoder, load_minilm


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
