"""The page "Is attention an explanation?" as a class's question sees it: how well each map the page shows agrees
with blank-out (Spearman's ρ), computed by the code the page runs on the state its link parameters decode to. Pure:
no Streamlit.

    map_agreement(params, model)   each shown map's ρ against blank-out, in the page's order (None: no maps shown)
    best_maps(rhos)                the map(s) that agree best (ties within answers.RHO_TIE; NaN never)
    asks_best_map, best_map_spec   the question "Which map will agree best with blank-out here?" (kind best_map)
    map_labels, best_map_prompt, rho_note   what the students read: the maps' names, the question, the reveal's ρ

The page keeps its maps in the app's shared results (Streamlit's side); here the ρ of every layer and head of a
sentence are kept once per process for the last few sentences (a few floats each, not the maps themselves).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from attnviz.app.classroom.answers import RHO_TIE
from attnviz.app.classroom.subjects import pretrained, shipped_run
from attnviz.app.explanation_state import MEAN_OF_HEADS, decode_explanation, shown_layer_head
from attnviz.core.errors import AttnvizError
from attnviz.core.fields import shortest32
from attnviz.i18n import DEFAULT_LANGUAGE, t
from attnviz.models.bert import BertEncoder
from attnviz.models.bert_attribution import pooled
from attnviz.models.bert_explanation import agreement, layer_maps, sentence_maps
from attnviz.models.learned.explanation import dates_explanation, induction_explanation
from attnviz.models.learned.explanation import layer_maps as learned_layer_maps

KEEP_SENTENCES = 16  # sentences whose ρ are kept (6 layers x 13 choices of head x 6 maps each)
Agreements = dict[tuple[int, int], dict[str, float]]  # (layer, head) counted as on the page -> method -> ρ


def map_agreement(params: Mapping[str, str], model: BertEncoder | None = None) -> dict[str, float] | None:
    """Spearman's ρ of each map the page shows for its state (blank-out, the reference, left out; flow only when the
    page offers it) against blank-out, in the page's order (bert_explanation.METHODS); NaN for a constant map. None
    when the page shows no maps (its sentence or second sentence refused). `model`: the pretrained model the app
    holds (else it is loaded here once)."""
    state = decode_explanation(params).state
    if state.model == "minilm":
        table = _minilm_agreements(pretrained(model), state.sentence, state.pair)
    else:
        text = state.sequence if state.model == "induction" else state.date
        table = _trained_agreements(state.model, text, state.character)
    return None if table is None else dict(table[shown_layer_head(state)])


@functools.lru_cache(maxsize=KEEP_SENTENCES)
def _trained_agreements(task: str, text: str, character: int) -> Agreements | None:
    """Every layer's and head's ρ for a trained model's input (the induction model's repeat; the dates model's date
    and output character, one layer and head), as the page makes the maps; None for an input the page refuses."""
    model = shipped_run(task).model
    try:
        if task == "induction":
            maps = induction_explanation(model, text)
        else:
            maps = dates_explanation(model, text, character - 1)
    except ValueError:
        return None
    heads = maps.attentions[0].shape[0]
    return {
        (layer + 1, head): agreement(learned_layer_maps(maps, layer, None if head == MEAN_OF_HEADS else head - 1))
        for layer in range(len(maps.attentions))
        for head in range(MEAN_OF_HEADS, heads + 1)
    }


@functools.lru_cache(maxsize=KEEP_SENTENCES)
def _minilm_agreements(model: BertEncoder, sentence: str, pair: str) -> Agreements | None:
    """Every layer's and head's ρ of one sentence (and second sentence), the maps made as the page makes them."""
    try:  # the checks the page makes before it computes anything (it shows their message instead of maps)
        encoded = model.encode(sentence)
        other = pooled(model.run(pair)) if pair.strip() else None
    except ValueError:
        return None
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    maps = sentence_maps(model, trace, encoded.ids, encoded.type_ids, other)
    heads = maps.attentions[0].shape[0]
    return {
        (layer + 1, head): agreement(layer_maps(maps, layer, None if head == MEAN_OF_HEADS else head - 1))
        for layer in range(len(maps.attentions))
        for head in range(MEAN_OF_HEADS, heads + 1)
    }


def best_maps(rhos: Mapping[str, float]) -> list[str]:
    """The maps with the largest ρ, and those within RHO_TIE of it (ρ is shown with two decimals: 0.62 and 0.618 are
    the same answer to a class); none when every ρ is NaN (a constant map agrees with nothing)."""
    finite = {method: rho for method, rho in rhos.items() if not math.isnan(rho)}
    if not finite:
        return []
    best = max(finite.values())
    return [method for method, rho in finite.items() if rho >= best - RHO_TIE]


def asks_best_map(params: Mapping[str, str], model: BertEncoder | None = None) -> bool:
    """Whether the page's state allows "Which map will agree best with blank-out?": it shows maps, and one of them
    has a ρ (a sentence of one word piece ranks nothing)."""
    rhos = map_agreement(params, model)
    return bool(rhos and best_maps(rhos))


def best_map_spec(params: Mapping[str, str], model: BertEncoder | None = None) -> dict[str, Any]:
    """The question's options (the maps the page shows but blank-out, in its order; their English names, the
    students' own language from `methods`), the right ones, and every map's ρ for the reveal."""
    state = decode_explanation(params).state
    rhos = map_agreement(params, model) or {}
    right = best_maps(rhos)
    if not right:
        raise AttnvizError("question_unavailable", kind="best_map", about=0)
    methods = list(rhos)
    return {
        "about": {"index": 0, "label": ""},
        "options": [t(f"faithful.method_{method}", DEFAULT_LANGUAGE) for method in methods],
        "truth": [methods.index(method) for method in right],
        "tolerance": {"rho": RHO_TIE},
        "context": {
            "methods": methods,
            "rho": [None if math.isnan(rho) else shortest32(rho) for rho in rhos.values()],  # JSON has no NaN
            "layer": state.layer,
            "head": state.head,
        },
    }


def map_labels(spec: Mapping[str, Any], lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """The options as the page names its maps, in `lang`."""
    return [t(f"faithful.method_{method}", lang) for method in spec.get("context", {}).get("methods", [])]


def best_map_prompt(spec: Mapping[str, Any], lang: str = DEFAULT_LANGUAGE) -> str:
    """The question in `lang`, with the layer and head it is about (the raw and norm-based maps depend on them)."""
    context = spec.get("context", {})
    head = context.get("head", MEAN_OF_HEADS)
    which = t("faithful.mean_of_heads", lang) if head == MEAN_OF_HEADS else t("faithful.head_n", lang, head=head)
    return t("class.prompt_best_map", lang, layer=context.get("layer", ""), which=which)


def rho_note(spec: Mapping[str, Any], lang: str = DEFAULT_LANGUAGE) -> str:
    """For the reveal: each map's ρ against blank-out, as the page writes it ("+0.62", "—" for NaN), the right maps
    ticked."""
    right = set(spec.get("truth", []))
    rhos = spec.get("context", {}).get("rho", [])
    parts = [
        f"{'✓ ' if index in right else ''}{label} {'—' if rho is None else f'{rho:+.2f}'}"
        for index, (label, rho) in enumerate(zip(map_labels(spec, lang), rhos, strict=False))
    ]
    return t("class.best_map_rhos", lang, rhos=t("faithful.list_separator", lang).join(parts))
