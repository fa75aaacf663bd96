"""The pretrained-model page's views: every head as a thumbnail (the model view), then close up one head (or an
average of heads) as a heatmap, and the neuron view of one token's query against every key."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from attnviz.app.model_state import ModelState
from attnviz.app.ui.common import chart, shared_value
from attnviz.app.ui.settings import current_language, md_escape, palette, tr
from attnviz.app.ui.work import work_panel, work_panel_content
from attnviz.figures import attention as figures
from attnviz.figures import model as model_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.lessons.explain import explain_row
from attnviz.models.bert import BertTrace
from attnviz.models.bert_views import MAX_THUMBNAIL, head_view, head_weights, pooled_labels, thumbnails

# The neuron view's worked steps sit in the results column (three quarters of the page): six columns of the softmax's
# numbers and three of each value's 32 components fit its width at 1400 px; eight made the table scroll in its box.
NEURON_VALUE_COLUMNS = 3


def model_view_section(
    state: ModelState,
    trace: BertTrace,
    tokens: list[str],
    rows: list[int],
    cols: list[int],
    *,
    key: str,
    on_select: Callable[[], None],
) -> None:
    """Every head of every layer as a thumbnail (max-pooled to MAX_THUMBNAIL tokens a side, with a caption saying
    so), the chosen heads outlined; `on_select` is called when a thumbnail is clicked, its event under `key`."""
    sentence = (state.sentence, state.pair, state.hide_special, state.part, state.renormalise)
    style = (palette(), current_language())

    def model_view() -> go.Figure:
        views, _ = thumbnails(trace.attentions, rows, cols, state.renormalise)
        return model_figures.model_view(
            views.numpy(),
            row_labels=pooled_labels([tokens[i] for i in rows], views.shape[-2]),
            col_labels=pooled_labels([tokens[j] for j in cols], views.shape[-1]),
            selected_layer=state.layer,
            selected_heads=state.heads,
            palette=style[0],
            lang=style[1],
        )

    chart(
        model_view,
        "model_view",
        key=key,
        shared=("model_view", *sentence, state.layer, state.heads, *style),
        on_select=on_select,
        selection_mode="points",
    )
    if max(len(rows), len(cols)) > MAX_THUMBNAIL:
        st.caption(tr("model.pooled", count=len(tokens), size=min(len(cols), MAX_THUMBNAIL)))


def head_view_section(state: ModelState, trace: BertTrace, tokens: list[str], rows: list[int], cols: list[int]) -> None:
    """One head (or an average) with `tokens` (the axis labels) on both axes."""
    single = len(state.heads) == 1
    heads = ", ".join(map(str, state.heads))
    which = tr("model.which_one", head=state.heads[0]) if single else tr("model.which_average", heads=heads)
    language = current_language()

    def build() -> go.Figure:
        block = head_view(head_weights(trace, state.layer, state.heads), rows, cols, state.renormalise)
        scores = None
        if single:
            raw = trace.layers[state.layer - 1].scores[state.heads[0] - 1]  # (T, T) q·k before the 1/√d scale
            scores = head_view(raw, rows, cols).numpy()
        shown = AttentionGrid(block.numpy(), None, [tokens[i] for i in rows], [tokens[j] for j in cols])
        return figures.weights_heatmap(
            shown,
            scores=scores,
            title=tr("model.head_view_title", layer=state.layer, which=which),
            palette=palette(),
            lang=language,
        )

    shared = ("head_view", state.sentence, state.pair, state.hide_special, state.part, state.renormalise)
    chart(
        build,
        f"minilm_layer{state.layer}_{which.replace(' ', '_')}",
        shared=(*shared, state.layer, state.heads, palette(), language),
    )
    shown_all = len(rows) == len(cols) == len(tokens)
    if not shown_all and not state.renormalise:
        st.caption(tr("model.rows_short"))


def neuron_view_section(state: ModelState, trace: BertTrace, tokens: list[str]) -> None:
    """One query of one head from q and k to its weights, then the step-by-step panel."""
    head = state.heads[0]
    token = min(state.token, len(tokens) - 1)
    shown = md_escape(tokens[token])  # the user's text: shown literally, never as markdown
    st.subheader(tr("model.neuron_heading", token=shown, layer=state.layer, head=head))
    note = tr("model.first_of_chosen") if len(state.heads) > 1 else ""
    st.caption(tr("model.neuron_caption", token=shown, head=head, note=note))
    language = current_language()
    row = ("neuron", state.sentence, state.pair, state.layer, head, token, language)

    def build() -> go.Figure:
        head_trace = trace.head(state.layer - 1, head - 1)
        return model_figures.neuron_view(
            head_trace.queries[token].numpy(),
            head_trace.keys.numpy(),
            head_trace.logits[token].numpy(),
            head_trace.weights[token].numpy(),
            key_labels=tokens,
            query_label=tokens[token],
            palette=palette(),
            lang=language,
        )

    chart(build, f"minilm_neuron_layer{state.layer}_head{head}", shared=(*row, palette()))
    work_panel(
        shared_value(
            row,
            lambda: work_panel_content(
                explain_row(
                    trace.head(state.layer - 1, head - 1),
                    token,
                    tokens[token],
                    tokens,
                    language,
                    value_columns=NEURON_VALUE_COLUMNS,
                )
            ),
        ),
        heading=tr("model.neuron_heading", token=tokens[token], layer=state.layer, head=head),
    )
