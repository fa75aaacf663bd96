"""Independent numpy (float64) reference for the attnviz test suite.

Written from docs/api.md and the study notes only; it never imports attnviz.
Shapes follow the spec: batched (B, Q, d) / (B, K, d_k) / (B, K, v) or unbatched (Q, d) ...
"""

from __future__ import annotations

import math

import numpy as np


def to_np(x) -> np.ndarray:
    """Torch tensor / array / list -> float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


# --------------------------------------------------------------------------- masking


def mask_from_valid_lens(shape, valid_lens) -> np.ndarray:
    """Boolean mask (B, Q, K), True = key index < valid length.

    valid_lens: None, 1-D (B,) (every query of a batch row) or 2-D (B, Q).
    """
    B, Q, K = shape
    if valid_lens is None:
        return np.ones((B, Q, K), dtype=bool)
    lens = np.asarray(to_np(valid_lens))
    if lens.ndim == 1:
        lens = np.repeat(lens[:, None], Q, axis=1)
    assert lens.shape == (B, Q), (lens.shape, (B, Q))
    return np.arange(K)[None, None, :] < lens[:, :, None]


def causal_mask(Q: int, K: int) -> np.ndarray:
    """(Q, K) top-left causal mask: query i may see keys j <= i."""
    return np.arange(K)[None, :] <= np.arange(Q)[:, None]


def softmax_with_mask(logits, mask) -> np.ndarray:
    """Softmax over the last axis restricted to mask; rows with no allowed key are all 0."""
    logits = to_np(logits)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), logits.shape)
    filled = np.where(mask, logits, -np.inf)
    row_max = np.max(filled, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    ex = np.where(mask, np.exp(filled - row_max), 0.0)
    total = ex.sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, ex / safe, 0.0)


def masked_softmax(scores, valid_lens=None) -> np.ndarray:
    """d2l's masked_softmax, but with exact zeros and zero rows for length 0."""
    scores = to_np(scores)
    if valid_lens is None:
        return softmax_with_mask(scores, np.ones(scores.shape, dtype=bool))
    return softmax_with_mask(scores, mask_from_valid_lens(scores.shape, valid_lens))


# --------------------------------------------------------------------------- scores
# All score functions take q (..., Q, d_q), k (..., K, d_k) and return (..., Q, K).


def dot_scores(q, k) -> np.ndarray:
    q, k = to_np(q), to_np(k)
    return q @ np.swapaxes(k, -1, -2)


def cosine_scores(q, k) -> np.ndarray:
    q, k = to_np(q), to_np(k)
    qn = np.linalg.norm(q, axis=-1, keepdims=True)
    kn = np.linalg.norm(k, axis=-1, keepdims=True)
    qu = np.where(qn > 0, q / np.where(qn > 0, qn, 1.0), 0.0)
    ku = np.where(kn > 0, k / np.where(kn > 0, kn, 1.0), 0.0)
    return qu @ np.swapaxes(ku, -1, -2)


def squared_distances(q, k) -> np.ndarray:
    q, k = to_np(q), to_np(k)
    diff = q[..., :, None, :] - k[..., None, :, :]
    return np.sum(diff * diff, axis=-1)


def gaussian_scores(q, k, bandwidth: float = 1.0) -> np.ndarray:
    return -squared_distances(q, k) / (2.0 * bandwidth**2)


def general_scores(q, k, W) -> np.ndarray:
    """q^T W k with W (d_q, d_k)."""
    q, k, W = to_np(q), to_np(k), to_np(W)
    return q @ W @ np.swapaxes(k, -1, -2)


def additive_scores(q, k, W_q, W_k, w_v) -> np.ndarray:
    """w_v^T tanh(W_q q + W_k k); W_q (h, d_q), W_k (h, d_k), w_v (h,) or (1, h)."""
    q, k = to_np(q), to_np(k)
    W_q, W_k, w_v = to_np(W_q), to_np(W_k), to_np(w_v).reshape(-1)
    qh = q @ W_q.T  # (..., Q, h)
    kh = k @ W_k.T  # (..., K, h)
    features = np.tanh(qh[..., :, None, :] + kh[..., None, :, :])  # (..., Q, K, h)
    return features @ w_v


def concat_pairs(q, k) -> np.ndarray:
    """[q; k] for every (query, key) pair: (..., Q, K, d_q + d_k)."""
    q, k = to_np(q), to_np(k)
    Q, K = q.shape[-2], k.shape[-2]
    qe = np.broadcast_to(q[..., :, None, :], (*q.shape[:-2], Q, K, q.shape[-1]))
    ke = np.broadcast_to(k[..., None, :, :], (*k.shape[:-2], Q, K, k.shape[-1]))
    return np.concatenate([qe, ke], axis=-1)


def concat_scores(q, k, w, b) -> np.ndarray:
    """w . [q; k] + b."""
    w = to_np(w).reshape(-1)
    b = float(to_np(b).reshape(-1).sum()) if b is not None else 0.0
    return concat_pairs(q, k) @ w + b


def concat_tanh_scores(q, k, W, b) -> np.ndarray:
    """sum_h tanh(W [q; k] + b)_h with W (h, d_q + d_k), b (h,)."""
    W = to_np(W)
    b = to_np(b).reshape(-1) if b is not None else 0.0
    return np.tanh(concat_pairs(q, k) @ W.T + b).sum(axis=-1)


def raw_scores(name: str, q, k, **params) -> np.ndarray:
    """The raw score a(q, k) of the non-learned scores in the api.md table."""
    if name in ("dot", "scaled_dot"):
        return dot_scores(q, k)
    if name == "cosine":
        return cosine_scores(q, k)
    if name == "gaussian":
        return gaussian_scores(q, k, params.get("bandwidth", 1.0))
    raise KeyError(name)


def score_scale(name: str, d: int) -> float:
    return 1.0 / math.sqrt(d) if name == "scaled_dot" else 1.0


# --------------------------------------------------------------------------- attention


def attention_from_scores(scores, values, *, scale=1.0, temperature=1.0, valid_lens=None, causal=False):
    """Everything attend() records, from raw scores. Works batched or unbatched."""
    scores = to_np(scores)
    values = to_np(values)
    unbatched = scores.ndim == 2
    if unbatched:
        scores3 = scores[None]
        if valid_lens is not None:
            lens = to_np(valid_lens)
            lens = np.full((scores.shape[0],), float(lens)) if lens.ndim == 0 else lens
            valid_lens3 = lens[None, :]  # (1, Q)
        else:
            valid_lens3 = None
    else:
        scores3, valid_lens3 = scores, valid_lens
    B, Q, K = scores3.shape
    mask = mask_from_valid_lens((B, Q, K), valid_lens3)
    if causal:
        mask = mask & causal_mask(Q, K)[None]
    logits = scores3 * scale / temperature
    weights = softmax_with_mask(logits, mask)
    values3 = values[None] if unbatched else values
    output = weights @ values3
    result = dict(scores=scores3, logits=logits, mask=mask, weights=weights, output=output)
    if unbatched:
        result = {key: val[0] for key, val in result.items()}
    return result


def attention(q, k, v, *, score="scaled_dot", valid_lens=None, causal=False, temperature=1.0, **params):
    """Reference attend() for the non-learned scores."""
    q = to_np(q)
    scores = raw_scores(score, q, k, **params)
    return attention_from_scores(
        scores, v, scale=score_scale(score, q.shape[-1]), temperature=temperature, valid_lens=valid_lens, causal=causal
    )


def multi_head(q, k, v, W_q, W_k, W_v, W_o, num_heads, *, b_q=None, b_k=None, b_v=None, b_o=None, valid_lens=None):
    """d2l/Transformer multi-head attention with nn.Linear-style weights (out, in).

    Head i uses feature columns [i*dh, (i+1)*dh) of the projected q, k, v; scaled dot product
    with scale 1/sqrt(dh). Returns (output (B, Q, h_out), weights (B, heads, Q, K)).
    """

    def proj(x, W, b):
        y = to_np(x) @ to_np(W).T
        return y + to_np(b) if b is not None else y

    Qp, Kp, Vp = proj(q, W_q, b_q), proj(k, W_k, b_k), proj(v, W_v, b_v)
    dh = Qp.shape[-1] // num_heads
    dv = Vp.shape[-1] // num_heads
    outs, weights = [], []
    for i in range(num_heads):
        qs = Qp[..., i * dh : (i + 1) * dh]
        ks = Kp[..., i * dh : (i + 1) * dh]
        vs = Vp[..., i * dv : (i + 1) * dv]
        res = attention_from_scores(dot_scores(qs, ks), vs, scale=1.0 / math.sqrt(dh), valid_lens=valid_lens)
        outs.append(res["output"])
        weights.append(res["weights"])
    concat = np.concatenate(outs, axis=-1)
    output = proj(concat, W_o, b_o)
    return output, np.stack(weights, axis=1)


# --------------------------------------------------------------------------- kernel regression


def _as_points(x) -> np.ndarray:
    x = to_np(x)
    return x[:, None] if x.ndim == 1 else x


def log_kernel(name: str, u) -> np.ndarray:
    """log K(u), -inf outside a compact kernel's support."""
    u = np.asarray(u, dtype=np.float64)
    with np.errstate(divide="ignore"):
        if name == "gaussian":
            return -0.5 * u**2
        if name == "laplace":
            return -np.abs(u)
        if name == "boxcar":
            return np.where(np.abs(u) <= 1.0, 0.0, -np.inf)
        if name == "epanechnikov":
            return np.log(np.maximum(0.0, 1.0 - u**2))
    raise KeyError(name)


def kernel(name: str, u) -> np.ndarray:
    return np.exp(log_kernel(name, u))


def nadaraya_watson(queries, keys, values, *, kernel_name="gaussian", bandwidth=1.0):
    """Reference Nadaraya-Watson: dict(distances, kernel, weights, output, no_support).

    Normalisation is done in log space so that far queries of non-compact kernels stay exact.
    Queries with no support have zero weights and NaN output.
    """
    q, k = _as_points(queries), _as_points(keys)
    v = to_np(values)
    distances = np.sqrt(squared_distances(q, k))  # (Q, K)
    u = distances / bandwidth
    logk = log_kernel(kernel_name, u)
    support = np.isfinite(logk)
    no_support = ~support.any(axis=-1)
    weights = softmax_with_mask(np.where(support, logk, 0.0), support)
    output = weights @ v
    output = np.where(no_support if v.ndim == 1 else no_support[:, None], np.nan, output)
    return dict(
        distances=distances, kernel=kernel(kernel_name, u), weights=weights, output=output, no_support=no_support
    )


def loo_mse(x, y, bandwidth, kernel_name="gaussian") -> float:
    """Leave-one-out mean squared error of Nadaraya-Watson on the training points."""
    x, y = to_np(x).reshape(-1), to_np(y).reshape(-1)
    u = np.abs(x[:, None] - x[None, :]) / bandwidth
    logk = log_kernel(kernel_name, u)
    np.fill_diagonal(logk, -np.inf)
    support = np.isfinite(logk)
    weights = softmax_with_mask(np.where(support, logk, 0.0), support)
    pred = weights @ y
    ok = support.any(axis=-1)
    return float(np.mean((pred[ok] - y[ok]) ** 2))


def toy_function(x):
    """d2l's f(x) = 2 sin(x) + x^0.8."""
    x = to_np(x)
    return 2.0 * np.sin(x) + x**0.8
