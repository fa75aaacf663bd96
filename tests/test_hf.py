"""from_transformers on tiny random-weight models built here (nothing downloaded): BERT, GPT-2 and BART, against
each model's own output_attentions; SDPA's missing weights are named with the fix."""

from __future__ import annotations

import html

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    BartConfig,
    BartModel,
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    T5Config,
    T5Model,
)

from attnviz.core.errors import AttnvizError
from attnviz.figures.attention import figure_tables
from attnviz.models.hf import from_transformers
from attnviz.notebook import figures_for, to_html
from tests.messages import message

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "</s>", "the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer made here, with BERT's special tokens around a pair."""
    vocab = {word: index for index, word in enumerate(WORDS)}
    model = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    from tokenizers.processors import TemplateProcessing

    model.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=model,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],  # BERT's segment ids, as its own
    )


def _eager(model):
    torch.manual_seed(0)
    model.set_attn_implementation("eager")
    return model.eval()


def _stack(attentions) -> torch.Tensor:
    return torch.stack([layer[0] for layer in attentions])


def test_an_encoder_gives_its_layers_as_output_attentions_does(tokenizer):
    torch.manual_seed(0)
    model = _eager(BertModel(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=3,
                                        num_attention_heads=4, intermediate_size=32)))  # fmt: skip
    trace = from_transformers(model, tokenizer, "the cat sat", "a dog ran")
    assert list(trace.parts) == ["encoder"] and trace.model_type == "bert"
    encoder = trace.parts["encoder"]
    assert encoder.query_tokens == ["[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "ran", "[SEP]"]
    encoded = tokenizer("the cat sat", "a dog ran", return_tensors="pt")
    assert encoded["token_type_ids"][0].tolist() == [0] * 5 + [1] * 4  # a real pair: segment B marked
    with torch.no_grad():
        expected = _stack(model(**encoded, output_attentions=True).attentions)
    assert encoder.weights.shape == (3, 4, 9, 9)
    assert torch.allclose(encoder.weights, expected, atol=1e-5)
    assert encoder.mask.all()  # an encoder lets every pair through


def test_a_decoder_only_model_is_causal_and_matches(tokenizer):
    torch.manual_seed(0)
    model = _eager(GPT2LMHeadModel(GPT2Config(vocab_size=len(WORDS), n_embd=16, n_layer=2, n_head=2, n_positions=32,
                                              bos_token_id=2, eos_token_id=3)))  # fmt: skip
    trace = from_transformers(model, tokenizer, "the cat sat on a mat")
    decoder = trace.parts["decoder"]
    ids = tokenizer("the cat sat on a mat", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = _stack(model(input_ids=ids, output_attentions=True).attentions)
    assert torch.allclose(decoder.weights, expected, atol=1e-5)
    n = ids.shape[1]
    assert torch.equal(decoder.mask, torch.ones(n, n, dtype=torch.bool).tril())  # later tokens: exactly 0


@pytest.mark.parametrize("kind", ["bart", "t5"])
def test_an_encoder_decoder_gives_encoder_decoder_and_cross_attention(tokenizer, kind):
    torch.manual_seed(0)
    if kind == "bart":
        config = BartConfig(vocab_size=len(WORDS), d_model=16, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                            decoder_ffn_dim=32, max_position_embeddings=32, pad_token_id=0, bos_token_id=2,
                            eos_token_id=3, decoder_start_token_id=2)  # fmt: skip
        model = _eager(BartModel(config))
    else:
        config = T5Config(vocab_size=len(WORDS), d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                          pad_token_id=0, eos_token_id=3, decoder_start_token_id=0)  # fmt: skip
        model = _eager(T5Model(config))
    trace = from_transformers(model, tokenizer, "the cat sat on a mat", "a cat ran")
    assert list(trace.parts) == ["encoder", "decoder", "cross"]
    source = tokenizer("the cat sat on a mat", return_tensors="pt")
    target = tokenizer("a cat ran", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=source["input_ids"], decoder_input_ids=target, output_attentions=True)
    for name, attentions in (("encoder", out.encoder_attentions), ("decoder", out.decoder_attentions),
                             ("cross", out.cross_attentions)):  # fmt: skip
        assert torch.allclose(trace.parts[name].weights, _stack(attentions), atol=1e-5), name
    cross = trace.parts["cross"]
    assert cross.query_tokens == ["[CLS]", "a", "cat", "ran", "[SEP]"] and len(cross.key_tokens) == 8
    assert cross.weights.shape == (2, 2, 5, 8)
    figures = figures_for(trace, layer=2, head=2)
    assert len(figures) == 6  # each stack's model view, then its head view
    parts = [message(f"display.part_{part}") for part in ("encoder", "decoder", "cross")]
    assert [f.layout.title.text.split(" · ")[0] for f in figures[1::2]] == parts
    (_, columns, rows), *_ = figure_tables(figures[5])  # the cross head view: layer 2, head 2, every token
    assert len(rows) == 5 and len(columns) == 1 + 8
    assert figures[5].layout.title.text.endswith(_head_view(2, 2))
    shown = torch.tensor([row[1:] for row in rows], dtype=torch.float32)
    assert torch.allclose(shown, cross.weights[1, 1], atol=1e-6)
    decoder_view = figures[3]  # the decoder's head view marks every future key as never let through
    assert any(item.name == "masked" for item in decoder_view.data)
    with pytest.raises(ValueError, match="layers 1 to 2 and heads 1 to 2"):
        figures_for(trace, layer=3)


def test_sdpa_returns_no_weights_and_the_error_says_how_to_get_them(tokenizer):
    model = BertModel(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32))  # fmt: skip
    model.set_attn_implementation("sdpa")
    with pytest.raises(AttnvizError) as raised:
        from_transformers(model, tokenizer, "the cat")
    assert raised.value.code == "eager_attention"
    assert "'sdpa'" in str(raised.value) and 'attn_implementation="eager"' in str(raised.value)


def _head_view(layer: int, head: int) -> str:
    return message("model.head_view_title", layer=layer, which=message("model.which_one", head=head))


def test_a_model_trace_displays_offline(tokenizer):
    model = _eager(BertModel(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2,
                                        num_attention_heads=2, intermediate_size=32)))  # fmt: skip
    page = to_html(from_transformers(model, tokenizer, "the cat sat"))
    assert page.count("Plotly.newPlot(") == 2
    assert message("display.part_encoder") in html.unescape(page) and _head_view(1, 1) in page
