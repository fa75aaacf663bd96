"""The Markdown of `python -m bench.faithfulness`: the table the README quotes, then what explains its figures."""

from __future__ import annotations

import math
from typing import Any

NAMES = {
    "raw": "raw, last layer",
    "rollout": "rollout",
    "flow": "flow",
    "norm": "norm-based, last layer",
    "gradient": "gradient × input",
    "integrated": "integrated gradients",
    "rollout_cls": "rollout, read at [CLS]'s row (not the mean of the rows)",
    "rollout_plain": "rollout without the residual (A, not 0.5 A + 0.5 I)",
    "raw_heads": "raw, last layer: the mean of the 12 heads' own ρ (not the ρ of their mean)",
    "raw_layer_1": "raw, layer 1",
    "raw_layer_3": "raw, layer 3",
    "raw_every_position": "raw, last layer, every position of the repeat as the readout",
    "rollout_every_position": "rollout, every position of the repeat as the readout",
}


def signed(value: float) -> str:
    """+0.75, −0.45 (a true minus sign), or "n/a" for NaN."""
    return "n/a" if math.isnan(value) else f"{value:+.2f}".replace("-", "−")


def with_error(value: float, error: float) -> str:
    """+0.62 ± 0.04, or the value alone when there is no standard error (one input)."""
    return signed(value) if math.isnan(error) else f"{signed(value)} ± {error:.2f}"


def summary_table(result: dict[str, Any]) -> list[str]:
    """The table the README quotes: mean ρ per map, one row per model."""
    minilm, induction = result["minilm"], result["induction"]
    m, i = minilm["mean"], induction["mean"]
    stop = f'(ranks "." first in {minilm["stop_first"]["rollout"]} of {minilm["with_stop"]})'
    return [
        "| model | raw, last layer | rollout | flow | norm-based, last layer | gradient × input "
        "| integrated gradients |",
        "|---|--:|--:|--:|--:|--:|--:|",
        f"| MiniLM, mean-pooled embedding, {minilm['count']} sentences | {signed(m['raw'])} | "
        f"{signed(m['rollout'])} {stop} | {signed(m['flow'])} | {signed(m['norm'])} | {signed(m['gradient'])} | "
        f"{signed(m['integrated'])} |",
        f"| induction model, last position, {induction['repeats']} repeats | {signed(i['raw'])} | "
        f"{signed(i['rollout'])} | {signed(i['flow'])} | {signed(i['norm'])} | {signed(i['gradient'])} | "
        f"{signed(i['integrated'])} |",
    ]


def spread_tables(result: dict[str, Any]) -> list[str]:
    """Each mean with its standard error, MiniLM's means by sentence length, the other readings."""
    minilm, induction = result["minilm"], result["induction"]
    groups = {"all": minilm, **{name: group for name, group in minilm["by_length"].items() if group["count"]}}
    lines = ["", "## MiniLM: mean ρ ± standard error, by sentence length", ""]
    lines += ["| reading | " + " | ".join(f"{name} ({g['count']})" for name, g in groups.items()) + " |"]
    lines += ["|---|" + "--:|" * len(groups)]
    for method in minilm["mean"]:
        cells = [with_error(g["mean"][method], g["standard_error"][method]) for g in groups.values()]
        lines.append(f"| {NAMES[method]} | " + " | ".join(cells) + " |")
    lines += ["", "## The induction model: mean ρ ± standard error", "", "| reading | mean ρ |", "|---|--:|"]
    for method, value in induction["mean"].items():
        lines.append(f"| {NAMES[method]} | {with_error(value, induction['standard_error'][method])} |")
    by_length = ", ".join(f"{half}: {signed(rho)}" for half, rho in induction["rollout_by_length"].items())
    lines += ["", f"Rollout at the last position by the number of symbols repeated: {by_length}."]
    return lines


def sink_table(result: dict[str, Any]) -> list[str]:
    """The share of [CLS] and [SEP] per layer, by weight and by norm, for all sentences and by length."""
    minilm = result["minilm"]
    groups = {"all": minilm, **{name: group for name, group in minilm["by_length"].items() if group["count"]}}
    lines = ["", "## [CLS] and [SEP]: share of the attention weight / of the norm-based contribution ‖α f(x)‖", ""]
    lines += ["| layer | " + " | ".join(groups) + " |", "|--:|" + "--:|" * len(groups)]
    for layer in range(len(minilm["sinks"])):
        cells = [f"{g['sinks'][layer][0]:.0%} / {g['sinks'][layer][1]:.0%}" for g in groups.values()]
        lines.append(f"| {layer + 1} | " + " | ".join(cells) + " |")
    return lines


def sentence_table(result: dict[str, Any]) -> list[str]:
    """Each sentence's ρ and the piece rollout and blank-out rank first."""
    methods = ("raw", "rollout", "flow", "norm", "gradient", "integrated")
    lines = ["", "## Each sentence", ""]
    lines += ["| tokens | raw | rollout | flow | norm | g × i | IG | rollout's first | blank-out's first | sentence |"]
    lines += ["|--:|--:|--:|--:|--:|--:|--:|---|---|---|"]
    for row in result["minilm"]["rows"]:
        rhos = " | ".join(signed(row["rho"][method]) for method in methods)
        first = f"`{row['first']['rollout']}` | `{row['first']['blank']}`"
        lines.append(f"| {row['tokens']} | {rhos} | {first} | {row['sentence']} |")
    return lines


def ablation_table(result: dict[str, Any]) -> list[str]:
    """The induction model's accuracy with a layer's attention replaced."""
    ablation = result["ablation"]
    names = list(next(iter(ablation["held_out"].values())))
    lines = ["", "## The induction model with a layer's attention replaced (token accuracy on the repeat)", ""]
    lines += ["| repeats | " + " | ".join(names) + " |", "|---|" + "--:|" * len(names)]
    for count, accuracies in ablation["held_out"].items():
        lines.append(f"| the first {count} held out | " + " | ".join(f"{accuracies[n]:.1%}" for n in names) + " |")
    others = ablation["other_draws"]
    if others["range"]:
        cells = [f"{low:.1%}–{high:.1%}" for low, high in (others["range"][n] for n in names)]
        lines.append(
            f"| {others['draws']} other draws of {others['count']} (lowest–highest) | " + " | ".join(cells) + " |"
        )
    return lines


def timing_table(result: dict[str, Any]) -> list[str]:
    """The seconds, when measured."""
    if "timing" not in result:
        return []
    timing = result["timing"]
    load = " → ".join(f"{value:.1f}" for value in timing["load_average"])
    lines = ["", f"## Seconds ({timing['cores']} cores; load average {load}; median of the rounds)", ""]
    lines += ["| torch threads | all maps, 32 tokens | its rounds | blank-out, 64 tokens | its rounds |"]
    lines += ["|--:|--:|---|--:|---|"]
    for threads, timed in timing["threads"].items():
        maps, blank = timed["maps_32"], timed["blank_64"]
        lines.append(
            f"| {threads} | {maps['median_s']:.2f} | {', '.join(f'{t:.2f}' for t in maps['rounds_s'])} | "
            f"{blank['median_s']:.2f} | {', '.join(f'{t:.2f}' for t in blank['rounds_s'])} |"
        )
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The whole report."""
    head = [f"# Is attention an explanation? ({result['date']})", ""]
    head += ["Spearman's ρ of each map against blank-out importance, mean over the inputs.", ""]
    sections = [summary_table, spread_tables, sink_table, ablation_table, timing_table, sentence_table]
    return "\n".join(head + [line for section in sections for line in section(result)]) + "\n"
