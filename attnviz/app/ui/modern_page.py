"""The modern-attention page: the inputs (a preset, a sentence or typed numbers), the model (positions, mask, heads),
and one topic at a time: positions, masks, grouped-query heads (modern_sections.py), the KV cache and FlashAttention's
online softmax (modern_steppers.py)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st
import torch

from attnviz.app.modern_state import (
    MAX_TOKENS,
    MODEL_DIM,
    MODERN_FIELDS,
    PRESETS,
    ModernState,
    apply_modern_preset,
    decode_modern,
    encode_modern,
)
from attnviz.app.streamlit_patches.script_run import DeltaGenerator
from attnviz.app.ui import fieldwidgets, modern_sections, modern_steppers
from attnviz.app.ui.common import inputs_box
from attnviz.app.ui.editors import matrix_editor
from attnviz.app.ui.messages import show_error, show_warning
from attnviz.app.ui.modern_compute import SESSION, Inputs, compute
from attnviz.app.ui.settings import begin_run, on_a_phone, presenting, tr
from attnviz.app.ui.share import share_box
from attnviz.core.errors import AttnvizError
from attnviz.core.fields import field
from attnviz.core.modern import ModernTrace
from attnviz.core.multihead import head_counts
from attnviz.core.text import embed_tokens, tokenize
from attnviz.figures.style import POSITION_MARK
from attnviz.models.bert_views import token_labels


def _load_preset() -> None:
    """Callback of the preset picker: the preset's settings in every control; "none": the defaults."""
    SESSION.load(apply_modern_preset(st.session_state[SESSION.key("preset")]))


def modern_page() -> None:
    """Draw the modern-attention page."""
    state: ModernState = SESSION.sync_from_link(decode_modern, ModernState)
    for warning in SESSION.warnings:
        show_warning(warning)
    with inputs_box(fold_on_a_phone=True):  # ~1,300 px of controls stood before the first chart on a phone
        state, inputs = _inputs(state)
    _controls_and_topic(state, inputs)


@st.fragment
def _controls_and_topic(state: ModernState, inputs: Inputs | None) -> None:
    """The model's controls and the topic computed from them. A fragment: moving a control or a stepper reruns only
    this part, not the page frame, the sidebar and the inputs above (their values arrive as the arguments of the
    last full run; they are at most 32 x 32 numbers)."""
    begin_run()  # a fragment rerun does not pass through page_frame
    state = _model_controls(state)
    trace = _compute(state, inputs) if inputs is not None else None
    if trace is not None:
        draw = {
            "positions": modern_sections.positions_section,
            "masks": modern_sections.masks_section,
            "heads": modern_sections.heads_section,
            "kv_cache": modern_steppers.kv_cache_section,
            "flash": modern_steppers.flash_section,
        }[state.topic]
        state = draw(state, inputs, trace)
    params = SESSION.publish(state, encode_modern)
    share_box(SESSION, params, decode_modern)


def _inputs(state: ModernState) -> tuple[ModernState, Inputs | None]:
    """Preset, topic and the tokens: None (with the reason on the page) when they cannot be read."""
    preset_label = {key: tr(f"modern.preset_{key}") for key in PRESETS} | {"": tr("attention.no_preset")}
    top, side = st.columns([3, 2])
    preset = fieldwidgets.choice(
        SESSION, field(MODERN_FIELDS, "preset"), preset_label.__getitem__, where=top, on_change=_load_preset
    )
    if preset:
        side.caption(tr(f"modern.preset_{preset}_note"))
    topic = fieldwidgets.choice(SESSION, field(MODERN_FIELDS, "topic"), "modern.topic_{}", radio=True)
    source = fieldwidgets.choice(SESSION, field(MODERN_FIELDS, "source"), "modern.source_{}", radio=True)
    state = replace(state, preset=preset, topic=topic, source=source)
    if source == "sentence":
        text = st.text_input(
            tr("modern.sentence"),
            key=SESSION.bound("sentence"),
            max_chars=field(MODERN_FIELDS, "sentence").max_len,
            help=tr("modern.sentence_help", limit=MAX_TOKENS),
        )
        state = replace(state, sentence=text)
        try:
            tokens = tokenize(text, MAX_TOKENS)
        except AttnvizError as exc:
            show_error(exc)
            return state, None
        x = embed_tokens(tokens, MODEL_DIM, seed=0, normalize=True)  # (T, 16), each of length 1
        return state, Inputs(tokens, token_labels(tokens, POSITION_MARK, start=1), x)
    matrix = matrix_editor(SESSION, "x", tr("modern.x"), tr("modern.x_help"))
    if matrix is None:
        return state, None
    state = replace(state, x=matrix)
    numbers = [str(i + 1) for i in range(len(matrix))]
    return state, Inputs(numbers, numbers, torch.tensor(matrix, dtype=torch.float32))


def _model_controls(state: ModernState) -> ModernState:
    """Positions, the mask and its parameter; the heads, key/value heads and head size; the valid length, the
    projections, their seed and the head shown. Three columns, each read top to bottom (as a phone stacks them);
    folded on a projector, so that the first chart starts on the first screen."""
    folded = presenting() or on_a_phone()
    box = st.expander(tr("frame.controls"), expanded=False) if folded else st.container()
    f = {name: field(MODERN_FIELDS, name) for name in ("positions", "mask", "projections")}
    one, two, three = box.columns(3)
    positions = fieldwidgets.choice(SESSION, f["positions"], "modern.positions_{}", where=one)
    mask = fieldwidgets.choice(SESSION, f["mask"], "modern.mask_{}", where=one)
    parameter = {"sliding": "window", "local_global": "window", "prefix": "prefix", "block_sparse": "block"}.get(mask)
    values = {}
    if parameter is not None:
        values[parameter] = fieldwidgets.number(SESSION, field(MODERN_FIELDS, parameter), where=one)
    if mask == "local_global":
        values["global_tokens"] = _global_tokens(one)
    heads = fieldwidgets.number(SESSION, field(MODERN_FIELDS, "heads"), where=two)
    kv_key = SESSION.bound("kv_heads")
    kv_wanted = SESSION.current(kv_key, int, SESSION.value("kv_heads"))
    if kv_wanted < 1 or heads % kv_wanted:  # a link's, or left from more heads: the nearest count that divides H
        st.warning(tr("modern.kv_heads_reset", kv_heads=kv_wanted, heads=heads), icon="⚠️")
        st.session_state[kv_key] = max(g for g in head_counts(heads, limit=heads) if g <= max(1, kv_wanted))
    kv_heads = two.selectbox(
        tr("modern.kv_heads"), head_counts(heads, limit=heads), key=kv_key, help=tr("modern.kv_heads_help", heads=heads)
    )
    head_dim = fieldwidgets.number(SESSION, field(MODERN_FIELDS, "head_dim"), where=two)
    valid = fieldwidgets.number(SESSION, field(MODERN_FIELDS, "valid"), where=three)
    projections = fieldwidgets.choice(SESSION, f["projections"], "modern.projections_{}", where=three)
    seed = fieldwidgets.number(SESSION, field(MODERN_FIELDS, "seed"), where=three, disabled=projections != "random")
    head = _head_picker(int(heads), three)
    return replace(
        state,
        positions=positions,
        mask=mask,
        valid=int(valid),
        heads=int(heads),
        kv_heads=int(kv_heads),
        head_dim=int(head_dim),
        projections=projections,
        seed=int(seed),
        head=head,
        **values,
    )


def _head_picker(heads: int, where: DeltaGenerator) -> int:
    """The query head shown and worked out (1-based), a picker when there are several; clamped to the heads."""
    key = SESSION.bound("head")
    if not 1 <= SESSION.current(key, int, 1) <= heads:
        st.session_state[key] = 1
    if heads == 1:
        return 1
    return int(where.selectbox(tr("modern.head"), list(range(1, heads + 1)), key=key))


def _global_tokens(where: DeltaGenerator) -> tuple[int, ...]:
    """The global tokens as "1, 5": numbers from 1, each checked (a wrong one is named on the page)."""
    f = field(MODERN_FIELDS, "global_tokens")
    key = SESSION.key("global_text")
    if key not in st.session_state or SESSION.get("global_loaded") != SESSION.version:
        st.session_state[key] = ", ".join(str(t) for t in SESSION.value("global_tokens"))
        SESSION.put(SESSION.version, "global_loaded")
    text = where.text_input(tr(f.label), key=key, help=tr("modern.global_tokens_help"))
    try:
        tokens = f.parse(text.replace(" ", "")) if text.strip() else ()
    except AttnvizError as exc:
        show_error(exc)
        return SESSION.value("global_tokens")
    st.session_state[SESSION.key("global_tokens")] = tokens
    return tokens


def _compute(state: ModernState, inputs: Inputs) -> ModernTrace | None:
    try:
        return compute(state, inputs)
    except AttnvizError as exc:
        show_error(exc)
        return None


# END
