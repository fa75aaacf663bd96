"""d2l-compatible modules, MultiHeadAttention and the multi-head helpers."""

import numpy as np
import pytest
import reference as ref
import torch
from torch import nn
from torchcalls import TorchCalls

import attnviz


def d2l_example(query_size=20):
    """d2l's book example (section 'Attention Scoring Functions')."""
    torch.manual_seed(0)
    queries = torch.normal(0, 1, (2, 1, query_size))
    keys = torch.ones((2, 10, 2))
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])
    return queries, keys, values, valid_lens


BOOK_OUTPUT = np.array([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])


# ------------------------------------------------------------------ AdditiveAttention


def test_additive_attention_book_example_output():
    queries, keys, values, valid_lens = d2l_example()
    attention = attnviz.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    out = attention(queries, keys, values, valid_lens)
    assert tuple(out.shape) == (2, 1, 4)
    np.testing.assert_allclose(ref.to_np(out), BOOK_OUTPUT, atol=1e-4)


def test_additive_attention_matches_reference_from_its_weights():
    queries, keys, values, valid_lens = d2l_example()
    attention = attnviz.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    out = attention(queries, keys, values, valid_lens)
    scores = ref.additive_scores(queries, keys, attention.W_q.weight, attention.W_k.weight, attention.w_v.weight)
    expected = ref.attention_from_scores(scores, values, valid_lens=[2, 6])
    np.testing.assert_allclose(ref.to_np(attention.attention_weights), expected["weights"], atol=1e-6)
    np.testing.assert_allclose(ref.to_np(out), expected["output"], atol=1e-4)
    # equal keys -> uniform weights over the valid keys
    w = ref.to_np(attention.attention_weights)
    np.testing.assert_allclose(w[0, 0, :2], 0.5, atol=1e-6)
    np.testing.assert_allclose(w[1, 0, :6], 1 / 6, atol=1e-6)
    assert np.all(w[0, 0, 2:] == 0) and np.all(w[1, 0, 6:] == 0)


def test_additive_attention_general_inputs_match_reference():
    rng = np.random.default_rng(0)
    q = torch.tensor(rng.normal(size=(3, 4, 5)), dtype=torch.float32)
    k = torch.tensor(rng.normal(size=(3, 6, 7)), dtype=torch.float32)
    v = torch.tensor(rng.normal(size=(3, 6, 2)), dtype=torch.float32)
    lens = torch.tensor([[1, 2, 3, 4], [6, 5, 4, 3], [2, 2, 6, 1]])
    attention = attnviz.AdditiveAttention(key_size=7, query_size=5, num_hiddens=9, dropout=0.0)
    attention.eval()
    out = attention(q, k, v, lens)
    scores = ref.additive_scores(q, k, attention.W_q.weight, attention.W_k.weight, attention.w_v.weight)
    expected = ref.attention_from_scores(scores, v, valid_lens=ref.to_np(lens))
    np.testing.assert_allclose(ref.to_np(attention.attention_weights), expected["weights"], atol=1e-5)
    np.testing.assert_allclose(ref.to_np(out), expected["output"], atol=1e-5)


def test_additive_attention_has_d2l_attributes():
    attention = attnviz.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    assert isinstance(attention, nn.Module)
    for name, shape in (("W_k", (8, 2)), ("W_q", (8, 20)), ("w_v", (1, 8))):
        layer = getattr(attention, name)
        assert isinstance(layer, nn.Linear), name
        assert layer.bias is None, name
        assert tuple(layer.weight.shape) == shape, name
    assert isinstance(attention.dropout, nn.Dropout)
    assert attention.dropout.p == pytest.approx(0.1)


def test_d2l_book_code_runs_unchanged():
    # the book's code, verbatim apart from the import
    queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])
    attention = attnviz.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    attention(queries, keys, values, valid_lens)
    heat = attention.attention_weights.reshape((1, 1, 2, 10))
    assert tuple(heat.shape) == (1, 1, 2, 10)

    queries = torch.normal(0, 1, (2, 1, 2))
    attention = attnviz.DotProductAttention(dropout=0.5)
    attention.eval()
    out = attention(queries, keys, values, valid_lens)
    heat = attention.attention_weights.reshape((1, 1, 2, 10))
    assert tuple(heat.shape) == (1, 1, 2, 10)
    np.testing.assert_allclose(ref.to_np(out), BOOK_OUTPUT, atol=1e-4)

    print(attnviz.masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
    print(attnviz.masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))


def test_modules_store_trace():
    queries, keys, values, valid_lens = d2l_example()
    attention = attnviz.AdditiveAttention(2, 20, 8, 0.0)
    attention.eval()
    attention(queries, keys, values, valid_lens)
    np.testing.assert_allclose(ref.to_np(attention.trace.weights), ref.to_np(attention.attention_weights), atol=1e-7)


# ------------------------------------------------------------------ DotProductAttention


def test_dot_product_attention_book_example():
    queries, keys, values, valid_lens = d2l_example(query_size=2)
    attention = attnviz.DotProductAttention(dropout=0.5)
    attention.eval()
    out = attention(queries, keys, values, valid_lens)
    np.testing.assert_allclose(ref.to_np(out), BOOK_OUTPUT, atol=1e-4)
    expected = ref.attention(queries, keys, values, score="scaled_dot", valid_lens=[2, 6])
    np.testing.assert_allclose(ref.to_np(attention.attention_weights), expected["weights"], atol=1e-6)


def test_dot_product_attention_matches_reference():
    rng = np.random.default_rng(1)
    q = torch.tensor(rng.normal(size=(2, 3, 6)))
    k = torch.tensor(rng.normal(size=(2, 5, 6)))
    v = torch.tensor(rng.normal(size=(2, 5, 4)))
    attention = attnviz.DotProductAttention(dropout=0.2)
    attention.eval()
    for lens in (None, [3, 5], [[1, 2, 3], [5, 4, 0]]):
        lens_t = None if lens is None else torch.tensor(lens)
        out = attention(q, k, v, lens_t)
        expected = ref.attention(q, k, v, score="scaled_dot", valid_lens=lens)
        np.testing.assert_allclose(ref.to_np(attention.attention_weights), expected["weights"], atol=1e-9)
        np.testing.assert_allclose(ref.to_np(out), expected["output"], atol=1e-9)


def test_dot_product_attention_valid_lens_is_optional_and_keyword():
    rng = np.random.default_rng(2)
    q, k, v = (torch.tensor(rng.normal(size=s)) for s in ((1, 2, 3), (1, 4, 3), (1, 4, 2)))
    attention = attnviz.DotProductAttention(0.0)
    attention.eval()
    a = attention(q, k, v)
    b = attention(q, k, v, valid_lens=None)
    c = attention(q, k, v, valid_lens=torch.tensor([2]))
    np.testing.assert_array_equal(ref.to_np(a), ref.to_np(b))
    assert np.all(ref.to_np(attention.attention_weights)[0, :, 2:] == 0)
    assert not np.allclose(ref.to_np(a), ref.to_np(c))
    assert isinstance(attention.dropout, nn.Dropout)


def test_dot_product_attention_train_mode_stores_undropped_weights():
    rng = np.random.default_rng(3)
    q, k, v = (torch.tensor(rng.normal(size=s)) for s in ((2, 3, 4), (2, 6, 4), (2, 6, 2)))
    attention = attnviz.DotProductAttention(dropout=0.5)
    attention.train()
    attention(q, k, v)
    np.testing.assert_allclose(ref.to_np(attention.attention_weights).sum(-1), 1.0, atol=1e-9)


# ------------------------------------------------------------------ MultiHeadAttention


def _linear(layer):
    return layer.weight, layer.bias


@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention_matches_reference_per_head(bias):
    torch.manual_seed(0)
    B, Q, K, hidden, heads = 2, 4, 6, 12, 3
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.normal(size=(B, Q, hidden)), dtype=torch.float32)
    y = torch.tensor(rng.normal(size=(B, K, hidden)), dtype=torch.float32)
    lens = torch.tensor([3, 6])
    mha = attnviz.MultiHeadAttention(hidden, heads, dropout=0.0, bias=bias)
    mha.eval()
    out = mha(x, y, y, lens)
    assert tuple(out.shape) == (B, Q, hidden)
    assert tuple(mha.attention_weights.shape) == (B, heads, Q, K)
    (W_q, b_q), (W_k, b_k), (W_v, b_v), (W_o, b_o) = (
        _linear(mha.W_q),
        _linear(mha.W_k),
        _linear(mha.W_v),
        _linear(mha.W_o),
    )
    exp_out, exp_w = ref.multi_head(
        x, y, y, W_q, W_k, W_v, W_o, heads, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o, valid_lens=[3, 6]
    )
    np.testing.assert_allclose(ref.to_np(mha.attention_weights), exp_w, atol=1e-5)
    np.testing.assert_allclose(ref.to_np(out), exp_out, atol=1e-4)


def test_multi_head_attention_with_different_input_sizes():
    torch.manual_seed(1)
    rng = np.random.default_rng(5)
    q = torch.tensor(rng.normal(size=(2, 3, 5)), dtype=torch.float32)
    k = torch.tensor(rng.normal(size=(2, 4, 7)), dtype=torch.float32)
    v = torch.tensor(rng.normal(size=(2, 4, 9)), dtype=torch.float32)
    mha = attnviz.MultiHeadAttention(8, 2, query_size=5, key_size=7, value_size=9)
    mha.eval()
    out = mha(q, k, v)
    assert tuple(out.shape) == (2, 3, 8)
    exp_out, exp_w = ref.multi_head(q, k, v, mha.W_q.weight, mha.W_k.weight, mha.W_v.weight, mha.W_o.weight, 2)
    np.testing.assert_allclose(ref.to_np(mha.attention_weights), exp_w, atol=1e-5)
    np.testing.assert_allclose(ref.to_np(out), exp_out, atol=1e-4)


def test_multi_head_attention_heads_must_divide_hiddens():
    with pytest.raises(ValueError):
        attnviz.MultiHeadAttention(10, 3)


# ------------------------------------------------------------------ multi_head_attend & co.


def _inputs(B=2, Q=3, K=5, d=6, seed=6):
    rng = np.random.default_rng(seed)
    return (
        torch.tensor(rng.normal(size=(B, Q, d))),
        torch.tensor(rng.normal(size=(B, K, d))),
        torch.tensor(rng.normal(size=(B, K, d))),
    )


@pytest.mark.parametrize("score", ["scaled_dot", "dot", "cosine"])
def test_identity_one_head_equals_attend(score):
    q, k, v = _inputs()
    lens = torch.tensor([2, 5])
    mh = attnviz.multi_head_attend(q, k, v, num_heads=1, projections="identity", score=score, valid_lens=lens)
    plain = attnviz.attend(q, k, v, score=score, valid_lens=lens)
    np.testing.assert_allclose(ref.to_np(mh.output), ref.to_np(plain.output), atol=1e-10)
    np.testing.assert_allclose(ref.to_np(mh.weights)[:, 0], ref.to_np(plain.weights), atol=1e-10)
    assert len(mh.heads) == 1
    np.testing.assert_allclose(ref.to_np(mh.delta), ref.to_np(mh.output), atol=1e-12)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_identity_projections_give_exactly_the_product_with_the_identity_matrices(heads, dtype):
    """The identity projections leave the inputs as they are instead of multiplying by I: the same numbers, bit for
    bit, as the product with the matrices the trace shows."""
    q, k, v = (t.to(dtype) for t in _inputs(d=4, seed=3))
    mh = attnviz.multi_head_attend(q, k, v, num_heads=heads, projections="identity", causal=True, temperature=0.7)
    assert all(mh.W_q.dtype == dtype and torch.equal(m, torch.eye(4, dtype=dtype)) for m in (mh.W_q, mh.W_k, mh.W_o))
    per_head = attnviz.multi_head_attend(
        q @ mh.W_q.T, k @ mh.W_k.T, v @ mh.W_v.T, num_heads=heads, projections="identity", causal=True, temperature=0.7
    )
    assert torch.equal(mh.weights, per_head.weights)
    assert torch.equal(mh.output, per_head.concat @ mh.W_o.T)


def test_multi_head_attend_checks_its_inputs_once_not_again_per_head(monkeypatch):
    """Each torch call lets another thread take Python's lock (CHANGELOG.md, Performance history): the inputs are
    checked finite once, by multi_head_attend, and each head's attention does not check its slice again."""
    import attnviz.core._validate as validate

    checked: list[tuple[int, ...]] = []
    all_finite = validate._all_finite
    monkeypatch.setattr(validate, "_all_finite", lambda t: checked.append(tuple(t.shape)) or all_finite(t))
    q, k, v = _inputs(d=4, seed=5)
    for heads, projections, checks in ((1, "identity", 3), (2, "identity", 3), (2, "random", 6)):
        checked.clear()
        attnviz.multi_head_attend(q, k, v, num_heads=heads, projections=projections)
        assert len(checked) == checks, (heads, projections)  # the inputs, then what W_q, W_k, W_v made
    checked.clear()
    attnviz.attend(q, k, v)
    assert len(checked) == 3  # attend on its own still checks what it is given


# Torch calls that let go of Python's lock on every call (the tensor operations; indexing and getters such as dim()
# do not), which the page's default computation no longer makes: a speed pin (marked perf), read with bench/
_REPLACED = {"isfinite", "all", "squeeze", "unsqueeze", "mean", "masked_fill", "zeros_like", "__invert__", "gt"}


@pytest.mark.perf
@pytest.mark.parametrize("score", ["scaled_dot", "additive"])
def test_a_page_trace_makes_no_torch_call_that_indexing_replaces(score):
    """The self and cross pages' default: one sequence (no batch axis), one head, identity projections, no valid
    lengths. Adding and dropping the batch axis is indexing, the inputs are checked by NumPy, one head's mean is that
    head, and the softmax masks with `where`: none of the calls in `_REPLACED` is made. (Each trace has identity
    matrices of its own: a shared one let an edit of one trace's W_q show in every later trace.)"""
    q, k, v = torch.randn(6, 8), torch.randn(7, 8), torch.randn(7, 8)
    with TorchCalls() as calls:
        trace = attnviz.multi_head_attend(q, k, v, score=score, temperature=0.8)
    assert not _REPLACED & set(calls.names), sorted(_REPLACED & set(calls.names))
    assert tuple(trace.weights.shape) == (1, 6, 7) and tuple(trace.heads[0].weights.shape) == (6, 7)
    assert torch.equal(trace.mean_weights, trace.weights.mean(dim=0))
    assert torch.equal(trace.W_q, torch.eye(8)) and trace.W_q is not attnviz.multi_head_attend(q, k, v).W_q


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("score", ["scaled_dot", "additive", "cosine"])
def test_an_unbatched_trace_is_the_batched_trace_of_one_row(heads, score):
    """Without a batch axis, every tensor of the trace and of each head's trace is the batched computation's row 0,
    bit for bit (the axis is now added and taken by indexing)."""
    q, k, v = torch.randn(5, 4), torch.randn(6, 4), torch.randn(6, 4)
    options = dict(num_heads=heads, score=score, causal=True, temperature=1.7)
    one = attnviz.multi_head_attend(q, k, v, valid_lens=[2, 6, 1, 3, 6], **options)
    batched = attnviz.multi_head_attend(q[None], k[None], v[None], valid_lens=[[2, 6, 1, 3, 6]], **options)
    for name in ("queries", "keys", "values", "weights", "mean_weights", "concat", "delta", "output"):
        assert torch.equal(getattr(one, name), getattr(batched, name)[0]), name
    for mine, theirs in zip(one.heads, batched.heads, strict=True):
        for name in ("queries", "keys", "values", "scores", "logits", "mask", "weights", "output"):
            assert torch.equal(getattr(mine, name), getattr(theirs, name)[0]), name


def test_projections_that_overflow_are_named_as_projected():
    big = torch.full((3, 4), 3e38)
    with pytest.raises(ValueError, match=r"projected (queries|keys|values) must be finite numbers; found -?inf"):
        attnviz.multi_head_attend(big, big, big, projections="random")


@pytest.mark.parametrize("heads", [2, 3])
def test_identity_heads_split_features_into_chunks(heads):
    d = 6
    q, k, v = _inputs(d=d, seed=7)
    mh = attnviz.multi_head_attend(q, k, v, num_heads=heads, projections="identity")
    assert tuple(mh.weights.shape) == (2, heads, 3, 5)
    assert len(mh.heads) == heads
    c = d // heads
    outs = []
    for i in range(heads):
        chunk = slice(i * c, (i + 1) * c)
        expected = ref.attention(q[..., chunk], k[..., chunk], v[..., chunk], score="scaled_dot")
        np.testing.assert_allclose(ref.to_np(mh.weights)[:, i], expected["weights"], atol=1e-10)
        np.testing.assert_allclose(ref.to_np(mh.heads[i].weights), expected["weights"], atol=1e-10)
        outs.append(expected["output"])
    np.testing.assert_allclose(ref.to_np(mh.concat), np.concatenate(outs, -1), atol=1e-10)
    np.testing.assert_allclose(ref.to_np(mh.output), np.concatenate(outs, -1), atol=1e-10)
    np.testing.assert_allclose(ref.to_np(mh.mean_weights), ref.to_np(mh.weights).mean(1), atol=1e-12)


def test_unbatched_multi_head_weights_shape():
    q, k, v = (t[0] for t in _inputs())
    mh = attnviz.multi_head_attend(q, k, v, num_heads=2)
    assert tuple(mh.weights.shape) == (2, 3, 5)
    assert tuple(mh.output.shape) == (3, 6)


def test_random_projections_are_seeded():
    q, k, v = _inputs()
    a = attnviz.multi_head_attend(q, k, v, num_heads=2, projections="random", proj_seed=1)
    b = attnviz.multi_head_attend(q, k, v, num_heads=2, projections="random", proj_seed=1)
    c = attnviz.multi_head_attend(q, k, v, num_heads=2, projections="random", proj_seed=2)
    np.testing.assert_array_equal(ref.to_np(a.output), ref.to_np(b.output))
    np.testing.assert_array_equal(ref.to_np(a.W_q), ref.to_np(b.W_q))
    assert not np.allclose(ref.to_np(a.W_q), ref.to_np(c.W_q))
    assert not np.allclose(ref.to_np(a.output), ref.to_np(c.output))
    np.testing.assert_allclose(ref.to_np(a.weights).sum(-1), 1.0, atol=1e-6)
    for i, head in enumerate(a.heads):
        np.testing.assert_allclose(ref.to_np(a.weights)[:, i], ref.to_np(head.weights), atol=1e-12)


def test_residual_output_is_queries_plus_delta():
    q, k, v = _inputs(seed=8)
    plain = attnviz.multi_head_attend(q, k, v, num_heads=2)
    res = attnviz.multi_head_attend(q, k, v, num_heads=2, residual=True)
    np.testing.assert_allclose(ref.to_np(res.delta), ref.to_np(plain.output), atol=1e-10)
    np.testing.assert_allclose(ref.to_np(res.output), ref.to_np(q) + ref.to_np(res.delta), atol=1e-10)


def test_self_attention_is_multi_head_attend_on_x():
    x, _, _ = _inputs(seed=9)
    a = attnviz.self_attention(x, num_heads=2, causal=True)
    b = attnviz.multi_head_attend(x, x, x, num_heads=2, causal=True)
    np.testing.assert_allclose(ref.to_np(a.output), ref.to_np(b.output), atol=1e-12)
    expected = ref.attention(x, x, x, causal=True)
    one = attnviz.self_attention(x, num_heads=1, causal=True)
    np.testing.assert_allclose(ref.to_np(one.output), expected["output"], atol=1e-10)


def test_cross_attention_takes_keys_and_values_from_source():
    q, source, _ = _inputs(seed=10)
    trace = attnviz.cross_attention(q, source, num_heads=1)
    expected = ref.attention(q, source, source)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.weights)[:, 0], expected["weights"], atol=1e-10)


def test_cross_attention_residual_returns_e_plus_delta():
    q, source, _ = _inputs(seed=11)
    trace = attnviz.cross_attention(q, source, residual=True, num_heads=1)
    expected = ref.attention(q, source, source)
    np.testing.assert_allclose(ref.to_np(trace.delta), expected["output"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.output), ref.to_np(q) + expected["output"], atol=1e-10)


def test_heads_not_dividing_d_raise():
    q, k, v = _inputs(d=6)
    with pytest.raises(ValueError, match=r"\b4\b"):
        attnviz.multi_head_attend(q, k, v, num_heads=4)
    with pytest.raises(ValueError):
        attnviz.self_attention(q, num_heads=5)


def test_head_rows_are_the_rows_whose_features_split_heads_gives_that_head():
    from attnviz.core.multihead import head_rows, split_heads

    W = torch.arange(24.0).reshape(6, 4)  # 6 output features, 3 heads of 2
    x = torch.ones(1, 1, 4)
    projected = split_heads(x @ W.T, 3)  # (1, 3, 1, 2): each head's features of W x
    for head in range(3):
        rows = head_rows(6, head, 3)
        assert list(rows) == [2 * head, 2 * head + 1]
        torch.testing.assert_close(projected[0, head, 0], (x @ W[rows.start : rows.stop].T)[0, 0])


def test_multi_head_attention_head_mask_drops_exactly_that_heads_output():
    torch.manual_seed(0)
    mha = attnviz.MultiHeadAttention(8, 2, query_size=8, key_size=8, value_size=8)
    x = torch.randn(3, 5, 8)  # (B, T, d)
    full = mha(x, x, x)
    torch.testing.assert_close(mha(x, x, x, head_mask=torch.ones(2)), full)
    torch.testing.assert_close(mha(x, x, x, head_mask=torch.zeros(2)), torch.zeros_like(full))  # W_o has no bias
    weights = mha.attention_weights  # (B, h, Q, K), unchanged by the mask
    values = mha.transpose_qkv(mha.W_v(x)).reshape(3, 2, 5, 4)  # (B, h, K, s)
    first_head = weights[:, 0] @ values[:, 0]  # (B, Q, s)
    only_first = first_head @ mha.W_o.weight[:, :4].T  # its part of W_o
    torch.testing.assert_close(mha(x, x, x, head_mask=torch.tensor([1.0, 0.0])), only_first)
