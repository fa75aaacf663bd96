"""Show your work, checked like a student would: every number the panel shows is recomputed by hand (numpy, float64)
from the numbers shown before it, to the precision shown. For every score, with and without masks.

One notation throughout (issue 14, point 2): a(q, k) is what the score function returns (the table's "score a(q, k)"
column and step 1's worked line); z = a × scale / T is the logit (step 2); the softmax and the weighted sum follow.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from torchcalls import TorchCalls

from attnviz.app.ui.work import _cell, merged_table
from attnviz.core.attention import attend
from attnviz.core.scores import SCORES
from attnviz.i18n import t
from attnviz.lessons.explain import explain_row

Q = np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0], [-0.75, 0.5, 1.0, -2.0]])
K = np.array([[1.0, 0.5, -0.5, 0.0], [0.0, 2.0, 1.0, -1.0], [-1.0, 0.25, 0.5, 1.5], [0.5, -0.5, -1.0, 2.0]])
V = np.array([[1.0, -2.0, 0.5], [0.0, 1.5, -1.0], [2.5, 0.5, 0.0], [-1.0, 1.0, 3.0]])
TEMPERATURE = 0.7
TYPED = [[0.5, -1.25, 2.0, 0.0], [1.5, 0.75, -0.5, 3.0], [-2.0, 0.25, 1.0, -0.75]]  # the "given" score's S
MASKS = {"none": {}, "causal": {"causal": True}, "valid_lens": {"valid_lens": torch.tensor([3, 1, 2])}}


def shown(value: object) -> float:
    """A table cell as the student reads it (4 significant digits)."""
    return float(_cell(float(value)))


def close(displayed: float, recomputed: float, rel: float = 2e-3, abs_: float = 2e-4) -> bool:
    return abs(displayed - recomputed) <= rel * abs(recomputed) + abs_


def numbers_in(text: str) -> list[float]:
    """The numbers of a line of text (with × 10^{b} read back)."""
    text = re.sub(r"([-\d.]+) \\times 10\^\{(-?\d+)\}", r"\1e\2", text)
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def vectors(note: str) -> list[list[float]]:
    """The bracketed vectors of a worked line, in order ("[0.5, -1.2]" -> [0.5, -1.2])."""
    found = re.findall(r"(?:= |: |：)\[(\(?-?\d[^\]]*)\]", note.replace(r"\dots", ""))  # not q[3]'s index
    return [numbers_in(body) for body in found]


def learned_score(name: str, note: str, q: np.ndarray, k: np.ndarray) -> float | None:
    """a(q, k_1) by hand from the intermediates and weights that step 1 shows for a learned score."""
    shown = vectors(note)
    if name == "general":  # W k_1, then q · (W k_1)
        return float(q @ np.array(shown[0]))
    if name == "additive":  # W_q q + W_k k_1, tanh of it, w_v; then w_v · tanh(·)
        hidden, squashed, w_v = (np.array(v) for v in shown[:3])
        np.testing.assert_allclose(squashed, np.tanh(hidden), rtol=2e-3, atol=2e-4)
        return float(w_v @ squashed)
    if name == "concat":  # w and b; then w · [q; k_1] + b
        bias = numbers_in(note.split("b =")[1])[0]
        return float(np.array(shown[0]) @ np.concatenate([q, k]) + bias)
    if name == "concat_tanh":  # tanh(W [q; k_1] + b); then its sum
        return float(np.sum(shown[0]))
    return None


def hand_score(name: str, q: np.ndarray, k: np.ndarray, params: dict) -> float | None:
    """a(q, k) by hand for the scores whose inputs are all on the screen (the learned ones need their W's)."""
    if name in ("dot", "scaled_dot"):
        return float(q @ k)
    if name == "cosine":
        return float(q @ k / (np.linalg.norm(q) * np.linalg.norm(k)))
    if name == "gaussian":
        return float(-((q - k) ** 2).sum() / (2 * params.get("bandwidth", 1.0) ** 2))
    return None


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("score", list(SCORES))
def test_every_number_of_the_panel_follows_from_the_numbers_before_it(score, mask):
    typed = {"scores": TYPED} if score == "given" else {}
    trace = attend(
        torch.tensor(Q, dtype=torch.float32),
        torch.tensor(K, dtype=torch.float32),
        torch.tensor(V, dtype=torch.float32),
        score=score,
        temperature=TEMPERATURE,
        **MASKS[mask],
        **typed,
    )
    for row in range(Q.shape[0]):
        keys = [f"k{j + 1}" for j in range(K.shape[0])]
        steps = explain_row(trace, row, f"q{row + 1}", keys)
        columns, rows = merged_table(steps)
        column = {name: [row_[i] for row_ in rows] for i, name in enumerate(columns)}
        a = [shown(x) for x in column[t("explain.score_column", "en")]]
        z = [shown(x) for x in column[t("explain.logit", "en")]]
        allowed = [x == t("explain.yes", "en") for x in column[t("explain.allowed", "en")]]
        exps = [shown(x) for x in column["e^(z − m)"]]
        weights = [shown(x) for x in column[t("explain.weight", "en")]]

        # 1. the score: by hand where the inputs are on the screen; the worked line ends on the table's a
        for j in range(K.shape[0]):
            by_hand = TYPED[row][j] if score == "given" else hand_score(score, Q[row], K[j], trace.score_params)
            if by_hand is not None:
                assert close(a[j], by_hand), (score, row, j, a[j], by_hand)
        assert "\\sqrt" not in steps[0].formula  # a is the score itself; the 1/√d belongs to step 2 only
        if SCORES[score].learned:  # its intermediates and weights are on the screen: a follows from them
            assert close(learned_score(score, steps[0].note, Q[row], K[0]), a[0], abs_=2e-3), (score, row)
        assert close(numbers_in(steps[0].note)[-1], a[0])
        # 2. scale and temperature: z = a × scale / T, with the scale and T the note states
        scale, temperature, *worked = numbers_in(steps[1].note)
        expected_scale = 1 / math.sqrt(Q.shape[1]) if SCORES[score].scaled else 1.0
        assert close(scale, expected_scale) and temperature == pytest.approx(TEMPERATURE)
        for j in range(K.shape[0]):
            assert close(z[j], a[j] * scale / temperature), (score, row, j)
        assert close(worked[-1], z[0]) and close(worked[0], a[0])  # First key: z = a × scale / T = ... = z
        # 3. the mask: which keys the query may see
        lens = MASKS[mask].get("valid_lens")
        expected = [not (mask == "causal" and j > row) and not (lens is not None and j >= int(lens[row])) for j in
                    range(K.shape[0])]  # fmt: skip
        assert allowed == expected
        # 4. the softmax: m, the exponentials, their sum, the weights
        top, total = numbers_in(steps[3].note)[:2]
        assert close(top, max(zj for zj, ok in zip(z, allowed, strict=True) if ok))
        for j in range(K.shape[0]):
            assert exps[j] == 0 if not allowed[j] else close(exps[j], math.exp(z[j] - top)), (score, row, j)
        assert close(total, sum(exps))
        for j in range(K.shape[0]):
            assert close(weights[j], exps[j] / total), (score, row, j)
        # 5. the weighted sum of the values shown in the table
        values = np.array([[shown(x) for x in column[f"v[{i + 1}]"]] for i in range(V.shape[1])]).T
        output = numbers_in(steps[4].note.split("= [")[-1])
        by_hand = np.array(weights) @ values
        for got, want in zip(output, by_hand, strict=True):
            assert close(got, want, abs_=2e-3), (score, row, output, by_hand)


def shown_matrix(matrix: torch.Tensor) -> np.ndarray:
    """A projection matrix as the numbers section prints it in its cells (3 significant digits)."""
    return np.array([[float(f"{x:.3g}") for x in row] for row in matrix.tolist()])


@pytest.mark.parametrize("heads", [1, 2])
def test_projections_heads_and_the_residual_follow_from_the_numbers_shown(heads):
    """Step 0 (W_q, W_k, W_v), the join by W_o and the residual E + ΔE: each number recomputed from the inputs and
    the matrices as the page shows them."""
    from attnviz.core.multihead import multi_head_attend
    from attnviz.lessons.explain import explain_attention

    x = torch.tensor(Q, dtype=torch.float32)
    source = torch.tensor(K, dtype=torch.float32)
    trace = multi_head_attend(x, source, source, num_heads=heads, projections="random", proj_seed=3, residual=True)
    w_q, w_k, w_o = (shown_matrix(getattr(trace, name)) for name in ("W_q", "W_k", "W_o"))
    width = Q.shape[1] // heads
    for head in range(heads):
        for row in range(Q.shape[0]):
            steps = explain_attention(trace, head, row, f"q{row + 1}", [f"k{j + 1}" for j in range(K.shape[0])])
            assert [s.number for s in steps] == [0, 1, 2, 3, 4, 5, 6, 7]
            project, combine, residual = steps[0].note, steps[-2].note, steps[-1].note
            # step 0: the first feature worked out, then q, k_1 of this head's features
            x_row, first_q, first_k = (vectors(project)[i] for i in (0, 1, 3))  # x, q, (x_1,) k_1
            assert x_row == pytest.approx(Q[row].tolist())
            terms, result = re.search(r"· x = (.+?) = (\S+?)\. ", project).groups()
            pairs = [(numbers_in(a)[0], numbers_in(b)[0]) for a, b in re.findall(r"(\S+) × (\S+)", terms)]
            assert close(float(result), sum(a * b for a, b in pairs))  # the worked feature adds up
            start = head * width
            assert f"q[{start + 1}]" in project and [a for a, _ in pairs] == pytest.approx(
                w_q[start].tolist(), rel=2e-3
            )
            np.testing.assert_allclose(first_q, (w_q @ Q[row])[start : start + width], rtol=0.01, atol=0.01)
            np.testing.assert_allclose(first_k, (w_k @ K[0])[start : start + width], rtol=0.01, atol=0.01)
            assert close(float(result), first_q[0])
            # the join: ΔE = W_o [o(1); ...; o(h)], with this head's o as step 5 printed it
            concat, delta = vectors(combine)[:2]
            output = numbers_in(steps[5].note.split("= [")[-1])
            np.testing.assert_allclose(concat[start : start + width], output, rtol=2e-3, atol=2e-4)
            np.testing.assert_allclose(delta, w_o @ np.array(concat), rtol=0.01, atol=0.01)
            # the residual: e + ΔE, with the query's own input
            own, delta_again, result = vectors(residual)[0], vectors(residual)[1], vectors(residual)[-1]
            assert own == pytest.approx(Q[row].tolist()) and delta_again == pytest.approx(delta)
            np.testing.assert_allclose(result, np.array(own) + np.array(delta), rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_additive_worked_pair_reads_the_features_the_score_computed(heads, seed):
    """The trace carries W_q q and W_k k as the score computed them, and step 1's worked pair adds those: the same
    line as computing them again from the seeded module."""
    from dataclasses import replace

    from attnviz.core.multihead import multi_head_attend
    from attnviz.core.scores import seeded_module
    from attnviz.lessons.explain import score_working

    q, k, v = (torch.tensor(a, dtype=torch.float32) for a in (Q, K, K))  # values of 4 numbers: two heads split them
    trace = multi_head_attend(q, k, v, num_heads=heads, score="additive", seed=seed, num_hiddens=6)
    for head in trace.heads:
        module = seeded_module("additive", head.queries.shape[-1], head.keys.shape[-1], head.score_params, q.dtype)
        assert tuple(head.features["W_q q"].shape) == (3, 6) and tuple(head.features["W_k k"].shape) == (4, 6)
        torch.testing.assert_close(head.features["W_q q"], module.W_q(head.queries), rtol=0, atol=1e-6)
        torch.testing.assert_close(head.features["W_k k"], module.W_k(head.keys), rtol=0, atol=1e-6)
        for row, key in ((0, 0), (2, 3), (1, 2)):
            worked = score_working(head, row, key)
            assert worked == score_working(replace(head, features={}), row, key)  # computed again: the same line
            hidden = numbers_in(worked.split(r"\tanh")[0].split("=", 1)[1])
            by_hand = (module.W_q(head.queries[row]) + module.W_k(head.keys[key])).tolist()
            assert len(hidden) == 6 and all(close(a, b) for a, b in zip(hidden, by_hand, strict=True))


@pytest.mark.perf
def test_the_additive_worked_pair_makes_no_product_again():
    """A speed pin, not a result: the worked pair reads W_q q and W_k k from the trace instead of computing the two
    products again (each a torch call that lets go of Python's lock while a class waits); it only adds them."""
    from attnviz.core.multihead import multi_head_attend
    from attnviz.lessons.explain import score_working

    q, k = (torch.tensor(a, dtype=torch.float32) for a in (Q, K))
    head = multi_head_attend(q, k, k, score="additive", num_hiddens=6).heads[0]
    with TorchCalls() as calls:
        score_working(head, 2, 3)
    assert "linear" not in calls.names and calls.names.count("add") == 1, calls.names


def test_a_batched_trace_gives_each_row_its_own_features():
    from attnviz.core.multihead import multi_head_attend

    q = torch.tensor(np.stack([Q, -Q]), dtype=torch.float32)
    k, v = (torch.tensor(np.stack([a, a]), dtype=torch.float32) for a in (K, V))
    trace = multi_head_attend(q, k, v, score="additive")
    assert tuple(trace.heads[0].features["W_q q"].shape) == (2, 3, 8)
    for b in range(2):
        row = trace.heads[0].batch_row(b)
        assert torch.equal(row.features["W_q q"], trace.heads[0].features["W_q q"][b])
        assert torch.equal(row.features["W_k k"], trace.heads[0].features["W_k k"][b])
    assert not torch.equal(trace.heads[0].features["W_q q"][0], trace.heads[0].features["W_q q"][1])
