"""tokenize and embed_tokens."""

import numpy as np
import pytest
import reference as ref
import torch

import attnviz


def test_tokenize_splits_words_and_punctuation():
    assert attnviz.tokenize("Hello, world!") == ["Hello", ",", "world", "!"]


def test_tokenize_keeps_apostrophe_inside_word():
    assert attnviz.tokenize("don't stop") == ["don't", "stop"]


def test_tokenize_keeps_digits_in_words():
    assert attnviz.tokenize("GPT4 has 2 heads.") == ["GPT4", "has", "2", "heads", "."]


def test_tokenize_chinese_characters_are_single_tokens():
    assert attnviz.tokenize("注意力机制") == ["注", "意", "力", "机", "制"]


def test_tokenize_mixed_chinese_and_english():
    assert attnviz.tokenize("我爱 attention。") == ["我", "爱", "attention", "。"]


def test_tokenize_japanese_kana_are_single_tokens():
    assert attnviz.tokenize("ひらがなカタカナ") == ["ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ"]


def test_tokenize_hangul_syllables_are_single_tokens():
    assert attnviz.tokenize("주의") == ["주", "의"]


@pytest.mark.parametrize("sentence", ["", "   ", "\t\n"])
def test_tokenize_empty_raises(sentence):
    with pytest.raises(ValueError):
        attnviz.tokenize(sentence)


def test_tokenize_too_many_tokens_names_count_and_limit():
    sentence = " ".join(["word"] * 7)
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b7\b)(?=.*\b5\b)"):
        attnviz.tokenize(sentence, max_tokens=5)
    assert len(attnviz.tokenize(sentence, max_tokens=7)) == 7


def test_tokenize_default_limit_is_max_tokens():
    assert attnviz.MAX_TOKENS == 512
    assert len(attnviz.tokenize(" ".join(["a"] * 512))) == 512
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b513\b)(?=.*\b512\b)"):
        attnviz.tokenize(" ".join(["a"] * 513))


# ------------------------------------------------------------------ embeddings


def test_embed_tokens_shape():
    emb = attnviz.embed_tokens(["a", "b", "c"], dim=5)
    assert tuple(emb.shape) == (3, 5)
    assert isinstance(emb, torch.Tensor)
    assert np.all(np.isfinite(ref.to_np(emb)))


def test_embed_tokens_is_deterministic_across_calls():
    a = attnviz.embed_tokens(["attention", "is", "all"], dim=8, seed=3)
    b = attnviz.embed_tokens(["attention", "is", "all"], dim=8, seed=3)
    np.testing.assert_array_equal(ref.to_np(a), ref.to_np(b))


def test_same_token_same_row_and_different_tokens_differ():
    emb = ref.to_np(attnviz.embed_tokens(["cat", "dog", "cat"], dim=8))
    np.testing.assert_array_equal(emb[0], emb[2])
    assert not np.allclose(emb[0], emb[1])


def test_token_vector_does_not_depend_on_context():
    a = ref.to_np(attnviz.embed_tokens(["cat"], dim=8))
    b = ref.to_np(attnviz.embed_tokens(["the", "big", "cat"], dim=8))
    np.testing.assert_array_equal(a[0], b[2])


def test_seed_changes_vectors():
    a = ref.to_np(attnviz.embed_tokens(["cat", "dog"], dim=8, seed=0))
    b = ref.to_np(attnviz.embed_tokens(["cat", "dog"], dim=8, seed=1))
    assert not np.allclose(a, b)


def test_normalize_gives_unit_rows():
    emb = ref.to_np(attnviz.embed_tokens(["注", "意", "attention", ","], dim=16, normalize=True))
    np.testing.assert_allclose(np.linalg.norm(emb, axis=-1), 1.0, atol=1e-5)


def test_embeddings_are_case_insensitive():
    emb = ref.to_np(attnviz.embed_tokens(["The", "the", "THE"], dim=8))
    np.testing.assert_array_equal(emb[0], emb[1])
    np.testing.assert_array_equal(emb[0], emb[2])
