"""The pretrained model's gradient maps against Hugging Face's own BERT (a test-only dependency) reading the same
installed weights: gradient × input by autograd through its `inputs_embeds`, integrated gradients by a fine Riemann
sum of such gradients along the straight line from the [MASK] baseline, and the readouts (the embedding along its own
direction; the cosine with a second sentence) from its mean-pooled output. Also: the encoder's batched pass from word
vectors is the traced pass, sentence by sentence, and the batched blank-out is one forward pass per word piece."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference reads the same installed files: never the network

from transformers import BertModel  # test-only dependency

from attnviz.core.attribution import blank_out
from attnviz.models import bert_attribution
from attnviz.models.bert_gradients import sentence_gradients
from tests import test_bert_attribution as shared

model, reference = shared.model, shared.reference  # the fixtures: MiniLM, and Hugging Face's BERT on its weights
SENTENCE = "The cat sat on the mat because it was tired."
LONG = (
    "A woman is slicing an onion while her friend watches the pot boil over on the stove in the small kitchen of "
    "their old flat."
)  # more word pieces than one blank-out batch


def reference_embedding(reference: BertModel, words: torch.Tensor, type_ids: torch.Tensor) -> torch.Tensor:
    """Mean-pooled last hidden state of word-piece embeddings (B, T, d), as sentence-transformers pools. (B, d)"""
    out = reference(inputs_embeds=words, token_type_ids=type_ids.expand(words.shape[0], -1))
    return out.last_hidden_state.mean(dim=1)


def reference_gradient(reference, readout, words, type_ids) -> torch.Tensor:
    """d readout / d words at `words` (1, T, d), by autograd through the reference model."""
    point = words.detach().clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(readout(reference_embedding(reference, point, type_ids)).sum(), point)
    return gradient


@pytest.mark.parametrize("pair", [None, "A man is playing a guitar on the stage."])
def test_gradient_maps_against_autograd_and_a_riemann_sum_on_the_reference(model, reference, pair):
    encoded = model.encode(SENTENCE)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    positions = bert_attribution.content_positions(trace.tokens)
    other = bert_attribution.pooled(model.run(pair)) if pair else None
    maps = sentence_gradients(model, trace, encoded.ids, encoded.type_ids, other)

    embeddings = reference.get_input_embeddings().weight.detach()
    words = embeddings[encoded.ids].unsqueeze(0)  # (1, T, d)
    with torch.no_grad():
        own = reference_embedding(reference, words, encoded.type_ids)[0]
    target = (other if other is not None else own).detach()
    target = target / target.norm()

    def readout(embedding: torch.Tensor) -> torch.Tensor:
        if other is not None:
            return torch.nn.functional.cosine_similarity(embedding, target.unsqueeze(0), dim=-1)
        return embedding @ target

    with torch.no_grad():
        assert maps.readout == pytest.approx(float(readout(own.unsqueeze(0))[0]), abs=1e-4)
    times_input = (reference_gradient(reference, readout, words, encoded.type_ids) * words).sum(dim=-1)[0]
    torch.testing.assert_close(maps.gradient_x_input.float(), times_input[positions], atol=2e-4, rtol=1e-3)

    baseline = words.clone()
    baseline[0, positions] = embeddings[model.tokenizer.token_to_id("[MASK]")]
    steps = 64  # midpoint rule along the line from the baseline to the sentence
    total = torch.zeros_like(words)
    for k in range(steps):
        point = baseline + (k + 0.5) / steps * (words - baseline)
        total += reference_gradient(reference, readout, point, encoded.type_ids)
    integrated = ((words - baseline) * total / steps).sum(dim=-1)[0]
    torch.testing.assert_close(maps.integrated.float(), integrated[positions], atol=5e-3, rtol=2e-2)
    with torch.no_grad():
        change = readout(own.unsqueeze(0))[0] - readout(reference_embedding(reference, baseline, encoded.type_ids))[0]
    assert float(maps.integrated.sum()) == pytest.approx(float(change), abs=max(1e-2, 2 * maps.completeness_gap))


def test_the_batched_pass_from_word_vectors_is_the_traced_pass(model):
    sentences = [model.encode(text) for text in (SENTENCE, "Attention maps are not explanations, are they?")]
    length = min(len(e.ids) for e in sentences)
    ids = torch.stack([e.ids[:length] for e in sentences])  # (2, T): two sentences cut to one length
    batched = model.pooled_from_words(model.word_vectors_of(ids), sentences[0].type_ids[:length])
    for row, encoded in enumerate(sentences):
        trace = model.forward(encoded.ids[:length], encoded.type_ids[:length])
        torch.testing.assert_close(batched[row], bert_attribution.pooled(trace), atol=1e-5, rtol=1e-5)


def test_the_batched_blank_out_is_one_forward_pass_per_word_piece(model):
    encoded = model.encode(LONG)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    positions = bert_attribution.content_positions(trace.tokens)
    assert len(positions) > bert_attribution.BLANK_BATCH  # more than one batch
    mask_id = model.tokenizer.token_to_id("[MASK]")

    def embedding(tokens: list[int]) -> torch.Tensor:
        return bert_attribution.pooled(model.forward(torch.tensor(tokens), encoded.type_ids))

    def change(original: torch.Tensor, blanked: torch.Tensor) -> float:
        return 1.0 - float(torch.nn.functional.cosine_similarity(original, blanked, dim=0))

    single = blank_out(embedding, encoded.ids.tolist(), lambda _: mask_id, positions, change)
    batched = bert_attribution.blank_out_importance(model, trace, encoded.ids, encoded.type_ids)
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=1e-4)
