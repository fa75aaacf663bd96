"""Is attention an explanation? Each map's agreement with blank-out, over fixed inputs, and what the maps cost.

    python -m bench.faithfulness                      # the table (20 sentences, 300 repeats) and the timings
    python -m bench.faithfulness --sentences 2 --repeats 5 --no-timing    # a quick look (<date>-faithfulness-quick.*)

MiniLM (all-MiniLM-L6-v2): the 20 sentences of SENTENCES, each word piece ranked for the mean-pooled sentence
embedding by the page's maps (attnviz.models.bert_explanation: raw and norm-based attention of the last layer, mean
of heads; rollout; flow; gradient × input; integrated gradients) and compared with blank-out by Spearman's ρ. The
induction model (the shipped checkpoint): held-out repeats, each token ranked for log p of the right last symbol
(attnviz.models.learned.induction_attribution and .gradients). Then the share of [CLS] and [SEP] per layer, by
weight and by norm-based contribution, the induction model's accuracy with a layer's attention made uniform or
permuted, and the seconds of all maps of a 32-token sentence and of blank-out of a 64-token one.

Writes bench/results/<date>-faithfulness.md (the tables) and <date>-faithfulness.json (every number); a run on fewer
inputs, or without the timings, writes <date>-faithfulness-quick.*, so that it never replaces the record the README
quotes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnviz.models.learned.induction import RepeatExample
from bench.faithfulness_report import markdown

RESULTS = Path(__file__).resolve().parent / "results"

# The project's own sentences: different lengths (7 to 27 tokens with [CLS] and [SEP], all within attention flow's
# 32), commas, a semicolon, questions, an exclamation, numbers, a possessive. Fixed: the README quotes their means.
SENTENCES = (
    "The cat sat on the mat because it was tired.",
    "Attention weights sum to one over the keys, so a large weight on one word leaves less for the others.",
    "Students moved the temperature slider and watched the heatmap grow sharper.",
    "Why does the model look at the full stop?",
    "A teacher projects the page, and thirty phones follow every click.",
    "The translator turned 22 November 2026 into an ISO date, one character at a time.",
    "Rain fell all night, so the river rose.",
    "She said the results were surprising, but nobody believed her.",
    "Kernel regression predicts a weight from a waist by averaging nearby examples.",
    "The induction head copies the token that followed the current one last time.",
    "Open the link on a cold server, and the first chart should still appear quickly!",
    "My grandmother's recipe needs three eggs, a cup of flour and a pinch of salt.",
    "Is the bank closed on Sunday?",
    "The keys and values come from the encoder; the queries come from the decoder.",
    "After the concert, the musicians packed their instruments and drove home through the snow.",
    "Dogs bark at night.",
    "The committee postponed its decision until the report, which was already three weeks late, had been read.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    "He forgot his umbrella, which was unfortunate, because it started to pour.",
    "While the small model learned to repeat a random sequence, its two layers grew a previous-token head and an "
    "induction head.",
)
MINILM_METHODS = ("raw", "rollout", "flow", "norm", "gradient", "integrated")
INDUCTION_METHODS = ("raw", "rollout", "flow", "norm", "gradient", "integrated")
SHORT = 16  # tokens: the sentences are summed up again in two groups, up to this length and longer
LAST_LAYER = 5  # 0-based: MiniLM's sixth layer
# Not on the page: other readings of the same maps, to tell why a figure differs from another study's.
VARIANTS = ("rollout_cls", "rollout_plain", "raw_heads", "raw_layer_1", "raw_layer_3")
EVERY_POSITION = ("raw_every_position", "rollout_every_position")
TIMED_TEXT = (
    "In the evening the students compared the maps of every layer, and they found that the full stop, the first "
    "token and the last one took most of the weight, while the words that mattered took little of it at all. "
)


def mean(values: list[float]) -> float:
    """The mean of the numbers that are not NaN (a constant map has no ρ); NaN when none is."""
    kept = [value for value in values if not math.isnan(value)]
    return statistics.fmean(kept) if kept else float("nan")


def variant_rhos(maps: Any, blank: torch.Tensor) -> dict[str, float]:
    """ρ of VARIANTS: rollout read at [CLS]'s row (as a [CLS]-pooled model reads it) and without the residual mix
    (residual 0), the mean of the 12 heads' own ρ in the last layer (not the ρ of their mean), and raw attention of
    layers 1 and 3."""
    from attnviz.core.attribution import rollout, spearman
    from attnviz.models.bert_explanation import column_mean

    positions = maps.positions
    return {
        "rollout_cls": spearman(rollout(maps.attentions)[0, positions], blank),
        "rollout_plain": spearman(rollout(maps.attentions, residual=0.0).mean(dim=0)[positions], blank),
        "raw_heads": mean(
            [spearman(column_mean(maps.attentions[LAST_LAYER], head)[positions], blank) for head in range(12)]
        ),
        "raw_layer_1": spearman(column_mean(maps.attentions[0], None)[positions], blank),
        "raw_layer_3": spearman(column_mean(maps.attentions[2], None)[positions], blank),
    }


def sentence_row(model: Any, sentence: str) -> dict[str, Any]:
    """One sentence's ρ per method and variant, the token each map ranks first, and the [CLS]/[SEP] shares."""
    from attnviz.models.bert_explanation import agreement, layer_maps, sentence_maps, top_token

    encoded = model.encode(sentence)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    maps = sentence_maps(model, trace, encoded.ids, encoded.type_ids)
    shown = layer_maps(maps, LAST_LAYER, None)
    words = [maps.tokens[i] for i in maps.positions]
    return {
        "sentence": sentence,
        "tokens": len(maps.tokens),
        "rho": agreement(shown) | variant_rhos(maps, maps.blank),
        "first": {method: top_token(values, words) for method, values in shown.items()},
        "stop": "." in words,
        "sinks": [[share.weight, share.norm] for share in maps.sinks],
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over some sentences' rows: how many, each method's mean ρ and its standard error, and the mean share of [CLS]
    and [SEP] per layer (by weight, by norm)."""
    if not rows:
        return {"count": 0}
    methods = (*MINILM_METHODS, *VARIANTS)
    return {
        "count": len(rows),
        "mean": {method: mean([row["rho"][method] for row in rows]) for method in methods},
        "standard_error": {method: standard_error([row["rho"][method] for row in rows]) for method in methods},
        "sinks": [
            [statistics.fmean(row["sinks"][layer][kind] for row in rows) for kind in (0, 1)]
            for layer in range(len(rows[0]["sinks"]))
        ],
    }


def minilm_table(sentences: tuple[str, ...] | list[str], model: Any = None) -> dict[str, Any]:
    """Every sentence's row and their `summary`, how many sentences each map ranks "." first in (of how many hold
    one), and the summary of the sentences up to SHORT tokens and of the longer ones."""
    from attnviz.models.bert import load_minilm

    model = model or load_minilm()
    rows = [sentence_row(model, sentence) for sentence in sentences]
    return {
        "rows": rows,
        **summary(rows),
        "stop_first": {
            method: sum(row["first"][method] == "." for row in rows) for method in (*MINILM_METHODS, "blank")
        },
        "with_stop": sum(row["stop"] for row in rows),
        "by_length": {
            f"up to {SHORT} tokens": summary([row for row in rows if row["tokens"] <= SHORT]),
            f"over {SHORT} tokens": summary([row for row in rows if row["tokens"] > SHORT]),
        },
    }


def standard_error(values: list[float]) -> float:
    """The standard error of the mean of the numbers that are not NaN."""
    kept = [value for value in values if not math.isnan(value)]
    return statistics.stdev(kept) / math.sqrt(len(kept)) if len(kept) > 1 else float("nan")


@dataclass(frozen=True)
class Prefix(RepeatExample):
    """The repeat up to the symbol at `end`, which is the one predicted (induction_maps reads `tokens` and `half`)."""

    end: int = 0

    @property
    def tokens(self) -> list[str]:
        """<s>, the symbols, and the repeat up to `end`."""
        return super().tokens[: self.end + 1]


def every_position(model: Any, example: Any) -> dict[str, list[float]]:
    """Raw attention's and rollout's ρ with every position of the repeat (after its first symbol) as the readout in
    turn, not only the last: each prefix of `example` predicting its next symbol."""
    from attnviz.core.attribution import spearman
    from attnviz.models.learned.induction_attribution import induction_maps

    rhos: dict[str, list[float]] = {"raw": [], "rollout": []}
    for end in range(len(example.half) + 2, 2 * len(example.half) + 1):
        maps = induction_maps(model, Prefix(example.half, end), flow=False)
        rhos["raw"].append(spearman(maps.raw, maps.blank_out))
        rhos["rollout"].append(spearman(maps.rollout, maps.blank_out))
    return rhos


def induction_table(repeats: int) -> dict[str, Any]:
    """Each method's mean ρ against blank-out over `repeats` held-out repeats (the last symbol's log p), its standard
    error, the mean by the repeat's length, and raw attention and rollout read at every position of the repeat."""
    from attnviz.core.attribution import spearman
    from attnviz.models.learned.explanation import induction_explanation, layer_maps
    from attnviz.models.learned.gradients import gradient_maps
    from attnviz.models.learned.induction import held_out_examples
    from attnviz.models.learned.induction_attribution import induction_maps
    from attnviz.models.learned.train import checkpoint_path, load_run

    model = load_run(checkpoint_path("induction")).model
    rhos: dict[str, list[float]] = {method: [] for method in (*INDUCTION_METHODS, *EVERY_POSITION)}
    lengths = []
    for example in held_out_examples(repeats):
        maps, gradients = induction_maps(model, example), gradient_maps(model, example)
        page = induction_explanation(model, " ".join(example.half * 2), flow=False)  # the page's maps: norm-based
        found = {
            "raw": maps.raw,
            "norm": layer_maps(page, len(page.attentions) - 1, None)["norm"],
            "rollout": maps.rollout,
            "flow": maps.flow,
            "gradient": gradients.gradient_x_input,
            "integrated": gradients.integrated,
        }
        for method, values in found.items():
            rhos[method].append(spearman(values, maps.blank_out))
        for method, values in every_position(model, example).items():
            rhos[f"{method}_every_position"] += values
        lengths.append(len(example.half))
    by_length = {
        str(half): mean([rho for rho, length in zip(rhos["rollout"], lengths, strict=True) if length == half])
        for half in sorted(set(lengths))
    }
    return {
        "repeats": repeats,
        "mean": {method: mean(values) for method, values in rhos.items()},
        "standard_error": {method: standard_error(values) for method, values in rhos.items()},
        "rollout_by_length": by_length,
    }


def accuracies(model: Any, examples: list[Any]) -> dict[str, float]:
    """The induction model's token accuracy on `examples`: as trained, and with layer 1's or layer 2's attention
    uniform or permuted along each row (seed 0)."""
    from attnviz.models.learned.ablation import HOW, attention_replaced
    from attnviz.models.learned.induction import token_accuracy

    result = {"trained": token_accuracy(model, examples)}
    for index, layer in enumerate(model.layers, start=1):
        for how in HOW:
            with attention_replaced(layer, how):
                result[f"layer {index} {how}"] = token_accuracy(model, examples)
    return result


def ablation(counts: tuple[int, ...], draws: int = 5) -> dict[str, Any]:
    """`accuracies` on the first `count` held-out repeats for each of `counts`, and the lowest and highest over
    `draws` other random sets of as many repeats as the first count (seeds 0, 1, ...: how much the set decides)."""
    import random

    from attnviz.models.learned.induction import held_out_examples, sample_examples
    from attnviz.models.learned.train import checkpoint_path, load_run

    model = load_run(checkpoint_path("induction")).model
    held_out = {str(count): accuracies(model, held_out_examples(count)) for count in counts}
    others = [accuracies(model, sample_examples(counts[0], random.Random(seed))) for seed in range(draws)]
    spread = (
        {name: [min(o[name] for o in others), max(o[name] for o in others)] for name in others[0]} if others else {}
    )
    return {"held_out": held_out, "other_draws": {"count": counts[0], "draws": draws, "range": spread}}


def clipped(model: Any, length: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """TIMED_TEXT, repeated as needed, cut to `length` tokens ([CLS] first, [SEP] kept last): ids, type ids, tokens."""
    encoded = model.encode(TIMED_TEXT * (1 + length // 40))
    keep = [*range(length - 1), len(encoded.tokens) - 1]
    return encoded.ids[keep], encoded.type_ids[keep], [encoded.tokens[i] for i in keep]


def seconds(work: Any, rounds: int) -> dict[str, Any]:
    """`work()` once to warm up, then `rounds` times: the median and every round, in seconds."""
    work()
    taken = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        taken.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(taken), 3), "rounds_s": [round(t, 3) for t in taken]}


def timing(rounds: int, threads: tuple[int, ...]) -> dict[str, Any]:
    """All maps of a 32-token sentence (`sentence_maps`, the forward pass included) and blank-out of a 64-token one
    (`blank_out_importance`, batched), with each number of torch threads in `threads`."""
    from attnviz.models.bert import load_minilm
    from attnviz.models.bert_attribution import blank_out_importance
    from attnviz.models.bert_explanation import sentence_maps

    model = load_minilm()
    short, long = clipped(model, 32), clipped(model, 64)
    before, result, load = torch.get_num_threads(), {}, [os.getloadavg()[0]]
    try:
        for count in threads:
            torch.set_num_threads(count)

            def all_maps(ids=short[0], type_ids=short[1], tokens=short[2]) -> None:
                sentence_maps(model, model.forward(ids, type_ids, tokens), ids, type_ids)

            trace = model.forward(*long)
            result[str(count)] = {
                "maps_32": seconds(all_maps, rounds),
                "blank_64": seconds(lambda trace=trace: blank_out_importance(model, trace, *long[:2]), rounds),
            }
    finally:
        torch.set_num_threads(before)
    load.append(os.getloadavg()[0])  # another process on the machine shows here (ours alone is about 1)
    return {"cores": os.cpu_count(), "default_threads": before, "load_average": load, "threads": result}


def faithfulness_table(sentences: tuple[str, ...] | list[str], repeats: int) -> dict[str, Any]:
    """The table's figures: MiniLM over `sentences`, the induction model over `repeats` held-out repeats."""
    return {"minilm": minilm_table(sentences), "induction": induction_table(repeats)}


def main(argv: list[str] | None = None) -> None:
    """Measure, print the Markdown and write it with the JSON to bench/results/."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=len(SENTENCES), help="the first N sentences (default 20)")
    parser.add_argument("--repeats", type=int, default=300, help="held-out repeats for the induction model")
    parser.add_argument("--ablation", default="300,2000", help="held-out repeats for the ablations, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per figure (default 5)")
    parser.add_argument("--threads", default="2,1", help="torch threads to time with, comma-separated")
    parser.add_argument("--draws", type=int, default=5, help="other random sets for the ablations' spread")
    parser.add_argument("--no-timing", action="store_true", help="skip the timings")
    parser.add_argument("--name", help="results/<date>-NAME.* (default faithfulness, or faithfulness-quick)")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"date": dt.date.today().isoformat()}
    result |= faithfulness_table(SENTENCES[: args.sentences], args.repeats)
    result["ablation"] = ablation(tuple(int(n) for n in args.ablation.split(",") if n), args.draws)
    if not args.no_timing:
        result["timing"] = timing(args.rounds, tuple(int(n) for n in args.threads.split(",")))
    report = markdown(result)
    print(report)
    RESULTS.mkdir(exist_ok=True)
    full = args.sentences >= len(SENTENCES) and args.repeats >= 300 and not args.no_timing
    stem = RESULTS / f"{result['date']}-{args.name or ('faithfulness' if full else 'faithfulness-quick')}"
    stem.with_suffix(".md").write_text(report, encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
