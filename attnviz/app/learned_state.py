"""The learned-attention page's state and its fields (parsed, validated, capped: never evaluated)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.app.state import Decoded
from attnviz.core.fields import Field, decode_fields, encode_fields
from attnviz.figures.style import POSITION_MARK
from attnviz.models.learned.dates import MAX_PROBE_LENGTH
from attnviz.models.learned.induction import MAX_LENGTH
from attnviz.models.learned.train import DEFAULT_PROBES, DEFAULT_STEPS, MAX_STEPS, TASKS, TrainSettings

MAX_SEED = 9999
MAX_SEQUENCE_TEXT = 4 * MAX_LENGTH  # "A B C ..." with spaces and commas
HEADS = 4  # the induction model's 2 layers x 2 heads, numbered 1-4 on the page
ABLATION_EXAMPLES = 500  # held-out sequences for the heads' scores and the accuracy without each head
WRONG_MARK = "✗"  # before the label of a wrong output character (the chart's rows, the row picker)
# The dates task's examples: the two dates every training records, and two known mistakes of the shipped model, in a
# format it never saw (zero-padded; it learned 2024/4/19) and in a year it never saw (it learned 1950-2049)
DATE_PRESETS = {
    "recorded": DEFAULT_PROBES["dates"][0],
    "chinese": DEFAULT_PROBES["dates"][1],
    "format": "2024/04/19",
    "years": "2055/12/1",
}


@dataclass(frozen=True)
class LearnedState:
    """Everything the learned-attention page shows."""

    task: str = "dates"
    date: str = DEFAULT_PROBES["dates"][0]  # the date the student types, translated
    sequence: str = DEFAULT_PROBES["induction"][0]
    seed: int = 0
    steps: int = 0  # 0: the task's default
    step: int = max(MAX_STEPS.values())  # the snapshot shown: the last one at or before this step
    row: int = 0  # the output character (dates) or position (sequence) explained step by step
    head: int = 3  # induction: the head followed through training, 1-4 (layer 2, head 1 by default)
    off: tuple[int, ...] = ()  # induction: the heads switched off in "Try", each 1-4 (none: every head on)

    @property
    def probe(self) -> str:
        """The input of the current task."""
        return self.date if self.task == "dates" else self.sequence

    def training(self) -> TrainSettings:
        """The training that these settings name: the task, the seed and the steps (what the student types changes
        no weight, so it is no part of it; every training records the task's own probes). The default seed and steps
        name the shipped checkpoint itself."""
        return TrainSettings(self.task, self.seed, self.steps).resolved()


LEARNED_FIELDS: tuple[Field, ...] = (
    Field("task", "tk", "choice", choices=TASKS, label="learned.task"),
    Field("date", "d", "text", max_len=MAX_PROBE_LENGTH, label="learned.date"),
    Field("sequence", "q", "text", max_len=MAX_SEQUENCE_TEXT, label="learned.sequence"),
    Field("seed", "sd", "int", low=0, high=MAX_SEED, label="learned.seed", help="learned.seed_help"),
    Field("steps", "n", "int", low=0, high=max(MAX_STEPS.values()), label="learned.steps"),
    Field("step", "st", "int", low=0, high=max(MAX_STEPS.values()), label="learned.step"),
    Field("row", "r", "int", low=0, high=MAX_LENGTH, label="learned.row"),
    Field("head", "h", "int", low=1, high=HEADS, label="learned.head"),
    Field("off", "off", "ints", low=1, high=HEADS, max_len=HEADS, label="learned.off"),
)


def default_steps(task: str) -> int:
    """The number of steps the shipped checkpoint of `task` was trained for."""
    return DEFAULT_STEPS[task]


def decode_learned(params: Mapping[str, Any]) -> Decoded:
    """Read the page's state from link parameters (bad ones fall back, each with a warning)."""
    values, warnings = decode_fields(params, LEARNED_FIELDS)
    return Decoded(LearnedState(**values), warnings)


def encode_learned(state: LearnedState) -> dict[str, str]:
    """Compact link parameters: only what differs from the default."""
    return encode_fields(state, LearnedState(), LEARNED_FIELDS, set())


def output_labels(output: str, wrong: Collection[int] = ()) -> list[str]:
    """The ISO date's characters as row labels, each with its position (its digits repeat); those at the 0-based
    positions `wrong` marked as wrong."""
    return [
        f"{WRONG_MARK if index in wrong else ''}{character}{POSITION_MARK}{index + 1}"
        for index, character in enumerate(output)
    ]


def visible(text: str) -> list[str]:
    """A date's characters as labels, a space shown as ␣ (an empty label reads as a missing one)."""
    return ["␣" if character == " " else character for character in text]


def recorded_step(steps: list[int], asked: int) -> int:
    """The snapshot a step asked for shows: the last recorded step at or before it (the first, if none is)."""
    return max((step for step in steps if step <= asked), default=steps[0])
