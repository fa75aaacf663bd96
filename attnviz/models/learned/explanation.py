"""Is attention an explanation? The maps of attnviz/core/attribution.py on the two trained models, for the page that
puts them side by side with MiniLM's (attnviz/models/bert_explanation.py), and "does attention matter here?".

    induction  the student's sequence; the readout is log p of its last symbol at the position before it. Raw and
               norm-based attention of any layer and head (the readout position's row), rollout, flow, gradient ×
               input, integrated gradients; blank-out replaces a token by a symbol the sequence does not hold.
    dates      the student's date; the readout is log p of one output character the model wrote (its earlier
               characters given). One additive cross-attention over a recurrent encoder: raw attention (that
               character's row), gradient × input and integrated gradients on the character embeddings; rollout,
               flow and norm-based attention need a stack of self-attention layers and are not offered. Blank-out
               replaces a character by another of its class.

The shipped models are shared by a server's sessions: every pass that reads the attention left on a module holds the
model's lock, and "does attention matter" hooks a copy of the model, never the shared one. Pure: no Streamlit."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor, nn

from attnviz.core.attribution import attention_flow, blank_out, head_transformed, norm_based, rollout
from attnviz.core.errors import AttnvizError, short
from attnviz.models.learned import dates, induction
from attnviz.models.learned.ablation import HOW, attention_replaced
from attnviz.models.learned.dates_attribution import same_class
from attnviz.models.learned.gradients import IG_STEPS
from attnviz.models.learned.seq2seq import MODEL_LOCK as DATES_LOCK
from attnviz.models.learned.seq2seq import DateTranslator, translate_texts
from attnviz.models.learned.train import new_model

MATTER_EXAMPLES = 300  # held-out examples for "does attention matter here?"


@dataclass(frozen=True)
class ModelMaps:
    """Every map of one input for one readout. Each map is (n,) over `tokens`; raw and norm-based attention are kept
    per layer, (h, Q, n), and read at row `query` (the readout's position) for a chosen layer and head."""

    tokens: list[str]  # what the maps rank: the model's input
    target: str  # the readout's symbol or character
    log_prob: float  # the readout: log p(target)
    query: int  # the row of the attention the readout reads
    attentions: list[Tensor]  # per layer (h, Q, n)
    norms: list[Tensor] | None  # per layer ‖α f(x)‖ (h, Q, n); None where it does not apply
    rollout: Tensor | None
    flow: Tensor | None
    gradient: Tensor
    integrated: Tensor
    blank: Tensor  # the reference


def layer_maps(maps: ModelMaps, layer: int, head: int | None) -> dict[str, Tensor]:
    """Every map by method (attnviz/models/bert_explanation.py's METHODS, those that apply), raw and norm-based
    attention read at `layer` and `head` (0-based; None for the heads' mean), float64."""

    def at(per_layer: list[Tensor]) -> Tensor:
        chosen = per_layer[layer].mean(dim=0) if head is None else per_layer[layer][head]  # (Q, n)
        return chosen[maps.query].to(torch.float64)

    result = {
        "raw": at(maps.attentions),
        "rollout": maps.rollout,
        "flow": maps.flow,
        "norm": None if maps.norms is None else at(maps.norms),
        "gradient": maps.gradient,
        "integrated": maps.integrated,
        "blank": maps.blank,
    }
    return {method: values.to(torch.float64) for method, values in result.items() if values is not None}


# ----- the induction model -------------------------------------------------------------------------------------------
def parse_readout(text: str) -> tuple[list[str], str]:
    """A typed sequence ("D H A Q D H A") -> the model's input (<s> and every symbol but the last) and the readout's
    symbol (the last). AttnvizError for symbols the model does not know, or a length it cannot read."""
    symbols, unknown = induction.parse_sequence(text)
    if unknown:
        raise AttnvizError(
            "sequence_symbols",
            symbols=short(" ".join(unknown)),
            first=induction.SYMBOLS[0],
            last=induction.SYMBOLS[-1],
        )
    if not 2 <= len(symbols) <= induction.MAX_LENGTH:
        raise AttnvizError("sequence_length", most=induction.MAX_LENGTH, count=len(symbols))
    return [induction.BOS, *symbols[:-1]], symbols[-1]


def unused_symbol(tokens: list[str], target: str) -> str:
    """The blank-out's replacement: the first symbol neither the input nor the readout holds."""
    for symbol in induction.SYMBOLS:
        if symbol not in tokens and symbol != target:
            return symbol
    raise AttnvizError("no_unused_symbol", count=len(induction.SYMBOLS))


def _induction_log_prob(model: induction.InductionTransformer, batch: Tensor, target: int) -> Tensor:
    return torch.log_softmax(model(batch)[:, -1], dim=-1)[:, target]  # (B,)


def _induction_pass(model: induction.InductionTransformer, ids: Tensor) -> tuple[list[Tensor], list[Tensor]]:
    """One pass: each layer's attention (h, n, n) and norm-based attention (h, n, n), the values f(x_j) taken from
    what each attention module was given (the layer's normalised input)."""
    inputs: list[Tensor] = []
    hooks = [
        layer.attention.register_forward_hook(lambda _m, args, _out: inputs.append(args[2][0].detach()))
        for layer in model.layers
    ]
    try:
        with torch.no_grad(), induction.MODEL_LOCK:
            model(ids)
            weights = [w[0] for w in model.attention_weights()]  # each (h, n, n)
    finally:
        for hook in hooks:
            hook.remove()
    norms = []
    for layer, values, alpha in zip(model.layers, inputs, weights, strict=True):
        attention = layer.attention
        transformed = head_transformed(values, attention.W_v.weight, attention.W_o.weight, attention.num_heads)
        norms.append(norm_based(alpha, transformed).detach())
    return weights, norms


def induction_explanation(model: induction.InductionTransformer, text: str, flow: bool = True) -> ModelMaps:
    """Every map for the last symbol of the typed sequence `text`."""
    tokens, target = parse_readout(text)
    ids = torch.tensor([[induction.INDEX[token] for token in tokens]], dtype=torch.long)  # (1, n)
    goal, blank_id = induction.INDEX[target], induction.INDEX[unused_symbol(tokens, target)]
    with induction.MODEL_LOCK:  # every pass below leaves its attention on the shared model's modules
        return _induction_maps(model, tokens, target, ids, (goal, blank_id), flow)


def _induction_maps(
    model: induction.InductionTransformer, tokens: list[str], target: str, ids: Tensor, goal_blank: tuple, flow: bool
) -> ModelMaps:
    goal, blank_id = goal_blank
    weights, norms = _induction_pass(model, ids)

    def readout(batch: Tensor) -> Tensor:
        return _induction_log_prob(model, batch, goal)

    with torch.no_grad():
        log_prob = float(readout(ids)[0])
        importance = blank_out(
            lambda blanked: readout(torch.tensor([blanked]))[0],
            ids[0].tolist(),
            lambda _: blank_id,
            range(len(tokens)),
            lambda original, blanked: float(original - blanked),
        )
    times_input, integrated = _gradients(readout, model.token_embedding, ids, torch.full_like(ids, blank_id), ())
    last = len(tokens) - 1
    return ModelMaps(
        tokens=tokens,
        target=target,
        log_prob=log_prob,
        query=last,
        attentions=weights,
        norms=norms,
        rollout=rollout(weights)[last],
        flow=attention_flow(weights, readout=last) if flow else None,
        gradient=times_input,
        integrated=integrated,
        blank=importance,
    )


def _gradients(readout, embedding: nn.Module, ids: Tensor, baseline: Tensor, extra: tuple) -> tuple[Tensor, Tensor]:
    """Gradient × input and integrated gradients (from `baseline`) on `embedding`'s output, summed over each token's
    embedding: (n,) float64 each. `extra`: the readout's further arguments."""
    times_input = LayerGradientXActivation(readout, embedding).attribute(ids, additional_forward_args=extra)
    integrated = LayerIntegratedGradients(readout, embedding).attribute(
        ids, baselines=baseline, n_steps=IG_STEPS, additional_forward_args=extra
    )
    return (
        times_input.sum(dim=-1)[0].detach().to(torch.float64),
        integrated.sum(dim=-1)[0].detach().to(torch.float64),
    )


# ----- the dates model -----------------------------------------------------------------------------------------------
def check_date(text: str) -> list[int]:
    """The input ids of a typed date; AttnvizError for characters the model has no token for, or a bad length."""
    if not 1 <= len(text) <= dates.MAX_PROBE_LENGTH:
        raise AttnvizError("dates_probe", most=dates.MAX_PROBE_LENGTH, value=short(repr(text)))
    unknown = dates.unknown_characters(text)
    if unknown:
        raise AttnvizError("date_characters", characters=short(" ".join(unknown)))
    return [dates.INPUT_INDEX[character] for character in text]


def dates_explanation(model: DateTranslator, text: str, step: int) -> ModelMaps:
    """Every map for output character `step` (0-based) of what the model writes for `text`."""
    ids = check_date(text)
    if not 0 <= step < dates.OUTPUT_LENGTH:
        raise AttnvizError("output_character", count=dates.OUTPUT_LENGTH, value=step + 1)
    with DATES_LOCK:
        translation = translate_texts(model, [text])[0]
    output = torch.tensor([[dates.OUTPUT_INDEX[c] for c in translation.output]])  # (1, 10)
    goal, length = int(output[0, step]), torch.tensor([len(ids)])

    def readout(batch: Tensor, targets: Tensor) -> Tensor:
        lengths = length.expand(batch.shape[0])
        logits = model(batch, lengths, targets.expand(batch.shape[0], -1))[:, step]  # (B, vocab)
        return torch.log_softmax(logits, dim=-1)[:, goal]

    inputs = torch.tensor([ids])
    with torch.no_grad():
        log_prob = float(readout(inputs, output)[0])
        importance = blank_out(
            lambda blanked: readout(torch.tensor([blanked]), output)[0],
            ids,
            lambda position: dates.INPUT_INDEX[same_class(text[position])],
            range(len(ids)),
            lambda original, blanked: float(original - blanked),
        )
    baseline = torch.tensor([[dates.INPUT_INDEX[same_class(c)] for c in text]])  # every character blanked out
    with DATES_LOCK:  # Captum's passes run the shared model's attention module
        times_input, integrated = _gradients(readout, model.encoder.embedding, inputs, baseline, (output,))
    return ModelMaps(
        tokens=list(text),
        target=translation.output[step],
        log_prob=log_prob,
        query=step,
        attentions=[translation.trace.weights[None]],  # one layer, one head: (1, 10, n)
        norms=None,
        rollout=None,
        flow=None,
        gradient=times_input,
        integrated=integrated,
        blank=importance,
    )


# ----- does attention matter here? -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ablation:
    """The held-out accuracy with one layer's attention replaced (`how`: HOW), beside the model's as trained."""

    layer: int  # 0-based
    how: str
    accuracy: float


def _accuracy(model: nn.Module, task: str, count: int) -> float:
    if task == "dates":
        examples = dates.held_out_examples(count)
        results = translate_texts(model, [example.text for example in examples])
        return sum(r.output == e.target for r, e in zip(results, examples, strict=True)) / count
    return induction.token_accuracy(model, induction.held_out_examples(count))


def attention_matters(model: nn.Module, task: str, count: int = MATTER_EXAMPLES) -> tuple[float, list[Ablation]]:
    """The accuracy on `count` held-out examples as trained, and with each attention layer (the induction model's
    two; the dates model's one) made uniform or permuted. Works on a copy: the shared model is never hooked."""
    own = new_model(task)  # a copy by its weights (a deepcopy would also copy the tensors a pass left on it)
    own.load_state_dict(model.state_dict())
    own.eval()
    layers = list(own.layers) if task == "induction" else [own.decoder.attention]
    with torch.no_grad():
        trained = _accuracy(own, task, count)
        ablations = []
        for index, layer in enumerate(layers):
            for how in HOW:
                with attention_replaced(layer, how):
                    ablations.append(Ablation(index, how, _accuracy(own, task, count)))
    return trained, ablations
