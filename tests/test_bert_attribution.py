"""The explanation maps on the pretrained model against Hugging Face's own BERT (a test-only dependency) reading the
same installed weights: norm-based attention from its value and output projections, the mean-pooled sentence
embedding of its pooling config, blank-out from single forward passes, and the [CLS]/[SEP] shares."""

from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference reads the same installed files: never the network

from transformers import BertModel  # test-only dependency

from attnviz.models import bert_attribution
from attnviz.models.bert import load_minilm, model_dir

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Attention maps are not always explanations, are they?",
    "She gave the book to her brother after reading it twice.",
]


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def reference() -> BertModel:
    return BertModel.from_pretrained(str(model_dir()), attn_implementation="eager", local_files_only=True).eval()


def reference_run(reference: BertModel, ids: torch.Tensor):
    with torch.no_grad():
        return reference(ids.unsqueeze(0), output_attentions=True, output_hidden_states=True)


def test_the_pooling_config_is_a_mean_over_every_token(model, reference):
    config = json.loads((model_dir() / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_mean_tokens"] and not config["pooling_mode_cls_token"]
    trace = model.run(SENTENCES[0])
    out = reference_run(reference, model.encode(SENTENCES[0]).ids)
    assert torch.allclose(bert_attribution.pooled(trace), out.last_hidden_state[0].mean(dim=0), atol=1e-4)


def test_norm_based_attention_from_the_models_own_projections(model, reference):
    encoded = model.encode(SENTENCES[1])
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    maps = bert_attribution.norm_based_layers(model, trace)
    out = reference_run(reference, encoded.ids)
    heads = reference.config.num_attention_heads
    size = reference.config.hidden_size // heads
    for layer in (0, 3, 5):
        attention = reference.encoder.layer[layer].attention
        torch.set_grad_enabled(False)
        x = out.hidden_states[layer][0]  # (T, d): what the layer reads
        alpha = out.attentions[layer][0]  # (h, T, T)
        for head, i, j in ((0, 0, 1), (5, 3, 0), (11, 2, 4)):
            rows = slice(head * size, (head + 1) * size)
            value = x[j] @ attention.self.value.weight[rows].T  # (d/h,), the value bias left out
            vector = alpha[head, i, j] * (value @ attention.output.dense.weight[:, rows].T)  # (d,)
            assert float(maps[layer][head, i, j]) == pytest.approx(float(vector.norm()), rel=1e-3, abs=1e-6)
    torch.set_grad_enabled(True)


def test_blank_out_is_one_minus_the_cosine_of_single_forward_passes(model, reference):
    encoded = model.encode(SENTENCES[0])
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    importance = bert_attribution.blank_out_importance(model, trace, encoded.ids, encoded.type_ids)
    positions = bert_attribution.content_positions(trace.tokens)
    assert len(importance) == len(trace.tokens) - 2 and positions == list(range(1, len(trace.tokens) - 1))
    original = reference_run(reference, encoded.ids).last_hidden_state[0].mean(dim=0)
    mask_id = model.tokenizer.token_to_id("[MASK]")
    for index in (0, 3, len(positions) - 1):
        blanked = encoded.ids.clone()
        blanked[positions[index]] = mask_id
        embedding = reference_run(reference, blanked).last_hidden_state[0].mean(dim=0)
        expected = 1.0 - float(torch.nn.functional.cosine_similarity(original, embedding, dim=0))
        assert float(importance[index]) == pytest.approx(expected, abs=1e-4)
    assert (importance >= -1e-6).all()


@pytest.mark.parametrize("sentence", SENTENCES)
def test_the_bright_special_columns_carry_little_of_the_norm_based_contribution(model, sentence):
    """The issue's measurement: in layers 2-5, [CLS] and [SEP] take most of the attention weight but a small part of
    ‖α f(x)‖ (Kobayashi et al.'s finding on BERT)."""
    trace = model.run(sentence)
    shares = bert_attribution.sink_shares(trace, bert_attribution.norm_based_layers(model, trace))
    assert [s.layer for s in shares] == list(range(6))
    for share in shares[1:5]:
        assert share.weight > 0.4 and share.norm < share.weight / 2, share


def test_the_maps_read_a_from_transformers_trace_as_they_read_the_apps(model, reference):
    """A notebook user's trace of any Hugging Face encoder: rollout and flow take its per-layer weights as they are."""
    from transformers import AutoTokenizer

    from attnviz.core.attribution import attention_flow, rollout
    from attnviz.models.hf import from_transformers

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir()), local_files_only=True)
    theirs = from_transformers(reference, tokenizer, SENTENCES[0]).parts["encoder"]
    ours = model.run(SENTENCES[0])
    assert theirs.key_tokens == ours.tokens
    assert torch.allclose(rollout(list(theirs.weights)), rollout([layer.weights for layer in ours.layers]), atol=1e-4)
    flows = attention_flow(list(theirs.weights))  # mean-pooled readout
    assert flows.shape == (len(ours.tokens),) and (flows > 0).all() and (flows <= 1 + 1e-9).all()
