"""A 1,024-token model trace shown the way a notebook shows it: `from_transformers`, `to_html`, then Chromium drawing
the output (the model view max-pooled to 64 tokens a side, and the head view of one head over all 1,024 tokens),
timed.

python -m bench.notebook          # writes bench/results/<date>-notebook.{md,json}
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import tempfile
import time
from pathlib import Path

import plotly.graph_objects as go
import torch
from playwright.sync_api import sync_playwright
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from attnviz.models.hf import from_transformers
from attnviz.notebook import Chart, html_document, to_html
from testkit.browser import CHROMIUM_ARGS, CHROMIUM_PATH

RESULTS = Path(__file__).resolve().parent / "results"
TOKENS = 1024
ROUNDS = 5
# Every chart drawn: its heatmap layer is in the page (Plotly draws a heatmap as an image in that layer)
DRAWN_JS = "n => document.querySelectorAll('.js-plotly-plot .main-svg .heatmaplayer image').length >= n"


def _model_and_text() -> tuple[BertModel, PreTrainedTokenizerFast, str]:
    """MiniLM's shape (6 layers x 12 heads) with random weights and room for 1,024 tokens, and a text that long."""
    words = [f"w{i}" for i in range(200)]
    vocab = {word: index for index, word in enumerate(["[PAD]", "[UNK]", *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=96, num_hidden_layers=6, num_attention_heads=12,
                        intermediate_size=192, max_position_embeddings=TOKENS)  # fmt: skip
    model = BertModel(config)
    model.set_attn_implementation("eager")
    text = " ".join(words[i % len(words)] for i in range(TOKENS))
    return model, tokenizer, text


def measure() -> dict[str, object]:
    """Seconds for each stage, medians of ROUNDS; the HTML's size."""
    model, tokenizer, text = _model_and_text()
    started = time.perf_counter()
    trace = from_transformers(model, tokenizer, text)
    read_s = time.perf_counter() - started
    assert trace.parts["encoder"].weights.shape == (6, 12, TOKENS, TOKENS)
    html_times, draw_times, floor_times = [], [], []
    floor = html_document([Chart.of(go.Figure(go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]])), "floor")])
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS)

        def draw(text: str) -> float:
            path = Path(folder) / "trace.html"
            path.write_text(text, encoding="utf-8")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_function(DRAWN_JS, arg=text.count("Plotly.newPlot("), timeout=60000, polling=20)
            seconds = time.perf_counter() - started
            page.close()
            return seconds

        for _ in range(ROUNDS):  # paired: the same file's floor in each round
            started = time.perf_counter()
            page_text = to_html(trace)
            html_times.append(time.perf_counter() - started)
            draw_times.append(draw(page_text))
            floor_times.append(draw(floor))
        browser.close()
    html_s, draw_s = statistics.median(html_times), statistics.median(draw_times)
    floor_s = statistics.median(floor_times)
    return {
        "tokens": TOKENS,
        "layers_heads": "6 x 12",
        "from_transformers_s": round(read_s, 3),
        "to_html_s_median": round(html_s, 3),
        "chromium_draw_s_median": round(draw_s, 3),
        "to_html_plus_draw_s": round(html_s + draw_s, 3),
        "plotly_floor_s_median": round(floor_s, 3),
        "html_mb": round(len(page_text.encode()) / 2**20, 2),
        "charts": page_text.count("Plotly.newPlot("),
        "rounds": ROUNDS,
        "draw_s_all": [round(s, 3) for s in draw_times],
    }


def main() -> None:
    """Measure and write the results."""
    result = measure()
    date = dt.date.today().isoformat()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{date}-notebook.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        f"# A {TOKENS}-token model trace shown as a notebook shows it ({date})",
        "",
        "| stage | seconds |",
        "|---|---|",
        f"| from_transformers (6 layers x 12 heads, eager) | {result['from_transformers_s']} |",
        f"| to_html (median of {ROUNDS}) | {result['to_html_s_median']} |",
        f"| Chromium: open the output, both charts drawn (median of {ROUNDS}) | {result['chromium_draw_s_median']} |",
        f"| to_html + drawn (goal: under 2 s) | {result['to_html_plus_draw_s']} |",
        f"| floor: Chromium opens a file with one 2 x 2 chart, Plotly inlined (median of {ROUNDS}) | "
        f"{result['plotly_floor_s_median']} |",
        "",
        f"The output is {result['html_mb']} MB, Plotly's JavaScript (4.6 MB) included, with {result['charts']} charts:",
        f"the model view (6 x 12 heads pooled to 64 x 64) and the head view of layer 1, head 1 ({TOKENS} x {TOKENS}).",
    ]
    (RESULTS / f"{date}-notebook.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
