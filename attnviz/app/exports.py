"""What the pages export: the weights as CSV (and the pretrained model's as .npz) and a Python snippet that recomputes
a figure. Pure: no Streamlit."""

from __future__ import annotations

import csv
import io

import numpy as np
from torch import Tensor

from attnviz.app.model_state import ModelState
from attnviz.app.state import AttentionState, Matrix
from attnviz.core.fields import shortest32
from attnviz.core.trace import AttentionTrace
from attnviz.models.bert import BertTrace


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
            "from attnviz.models.bert import load_minilm",
            "",
            "model = load_minilm()  # all-MiniLM-L6-v2's input embeddings (384 numbers a token)",
        ],
        "model.word_vectors({!r})",
    ),
    "trained": (
        [
            "from attnviz.models.learned.inputs import trained_embeddings",
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
    projections = repr(state.projections)
    if state.projections == "trained":  # the trained model's first layer, for inputs of 64 numbers
        lines[2:2] = ["from attnviz.models.learned.inputs import trained_projections", ""]
        projections = "trained_projections(64, 64, 64)"
    args = [
        f"num_heads={state.heads}",
        f"projections={projections}",
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


# ----- the pretrained model's page -----


def view_csv(block: Tensor, tokens: list[str], rows: list[int], cols: list[int]) -> str:
    """A head view as CSV: one line per (query, key) pair shown, with the tokens' positions ([CLS] = 0)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["query_position", "query", "key_position", "key", "weight"])
    for i, line in zip(rows, block.tolist(), strict=True):
        for j, weight in zip(cols, line, strict=True):
            writer.writerow([i, csv_safe(tokens[i]), j, csv_safe(tokens[j]), f"{weight:.8g}"])
    return out.getvalue()


def attentions_npz(trace: BertTrace) -> bytes:
    """Every layer's and head's weights with the tokens, as a NumPy .npz (numbers and text only: no pickle)."""
    out = io.BytesIO()
    np.savez_compressed(
        out,
        attentions=trace.attentions.numpy(),  # (layers, heads, T, T)
        tokens=np.array(trace.tokens, dtype=np.str_),
        token_type_ids=trace.type_ids.numpy(),
    )
    return out.getvalue()


def model_snippet(state: ModelState) -> str:
    """A short script that recomputes the page with attnviz (layer and head counted from 0 in code)."""
    pair = f", pair={state.pair!r}" if state.pair.strip() else ""
    head = state.heads[0]
    return (
        "from attnviz.models.bert import load_minilm\n\n"
        "model = load_minilm()  # all-MiniLM-L6-v2, from the installed package: no download\n"
        f"trace = model.run({state.sentence!r}{pair})\n"
        "print(trace.tokens)\n"
        "print(trace.attentions.shape)  # (layers, heads, tokens, tokens)\n"
        f"head = trace.head(layer={state.layer - 1}, head={head - 1})  # layer {state.layer}, head {head} on the page\n"
        f"print(head.weights[{state.token}])  # how token {state.token} (the one followed) weighs every key\n"
    )
