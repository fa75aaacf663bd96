"""The modern-attention page's two steppers, each with an on-screen check against the ordinary computation: decoding
with a KV cache, one token per step, and FlashAttention's online softmax, one block of keys per step."""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace

import streamlit as st
import torch

from attnviz.app.modern_state import MODERN_FIELDS, STEP_END, ModernState
from attnviz.app.ui import fieldwidgets
from attnviz.app.ui.common import arrow_table, beside_chart, chart
from attnviz.app.ui.editors import selected_row
from attnviz.app.ui.modern_compute import MODERN_FIT, SESSION, Inputs, compute, escaped, valid_length
from attnviz.app.ui.settings import current_language, palette, tr
from attnviz.core.fields import field
from attnviz.core.flash import OnlineSoftmaxTrace, memory_traffic, online_softmax_row
from attnviz.core.kvcache import DecodeStep, decode_with_cache
from attnviz.core.modern import ModernTrace
from attnviz.figures import attention as figures
from attnviz.figures import modern as modern_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.i18n import t
from attnviz.lessons.explain import number_text
from attnviz.lessons.working import number_prose

TOLERANCE = 1e-5  # float32 sums in another order differ by ~1e-7; anything near this would be a real difference
LONG_EXAMPLE = (4096, 128, 128)  # n, d, B of the traffic table's second row: a real model's head at 4k tokens


def _stepper(name: str, last: int, label: str) -> int:
    """A slider over 1..last bound to field `name`. A stored step past the end (STEP_END: "the last") shows the last,
    and a stepper left at its end stays there when there are more steps (more tokens, smaller blocks)."""
    key = SESSION.bound(name)
    before = SESSION.get("stepper", name)  # (value, last) drawn on the previous run
    current = SESSION.current(key, int, last)
    at_end = before is not None and before[0] == before[1] and current == before[0]
    if at_end or not 1 <= current <= last:
        st.session_state[key] = last
    if last == 1:
        st.caption(tr("modern.one_step"))
        value = 1
    else:
        value = int(st.slider(label, 1, last, key=key, help=tr("modern.stepper_help")))
    SESSION.put((value, last), "stepper", name)
    return value


def _check(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """The on-screen check: each stepped result against the ordinary computation's, (stepped, reference) pairs."""
    difference = max(float((got - wanted).abs().max()) for got, wanted in pairs)
    if difference <= TOLERANCE:
        reference = torch.cat([wanted.flatten() for _, wanted in pairs])
        st.success(check_text(difference, reference, current_language()), icon="✅")
    else:  # never expected: say so plainly rather than hide it
        st.error(tr("modern.check_differs", difference=f"{difference:.3g}"), icon="❌")


def check_text(difference: float, reference: torch.Tensor, lang: str) -> str:
    """The check passed: the difference, named with the dtype the page computed in, against one rounding step of
    that dtype at the reference's magnitude (machine epsilon × its largest |value|), and their ratio."""
    dtype = str(reference.dtype).removeprefix("torch.")
    eps, magnitude = torch.finfo(reference.dtype).eps, float(reference.abs().max()) if reference.numel() else 0.0
    step = eps * magnitude
    if difference == 0:
        rounding = t("modern.check_exact", lang)
    else:
        sizes = {"dtype": dtype, "eps": number_prose(eps, 2), "magnitude": number_prose(magnitude, 2)}
        sizes["bound"] = number_prose(step, 2)
        if difference <= step:  # the usual case: "1/14,000,000 of a rounding step"
            rounding = t("modern.check_below", lang, ratio=_times(step / difference), **sizes)
        else:
            rounding = t("modern.check_above", lang, steps=number_prose(difference / step, 2) if step else "∞", **sizes)
    return t("modern.check_equal", lang, dtype=dtype, difference=number_prose(difference, 2), rounding=rounding)


def _times(ratio: float) -> str:
    """A ratio of at least 1 to two significant digits, written out in full: 1.4, 14, 14,000,000."""
    rounded = float(f"{ratio:.2g}")
    return f"{rounded:,.0f}" if rounded >= 10 else f"{rounded:g}"


def kv_cache_section(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernState:
    """Decode the tokens one at a time with a KV cache; the weights so far, the cache and the check at each step."""
    st.subheader(tr("modern.kv_heading"))
    charts, side = beside_chart()  # on a projector the text beside the stepper and chart: the chart on the first screen
    text = side if side is not None else contextlib.nullcontext()
    with text:
        st.markdown(tr("modern.kv_text"))
    head = state.head - 1
    causal, steps = _decoded(state, inputs, trace)
    length = len(steps)
    with charts:
        done = _stepper("decode_step", length, tr("modern.decode_step"))
    step = steps[done - 1]
    with text:
        shown = escaped([inputs.labels[done - 1]])
        st.markdown(tr("modern.kv_step", step=done, token=shown, rows=done, numbers=step.cached_numbers))
    with charts:
        _decoded_chart(steps, done, inputs.labels)
    reference = causal.heads[head]
    st.markdown(tr("modern.kv_check", step=done))
    _check([(step.weights, reference.weights[done - 1, :done]), (step.output, reference.output[done - 1])])
    _cache_tables(step, inputs.labels[:done])
    decode_step = STEP_END if done == length else done
    return replace(state, decode_step=decode_step)


def _decoded(state: ModernState, inputs: Inputs, trace: ModernTrace) -> tuple[ModernTrace, list[DecodeStep]]:
    """The chosen head's every decoding step, and the causal trace they are checked against (the page's own trace
    when it is causal already)."""
    head = state.head - 1
    # Decoding is causal and reads every token so far: the page's mask and valid length do not apply here
    plain = (state.mask, valid_length(state, len(inputs.labels))) == ("causal", None)
    causal = trace if plain else compute(state, inputs, mask="causal", valid=0)
    if state.mask != "causal" or state.valid:
        st.caption(tr("modern.kv_causal_only"))
    group, width = causal.groups[head], causal.queries.shape[-1]
    rows = slice(head * width, (head + 1) * width), slice(group * width, (group + 1) * width)
    encoded = causal.inputs if causal.encoding is None else causal.inputs + causal.encoding
    slope = None if causal.slopes is None else float(causal.slopes[head])
    steps = decode_with_cache(
        encoded,
        causal.W_q[rows[0]],
        causal.W_k[rows[1]],
        causal.W_v[rows[1]],
        rope=state.positions == "rope",
        alibi_slope=slope,
    )
    return causal, steps


def _decoded_chart(steps: list[DecodeStep], done: int, labels: list[str]) -> None:
    """The weights of the first `done` steps, one row per decoded token; the rows not decoded yet masked."""
    length = len(steps)
    decoded = torch.zeros(length, length)
    for s in steps[:done]:
        decoded[s.step, : s.step + 1] = s.weights
    shown = torch.ones(length, length, dtype=torch.bool).tril() & (torch.arange(length) < done)[:, None]
    language = current_language()
    chart(
        lambda: figures.weights_heatmap(
            AttentionGrid(decoded.numpy(), shown.numpy(), labels, labels),
            title=tr("modern.kv_chart", step=done),
            palette=palette(),
            colour_range="unit",
            lang=language,
        ),
        "attnviz_kv_cache",
        fit=MODERN_FIT - 100,  # below the stepper
    )


def _cache_tables(step: DecodeStep, labels: list[str]) -> None:
    """The cache after `step` (K and V, a row per token so far), then the new token's scores and weights."""
    done = len(labels)
    left, right = st.columns(2)
    for where, name, cache in ((left, "K", step.keys), (right, "V", step.values)):
        where.markdown(tr("modern.cache_table", name=name, rows=done, width=cache.shape[1]))
        columns = [tr("modern.token"), *(f"{name}[{i + 1}]" for i in range(cache.shape[1]))]
        where.dataframe(
            arrow_table(columns, [[label, *row] for label, row in zip(labels, cache.tolist(), strict=True)]),
            hide_index=True,
            height=min(420, 38 + 35 * done),
        )
    weights_row = [[label, float(s), float(w)] for label, s, w in zip(labels, step.scores, step.weights, strict=True)]
    st.markdown(tr("modern.kv_weights", token=escaped([labels[-1]])))
    st.dataframe(
        arrow_table([tr("modern.token"), tr("modern.score"), tr("modern.weight")], weights_row),
        hide_index=True,
        width="stretch",
    )


def _flash_check(rescales: int, shown: str) -> str:
    """The check's sentence, with the number of times the running maximum went up said in words for 0 and 1."""
    if rescales == 0:
        return tr("modern.flash_check_none", output=shown)
    if rescales == 1:
        return tr("modern.flash_check_once", output=shown)
    return tr("modern.flash_check", rescales=rescales, output=shown)


def flash_section(state: ModernState, inputs: Inputs, trace: ModernTrace) -> ModernState:
    """One query row's online softmax, block by block: the running maximum, sum and output, the check at the end,
    and the memory traffic of the naive and the tiled computation."""
    st.subheader(tr("modern.flash_heading"))
    # On a projector the controls and the text beside the chart, which gets the column's full height on the first
    # screen (below the controls it was 230 px, its plot 50 px: the score axis's ticks ran together)
    charts, side = beside_chart()
    controls = side if side is not None else charts
    if side is None:
        st.markdown(tr("modern.flash_text"))
    head = state.head - 1
    length = len(inputs.labels)
    with controls:
        left, right = (st.container(), st.container()) if side is not None else st.columns(2)
    block_size = int(fieldwidgets.number(SESSION, field(MODERN_FIELDS, "block_size"), where=left))
    with right:
        row = selected_row(SESSION, inputs.labels, tr("modern.row"))
    reference = trace.heads[head]
    group = trace.groups[head]
    online = online_softmax_row(
        trace.queries[head],
        trace.keys[group],
        trace.values[group],
        row,
        block_size,
        mask=reference.mask,
        bias=reference.bias,
    )
    blocks = len(online.steps)
    language = current_language()
    with controls:
        done = _stepper("block_step", blocks, tr("modern.block_step"))
    if side is not None:
        with side:
            st.markdown(tr("modern.flash_text"))
    with charts:
        _online_chart(
            online,
            block_size,
            done,
            inputs.labels,
            tr("modern.flash_chart", row=inputs.labels[row], done=done, blocks=blocks),
            language,
        )
    _flash_formulas()
    _block_table(online.steps[:done], inputs.labels)
    if done < blocks:
        left = blocks - done
        st.info(tr("modern.flash_to_go_one") if left == 1 else tr("modern.flash_to_go", left=left), icon="⏭️")
    else:
        st.markdown(_flash_check(online.rescales, ", ".join(number_prose(float(v)) for v in online.output[:8])))
        _check([(online.output, reference.output[row]), (online.weights, reference.weights[row])])
    _traffic(length, trace.queries.shape[-1], block_size)
    block_step = STEP_END if done == blocks else done
    return replace(state, block_size=block_size, row=int(row), block_step=block_step)


def _flash_formulas() -> None:
    """The update after each block: m', ℓ', o' and the result o / ℓ."""
    block = r"j \in \text{" + tr("modern.block") + "}"
    st.latex(  # one line per quantity: it fits a phone and a projector
        rf"\begin{{aligned}} m' &= \max(m, \max_{{{block}}} s_j) \\ "
        rf"\ell' &= \ell\, e^{{m - m'}} + \sum_{{{block}}} e^{{s_j - m'}} \\ "
        rf"\mathbf o' &= \mathbf o\, e^{{m - m'}} + \sum_{{{block}}} e^{{s_j - m'}} \mathbf v_j \\ "
        r"\text{" + tr("modern.flash_result") + r"} &= \mathbf o / \ell \end{aligned}"
    )


def _online_chart(
    online: OnlineSoftmaxTrace, block_size: int, done: int, labels: list[str], title: str, language: str
) -> None:
    """The row's scores block by block, the blocks read so far and the running maximum; on a projector the first
    screen's height, its controls beside it."""
    current = online.steps[done - 1]
    chart(
        lambda: modern_figures.online_softmax_figure(
            torch.cat([s.scores for s in online.steps]).numpy(),
            block_size,
            done,
            current.m_after,
            key_labels=labels,
            title=title,
            lang=language,
        ),
        "attnviz_online_softmax",
        fit=MODERN_FIT,
    )


def _block_table(steps: list, labels: list[str]) -> None:
    """One row per block read: the block and its keys, m after it, the rescale factor, ℓ and o (five columns: the
    block's own maximum and m before it are in the chart and the row above; a phone shows the table whole)."""
    columns = [tr("modern.block_keys"), "m'", "e^(m − m')", "ℓ'", "o'"]
    rows = []
    for s in steps:
        keys = f"{labels[s.start]}…{labels[s.stop - 1]}" if s.stop - s.start > 1 else labels[s.start]
        out = ", ".join(number_text(float(v)) for v in s.o_after[:3]) + (", …" if s.o_after.numel() > 3 else "")
        rescale = number_text(s.rescale) if math.isfinite(s.m_before) else "—"  # nothing to rescale before block 1
        rows.append([f"{s.block + 1}: {keys}", _shown(s.m_after), rescale, number_text(s.l_after), f"[{out}]"])
    st.dataframe(arrow_table(columns, rows), hide_index=True, width="stretch")


def _shown(value: float) -> str:
    """A running value as text: 4 significant digits, "−∞" before any key was read (or when all are masked)."""
    return number_text(value) if math.isfinite(value) else "−∞"


def _traffic(n: int, d: int, block_size: int) -> None:
    """Numbers moved to and from slow memory, naive against tiled, for this head and for a long example (lines, not
    a table of seven columns: they wrap on a phone)."""
    lines = []
    for tokens, size, block in ((n, d, block_size), LONG_EXAMPLE):
        traffic = memory_traffic(tokens, size, block)
        lines.append(
            "- "
            + tr(
                "modern.traffic_line",
                n=tokens,
                d=size,
                block=block,
                scores=f"{traffic.score_matrix:,}",
                naive=f"{traffic.naive:,}",
                tiled=f"{traffic.tiled:,}",
                ratio=f"{traffic.ratio:.2f}",
            )
        )
    st.markdown(f"**{tr('modern.traffic_heading')}**\n\n" + "\n".join(lines))
    st.caption(tr("modern.traffic_note"))
