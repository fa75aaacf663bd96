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

from attnviz.attention import attend
from attnviz.explain import explain_row
from attnviz.i18n import t
from attnviz.scores import SCORES
from attnviz.ui.widgets import _cell, merged_table

Q = np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0], [-0.75, 0.5, 1.0, -2.0]])
K = np.array([[1.0, 0.5, -0.5, 0.0], [0.0, 2.0, 1.0, -1.0], [-1.0, 0.25, 0.5, 1.5], [0.5, -0.5, -1.0, 2.0]])
V = np.array([[1.0, -2.0, 0.5], [0.0, 1.5, -1.0], [2.5, 0.5, 0.0], [-1.0, 1.0, 3.0]])
TEMPERATURE = 0.7
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
    trace = attend(
        torch.tensor(Q, dtype=torch.float32),
        torch.tensor(K, dtype=torch.float32),
        torch.tensor(V, dtype=torch.float32),
        score=score,
        temperature=TEMPERATURE,
        **MASKS[mask],
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
            by_hand = hand_score(score, Q[row], K[j], trace.score_params)
            if by_hand is not None:
                assert close(a[j], by_hand), (score, row, j, a[j], by_hand)
        assert "\\sqrt" not in steps[0].formula  # a is the score itself; the 1/√d belongs to step 2 only
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
