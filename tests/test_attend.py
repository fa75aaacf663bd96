"""attnviz.attend, AttentionTrace and SCORES against docs/api.md and a numpy reference."""

import dataclasses
import math

import numpy as np
import pytest
import reference as ref
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.core.errors import AttnvizError, Name

SETTINGS = settings(max_examples=50, deadline=None)
TABLE_SCORES = ["dot", "scaled_dot", "cosine", "general", "additive", "concat", "concat_tanh", "gaussian"]
LEARNED = ["general", "additive", "concat", "concat_tanh"]
NON_LEARNED = ["dot", "scaled_dot", "cosine", "gaussian"]


def rand(*shape, seed=0):
    return torch.tensor(np.random.default_rng(seed).normal(size=shape))  # float64


def qkv(B=2, Q=3, K=5, d=4, v=3, seed=0, batched=True):
    rng = np.random.default_rng(seed)
    lead = (B,) if batched else ()
    return (
        torch.tensor(rng.normal(size=(*lead, Q, d))),
        torch.tensor(rng.normal(size=(*lead, K, d))),
        torch.tensor(rng.normal(size=(*lead, K, v))),
    )


def is_batched(trace):
    b = trace.batched
    return b() if callable(b) else b


# ------------------------------------------------------------------ trace fields and shapes


def test_trace_has_all_documented_fields():
    q, k, v = qkv()
    trace = attnviz.attend(q, k, v)
    names = {f.name for f in dataclasses.fields(trace)}
    for name in [
        "queries",
        "keys",
        "values",
        "scores",
        "scale",
        "logits",
        "mask",
        "weights",
        "output",
        "score",
        "score_params",
        "temperature",
        "causal",
        "valid_lens",
        "no_support",
        "distances",
    ]:
        assert name in names, name


def test_trace_is_frozen():
    q, k, v = qkv()
    trace = attnviz.attend(q, k, v)
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.output = None


def test_batched_trace_shapes():
    q, k, v = qkv(B=2, Q=3, K=5, d=4, v=6)
    trace = attnviz.attend(q, k, v, valid_lens=torch.tensor([2, 5]))
    for name in ("scores", "logits", "mask", "weights"):
        assert tuple(getattr(trace, name).shape) == (2, 3, 5), name
    assert tuple(trace.output.shape) == (2, 3, 6)
    assert trace.mask.dtype == torch.bool
    assert tuple(trace.queries.shape) == (2, 3, 4)
    assert is_batched(trace) is True
    assert trace.score == "scaled_dot"
    assert trace.temperature == 1.0 and trace.causal is False
    assert trace.valid_lens.dtype == torch.long
    assert trace.valid_lens.tolist() == [2, 5]
    assert trace.no_support is None and trace.distances is None


def test_unbatched_inputs_give_unbatched_trace():
    q, k, v = qkv(Q=3, K=5, d=4, v=6, batched=False)
    trace = attnviz.attend(q, k, v)
    for name in ("scores", "logits", "mask", "weights"):
        assert tuple(getattr(trace, name).shape) == (3, 5), name
    assert tuple(trace.output.shape) == (3, 6)
    assert tuple(trace.queries.shape) == (3, 4)
    assert is_batched(trace) is False
    assert trace.valid_lens is None


def test_unbatched_equals_batched_with_batch_of_one():
    q, k, v = qkv(Q=3, K=5, batched=False)
    one = attnviz.attend(q, k, v)
    batch = attnviz.attend(q[None], k[None], v[None])
    np.testing.assert_allclose(ref.to_np(one.output), ref.to_np(batch.output)[0], atol=1e-12)
    np.testing.assert_allclose(ref.to_np(one.weights), ref.to_np(batch.weights)[0], atol=1e-12)


def test_unbatched_valid_lens_int_and_per_query():
    q, k, v = qkv(Q=3, K=5, batched=False)
    t_int = attnviz.attend(q, k, v, valid_lens=2)
    expected = ref.attention(q, k, v, valid_lens=2)
    np.testing.assert_allclose(ref.to_np(t_int.weights), expected["weights"], atol=1e-10)
    t_vec = attnviz.attend(q, k, v, valid_lens=torch.tensor([1, 3, 5]))
    expected = ref.attention(q, k, v, valid_lens=[1, 3, 5])
    np.testing.assert_allclose(ref.to_np(t_vec.weights), expected["weights"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(t_vec.output), expected["output"], atol=1e-10)
    np.testing.assert_array_equal(ref.to_np(t_vec.mask).astype(bool), expected["mask"])


def test_lists_become_float32_and_float64_stays_float64():
    t = attnviz.attend([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
    assert t.output.dtype == torch.float32
    q, k, v = qkv(batched=False)
    t64 = attnviz.attend(q.numpy(), k.numpy(), v.numpy())
    assert t64.output.dtype == torch.float64


def test_scores_are_raw_and_logits_are_scaled_for_scaled_dot():
    q, k, v = qkv(d=9)
    trace = attnviz.attend(q, k, v, score="scaled_dot", temperature=2.0)
    raw = ref.dot_scores(q, k)
    np.testing.assert_allclose(ref.to_np(trace.scores), raw, atol=1e-10)
    assert trace.scale == pytest.approx(1 / 3)
    np.testing.assert_allclose(ref.to_np(trace.logits), raw / 3 / 2.0, atol=1e-10)


def test_scale_is_one_for_dot():
    q, k, v = qkv(d=9)
    trace = attnviz.attend(q, k, v, score="dot", temperature=0.5)
    assert trace.scale == 1.0
    np.testing.assert_allclose(ref.to_np(trace.logits), ref.dot_scores(q, k) / 0.5, atol=1e-10)


def test_mask_combines_valid_lens_and_causal():
    q, k, v = qkv(B=2, Q=4, K=4)
    trace = attnviz.attend(q, k, v, valid_lens=torch.tensor([2, 4]), causal=True)
    expected = ref.mask_from_valid_lens((2, 4, 4), [2, 4]) & ref.causal_mask(4, 4)[None]
    np.testing.assert_array_equal(ref.to_np(trace.mask).astype(bool), expected)
    assert np.all(ref.to_np(trace.weights)[~expected] == 0.0)


def test_query_without_allowed_key_gets_zero_weights_and_zero_output():
    q, k, v = qkv(B=2, Q=3, K=4)
    trace = attnviz.attend(q, k, v, valid_lens=torch.tensor([0, 4]))
    assert np.all(ref.to_np(trace.weights)[0] == 0.0)
    assert np.all(ref.to_np(trace.output)[0] == 0.0)
    np.testing.assert_allclose(ref.to_np(trace.weights)[1].sum(-1), 1.0, atol=1e-12)


# ------------------------------------------------------------------ agreement with torch SDPA


def test_scaled_dot_matches_torch_sdpa_without_mask():
    q, k, v = qkv(B=3, Q=4, K=6, d=8, v=5)
    trace = attnviz.attend(q, k, v, score="scaled_dot")
    expected = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(ref.to_np(trace.output), ref.to_np(expected), atol=1e-5)


@pytest.mark.parametrize("lens", [[1, 6, 3], [[1, 2, 3, 4], [6, 6, 1, 2], [5, 4, 3, 2]]])
def test_scaled_dot_matches_torch_sdpa_with_valid_lens_mask(lens):
    q, k, v = qkv(B=3, Q=4, K=6, d=8, v=5, seed=1)
    lens_t = torch.tensor(lens)
    trace = attnviz.attend(q, k, v, score="scaled_dot", valid_lens=lens_t)
    mask = torch.tensor(ref.mask_from_valid_lens((3, 4, 6), lens))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    np.testing.assert_allclose(ref.to_np(trace.output), ref.to_np(expected), atol=1e-5)


@pytest.mark.parametrize("Q,K", [(5, 5), (3, 6), (6, 3)])
def test_causal_matches_torch_sdpa_is_causal(Q, K):
    q, k, v = qkv(B=2, Q=Q, K=K, d=4, v=3, seed=2)
    trace = attnviz.attend(q, k, v, score="scaled_dot", causal=True)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(ref.to_np(trace.output), ref.to_np(expected), atol=1e-5)
    np.testing.assert_array_equal(ref.to_np(trace.mask).astype(bool), np.broadcast_to(ref.causal_mask(Q, K), (2, Q, K)))


# ------------------------------------------------------------------ permutation property


@SETTINGS
@given(
    st.integers(2, 7).flatmap(lambda K: st.tuples(st.just(K), st.permutations(range(K)))),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["dot", "scaled_dot", "cosine", "gaussian"]),
)
def test_permuting_keys_and_values_permutes_weight_columns(K_perm, seed, score):
    K, perm = K_perm
    perm = list(perm)
    q, k, v = qkv(B=2, Q=3, K=K, d=4, v=3, seed=seed)
    base = attnviz.attend(q, k, v, score=score)
    permuted = attnviz.attend(q, k[:, perm], v[:, perm], score=score)
    np.testing.assert_allclose(ref.to_np(permuted.output), ref.to_np(base.output), atol=1e-5)
    np.testing.assert_allclose(ref.to_np(permuted.weights), ref.to_np(base.weights)[:, :, perm], atol=1e-6)


# ------------------------------------------------------------------ temperature


def _one_query_with_gap():
    # scores q.k = [1, 3, 2]
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 5.0], [3.0, -1.0], [2.0, 2.0]], dtype=torch.float64)
    v = torch.tensor([[10.0], [20.0], [30.0]], dtype=torch.float64)
    return q, k, v


def test_tiny_temperature_is_finite_and_approaches_argmax():
    q, k, v = _one_query_with_gap()
    trace = attnviz.attend(q, k, v, score="dot", temperature=1e-6)
    w = ref.to_np(trace.weights)
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(ref.to_np(trace.logits)))
    np.testing.assert_allclose(w, [[0.0, 1.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(ref.to_np(trace.output), [[20.0]], atol=1e-4)


def test_large_temperature_approaches_uniform():
    q, k, v = _one_query_with_gap()
    trace = attnviz.attend(q, k, v, score="dot", temperature=1e6)
    np.testing.assert_allclose(ref.to_np(trace.weights), [[1 / 3] * 3], atol=1e-5)


@pytest.mark.parametrize("temperature", [0.3, 1.0, 4.0])
def test_temperature_divides_logits(temperature):
    q, k, v = qkv(seed=3)
    trace = attnviz.attend(q, k, v, score="scaled_dot", temperature=temperature)
    expected = ref.attention(q, k, v, score="scaled_dot", temperature=temperature)
    np.testing.assert_allclose(ref.to_np(trace.logits), expected["logits"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-10)


# ------------------------------------------------------------------ particular scores


def test_cosine_with_zero_vectors_gives_zero_score_not_nan():
    q = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[1.0], [2.0]], dtype=torch.float64)
    trace = attnviz.attend(q, k, v, score="cosine")
    s = ref.to_np(trace.scores)
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(ref.to_np(trace.output)))
    np.testing.assert_allclose(s, [[0.0, 0.0], [1 / math.sqrt(2), 0.0]], atol=1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_score_formula_with_bandwidth(sigma):
    q, k, v = qkv(seed=4)
    trace = attnviz.attend(q, k, v, score="gaussian", bandwidth=sigma)
    sq = ref.squared_distances(q, k)
    np.testing.assert_allclose(ref.to_np(trace.scores), -sq / (2 * sigma**2), atol=1e-10)
    assert trace.scale == 1.0
    assert trace.score_params["bandwidth"] == sigma


@pytest.mark.parametrize("score", NON_LEARNED)
@pytest.mark.parametrize("batched", [True, False])
def test_non_learned_score_matches_reference(score, batched):
    q, k, v = qkv(seed=5, batched=batched)
    lens = torch.tensor([3, 5]) if batched else 4
    trace = attnviz.attend(q, k, v, score=score, valid_lens=lens, temperature=0.7)
    expected = ref.attention(q, k, v, score=score, valid_lens=lens, temperature=0.7)
    for name in ("scores", "logits", "weights", "output"):
        np.testing.assert_allclose(ref.to_np(getattr(trace, name)), expected[name], atol=1e-9, err_msg=name)
    assert trace.score == score


# ------------------------------------------------------------------ learned scores


def _weights_by_shape(module):
    return [ref.to_np(p) for p in module.parameters()]


def _find(params, shape):
    hits = [p for p in params if p.shape == shape]
    assert len(hits) == 1, f"expected one parameter of shape {shape}, got {[p.shape for p in params]}"
    return hits[0]


def learned_reference_scores(name, module, q, k, dq, dk, h):
    """Reference scores from the module's own parameters (identified by their shapes)."""
    params = _weights_by_shape(module)
    if name == "general":
        mats = [p.reshape(p.shape[-2:]) for p in params if p.ndim >= 2]
        assert len(mats) == 1, [p.shape for p in params]
        W = mats[0] if mats[0].shape == (dq, dk) else mats[0].T
        return ref.general_scores(q, k, W)
    if name == "additive":
        W_q, W_k = _find(params, (h, dq)), _find(params, (h, dk))
        w_v = [p for p in params if p.size == h and p.shape not in ((h, dq), (h, dk))]
        assert len(w_v) == 1
        return ref.additive_scores(q, k, W_q, W_k, w_v[0])
    if name == "concat":
        w = [p for p in params if p.size == dq + dk]
        b = [p for p in params if p.size == 1]
        assert len(w) == 1 and len(b) <= 1
        return ref.concat_scores(q, k, w[0], b[0] if b else None)
    if name == "concat_tanh":
        W = _find(params, (h, dq + dk))
        b = [p for p in params if p.shape == (h,)]
        assert len(b) <= 1
        return ref.concat_tanh_scores(q, k, W, b[0] if b else None)
    raise KeyError(name)


def _float_inputs(dq=3, dk=5, seed=6):
    rng = np.random.default_rng(seed)
    q = torch.tensor(rng.normal(size=(2, 3, dq)), dtype=torch.float32)
    k = torch.tensor(rng.normal(size=(2, 4, dk)), dtype=torch.float32)
    v = torch.tensor(rng.normal(size=(2, 4, 2)), dtype=torch.float32)
    return q, k, v


def _learned_params(name, seed, h=7):
    return {"seed": seed, "num_hiddens": h} if name in ("additive", "concat_tanh") else {"seed": seed}


@pytest.mark.parametrize("name", LEARNED)
def test_learned_score_is_reproducible_with_same_seed(name):
    q, k, v = _float_inputs()
    a = attnviz.attend(q, k, v, score=name, **_learned_params(name, 3))
    b = attnviz.attend(q, k, v, score=name, **_learned_params(name, 3))
    np.testing.assert_array_equal(ref.to_np(a.scores), ref.to_np(b.scores))
    np.testing.assert_array_equal(ref.to_np(a.output), ref.to_np(b.output))


@pytest.mark.parametrize("name", LEARNED)
def test_learned_score_differs_with_other_seed(name):
    q, k, v = _float_inputs()
    a = attnviz.attend(q, k, v, score=name, **_learned_params(name, 0))
    b = attnviz.attend(q, k, v, score=name, **_learned_params(name, 1))
    assert np.max(np.abs(ref.to_np(a.scores) - ref.to_np(b.scores))) > 1e-4


@pytest.mark.parametrize("name", LEARNED)
def test_learned_score_default_params_are_filled_in(name):
    q, k, v = _float_inputs()
    trace = attnviz.attend(q, k, v, score=name)
    assert trace.score_params["seed"] == 0
    if name in ("additive", "concat_tanh"):
        assert trace.score_params["num_hiddens"] == 8
    default = attnviz.attend(q, k, v, score=name, **_learned_params(name, 0, h=8))
    np.testing.assert_array_equal(ref.to_np(trace.scores), ref.to_np(default.scores))


@pytest.mark.parametrize("name", LEARNED)
def test_learned_score_matches_reference_from_make_score_module(name):
    dq, dk, h = 3, 5, 7
    q, k, v = _float_inputs(dq, dk)
    params = _learned_params(name, 4, h)
    module = attnviz.make_score_module(name, dq, dk, **params)
    trace = attnviz.attend(q, k, v, score=name, **params)
    expected_scores = learned_reference_scores(name, module, q, k, dq, dk, h)
    np.testing.assert_allclose(ref.to_np(trace.scores), expected_scores, atol=1e-5)
    expected = ref.attention_from_scores(expected_scores, v)
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-5)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-5)
    assert trace.scale == 1.0


@pytest.mark.parametrize("name", LEARNED)
def test_a_learned_scores_module_is_built_once_and_a_users_own_module_is_not_shared(name, monkeypatch):
    """A rerun scored with a learned score twice (attend, then show-your-work's worked score): the seeded module is
    built once. make_score_module still gives a module of one's own: changing it changes nothing attend computes."""
    from attnviz.core import scores
    from attnviz.lessons.explain import explain_attention

    scores._shared_module.cache_clear()
    cls = scores.get_score(name).module
    built = []
    monkeypatch.setattr(cls, "__init__", _counting(cls.__init__, built))
    q, k, v = _float_inputs(3, 5)
    params = _learned_params(name, 11, 6)
    first = attnviz.attend(q, k, v, score=name, **params)
    again = attnviz.attend(q, k, v, score=name, temperature=2.0, **params)
    assert len(built) == 1
    trace = attnviz.multi_head_attend(q[0], k[0], v[0], score=name, **params)
    explain = explain_attention(trace, 0, 0, "q", list("abcd"))
    assert explain and len(built) == 1  # the worked score used the same module
    np.testing.assert_array_equal(ref.to_np(first.scores), ref.to_np(again.scores))
    own = attnviz.make_score_module(name, 3, 5, **params)
    assert len(built) == 2
    with torch.no_grad():
        for weight in own.parameters():
            weight.add_(1.0)
    after = attnviz.attend(q, k, v, score=name, **params)
    np.testing.assert_array_equal(ref.to_np(first.scores), ref.to_np(after.scores))


def _counting(init, calls):
    def counted(self, *args, **kwargs):
        calls.append(args)
        init(self, *args, **kwargs)

    return counted


def test_additive_attention_module_as_score_uses_its_weights():
    q, k, v = _float_inputs(dq=3, dk=5)
    torch.manual_seed(11)
    module = attnviz.AdditiveAttention(key_size=5, query_size=3, num_hiddens=6, dropout=0.0)
    trace = attnviz.attend(q, k, v, score=module, valid_lens=torch.tensor([2, 4]))
    expected_scores = ref.additive_scores(q, k, module.W_q.weight, module.W_k.weight, module.w_v.weight)
    np.testing.assert_allclose(ref.to_np(trace.scores), expected_scores, atol=1e-5)
    expected = ref.attention_from_scores(expected_scores, v, valid_lens=[2, 4])
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-5)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-5)


def test_additive_score_module_as_score_uses_its_weights():
    dq, dk, h = 3, 5, 7
    q, k, v = _float_inputs(dq, dk)
    module = attnviz.AdditiveScore(dq, dk, num_hiddens=h, seed=9)
    trace = attnviz.attend(q, k, v, score=module)
    expected_scores = learned_reference_scores("additive", module, q, k, dq, dk, h)
    np.testing.assert_allclose(ref.to_np(trace.scores), expected_scores, atol=1e-5)
    by_name = attnviz.attend(q, k, v, score="additive", seed=9, num_hiddens=h)
    np.testing.assert_allclose(ref.to_np(by_name.scores), expected_scores, atol=1e-5)


@pytest.mark.parametrize(
    "cls,name,kwargs",
    [
        ("GeneralScore", "general", {}),
        ("ConcatScore", "concat", {}),
        ("ConcatTanhScore", "concat_tanh", {"num_hiddens": 7}),
    ],
)
def test_score_module_classes_as_score_use_their_weights(cls, name, kwargs):
    dq, dk = 3, 5
    q, k, v = _float_inputs(dq, dk)
    module = getattr(attnviz, cls)(dq, dk, seed=2, **kwargs)
    trace = attnviz.attend(q, k, v, score=module)
    expected_scores = learned_reference_scores(name, module, q, k, dq, dk, 7)
    np.testing.assert_allclose(ref.to_np(trace.scores), expected_scores, atol=1e-5)
    direct = module(q, k)
    assert tuple(direct.shape) == (2, 3, 4)


# ------------------------------------------------------------------ SCORES table


def test_scores_table_has_the_documented_names_and_texts():
    for name in TABLE_SCORES:
        spec = attnviz.SCORES[name]
        assert spec.name == name
        for field in ("label", "formula", "explanation"):
            text = getattr(spec, field)
            assert isinstance(text, str) and text.strip(), (name, field)


def test_scores_table_learned_flags():
    for name in TABLE_SCORES:
        assert bool(attnviz.SCORES[name].learned) == (name in LEARNED), name


def test_scores_table_same_dim_flags():
    for name in ("dot", "scaled_dot", "cosine", "gaussian"):
        assert attnviz.SCORES[name].same_dim, name
    for name in LEARNED:
        assert not attnviz.SCORES[name].same_dim, name


def test_scores_table_param_defaults():
    def defaults(name):
        return {p.name: p.default for p in attnviz.SCORES[name].params}

    assert defaults("gaussian") == {"bandwidth": 1.0}
    assert defaults("additive") == {"seed": 0, "num_hiddens": 8}
    assert defaults("concat_tanh") == {"seed": 0, "num_hiddens": 8}
    assert defaults("general") == {"seed": 0}
    assert defaults("concat") == {"seed": 0}
    assert defaults("dot") == {} and defaults("scaled_dot") == {} and defaults("cosine") == {}


@pytest.mark.parametrize("name", ["general", "additive", "concat", "concat_tanh"])
def test_learned_scores_accept_different_query_and_key_sizes(name):
    q, k, v = _float_inputs(dq=3, dk=5)
    trace = attnviz.attend(q, k, v, score=name)
    assert tuple(trace.weights.shape) == (2, 3, 4)
    np.testing.assert_allclose(ref.to_np(trace.weights).sum(-1), 1.0, atol=1e-5)


# ------------------------------------------------------------------ errors

BOTH = r"(?s)(?=.*\b{a}\b)(?=.*\b{b}\b)"


@pytest.mark.parametrize("score", ["dot", "scaled_dot", "cosine", "gaussian"])
def test_mismatched_query_key_dims_raise(score):
    q, k, v = torch.zeros(2, 3), torch.zeros(4, 5), torch.zeros(4, 2)
    with pytest.raises(ValueError, match=BOTH.format(a=3, b=5)):
        attnviz.attend(q, k, v, score=score)


def test_different_key_and_value_counts_raise():
    q, k, v = torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(6, 3)
    with pytest.raises(ValueError, match=BOTH.format(a=4, b=6)):
        attnviz.attend(q, k, v)


@pytest.mark.parametrize("which", ["queries", "keys"])
def test_empty_inputs_raise(which):
    shapes = {"queries": (2, 3), "keys": (4, 3), "values": (4, 3)}
    shapes[which] = (0, 3)
    if which == "keys":
        shapes["values"] = (0, 3)
    with pytest.raises(ValueError, match=r"(?i)empty|\b0\b|at least"):
        attnviz.attend(*(torch.zeros(shapes[n]) for n in ("queries", "keys", "values")))


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_raise(which, bad):
    tensors = list(qkv(seed=7))
    tensors[which] = tensors[which].clone()
    tensors[which][1, 0, 0] = bad
    with pytest.raises(ValueError, match=r"(?i)nan|inf|finite"):
        attnviz.attend(*tensors)


@pytest.mark.parametrize(
    "shapes",
    [
        ((3,), (3,), (3,)),  # 1-D
        ((1, 2, 3, 3), (1, 2, 4, 3), (1, 2, 4, 3)),  # 4-D
        ((2, 3), (1, 4, 3), (1, 4, 3)),  # mixed ranks
        ((1, 2, 3), (4, 3), (4, 3)),  # mixed ranks
    ],
)
def test_wrong_or_mixed_rank_raises(shapes):
    with pytest.raises(ValueError, match=r"(?i)rank|dim|shape|-D"):
        attnviz.attend(*(torch.zeros(s) for s in shapes))


def test_unknown_score_name_lists_valid_names():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"(?s)(?=.*dott)(?=.*scaled_dot)(?=.*additive)(?=.*gaussian)"):
        attnviz.attend(q, k, v, score="dott")


@pytest.mark.parametrize(
    "score,param", [("dot", "foo"), ("gaussian", "sigma"), ("additive", "hidden"), ("scaled_dot", "bandwidth")]
)
def test_unknown_score_parameter_raises(score, param):
    q, k, v = qkv()
    with pytest.raises(ValueError, match=param):
        attnviz.attend(q, k, v, score=score, **{param: 1})


def test_out_of_range_score_parameter_raises():
    q, k, v = qkv()
    with pytest.raises(AttnvizError) as bad:
        attnviz.attend(q, k, v, score="additive", num_hiddens=0)
    assert bad.value.params["name"] == Name("num_hiddens")


@pytest.mark.parametrize("temperature", [0.0, -1.0, math.nan, math.inf])
def test_bad_temperature_raises(temperature):
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"(?i)temperature"):
        attnviz.attend(q, k, v, temperature=temperature)


@pytest.mark.parametrize("bandwidth", [0.0, -0.5])
def test_non_positive_bandwidth_raises(bandwidth):
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"(?i)bandwidth"):
        attnviz.attend(q, k, v, score="gaussian", bandwidth=bandwidth)


def test_bad_valid_lens_in_attend_raise():
    q, k, v = qkv(B=2, K=5)
    with pytest.raises(ValueError, match=r"\b6\b"):
        attnviz.attend(q, k, v, valid_lens=torch.tensor([6, 1]))
    with pytest.raises(ValueError, match="-1"):
        attnviz.attend(q, k, v, valid_lens=torch.tensor([-1, 1]))


def test_editing_one_traces_projection_changes_no_other_trace():
    """Issue 37: the identity projections were made once and shared by every trace, so a student who set
    `a.W_q[0, 0] = 5` in a notebook saw W_q[0, 0] = 5.0 in every later trace, computed with the identity."""
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    first = attnviz.self_attention(x)
    first.W_q[0, 0] = 5.0
    later = attnviz.self_attention(x)
    assert torch.equal(later.W_q, torch.eye(4)) and torch.equal(later.W_o, torch.eye(4))
