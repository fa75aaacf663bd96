"""Sessions that show the same state share its computation: a class following its teacher computes each change's
attention and draws its figures once, not once per student (AppTest sessions in one process, as on one server)."""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.ui import attention_results, common, kernel_page
from attnviz.figures import attention as attention_figures
from testkit.apptest import app_session, counting

ROOT = Path(__file__).resolve().parent.parent
SELF, KERNEL = "app_pages/self_attention.py", "app_pages/kernel_attention.py"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the self page computed attention, built its weights figure and worked its show-your-work steps, and
    the kernel page computed its regression."""
    calls = {"attention": 0, "figure": 0, "kernel": 0, "work": 0}
    monkeypatch.setattr(
        attention_results, "run_attention", counting(calls, "attention", attention_results.run_attention)
    )
    monkeypatch.setattr(
        attention_figures, "weights_heatmap", counting(calls, "figure", attention_figures.weights_heatmap)
    )
    monkeypatch.setattr(
        attention_results, "explain_attention", counting(calls, "work", attention_results.explain_attention)
    )
    monkeypatch.setattr(
        kernel_page, "run_kernel_and_curve", counting(calls, "kernel", kernel_page.run_kernel_and_curve)
    )
    return calls


def test_two_sessions_on_the_same_state_compute_it_once(counted):
    sentence = f"a sentence seen by nobody else {secrets.token_hex(4)}"  # nothing kept from another test
    first = session(SELF, counted, s=sentence)
    assert counted["attention"] >= 1 and counted["figure"] >= 1 and counted["work"] >= 1
    done = dict(counted)
    second = session(SELF, counted, s=sentence)  # a second student on the same page and state
    assert counted == done, "the second session computed again what the first had computed"
    assert second.number_input(key="w:self:temperature").value == pytest.approx(1.0)

    second.number_input(key="w:self:temperature").set_value(0.5).run()  # a new state: computed once more
    assert counted["attention"] == done["attention"] + 1 and counted["figure"] == done["figure"] + 1
    done = dict(counted)
    first.number_input(key="w:self:temperature").set_value(0.5).run()  # the first session follows: nothing new
    assert counted == done
    first.number_input(key="w:self:temperature").set_value(2.0).run()
    assert counted["attention"] == done["attention"] + 1


def test_the_kernel_page_shares_its_regression(counted):
    queries = f"{50 + secrets.randbelow(1000) / 100:.2f}"
    session(KERNEL, counted, q=queries)
    done = counted["kernel"]
    assert done >= 1
    session(KERNEL, counted, q=queries)
    assert counted["kernel"] == done
    session(KERNEL, counted, q=queries, bw="2.5")
    assert counted["kernel"] == done + 1


def test_shared_results_are_weighed_by_their_arrays():
    assert common.array_bytes(torch.zeros(10, 4)) == 160
    assert common.array_bytes(np.zeros(3, dtype=np.float64)) == 24
    assert common.array_bytes({"a": [torch.zeros(2), np.zeros(2, dtype=np.int8)], "b": "text"}) == 8 + 2 + 1
    assert common.array_bytes("nothing to weigh") == 1


def session(script: str, calls: dict[str, int], **params: str) -> AppTest:
    """A new session on `script` from a link with `params` (the home page it passes first draws a heatmap of its own,
    not counted in `calls`)."""
    before = dict(calls)
    return app_session(script, after_home=lambda: calls.update(before), **params)
