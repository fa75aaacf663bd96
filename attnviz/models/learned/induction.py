"""A random sequence followed by its repeat, and a two-layer attention-only transformer that learns to copy it.

Once the repeat has begun, the next token is the one that followed the current token the first time. Attention
can find it in two steps (Olsson et al., 2022): a head in layer 1 writes into each position which token came just
before it (a previous-token head), and a head in layer 2 looks for the position whose previous token is the current
token and copies what is there (an induction head). The sequence's length varies, so looking back a fixed number of
positions does not work; the model has to learn the two heads.
"""

from __future__ import annotations

import functools
import random
import threading
from dataclasses import dataclass, replace

import torch
from torch import Tensor, nn

from attnviz.core.multihead import MultiHeadAttention
from attnviz.core.trace import AttentionTrace

# A forward pass leaves its attention on the model's modules, and a model may be shared by the threads of a server:
# a pass and the reading of its attention happen under this lock.
MODEL_LOCK = threading.RLock()
SYMBOLS = tuple("ABCDEFGHIJKLMNOPQRST")
BOS = "<s>"
VOCAB: tuple[str, ...] = (BOS, *SYMBOLS)
INDEX = {token: index for index, token in enumerate(VOCAB)}
MIN_HALF, MAX_HALF = 4, 10
EVAL_CHUNK = 250  # sequences per forward pass when measuring accuracy
MAX_LENGTH = 1 + 2 * MAX_HALF


@dataclass(frozen=True)
class RepeatExample:
    """<s> followed by `half` distinct symbols and the same symbols again."""

    half: tuple[str, ...]

    @property
    def tokens(self) -> list[str]:
        """The whole sequence, <s> first."""
        return [BOS, *self.half, *self.half]

    @property
    def scored_positions(self) -> list[int]:
        """Positions whose next token accuracy counts: inside the repeat, after its first token (which no rule can
        know: the repeat could start anywhere)."""
        length = len(self.half)
        return list(range(length + 1, 2 * length))


def sample_examples(count: int, rng: random.Random) -> list[RepeatExample]:
    """`count` sequences, each of a length drawn from MIN_HALF..MAX_HALF, with distinct symbols."""
    return [RepeatExample(tuple(rng.sample(SYMBOLS, rng.randint(MIN_HALF, MAX_HALF)))) for _ in range(count)]


def held_out_examples(count: int = 2000, seed: int = 54321) -> list[RepeatExample]:
    """A fixed evaluation set (fresh random sequences: with 20 symbols there are far too many to memorise)."""
    return list(_held_out_examples(count, seed))


@functools.lru_cache(maxsize=8)
def _held_out_examples(count: int, seed: int) -> tuple[RepeatExample, ...]:
    """Made once per (count, seed): a training evaluates the same set at every snapshot."""
    return tuple(sample_examples(count, random.Random(seed)))


def parse_sequence(text: str) -> tuple[list[str], list[str]]:
    """A typed sequence ("A B C A B" or "ABCAB") -> its symbols, and the characters that are not symbols."""
    cleaned = text.replace(",", " ").upper().split()
    symbols = [character for word in cleaned for character in word]
    unknown = list(dict.fromkeys(symbol for symbol in symbols if symbol not in INDEX))
    return symbols, unknown


def token_ids(example: RepeatExample) -> Tensor:
    """(1, T) ids of the whole sequence, <s> and the last token included: what the pages show."""
    return torch.tensor([[INDEX[token] for token in example.tokens]], dtype=torch.long)


def encode(examples: list[RepeatExample]) -> tuple[Tensor, Tensor, Tensor]:
    """(B, T) input ids, (B, T) next-token targets and (B, T) which targets count, padded to the longest."""
    width = max(len(example.tokens) for example in examples) - 1
    inputs = torch.zeros(len(examples), width, dtype=torch.long)
    targets = torch.zeros(len(examples), width, dtype=torch.long)
    scored = torch.zeros(len(examples), width, dtype=torch.bool)
    for row, example in enumerate(examples):
        ids = [INDEX[token] for token in example.tokens]
        inputs[row, : len(ids) - 1] = torch.tensor(ids[:-1])
        targets[row, : len(ids) - 1] = torch.tensor(ids[1:])
        scored[row, example.scored_positions] = True
    return inputs, targets, scored


@dataclass(frozen=True)
class InductionConfig:
    """Sizes of the transformer."""

    vocab: int = len(VOCAB)
    max_length: int = MAX_LENGTH
    hiddens: int = 64
    layers: int = 2
    heads: int = 2


class AttentionLayer(nn.Module):
    """x + MultiHeadAttention(LayerNorm(x)) with a causal mask; no MLP, so every mechanism is in the attention."""

    def __init__(self, config: InductionConfig):
        super().__init__()
        self.norm = nn.LayerNorm(config.hiddens)
        self.attention = MultiHeadAttention(
            config.hiddens,
            config.heads,
            query_size=config.hiddens,
            key_size=config.hiddens,
            value_size=config.hiddens,
        )

    def forward(self, x: Tensor, head_mask: Tensor | None = None) -> Tensor:
        """(B, T, d) -> (B, T, d). `head_mask` (h,) of 0/1 switches heads off (for ablation)."""
        batch, length, _ = x.shape
        causal_lens = torch.arange(1, length + 1).expand(batch, length)  # (B, T): query i sees keys 0..i
        normed = self.norm(x)
        return x + self.attention(normed, normed, normed, causal_lens, head_mask)

    @property
    def attention_weights(self) -> Tensor:
        """(B, h, T, T) of the last forward pass."""
        return self.attention.attention_weights


class InductionTransformer(nn.Module):
    """Token and position embeddings, attention-only layers, and a linear read-out to the next token."""

    def __init__(self, config: InductionConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab, config.hiddens)
        self.position_embedding = nn.Embedding(config.max_length, config.hiddens)
        self.layers = nn.ModuleList(AttentionLayer(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.hiddens)
        self.unembed = nn.Linear(config.hiddens, config.vocab)

    def forward(self, tokens: Tensor, head_mask: Tensor | None = None) -> Tensor:
        """(B, T) ids -> (B, T, vocab) logits for the next token. `head_mask` (layers, heads) of 0/1."""
        positions = torch.arange(tokens.shape[1])
        x = self.token_embedding(tokens) + self.position_embedding(positions)[None]  # (B, T, d)
        for index, layer in enumerate(self.layers):
            x = layer(x, None if head_mask is None else head_mask[index])
        return self.unembed(self.norm(x))

    def attention_weights(self) -> Tensor:
        """(layers, B, h, T, T) of the last forward pass."""
        return torch.stack([layer.attention_weights for layer in self.layers])


def token_accuracy(
    model: InductionTransformer, examples: list[RepeatExample], head_mask: Tensor | None = None
) -> float:
    """The share of the repeat's tokens (after its first) that the model predicts exactly. In chunks of
    EVAL_CHUNK sequences: a pass over 2,000 at once held ~300 MB more of a server's or a training's memory."""
    right = total = 0
    for start in range(0, len(examples), EVAL_CHUNK):
        inputs, targets, scored = encode(examples[start : start + EVAL_CHUNK])
        with torch.no_grad():
            predictions = model(inputs, head_mask).argmax(-1)
        right += int((predictions == targets)[scored].sum())
        total += int(scored.sum())
    return right / total


LABEL_THRESHOLD = 0.4  # a head is named after a pattern when its mean weight on that pattern's key reaches this


@dataclass(frozen=True)
class HeadPattern:
    """How much of one head's attention follows each known pattern, and the label the larger score gives."""

    layer: int
    head: int
    previous_token: float  # mean weight a query puts on the key just before it
    induction: float  # in the repeat: mean weight on the key after the current token's first occurrence

    @property
    def label(self) -> str:
        """ "induction", "previous_token" or "other"."""
        best = max(("induction", self.induction), ("previous_token", self.previous_token), key=lambda x: x[1])
        return best[0] if best[1] >= LABEL_THRESHOLD else "other"


def previous_token_score(weights: Tensor) -> Tensor:
    """(..., T, T) weights -> (...) mean weight of queries 1..T-1 on the key just before them."""
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction_score(weights: Tensor, half: int) -> Tensor:
    """(..., T, T) weights of <s> + `half` tokens + their repeat -> (...) mean weight of the repeat's queries on the
    key that followed their token's first occurrence (query i -> key i - half + 1)."""
    queries = torch.arange(half + 1, 2 * half + 1)
    return weights[..., queries, queries - half + 1].mean(-1)


def head_patterns(model: InductionTransformer, examples: list[RepeatExample]) -> list[HeadPattern]:
    """Every head's scores, averaged over `examples` (whole sequences, one at a time: no padding in the means)."""
    totals = torch.zeros(2, model.config.layers, model.config.heads)
    with torch.no_grad(), MODEL_LOCK:
        for example in examples:
            model(token_ids(example))
            weights = model.attention_weights()[:, 0]  # (layers, heads, T, T)
            totals[0] += previous_token_score(weights)
            totals[1] += induction_score(weights, len(example.half))
    means = totals / len(examples)
    return [
        HeadPattern(layer, head, float(means[0, layer, head]), float(means[1, layer, head]))
        for layer in range(model.config.layers)
        for head in range(model.config.heads)
    ]


def without_head(config: InductionConfig, layer: int, head: int) -> Tensor:
    """A (layers, heads) head mask with every head on but one."""
    head_mask = torch.ones(config.layers, config.heads)
    head_mask[layer, head] = 0.0
    return head_mask


def without_heads(config: InductionConfig, heads: list[tuple[int, int]]) -> Tensor:
    """A (layers, heads) head mask with every (layer, head) of `heads` off (0-based)."""
    head_mask = torch.ones(config.layers, config.heads)
    for layer, head in heads:
        head_mask[layer, head] = 0.0
    return head_mask


def ablation_accuracy(model: InductionTransformer, examples: list[RepeatExample], layer: int, head: int) -> float:
    """Token accuracy on the repeat with one head's output set to zero."""
    return token_accuracy(model, examples, without_head(model.config, layer, head))


@dataclass(frozen=True)
class SequenceAttention:
    """What the model did on one sequence: every head's weights, its guess after each token, and each layer's
    traces (one per head: the queries, keys, values, scores and mask of that head)."""

    tokens: list[str]  # <s> and the symbols
    weights: Tensor  # (layers, heads, T, T)
    guesses: list[str]  # the predicted next token after each position
    traces: list[list[AttentionTrace]]  # [layer][head], unbatched: queries (T, s), weights (T, T)


def _head_traces(trace: AttentionTrace, heads: int) -> list[AttentionTrace]:
    """A (heads, T, T) module trace of one sequence -> one unbatched trace per head."""
    names = ("queries", "keys", "values", "scores", "logits", "mask", "weights", "output")
    lens = trace.valid_lens
    return [
        replace(
            trace,
            **{name: getattr(trace, name)[head] for name in names},
            valid_lens=None if lens is None else lens[head],
        )
        for head in range(heads)
    ]


def sequence_attention(
    model: InductionTransformer, symbols: list[str], head_mask: Tensor | None = None
) -> SequenceAttention:
    """Run the model on <s> + `symbols` (known symbols, at most MAX_LENGTH - 1 of them); `head_mask` (layers,
    heads) of 0/1 switches heads off (a head's weights are still computed, its output is not used)."""
    tokens = [BOS, *symbols]
    ids = torch.tensor([[INDEX[token] for token in tokens]], dtype=torch.long)  # (1, T)
    with torch.no_grad(), MODEL_LOCK:
        logits = model(ids, head_mask)  # (1, T, vocab)
        weights = model.attention_weights()[:, 0].clone()  # (layers, heads, T, T)
        traces = [_head_traces(layer.attention.attention.trace, model.config.heads) for layer in model.layers]
    guesses = [VOCAB[int(index)] for index in logits[0].argmax(-1)]
    return SequenceAttention(tokens, weights, guesses, traces)
