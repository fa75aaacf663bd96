"""Nadaraya-Watson kernel regression, fit_bandwidth and make_toy_data."""

import math
import warnings

import numpy as np
import pytest
import reference as ref
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz

KERNEL_NAMES = ["gaussian", "laplace", "boxcar", "epanechnikov"]

# note 004: waist (key) -> weight (value)
WAIST = [51.0, 56.0, 58.0]
WEIGHT = [40.0, 43.0, 48.0]


def test_kernels_table_has_the_four_kernels():
    for name in KERNEL_NAMES:
        assert name in attnviz.KERNELS


def test_waist_to_weight_from_the_notes():
    trace = attnviz.nadaraya_watson([57.0], WAIST, WEIGHT, kernel="gaussian", bandwidth=1.0)
    out = ref.to_np(trace.output).reshape(-1)
    assert out.shape == (1,)
    assert out[0] == pytest.approx(45.5, abs=1e-4)
    np.testing.assert_allclose(ref.to_np(trace.weights).reshape(-1), [0.0, 0.5, 0.5], atol=1e-6)
    # the note: alpha(57, 51) = exp(-18) / (exp(-18) + 2 exp(-0.5))
    w51 = math.exp(-18) / (math.exp(-18) + 2 * math.exp(-0.5))
    assert ref.to_np(trace.weights).reshape(-1)[0] == pytest.approx(w51, rel=1e-3, abs=1e-12)
    np.testing.assert_allclose(ref.to_np(trace.distances).reshape(-1), [6.0, 1.0, 1.0], atol=1e-6)


def test_one_dimensional_values_give_one_dimensional_output():
    trace = attnviz.nadaraya_watson([57.0, 52.0, 60.0], WAIST, WEIGHT)
    assert tuple(trace.output.shape) == (3,)
    assert tuple(trace.weights.shape) == (3, 3)


@pytest.mark.parametrize("kernel_name", KERNEL_NAMES)
@pytest.mark.parametrize("bandwidth", [0.7, 1.5])
def test_each_kernel_matches_reference(kernel_name, bandwidth):
    rng = np.random.default_rng(0)
    keys = np.sort(rng.uniform(0, 5, size=12))
    values = rng.normal(size=12)
    queries = np.linspace(0.1, 4.9, 9)  # every query has a key within 0.7 (checked below)
    expected = ref.nadaraya_watson(queries, keys, values, kernel_name=kernel_name, bandwidth=bandwidth)
    assert not expected["no_support"].any()
    trace = attnviz.nadaraya_watson(
        torch.tensor(queries), torch.tensor(keys), torch.tensor(values), kernel=kernel_name, bandwidth=bandwidth
    )
    np.testing.assert_allclose(ref.to_np(trace.scores), expected["kernel"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.distances), expected["distances"], atol=1e-10)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(KERNEL_NAMES), st.floats(0.2, 3.0), st.integers(0, 2**31 - 1))
def test_kernel_weights_are_normalised_kernel_values(kernel_name, bandwidth, seed):
    rng = np.random.default_rng(seed)
    keys = rng.uniform(-3, 3, size=7)
    values = rng.normal(size=7)
    queries = rng.uniform(-3, 3, size=5)
    expected = ref.nadaraya_watson(queries, keys, values, kernel_name=kernel_name, bandwidth=bandwidth)
    trace = attnviz.nadaraya_watson(
        torch.tensor(queries), torch.tensor(keys), torch.tensor(values), kernel=kernel_name, bandwidth=bandwidth
    )
    w = ref.to_np(trace.weights)
    np.testing.assert_allclose(w, expected["weights"], atol=1e-9)
    ok = ~expected["no_support"]
    np.testing.assert_allclose(w[ok].sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(ref.to_np(trace.output)[ok], expected["output"][ok], atol=1e-9)
    assert np.all(np.isnan(ref.to_np(trace.output)[~ok]))


@pytest.mark.parametrize("kernel_name", KERNEL_NAMES)
def test_two_dimensional_inputs_use_euclidean_distance(kernel_name):
    rng = np.random.default_rng(1)
    keys = rng.uniform(0, 3, size=(10, 2))
    values = rng.normal(size=(10, 3))
    queries = keys[:4] + 0.1
    expected = ref.nadaraya_watson(queries, keys, values, kernel_name=kernel_name, bandwidth=1.2)
    trace = attnviz.nadaraya_watson(
        torch.tensor(queries), torch.tensor(keys), torch.tensor(values), kernel=kernel_name, bandwidth=1.2
    )
    assert tuple(trace.output.shape) == (4, 3)
    np.testing.assert_allclose(ref.to_np(trace.distances), expected["distances"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.weights), expected["weights"], atol=1e-10)
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-10)


@pytest.mark.parametrize("kernel_name", ["boxcar", "epanechnikov"])
def test_query_outside_compact_window_has_no_support(kernel_name):
    keys = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    values = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    queries = torch.tensor([1.5, 100.0, 0.2], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = attnviz.nadaraya_watson(queries, keys, values, kernel=kernel_name, bandwidth=1.0)
    assert ref.to_np(trace.no_support).astype(bool).tolist() == [False, True, False]
    w = ref.to_np(trace.weights)
    out = ref.to_np(trace.output)
    assert np.all(w[1] == 0.0)
    assert math.isnan(out[1])
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(out[[0, 2]]))
    expected = ref.nadaraya_watson(queries, keys, values, kernel_name=kernel_name, bandwidth=1.0)
    np.testing.assert_allclose(w, expected["weights"], atol=1e-10)
    np.testing.assert_allclose(out[[0, 2]], expected["output"][[0, 2]], atol=1e-10)


def test_boxcar_window_includes_its_edge():
    # |u| <= 1: a key exactly one bandwidth away is inside the window
    trace = attnviz.nadaraya_watson([2.0], [0.0, 1.0, 3.5], [1.0, 2.0, 3.0], kernel="boxcar", bandwidth=1.0)
    np.testing.assert_allclose(ref.to_np(trace.weights).reshape(-1), [0.0, 1.0, 0.0], atol=1e-7)
    assert ref.to_np(trace.output).reshape(-1)[0] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("kernel_name,query", [("gaussian", 50.0), ("laplace", 800.0)])
def test_far_query_of_non_compact_kernel_is_finite_and_picks_nearest_key(kernel_name, query):
    # every key has a positive kernel value in exact arithmetic, so the estimate exists
    keys = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    values = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    trace = attnviz.nadaraya_watson(
        torch.tensor([query], dtype=torch.float64), keys, values, kernel=kernel_name, bandwidth=1.0
    )
    expected = ref.nadaraya_watson([query], keys, values, kernel_name=kernel_name, bandwidth=1.0)
    assert np.all(np.isfinite(ref.to_np(trace.output)))
    np.testing.assert_allclose(ref.to_np(trace.output), expected["output"], atol=1e-6)
    assert trace.no_support is None or not ref.to_np(trace.no_support).any()


@pytest.mark.parametrize("bandwidth", [0.0, -1.0])
def test_non_positive_bandwidth_raises(bandwidth):
    with pytest.raises(ValueError, match=r"(?i)bandwidth"):
        attnviz.nadaraya_watson([57.0], WAIST, WEIGHT, bandwidth=bandwidth)


def test_unknown_kernel_raises_listing_kernels():
    with pytest.raises(ValueError, match=r"(?s)(?=.*triangle)(?=.*gaussian)(?=.*boxcar)"):
        attnviz.nadaraya_watson([57.0], WAIST, WEIGHT, kernel="triangle")


def test_mismatched_key_value_counts_raise():
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b3\b)(?=.*\b2\b)"):
        attnviz.nadaraya_watson([57.0], WAIST, WEIGHT[:2])


# ------------------------------------------------------------------ toy data and fitting


def test_make_toy_data_is_deterministic_per_seed():
    a = attnviz.make_toy_data(seed=0)
    b = attnviz.make_toy_data(seed=0)
    for field in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(ref.to_np(getattr(a, field)), ref.to_np(getattr(b, field)))


def test_make_toy_data_differs_across_seeds():
    a = attnviz.make_toy_data(seed=0)
    b = attnviz.make_toy_data(seed=1)
    assert not np.allclose(ref.to_np(a.y_train), ref.to_np(b.y_train))


def test_make_toy_data_sizes_range_and_test_targets():
    data = attnviz.make_toy_data(n_train=40, seed=3, n_test=30)
    x_train, y_train = ref.to_np(data.x_train), ref.to_np(data.y_train)
    x_test, y_test = ref.to_np(data.x_test), ref.to_np(data.y_test)
    assert x_train.shape == (40,) and y_train.shape == (40,)
    assert x_test.shape == (30,) and y_test.shape == (30,)
    for x in (x_train, x_test):
        assert np.all(x >= 0) and np.all(x < 5)
    np.testing.assert_allclose(y_test, ref.toy_function(x_test), atol=1e-5)
    # training targets are the function plus noise of scale `noise`
    residual = y_train - ref.toy_function(x_train)
    assert 0.1 < residual.std() < 1.5


def test_make_toy_data_without_noise_is_the_function():
    data = attnviz.make_toy_data(n_train=20, seed=5, noise=0.0)
    np.testing.assert_allclose(ref.to_np(data.y_train), ref.toy_function(data.x_train), atol=1e-5)


def test_fit_bandwidth_decreases_loss_and_reports_progress():
    data = attnviz.make_toy_data(seed=0)
    calls = []
    fit = attnviz.fit_bandwidth(
        data.x_train, data.y_train, epochs=60, progress=lambda epoch, loss: calls.append((epoch, loss))
    )
    assert len(calls) == 60
    epochs = [c[0] for c in calls]
    assert epochs == sorted(epochs) and len(set(epochs)) == 60
    assert all(isinstance(loss, float) and math.isfinite(loss) for _, loss in calls)
    losses = list(fit.losses)
    assert len(losses) == 60
    np.testing.assert_allclose([c[1] for c in calls], losses, rtol=1e-6)
    assert losses[-1] < losses[0]
    assert fit.bandwidth > 0
    assert fit.kernel == "gaussian"


def test_fit_bandwidth_improves_leave_one_out_error():
    data = attnviz.make_toy_data(seed=0)
    fit = attnviz.fit_bandwidth(data.x_train, data.y_train, init=1.0, epochs=100)
    before = ref.loo_mse(data.x_train, data.y_train, 1.0)
    after = ref.loo_mse(data.x_train, data.y_train, float(fit.bandwidth))
    assert after < before


def test_fit_bandwidth_first_loss_is_leave_one_out_error_at_init():
    data = attnviz.make_toy_data(seed=0)
    fit = attnviz.fit_bandwidth(data.x_train, data.y_train, init=1.0, epochs=5)
    loo = ref.loo_mse(data.x_train, data.y_train, 1.0)
    n = len(ref.to_np(data.x_train))
    # squared error as a mean or a sum, possibly with d2l's factor 1/2
    candidates = [loo, loo / 2, loo * n, loo * n / 2]
    assert any(float(fit.losses[0]) == pytest.approx(c, rel=1e-3) for c in candidates), (fit.losses[0], candidates)


@pytest.mark.parametrize("kernel_name", KERNEL_NAMES)
@pytest.mark.parametrize("bandwidth", [0.05, 1.0, 4.0, 50.0])
def test_the_pages_single_call_gives_the_queries_and_the_curve_as_two_calls_do(kernel_name, bandwidth):
    """The kernel page computes its query points and its 200-point curve in one Nadaraya–Watson call. Every row is
    its own computation: each field equals the two separate calls', the missing estimates (NaN) in the same places;
    the outputs (a matrix product over more rows) within float32 rounding."""
    from dataclasses import replace

    from attnviz.app.pipeline import prediction_curve, run_kernel_and_curve
    from attnviz.app.state import KernelState

    generator = torch.Generator().manual_seed(int(bandwidth * 100) + len(kernel_name))
    keys = tuple(float(x) for x in torch.rand(23, generator=generator) * 100)
    values = tuple(float(x) for x in torch.randn(23, generator=generator) * 10)
    queries = (-15.0, 3.5, 57.0, 99.0, 130.0)  # two outside the keys' span: no support for the compact kernels
    state = replace(KernelState(), kernel=kernel_name, bandwidth=bandwidth, keys=keys, values=values, queries=queries)
    together = run_kernel_and_curve(state)
    at_queries = attnviz.nadaraya_watson(queries, keys, values, kernel=kernel_name, bandwidth=bandwidth)
    for separate, single in zip((at_queries, prediction_curve(state)), together, strict=True):
        for name in ("queries", "keys", "values", "scores", "logits", "mask", "weights", "distances", "no_support"):
            assert torch.equal(getattr(single, name), getattr(separate, name)), name
        assert torch.equal(single.output.isnan(), separate.output.isnan())
        torch.testing.assert_close(single.output, separate.output, rtol=1e-6, atol=1e-5, equal_nan=True)
        assert (single.score, single.score_params) == (separate.score, separate.score_params)
    assert together[0].output.shape == (5,) and together[1].output.shape == (200,)
    if kernel_name in ("boxcar", "epanechnikov") and bandwidth <= 1.0:  # compact kernels
        assert bool(together[0].no_support[0]) and bool(together[0].no_support[-1])
