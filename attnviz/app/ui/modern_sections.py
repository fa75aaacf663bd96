"""The modern-attention page's topics that compare one layer's attention with plain causal attention: positions,
masks beyond causal, and grouped-query heads with the KV cache's memory."""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import streamlit as st
import torch

from attnviz.app.modern_state import MODERN_FIELDS, ModernState
from attnviz.app.ui import fieldwidgets
from attnviz.app.ui.common import arrow_table, beside_chart, chart
from attnviz.app.ui.editors import last_row_unless_linked, selected_row
from attnviz.app.ui.modern_compute import MODERN_FIT, SESSION, Inputs, compute
from attnviz.app.ui.settings import PHONE_WIDTH, current_language, md_escape, on_a_phone, palette, presenting, tr
from attnviz.app.ui.work import work_panel, work_panel_content
from attnviz.core.fields import field
from attnviz.core.kvcache import PUBLISHED_CONFIGS, attention_kind, kv_cache_bytes_per_token
from attnviz.core.modern import ModernTrace
from attnviz.core.positions import rope_angles
from attnviz.core.sparse import scored_pairs
from attnviz.figures import attention as figures
from attnviz.figures import modern as modern_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.lessons.explain import explain_row

MAX_REPEATS = 6  # rows of the RoPE check: token pairs seen at the same distance more than once


def plain_causal(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernTrace:
    """The same layer with no positions and the causal mask (the page's own trace when that is what it shows)."""
    if (state.mask, state.positions) == ("causal", "none"):
        return trace
    return compute(state, inputs, mask="causal", positions="none")


def text_and_chart(text: Callable[[], None], draw: Callable[[], None]) -> None:
    """A topic's paragraphs, then its chart; on a projector the chart first (it then fits the first screen:
    MODERN_FIT) and the paragraphs below it."""
    for part in (draw, text) if presenting() else (text, draw):
        part()


def side_by_side(
    state: ModernState, inputs: Inputs, trace: ModernTrace, plain: ModernTrace, head: int, scheme: str, name: str
) -> None:
    """The head's weights with the page's scheme beside `plain`, plain causal attention (no positions, causal)."""
    weights = torch.stack([plain.weights[head], trace.weights[head]])  # (2, T, T)
    change = (weights[1] - weights[0]).abs()  # (T, T)
    row, key = divmod(int(change.argmax()), change.shape[1])
    masks = torch.stack([plain.heads[head].mask, trace.heads[head].mask])
    titles = [tr("modern.plain_causal"), scheme]
    language = current_language()
    phone = on_a_phone()  # one above the other, square cells: side by side each cell was a strip ~11 px wide
    chart(
        lambda: figures.heads_grid(
            AttentionGrid(weights.numpy(), masks.numpy(), inputs.labels, inputs.labels),
            head_titles=titles,
            palette=palette(),
            columns=1 if phone else 2,
            square=phone,
            width=PHONE_WIDTH if phone else None,
            lang=language,
        ),
        name,
        fit=MODERN_FIT,
    )
    st.caption(
        tr(
            "modern.largest_change",
            change=f"{float(change[row, key]):.3f}",
            query=md_escape(inputs.labels[row]),
            key_token=md_escape(inputs.labels[key]),
            before=f"{float(weights[0, row, key]):.3f}",
            after=f"{float(weights[1, row, key]):.3f}",
        )
    )


def work(state: ModernState, inputs: Inputs, trace: ModernTrace, head: int) -> ModernState:
    """Show-your-work for one query row of the head (its queries and keys after the positional scheme)."""
    with st.expander(tr("modern.work_heading")):
        first = last_row_unless_linked(SESSION, inputs.labels)
        row = selected_row(SESSION, inputs.labels, tr("modern.row"), first=first)
        steps = explain_row(trace.heads[head], row, inputs.labels[row], inputs.labels, current_language())
        work_panel(work_panel_content(steps), heading=f"{tr('modern.work_heading')} · {inputs.labels[row]}")
        if trace.positions == "rope":
            _rope_angles(trace, row)
    return replace(state, row=int(row))


def _rope_angles(trace: ModernTrace, row: int) -> None:
    """The angles that turned this query's pairs: m θ_i for pair i at position m (the keys' likewise, at theirs)."""
    head_dim = trace.queries.shape[-1]
    angles = rope_angles(row + 1, head_dim)[row].tolist()  # (d/2,)
    st.markdown(tr("modern.rope_angles", position=row + 1, m=row))  # the same query, counted as each counts it
    st.latex(r"\theta_i = 10000^{-2i/d}, \quad (x_{2i}, x_{2i+1}) \mapsto R(m\theta_i)\,(x_{2i}, x_{2i+1})")
    columns = [tr("modern.pair"), "θ_i", "m θ_i", "cos", "sin"]
    rows = [
        [f"({2 * i + 1}, {2 * i + 2})", 10000 ** (-2 * i / head_dim), angle, math.cos(angle), math.sin(angle)]
        for i, angle in enumerate(angles)
    ]
    st.dataframe(arrow_table(columns, rows), hide_index=True)


def positions_section(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernState:
    """A positional scheme against none: the weights side by side, what the scheme adds, and a row worked out."""
    head = state.head - 1
    scheme = tr(f"modern.positions_{state.positions}")
    st.subheader(tr("modern.positions_heading", scheme=scheme))
    plain = plain_causal(state, inputs, trace)
    text_and_chart(
        lambda: st.markdown(tr(f"modern.positions_{state.positions}_text")),
        lambda: side_by_side(state, inputs, trace, plain, head, scheme, f"attnviz_positions_{state.positions}"),
    )
    if state.positions == "rope":  # the same head without RoPE: the plain trace itself when the mask is causal
        unturned = plain if state.mask == "causal" else compute(state, inputs, positions="none")
        _rope_check(inputs, trace, unturned, head)
    elif state.positions == "alibi":
        _alibi_slopes(trace, head, inputs.labels)
    elif state.positions == "sinusoidal" and trace.encoding is not None:
        language = current_language()
        chart(
            lambda: figures.matrix_heatmap(
                trace.encoding.numpy(),
                row_labels=inputs.labels,
                col_labels=[str(i + 1) for i in range(trace.encoding.shape[1])],
                title=tr("modern.sinusoidal_chart"),
                x_title=tr("modern.feature"),
                y_title=tr("modern.token"),
                lang=language,
            ),
            "attnviz_sinusoidal_encoding",
        )
    return work(state, inputs, trace, head)


def _rope_check(inputs: Inputs, trace: ModernTrace, unturned_trace: ModernTrace, head: int) -> None:
    """RoPE's property on the student's tokens: a pair of tokens at the same distance scores the same wherever it
    stands, and differently at another distance; without positions the pair scores the same at every distance.
    Each row is a (query token, key token, distance) seen more than once, with the scores it got."""
    scores = trace.heads[head].scores  # (T, T) q_m · k_n after rotation
    unturned = unturned_trace.heads[head].scores  # the same head without RoPE
    groups: dict[tuple[str, str, int], list[tuple[int, int]]] = defaultdict(list)
    tokens = inputs.tokens
    for m in range(len(tokens)):
        for n in range(m + 1):
            groups[(tokens[m], tokens[n], m - n)].append((m, n))
    repeated = [(key, pairs) for key, pairs in groups.items() if len(pairs) > 1]
    if not repeated:
        st.info(tr("modern.rope_no_repeats"), icon="ℹ️")
        return
    lines = []
    for (query, key, distance), pairs in repeated[:MAX_REPEATS]:
        values = [float(scores[m, n]) for m, n in pairs]
        lines.append(
            "- "
            + tr(
                "modern.rope_line",
                query=md_escape(query),
                key_token=md_escape(key),
                distance=distance,
                pairs=", ".join(f"{m + 1}→{n + 1}" for m, n in pairs),
                scores=", ".join(f"{v:.4f}" for v in values),
                spread=f"{max(values) - min(values):.1e}",
                plain=f"{float(unturned[pairs[0]]):.4f}",
            )
        )
    heading = tr("modern.rope_check_one") if len(repeated) == 1 else tr("modern.rope_check", count=len(repeated))
    st.markdown(heading + "\n\n" + "\n".join(lines))


def _alibi_slopes(trace: ModernTrace, head: int, labels: list[str]) -> None:
    """Each head's slope and its penalty at a few distances; the shown head's bias as a matrix."""
    assert trace.slopes is not None
    columns = [tr("modern.query_head"), tr("modern.slope"), *(tr("modern.bias_at", distance=d) for d in (1, 4, 8))]
    # Written out to 6 significant digits: the table's own rounding to 4 decimals showed the slope 0.03125 as 0.0313
    # and its bias at distance 1 as -0.0312
    rows = [[h + 1, *(f"{v:.6g}" for v in (s, -s, -4 * s, -8 * s))] for h, s in enumerate(trace.slopes.tolist())]
    st.dataframe(arrow_table(columns, rows), hide_index=True, width="stretch")
    bias = trace.heads[head].bias
    assert bias is not None
    language = current_language()
    chart(
        lambda: figures.matrix_heatmap(
            bias.numpy(),
            row_labels=labels,
            col_labels=labels,
            title=tr("modern.alibi_chart", head=head + 1, slope=f"{float(trace.slopes[head]):.4g}"),
            x_title=tr("modern.keys"),
            y_title=tr("modern.queries"),
            mask=trace.heads[head].mask.numpy(),  # the pairs the mask never scores are marked, as on the weights
            lang=language,
        ),
        "attnviz_alibi_bias",
    )


def masks_section(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernState:
    """A mask beyond causal against causal: the pairs it scores, the weights side by side, a row worked out."""
    head = state.head - 1
    scheme = tr(f"modern.mask_{state.mask}")
    st.subheader(tr("modern.masks_heading", scheme=scheme))
    count = scored_pairs(trace.heads[head].mask)  # the scheme's mask narrowed by the valid length
    shares = {"share": f"{count.share:.1%}", "causal": count.causal}

    def explained() -> None:
        st.markdown(tr(f"modern.mask_{state.mask}_text"))
        st.markdown(tr("modern.pair_count", scored=count.scored, total=count.total, **shares))

    plain = plain_causal(state, inputs, trace)
    text_and_chart(
        explained, lambda: side_by_side(state, inputs, trace, plain, head, scheme, f"attnviz_mask_{state.mask}")
    )
    return work(state, inputs, trace, head)


def heads_section(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernState:
    """MHA -> GQA -> MQA: which query heads share which key/value head, every head's weights, and the KV cache's
    memory for this layer and for published models."""
    kind = attention_kind(state.heads, state.kv_heads)
    if state.heads == 1:  # "1 query head", "1 key/value head": singular in English (Chinese has one form)
        heading = tr("modern.heads_heading_single", kind=kind)
    elif state.kv_heads == 1:
        heading = tr("modern.heads_heading_one_kv", kind=kind, heads=state.heads)
    else:
        heading = tr("modern.heads_heading", kind=kind, heads=state.heads, kv_heads=state.kv_heads)
    st.subheader(heading)
    charts, side = beside_chart()  # on a projector the text beside the share map: the map on the first screen
    with side if side is not None else contextlib.nullcontext():
        st.markdown(tr("modern.heads_text"))
        lines = []
        for g in range(trace.kv_heads):
            members = [str(h + 1) for h, group in enumerate(trace.groups) if group == g]
            lines.append("- " + tr("modern.share_line", kv_head=g + 1, heads=", ".join(members)))
        st.markdown("\n".join(lines))
    language = current_language()
    title = tr("modern.share_chart")
    with charts:
        chart(
            lambda: modern_figures.kv_share_map(trace.groups, title=title, lang=language),
            "attnviz_kv_share",
            table="elsewhere",  # the lines above say the same in words
            shared=("kv_share", trace.groups, language),  # the same map for every seed, sentence and session
            fit=MODERN_FIT,
        )
    # Four panels in a row at most, two on a phone (four there were strips ~40 px wide); cells square at any width
    phone = on_a_phone()
    columns = 2 if state.heads <= 4 or phone else 4
    # In four columns a phone has room for "Q5", not "Q5·KV2" (the map above says which K/V head each one reads)
    titles = [
        tr("modern.head_title", head=h + 1, kv_head=g + 1) if columns == 2 else f"Q{h + 1}"
        for h, g in enumerate(trace.groups)
    ]
    masks = torch.stack([t.mask for t in trace.heads])  # (h, Q, K)
    chart(
        lambda: figures.heads_grid(
            AttentionGrid(trace.weights.numpy(), masks.numpy(), inputs.labels, inputs.labels),
            head_titles=titles,
            palette=palette(),
            columns=columns,
            square=True,
            width=PHONE_WIDTH if phone else None,
            lang=language,
        ),
        "attnviz_gqa_heads",
        fit=MODERN_FIT,
    )
    _memory(state)
    head = state.head - 1
    return work(state, inputs, trace, head)


def _memory(state: ModernState) -> None:
    """Bytes per token of the KV cache, 2 x layers x kv heads x head size x bytes, for published models and this
    page's layer; and what a context of the chosen length holds."""
    st.markdown(f"**{tr('modern.memory_heading')}**")
    st.latex(r"\text{" + tr("modern.bytes_per_token") + r"} = 2 \times L \times n_{kv} \times d_{head} \times b")
    left, right = st.columns(2)
    context = fieldwidgets.number(SESSION, field(MODERN_FIELDS, "context"), where=left)
    value_bytes = fieldwidgets.choice(
        SESSION, field(MODERN_FIELDS, "value_bytes"), "modern.value_bytes_{}", where=right
    )
    size = int(value_bytes)
    models = [(c.name, c.kind, c.layers, c.kv_heads, c.head_dim, c.source) for c in PUBLISHED_CONFIGS]
    models.append(
        (tr("modern.this_layer"), attention_kind(state.heads, state.kv_heads), 1, state.kv_heads, state.head_dim, "")
    )
    lines = []  # lines, not a table of five columns: they wrap on a phone
    for name, kind, layers, kv_heads, head_dim, source in models:
        per_token = kv_cache_bytes_per_token(layers, kv_heads, head_dim, size)
        line = tr(
            "modern.memory_line",
            model=name,
            kind=kind,
            sizes=f"{layers} × {kv_heads} × {head_dim}",
            per_token=f"{per_token:,}",
            gib=f"{per_token * context / 2**30:.3g}",
            context=f"{context:,}",
        )
        lines.append(f"- {line}" + (f" · [config.json]({source})" if source else ""))  # our own data's addresses
    st.markdown("\n".join(lines))
    st.caption(tr("modern.memory_note"))
