"""An encoder-decoder with Bahdanau's additive attention (d2l's `Seq2SeqAttentionDecoder`), for the dates task.

The encoder reads the written date character by character (a bidirectional GRU: each character's state knows its
neighbours on both sides, as in Bahdanau et al., 2015). At every output step the decoder's state is the query, the
encoder's states are the keys and the values, and attnviz's own `AdditiveAttention` scores them. Each step's
attention is therefore an `AttentionTrace`, and the ten steps together are one trace with a query per output
character.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnviz.core.attention import AdditiveAttention
from attnviz.core.trace import AttentionTrace
from attnviz.models.learned.dates import BOS, OUTPUT_INDEX, OUTPUT_LENGTH, OUTPUT_VOCAB, encode_inputs

# Decoding leaves each step's attention on the model's attention module, and a model may be shared by the threads of
# a server: a translation and the reading of its attention happen under this lock.
MODEL_LOCK = threading.RLock()


@dataclass(frozen=True)
class DateModelConfig:
    """Sizes of the translator (small enough to train on a CPU in under a minute)."""

    input_vocab: int
    output_vocab: int = len(OUTPUT_VOCAB)
    embedding: int = 32
    encoder_hiddens: int = 64  # per direction: keys and values have 2 x this
    decoder_hiddens: int = 64
    attention_hiddens: int = 64  # the additive score's W_q, W_k width


class DateEncoder(nn.Module):
    """Characters (B, T) -> encoder states (B, T, 2h), the keys and values of the decoder's attention."""

    def __init__(self, config: DateModelConfig):
        super().__init__()
        self.embedding = nn.Embedding(config.input_vocab, config.embedding, padding_idx=0)
        self.rnn = nn.GRU(config.embedding, config.encoder_hiddens, batch_first=True, bidirectional=True)

    def forward(self, tokens: Tensor, valid_lens: Tensor) -> Tensor:
        """(B, T) ids and (B,) lengths -> (B, T, 2h) states (padding positions are masked by the attention)."""
        embedded = self.embedding(tokens)  # (B, T, e)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, valid_lens, batch_first=True, enforce_sorted=False)
        states, _ = self.rnn(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=tokens.shape[1])
        return states  # (B, T, 2h)


class DateDecoder(nn.Module):
    """One output character per step: query = the decoder's state, attention over the encoder's states."""

    def __init__(self, config: DateModelConfig):
        super().__init__()
        keys = 2 * config.encoder_hiddens
        self.attention = AdditiveAttention(keys, config.decoder_hiddens, config.attention_hiddens, dropout=0.0)
        self.embedding = nn.Embedding(config.output_vocab, config.embedding)
        self.init_state = nn.Linear(keys, config.decoder_hiddens)
        self.cell = nn.GRUCell(config.embedding + keys, config.decoder_hiddens)
        self.dense = nn.Linear(config.decoder_hiddens + keys, config.output_vocab)

    def initial_state(self, enc_states: Tensor, valid_lens: Tensor) -> Tensor:
        """The decoder's first state: a projection of the mean of the encoder's states (B, d)."""
        positions = torch.arange(enc_states.shape[1])[None, :, None]  # (1, T, 1)
        valid = (positions < valid_lens[:, None, None]).to(enc_states.dtype)  # (B, T, 1)
        mean = (enc_states * valid).sum(1) / valid_lens[:, None].to(enc_states.dtype)  # (B, 2h)
        return torch.tanh(self.init_state(mean))

    def step(self, previous: Tensor, state: Tensor, enc_states: Tensor, valid_lens: Tensor) -> tuple[Tensor, Tensor]:
        """One step: (B,) previous output ids, (B, d) state -> (B, vocab) logits and the new state."""
        query = state.unsqueeze(1)  # (B, 1, d)
        context = self.attention(query, enc_states, enc_states, valid_lens)  # (B, 1, 2h)
        cell_input = torch.cat([self.embedding(previous), context.squeeze(1)], dim=-1)  # (B, e + 2h)
        state = self.cell(cell_input, state)  # (B, d)
        logits = self.dense(torch.cat([state, context.squeeze(1)], dim=-1))  # (B, vocab)
        return logits, state


class DateTranslator(nn.Module):
    """Written date -> ISO date, with the attention of every output step kept."""

    def __init__(self, config: DateModelConfig):
        super().__init__()
        self.config = config
        self.encoder = DateEncoder(config)
        self.decoder = DateDecoder(config)

    def forward(self, tokens: Tensor, valid_lens: Tensor, targets: Tensor) -> Tensor:
        """Teacher forcing: (B, T) inputs, (B,) lengths, (B, 10) target ids -> (B, 10, vocab) logits."""
        enc_states = self.encoder(tokens, valid_lens)
        state = self.decoder.initial_state(enc_states, valid_lens)
        previous = torch.full((tokens.shape[0],), OUTPUT_INDEX[BOS], dtype=torch.long)
        logits = []
        for position in range(OUTPUT_LENGTH):
            step_logits, state = self.decoder.step(previous, state, enc_states, valid_lens)
            logits.append(step_logits)
            previous = targets[:, position]
        return torch.stack(logits, dim=1)

    @torch.no_grad()
    def translate(self, tokens: Tensor, valid_lens: Tensor) -> tuple[Tensor, list[AttentionTrace]]:
        """Greedy decoding: (B, 10) output ids, and each step's attention trace (queries (B, 1, d))."""
        enc_states = self.encoder(tokens, valid_lens)
        state = self.decoder.initial_state(enc_states, valid_lens)
        previous = torch.full((tokens.shape[0],), OUTPUT_INDEX[BOS], dtype=torch.long)
        outputs, traces = [], []
        for _ in range(OUTPUT_LENGTH):
            step_logits, state = self.decoder.step(previous, state, enc_states, valid_lens)
            traces.append(self.decoder.attention.trace)
            previous = step_logits.argmax(-1)
            outputs.append(previous)
        return torch.stack(outputs, dim=1), traces


def stack_steps(traces: list[AttentionTrace]) -> AttentionTrace:
    """The decoding steps of one batch as one trace: query i is output character i (shapes (B, 10, K))."""
    first = traces[0]

    def cat(name: str) -> Tensor:
        return torch.cat([getattr(trace, name) for trace in traces], dim=1)

    return AttentionTrace(
        queries=cat("queries"),
        keys=first.keys,
        values=first.values,
        scores=cat("scores"),
        logits=cat("logits"),
        mask=cat("mask"),
        weights=cat("weights"),
        output=cat("output"),
        score=first.score,
        score_params=dict(first.score_params),
        scale=first.scale,
        valid_lens=first.valid_lens,
    )


@dataclass(frozen=True)
class Translation:
    """What the model wrote for one input, and where it looked: weights (10 output characters, input characters)."""

    text: str
    output: str
    trace: AttentionTrace  # unbatched: queries (10, d), keys (T, 2h), weights (10, T)


def translate_texts(model: DateTranslator, texts: list[str]) -> list[Translation]:
    """Translate each text; each result keeps its own unbatched trace, cut to its own characters."""
    rows, lengths = encode_inputs(texts)
    with MODEL_LOCK:
        ids, traces = model.translate(torch.tensor(rows, dtype=torch.long), torch.tensor(lengths, dtype=torch.long))
    stacked = stack_steps(traces)
    results = []
    for index, (text, length) in enumerate(zip(texts, lengths, strict=True)):
        output = "".join(OUTPUT_VOCAB[int(i)] for i in ids[index])

        def row(tensor: Tensor, index: int = index, length: int = length) -> Tensor:
            return tensor[index, :, :length]  # (10, T): this text's own characters

        trace = AttentionTrace(
            queries=stacked.queries[index],
            keys=stacked.keys[index, :length],
            values=stacked.values[index, :length],
            scores=row(stacked.scores),
            logits=row(stacked.logits),
            mask=row(stacked.mask),
            weights=row(stacked.weights),
            output=stacked.output[index],
            score=stacked.score,
            score_params=dict(stacked.score_params),
            scale=stacked.scale,
        )
        results.append(Translation(text, output, trace))
    return results
