"""What a page's state lets a class be asked about: its queries, its keys, their weights and the numbers it shows,
computed by the code the page itself runs on the state its link parameters decode to. Pure: no Streamlit.

    self, cross   attnviz/app/pipeline.py: resolve_inputs, valid_lens_for, run_attention (the whole request, as the
                  page computes it within its budget; a very large one is the asking page's to gate)
    kernel        run_kernel_and_curve: f(x) at the page's query points
    model         the model's trace, head_weights and token_selection (attnviz/models/bert_views.py)
    learned       the recorded run's snapshot at the chosen step (dates: the probe the page shows; induction: the
                  followed head), and the heads' pattern labels of the model the page tries
    faithful      each map's ρ against blank-out: attnviz/app/classroom/faithful.py (no queries, no keys)

The app's caches are Streamlit's; here the pretrained model is the one passed in (the page's `get_model()`) or
loaded once per process, and the shipped learned runs are loaded once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from attnviz.app.learned_state import (
    ABLATION_EXAMPLES,
    LearnedState,
    decode_learned,
    output_labels,
    recorded_step,
    visible,
)
from attnviz.app.model_state import decode_model
from attnviz.app.pipeline import resolve_inputs, run_attention, run_kernel_and_curve, valid_lens_for
from attnviz.app.state import decode_attention, decode_kernel
from attnviz.core.attention import build_mask
from attnviz.core.masking import causal_mask
from attnviz.figures.style import POSITION_MARK
from attnviz.models.bert import BertEncoder, ModelUnavailableError, load_minilm
from attnviz.models.bert_views import head_weights, token_labels, token_selection
from attnviz.models.learned import induction
from attnviz.models.learned.seq2seq import translate_texts
from attnviz.models.learned.train import MAX_STEPS, TrainingRun, TrainSettings, checkpoint_path, load_run

PAGES = ("self", "cross", "kernel", "model", "learned", "faithful")


@dataclass(frozen=True)
class Subject:
    """A page's state as a class's questions see it: queries (rows) that attend to keys (columns)."""

    page: str
    kinds: tuple[str, ...]  # the kinds of question this state allows
    query_labels: list[str]  # (Q,)
    key_labels: list[str]  # (K,)
    rows: list[int]  # the queries a question may be about (shown, with at least one key to look at)
    cols: list[int]  # the keys shown: a choice question's options
    mask: Tensor  # (Q, K) bool, True where query i may attend to key j
    weights: Callable[[int], Tensor]  # query i -> its (K,) weights, as the page shows them
    number: Callable[[int], float] | None = None  # query i -> the number the page shows for it
    context: dict[str, Any] = field(default_factory=dict)  # what else the question is about (layer, head, step)

    def valid(self, row: int) -> list[int]:
        """The shown keys that query `row` may attend to."""
        return [j for j in self.cols if bool(self.mask[row, j])]


@functools.cache
def _minilm() -> BertEncoder:
    return load_minilm()  # the app's own copy is Streamlit's (attnviz/app/ui/models.py): pass it in instead


def pretrained(model: BertEncoder | None) -> BertEncoder:
    """The pretrained model passed in (the page's `get_model()`), else the one loaded once per process."""
    return model or _minilm()


def subject(page: str, params: Mapping[str, str], model: BertEncoder | None = None) -> Subject | None:
    """What the page's state (its link parameters, decoded and validated like a link's) can be asked about; None when
    the page shows nothing to ask about (bad inputs, the model missing, a training not recorded)."""
    builders: dict[str, Callable[[], Subject | None]] = {
        "self": lambda: _attention(page, params, model),
        "cross": lambda: _attention(page, params, model),
        "kernel": lambda: _kernel(params),
        "model": lambda: _model(params, model),
        "learned": lambda: _learned(params),
    }
    if page not in builders:
        return None
    try:
        return builders[page]()
    except (ValueError, ModelUnavailableError):  # what the page shows as a message instead of a chart
        return None


def _attention(page: str, params: Mapping[str, str], model: BertEncoder | None) -> Subject:
    """The self- or cross-attention page: the heads' mean weights (one head: its own) and the output's first value."""
    state = decode_attention(params, page).state
    minilm = state.mode == "sentence" and state.embed == "minilm"
    word_vectors = pretrained(model).word_vectors if minilm else None
    inputs = resolve_inputs(replace(state, lens_mode="none"), word_vectors=word_vectors)
    num_queries, num_keys = inputs.queries.shape[0], inputs.keys.shape[0]
    lens = valid_lens_for(state, num_queries, num_keys)
    inputs = replace(inputs, valid_lens=lens)
    mask = build_mask(lens, state.causal, 1, num_queries, num_keys, batched=False)[0]  # (Q, K), as `attend` masks

    @functools.lru_cache(maxsize=1)
    def trace() -> Any:  # the whole request, as the page computes it within its budget
        return run_attention(state, inputs)

    return Subject(
        page=page,
        kinds=("top_key", "row", "number"),
        # a repeated token marked with its position, as the page's charts mark it ("the·1", "the·7"): two pills
        # reading "the" could not be told apart, nor a question about "query the"
        query_labels=token_labels(list(inputs.query_labels), POSITION_MARK, start=1),
        key_labels=token_labels(list(inputs.key_labels), POSITION_MARK, start=1),
        rows=[i for i in range(num_queries) if bool(mask[i].any())],
        cols=list(range(num_keys)),
        mask=mask,
        weights=lambda row: trace().mean_weights[row],
        number=lambda row: float(trace().output[row, 0]),
    )


def _kernel(params: Mapping[str, str]) -> Subject:
    """The kernel page: f(x) at each of its query points that a key is in reach of."""
    state = decode_kernel(params).state
    trace, _ = run_kernel_and_curve(state)
    outputs = trace.output.reshape(-1)  # (Q,)
    reached = [i for i in range(len(state.queries)) if not bool(trace.no_support[i]) and bool(outputs[i].isfinite())]
    return Subject(
        page="kernel",
        kinds=("number",),
        query_labels=[f"{x:.4g}" for x in state.queries],  # as the page labels them
        key_labels=[f"{x:.4g}" for x in state.keys],
        rows=reached,
        cols=list(range(len(state.keys))),
        mask=trace.mask.reshape(len(state.queries), len(state.keys)),
        weights=lambda row: trace.weights[row],
        number=lambda row: float(outputs[row]),
    )


def _model(params: Mapping[str, str], model: BertEncoder | None) -> Subject | None:
    """The pretrained-model page: the chosen layer's head (or the mean of the chosen heads), between the tokens the
    page shows (special tokens hidden, a pair's part); the weights of the head view."""
    state = decode_model(params).state
    model = pretrained(model)
    encoded = model.encode(state.sentence, state.pair)
    part = state.part if state.pair.strip() else "all"  # the page offers the parts for a pair only
    rows, cols = token_selection(encoded.tokens, encoded.type_ids, state.hide_special, part)
    if not rows or not cols:
        return None
    count = len(encoded.tokens)

    @functools.lru_cache(maxsize=1)
    def weights() -> Tensor:  # (T, T)
        return head_weights(model.run(state.sentence, state.pair or None), state.layer, state.heads)

    return Subject(
        page="model",
        kinds=("top_key",),
        query_labels=token_labels(encoded.tokens, POSITION_MARK),  # as the page's token picker and charts
        key_labels=token_labels(encoded.tokens, POSITION_MARK),
        rows=rows,
        cols=cols,
        mask=torch.ones(count, count, dtype=torch.bool),
        weights=lambda row: weights()[row],
        context={"layer": state.layer, "heads": list(state.heads)},
    )


# --- the learned page --------------------------------------------------------------------------------------------


@functools.cache
def shipped_run(task: str) -> TrainingRun:
    """The checkpoint the package ships for `task`, loaded once per process."""
    return load_run(checkpoint_path(task))  # the page's own copy is Streamlit's (learned_training.shipped_run)


def _finished_run(state: LearnedState, fall_back: bool) -> TrainingRun | None:
    """The run of the state's seed and steps, as the page finds it: the shipped one, or a finished training of this
    server; else the shipped one (`fall_back`: what the page's "Try" section shows) or None (its history shows none)."""
    from attnviz.app.training.jobs import QUEUE  # the server's queue of trainings (no Streamlit)

    shipped = shipped_run(state.task)
    steps = min(state.steps, MAX_STEPS[state.task])  # the page caps a link's steps so (learned_training.capped_steps)
    settings = replace(state, steps=steps).training()
    if settings == shipped.settings:
        return shipped
    job = QUEUE.get(settings)
    if job is not None and job.status == "done" and job.run is not None:
        return job.run
    return shipped if fall_back else None


def _learned(params: Mapping[str, str]) -> Subject | None:
    """The learned page's history: the attention recorded at the chosen step, on the probe the page shows it for."""
    state = decode_learned(params).state
    run = _finished_run(state, fall_back=False)
    if run is None:
        return None
    steps = [snapshot.step for snapshot in run.snapshots]
    step = recorded_step(steps, state.step)
    attention = run.snapshots[steps.index(step)].attention
    if state.task == "dates":
        probes = run.settings.probes
        probe = probes.index(state.date) if state.date in probes else 0
        text = probes[probe]
        outputs = output_labels(translate_texts(run.model, [text])[0].output)  # the rows: what the model writes
        weights = attention[probe, :, : len(text)]  # (10, T)
        keys = token_labels(visible(text), POSITION_MARK, start=1)
        mask = torch.ones(weights.shape, dtype=torch.bool)
        kinds, context = ("top_key",), {"task": "dates", "step": step, "probe": text}
    else:
        layer, index = divmod(state.head - 1, run.model.config.heads)
        weights = attention[layer, index]  # (T, T)
        tokens = [induction.BOS, *induction.parse_sequence(run.settings.probes[0])[0]]
        outputs = keys = token_labels(tokens, POSITION_MARK, start=1)  # as the chart marks repeats (1-based)
        mask = causal_mask(len(tokens), len(tokens))
        kinds = ("top_key",)  # and "head", about the model the page tries (induction_heads)
        context = {"task": "induction", "step": step, "layer": layer + 1, "head": index + 1}
    return Subject(
        page="learned",
        kinds=kinds,
        query_labels=outputs,
        key_labels=keys,
        rows=list(range(len(outputs))),
        cols=list(range(len(keys))),
        mask=mask,
        weights=lambda row: weights[row],
        context=context,
    )


@dataclass(frozen=True)
class InductionHeads:
    """The induction model's heads as the learned page labels them."""

    heads: list[tuple[int, int]]  # (layer, head), counted from 1, in the page's order
    scores: list[float]  # each head's induction score (mean weight on the key after the current token's first time)
    labels: list[str]  # "induction", "previous_token" or "other" (induction.HeadPattern.label)


_PATTERNS: dict[TrainSettings, list[induction.HeadPattern]] = {}  # by the run's settings (a run is not hashable)
KEEP_PATTERNS = 8


def _patterns(run: TrainingRun) -> list[induction.HeadPattern]:
    """Each head's pattern scores on the page's held-out sequences (about a second: kept for the run)."""
    found = _PATTERNS.get(run.settings)
    if found is None:
        found = induction.head_patterns(run.model, induction.held_out_examples(ABLATION_EXAMPLES))
        while len(_PATTERNS) >= KEEP_PATTERNS:
            _PATTERNS.pop(next(iter(_PATTERNS)))
        _PATTERNS[run.settings] = found
    return found


def induction_heads(params: Mapping[str, str]) -> InductionHeads | None:
    """The heads of the model the page tries (its "Try" section), each with the label the page gives it; None off the
    induction task."""
    state = decode_learned(params).state
    if state.task != "induction":
        return None
    run = _finished_run(state, fall_back=True)
    patterns = _patterns(run)
    return InductionHeads(
        heads=[(p.layer + 1, p.head + 1) for p in patterns],
        scores=[p.induction for p in patterns],
        labels=[p.label for p in patterns],
    )
