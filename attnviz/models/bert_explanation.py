"""Is attention an explanation? Every map of attnviz/core/attribution.py for the pretrained model's sentence embedding,
side by side, each ranking the word pieces (never [CLS] or [SEP]) and each compared with blank-out by Spearman's ρ.

The readout is the mean-pooled sentence embedding, which reads every position equally: a layer's attention map for it
is the column mean over the query rows (how much, on average, each token is attended to), rollout's is the row mean
of the rollout matrix, and attention flow's readout is the mean of the top positions. The gradient maps need one
number: see attnviz/models/bert_gradients.py. Pure: no Streamlit, no Plotly."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.core.attribution import FLOW_MAX_TOKENS, attention_flow, rollout, spearman
from attnviz.models.bert import BertEncoder, BertTrace
from attnviz.models.bert_attribution import (
    SinkShare,
    blank_out_importance,
    content_positions,
    norm_based_layers,
    sink_shares,
    transformed_lengths,
)

# The maps in the order the page shows them; blank-out, the reference, last.
METHODS = ("raw", "rollout", "flow", "norm", "gradient", "integrated", "blank")
LAYER_METHODS = ("raw", "norm")  # read at the chosen layer and head


@dataclass(frozen=True)
class SentenceMaps:
    """What does not depend on the chosen layer and head: the maps of the whole model, blank-out, every layer's
    attention and norm-based attention, and the share of each layer on [CLS] and [SEP]."""

    tokens: list[str]  # with [CLS] and [SEP]
    positions: list[int]  # the word pieces' positions (`content_positions`)
    attentions: list[Tensor]  # per layer (h, T, T)
    norms: list[Tensor]  # per layer ‖α f(x)‖ (h, T, T)
    rollout: Tensor  # (word pieces,)
    flow: Tensor | None  # (word pieces,); None beyond FLOW_MAX_TOKENS tokens
    gradient: Tensor  # gradient × input (word pieces,)
    integrated: Tensor  # integrated gradients (word pieces,)
    blank: Tensor  # blank-out importance, the reference (word pieces,)
    sinks: list[SinkShare]
    lengths: list[Tensor] | None = None  # per layer ‖f_h(x_j)‖ (h, T), the vectors the norms weigh; None if unknown


def sentence_maps(
    model: BertEncoder, trace: BertTrace, ids: Tensor, type_ids: Tensor, other: Tensor | None = None
) -> SentenceMaps:
    """Every map of one sentence (`trace` of `ids`, `type_ids`); `other` is a second sentence's embedding (d,) for the
    gradients' cosine readout, or None."""
    from attnviz.models.bert_gradients import sentence_gradients  # Captum imports matplotlib: only when needed

    positions = content_positions(trace.tokens)
    layers = [layer.weights for layer in trace.layers]
    rolled = rollout(layers).mean(dim=0)  # (T,): the mean of the rows, as the pooled embedding reads them
    flow = attention_flow(layers) if len(trace.tokens) <= FLOW_MAX_TOKENS else None
    lengths = transformed_lengths(model, trace)
    norms = norm_based_layers(model, trace, lengths)
    gradients = sentence_gradients(model, trace, ids, type_ids, other)
    return SentenceMaps(
        tokens=list(trace.tokens),
        positions=positions,
        attentions=layers,
        norms=norms,
        rollout=rolled[positions].to(torch.float64),
        flow=None if flow is None else flow[positions],
        gradient=gradients.gradient_x_input,
        integrated=gradients.integrated,
        blank=blank_out_importance(model, trace, ids, type_ids),
        sinks=sink_shares(trace, norms),
        lengths=lengths,
    )


def column_mean(weights: Tensor, head: int | None) -> Tensor:
    """How much each key is attended to on average over the query rows, by one head (0-based) or the heads' mean
    (None): (h, T, T) -> (T,) float64."""
    chosen = weights.mean(dim=0) if head is None else weights[head]  # (T, T)
    return chosen.mean(dim=0).to(torch.float64)


def layer_maps(maps: SentenceMaps, layer: int, head: int | None) -> dict[str, Tensor]:
    """Every map over the word pieces, by method (METHODS; "flow" left out when it is not offered), with raw and
    norm-based attention read at `layer` and `head` (0-based; head None for the heads' mean)."""
    positions = maps.positions
    result = {
        "raw": column_mean(maps.attentions[layer], head)[positions],
        "rollout": maps.rollout,
        "flow": maps.flow,
        "norm": column_mean(maps.norms[layer], head)[positions],
        "gradient": maps.gradient,
        "integrated": maps.integrated,
        "blank": maps.blank,
    }
    return {method: values for method, values in result.items() if values is not None}


def agreement(maps: dict[str, Tensor]) -> dict[str, float]:
    """Spearman's ρ of every map (but blank-out) against blank-out, on the signed values (NaN for a constant map)."""
    return {method: spearman(values, maps["blank"]) for method, values in maps.items() if method != "blank"}


def is_punctuation(token: str) -> bool:
    """A word piece made only of punctuation ("." "," "##!" ...)."""
    text = token.removeprefix("##")
    return bool(text) and all(unicodedata.category(character).startswith("P") for character in text)


def top_token(values: Tensor, tokens: list[str]) -> str:
    """The token a map ranks first (its largest value)."""
    return tokens[int(torch.argmax(values))]


def punctuation_first(maps: dict[str, Tensor], words: list[str]) -> dict[str, str]:
    """The maps (but blank-out) whose top-ranked word piece is punctuation, with that token; `words` are the word
    pieces the maps rank."""
    tops = {method: top_token(values, words) for method, values in maps.items() if method != "blank"}
    return {method: token for method, token in tops.items() if is_punctuation(token)}


def sink_column(maps: SentenceMaps, layer: int, head: int | None) -> tuple[str, float] | None:
    """When [CLS] or [SEP] takes the most weight of the raw map over every column (an attention sink): that token and
    its share of the weight; else None."""
    columns = column_mean(maps.attentions[layer], head)  # (T,), sums to 1
    top = int(torch.argmax(columns))
    if top in maps.positions:
        return None
    return maps.tokens[top], float(columns[top] / columns.sum())
