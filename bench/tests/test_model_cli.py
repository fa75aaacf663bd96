"""`python -m bench.model`: it prints what it measured (it used to print nothing), and a missing model in one line."""

from __future__ import annotations

import json

import pytest

from attnviz.models.bert import ModelUnavailableError
from bench import model


def test_the_model_benchmark_prints_its_figures_as_json(monkeypatch, capsys):
    monkeypatch.setattr(model, "load_times", lambda runs: {"load_s_median": 1.25, "runs": runs})
    monkeypatch.setattr(model, "compute_times", lambda repeats: {"128": {"p50_ms": 42.5}, "repeats": repeats})
    model.main(["--runs", "2", "--repeats", "4"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == {
        "load": {"load_s_median": 1.25, "runs": 2},
        "compute": {"128": {"p50_ms": 42.5}, "repeats": 4},
    }


def test_a_missing_model_is_said_in_one_line(monkeypatch):
    def missing(runs):
        raise ModelUnavailableError("model_missing", model="MiniLM")

    monkeypatch.setattr(model, "load_times", missing)
    with pytest.raises(SystemExit) as stopped:
        model.main([])
    said = str(stopped.value.code)
    assert said.startswith("bench.model: ") and "\n" not in said
    assert str(ModelUnavailableError("model_missing", model="MiniLM")) in said
