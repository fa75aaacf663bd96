"""What the pages export: the weights as CSV and a Python snippet that recomputes a figure. Pure: no Streamlit."""

from __future__ import annotations

import csv
import io

from attnviz.fields import shortest32
from attnviz.state import AttentionState, Matrix
from attnviz.trace import AttentionTrace


def weights_csv(trace: AttentionTrace, query_labels: list[str], key_labels: list[str]) -> str:
    """One row per query-key pair: raw score, logit, whether it was masked, and the weight."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query", "key", "score", "logit", "allowed", "weight"])
    scores, logits, mask, weights = (t.tolist() for t in (trace.scores, trace.logits, trace.mask, trace.weights))
    for i, q in enumerate(query_labels):
        for j, k in enumerate(key_labels):
            writer.writerow(
                [
                    csv_safe(q),
                    csv_safe(k),
                    f"{scores[i][j]:.8g}",
                    f"{logits[i][j]:.8g}",
                    int(mask[i][j]),
                    f"{weights[i][j]:.8g}",
                ]
            )
    return buffer.getvalue()


def csv_safe(text: str) -> str:
    """Keep spreadsheet programs from reading a token such as '=1+1' as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# A model's embeddings in the snippet: the lines that load it, and the call that embeds one sentence
MODEL_EMBEDDINGS = {
    "minilm": (
        [
            "from attnviz.bert import load_minilm",
            "",
            "model = load_minilm()  # all-MiniLM-L6-v2's input embeddings (384 numbers a token)",
        ],
        "model.word_vectors({!r})",
    ),
    "trained": (
        [
            "from attnviz.learned.inputs import trained_embeddings",
            "",
            "# <s> and the symbols, as the trained sequence model's first layer reads them (64 numbers a token)",
        ],
        "trained_embeddings(attnviz.tokenize({!r}))",
    ),
}


def python_snippet(state: AttentionState) -> str:
    """A short script that recomputes the page's figure with attnviz."""
    lines = ["import torch", "import attnviz", ""]
    if state.mode == "sentence" and state.embed in MODEL_EMBEDDINGS:
        setup, call = MODEL_EMBEDDINGS[state.embed]
        lines += [*setup, f"tokens, x = {call.format(state.sentence)}"]
        if state.page == "cross":
            lines.append(f"source_tokens, source = {call.format(state.source)}")
    elif state.mode == "sentence":
        lines += [
            f"tokens = attnviz.tokenize({state.sentence!r})",
            f"x = attnviz.embed_tokens(tokens, dim={state.dim}, seed={state.embed_seed})",
        ]
        if state.page == "cross":
            lines += [
                f"source_tokens = attnviz.tokenize({state.source!r})",
                f"source = attnviz.embed_tokens(source_tokens, dim={state.dim}, seed={state.embed_seed})",
            ]
    else:
        lines.append(f"x = torch.tensor({_matrix_literal(state.queries)})")
        if state.page == "cross":
            lines += [
                f"keys = torch.tensor({_matrix_literal(state.keys)})",
                f"values = torch.tensor({_matrix_literal(state.values)})",
            ]
    args = [
        f"num_heads={state.heads}",
        f"projections={state.projections!r}",
        f"proj_seed={state.proj_seed}",
        f"score={state.score!r}",
    ]
    args += [f"{k}={v!r}" for k, v in state.score_params().items()]
    if state.lens_mode != "none" and state.lens:
        args.append(f"valid_lens={state.lens[0] if state.lens_mode == 'all' else list(state.lens)}")
    if state.causal:
        args.append("causal=True")
    if state.temperature != 1.0:
        args.append(f"temperature={state.temperature!r}")
    if state.page == "self":
        call = "attnviz.self_attention(x, " + ", ".join(args) + ")"
    else:
        kv = "source, source" if state.mode == "sentence" else "keys, values"
        residual = ", residual=True" if state.residual else ""
        call = f"attnviz.multi_head_attend(x, {kv}, " + ", ".join(args) + residual + ")"
    lines += [f"trace = {call}", "print(trace.weights)  # (heads, queries, keys)", "print(trace.output)"]
    return "\n".join(lines) + "\n"


def _matrix_literal(matrix: Matrix) -> str:
    # The tensor is float32: its shortest decimals, not the float64 noise of a float32 (0.1696, not 0.16959999...)
    return "[" + ", ".join("[" + ", ".join(repr(shortest32(float(x))) for x in row) + "]" for row in matrix) + "]"
