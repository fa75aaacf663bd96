"""The pages the benchmark drives, and the control a simulated student moves on each."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from testkit.server import StreamlitServer
from testkit.wire import Control

# Thousands of distinct values: a simulated student rarely repeats a state, so no cache keyed by the page state
# can turn this into a cache benchmark; every rerun recomputes the attention and rebuilds the figures.
TEMPERATURES = tuple(round(0.1 + 0.001 * i, 3) for i in range(3900))  # 0.1 .. 3.999
BANDWIDTHS = tuple(round(0.2 + 0.001 * i, 3) for i in range(2800))  # 0.2 .. 2.999

# Words the model's tokenizer keeps whole (one WordPiece token each)
MODEL_WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "it", "was", "tired", "because")
MODEL_TOKENS = 128


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip


def student_dates() -> tuple[str, ...]:
    """Dates as students type them, none of them the page's recorded probe: 28 days x 12 months x 40 years, shuffled
    (seeded). Each is put through the shipped run's kept weights at step 0 and at the step shown, which no cache
    holds for a date not seen before."""
    dates = [f"{day} {month} {year}" for day in range(1, 29) for month in MONTHS for year in range(1990, 2030)]
    random.Random(0).shuffle(dates)
    return tuple(dates)


def model_sentences(count: int = 2000, tokens: int = MODEL_TOKENS) -> tuple[str, ...]:
    """`count` different sentences of `tokens` tokens with [CLS] and [SEP], words drawn at random (seeded): every
    change on the sentence scenario is a new sentence, which no cache holds."""
    sentences = []
    for index in range(count):
        rng = random.Random(index)
        sentences.append(" ".join(rng.choice(MODEL_WORDS) for _ in range(tokens - 2)))
    return tuple(sentences)


@dataclass(frozen=True)
class Scenario:
    """A page (script + URL path + query) and the control the simulated users change."""

    name: str
    title: str
    script: str
    page: str
    control: Control
    query: str = ""
    server_options: Mapping[str, object] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "minimal",
            "Minimal page (floor: torch + one 8x8 heatmap)",
            "bench/minimal_page.py",
            "",
            Control("temperature", "double", TEMPERATURES),
        ),
        Scenario(
            "elements",
            "Floor with the self-attention page's elements (Streamlit alone, nothing computed)",
            "bench/elements_page.py",
            "",
            Control("temperature", "double", TEMPERATURES),
        ),
        Scenario(
            "self",
            "Self-attention, default (8 tokens)",
            "app.py",
            "Self_attention",
            Control("w:self:temperature", "double", TEMPERATURES),
        ),
        Scenario(
            "cross",
            "Cross-attention, default",
            "app.py",
            "Cross_attention",
            Control("w:cross:temperature", "double", TEMPERATURES),
        ),
        Scenario(
            "kernel",
            "Kernel attention, default",
            "app.py",
            "Kernel_attention",
            Control("w:kernel:bandwidth", "double", BANDWIDTHS),
        ),
        Scenario(
            "model",
            "Pretrained model, 128 tokens (72 heads, head view, neuron view)",
            "app.py",
            "Pretrained_model",
            # Students move the view controls, not the sentence: each rerun redraws the 72 thumbnails, the
            # 128 x 128 head view and the neuron view from the cached trace.
            Control("w:model:renormalise", "bool", (True, False)),
            query="s=" + "+".join(["cat"] * (MODEL_TOKENS - 2)),
        ),
        Scenario(
            "model_sentence",
            "Pretrained model, a new 128-token sentence each time (encoder and every view)",
            "app.py",
            "Pretrained_model",
            # The sentence box is outside the controls' fragment: the whole page reruns, the encoder runs for a
            # sentence no cache holds, and every view is made for it.
            Control("w:model:sentence", "string", model_sentences()),
            query="s=" + "+".join(["cat"] * (MODEL_TOKENS - 2)),
        ),
        Scenario(
            "modern",
            "Modern attention, GQA preset (16 tokens, 8 query heads over 2 key/value heads, RoPE)",
            "app.py",
            "Modern_attention",
            # A new seed of W_q, W_k, W_v each time: the layer is computed again, and its share map, the 8 heads'
            # weights, the memory table and the worked row are made again
            Control("w:modern:seed", "int", tuple(range(1, 10000))),
            query="pr=gqa_8_2",
        ),
        Scenario(
            "learned_replay",
            "Watch attention learn, a new date of the student's own through the shipped run (step 42 of 300)",
            "app.py",
            "Learned_attention",
            # The date box is outside any fragment: the whole page reruns, the trained model translates the date, and
            # the models of step 0 and step 42 are rebuilt from the checkpoint's float16 weights and run on it
            Control("w:learned:date", "string", student_dates()),
            query="d=3+March+2027&st=42",
        ),
    )
}


def start_server(scenario: Scenario, **options: object) -> StreamlitServer:
    """A started server for the scenario's script, with the project's own config plus `options`."""
    server = StreamlitServer(
        scenario.script,
        server_options={**scenario.server_options, **options},
        log_name=f"bench-{scenario.name}",
    )
    return server.start()
