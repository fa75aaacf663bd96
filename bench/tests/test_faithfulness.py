"""`python -m bench.faithfulness`: its table function on two sentences and five repeats, and the README quoting the
last recorded table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import faithfulness
from bench.faithfulness_report import markdown, signed, summary_table

ROOT = Path(__file__).resolve().parents[2]
TWO = ["Dogs bark at night.", "Is the bank closed on Sunday?"]  # two short ones: the test stays within seconds


@pytest.fixture(scope="module")
def small():
    return faithfulness.faithfulness_table(TWO, 5)


def in_range(value: float) -> bool:
    return -1.0 <= value <= 1.0


def test_the_table_runs_on_two_sentences_and_five_repeats_and_every_rho_is_a_correlation(small):
    minilm, induction = small["minilm"], small["induction"]
    assert minilm["count"] == 2 and [row["sentence"] for row in minilm["rows"]] == TWO
    assert induction["repeats"] == 5
    for row in minilm["rows"]:
        assert set(row["rho"]) == {*faithfulness.MINILM_METHODS, *faithfulness.VARIANTS}
        assert all(in_range(rho) for rho in row["rho"].values()), row["rho"]
    for method in faithfulness.MINILM_METHODS:  # the mean is the mean of the two rows
        expected = (minilm["rows"][0]["rho"][method] + minilm["rows"][1]["rho"][method]) / 2
        assert minilm["mean"][method] == pytest.approx(expected)
    assert set(induction["mean"]) == {*faithfulness.INDUCTION_METHODS, *faithfulness.EVERY_POSITION}
    assert all(in_range(rho) for rho in induction["mean"].values()), induction["mean"]


def test_full_stops_are_counted_in_the_sentences_that_have_one(small):
    minilm = small["minilm"]
    assert [row["stop"] for row in minilm["rows"]] == [True, False]  # the question ends with "?"
    assert minilm["with_stop"] == 1
    assert minilm["rows"][0]["tokens"] == 7  # [CLS] dogs bark at night . [SEP]
    for method, count in minilm["stop_first"].items():
        assert count == sum(row["first"][method] == "." for row in minilm["rows"]) <= 1


def test_every_position_reads_each_prediction_of_the_repeat_after_its_first():
    from attnviz.models.learned.induction import RepeatExample

    example = RepeatExample(
        ("A", "B", "C", "D")
    )  # <s> A B C D A B C D: B, C, D predicted in turn (not A, the repeat's first)
    prefixes = [faithfulness.Prefix(example.half, end).tokens for end in range(6, 9)]
    assert prefixes[0] == ["<s>", "A", "B", "C", "D", "A", "B"]
    assert prefixes[-1] == example.tokens
    from attnviz.models.learned.train import checkpoint_path, load_run

    rhos = faithfulness.every_position(load_run(checkpoint_path("induction")).model, example)
    assert len(rhos["raw"]) == len(rhos["rollout"]) == 3  # B, C and D of the repeat
    assert all(in_range(rho) for rho in rhos["rollout"])


def test_the_report_signs_its_figures_and_has_the_tables_columns(small):
    assert (signed(0.754), signed(-0.454), signed(float("nan"))) == ("+0.75", "−0.45", "n/a")
    ablation = {"held_out": {"5": {"trained": 1.0}}, "other_draws": {"count": 5, "draws": 0, "range": {}}}
    report = markdown({"date": "2026-01-01", **small, "ablation": ablation})
    header = "| model | raw, last layer | rollout | flow | norm-based, last layer | gradient × input "
    header += "| integrated gradients |"
    assert header in report and "| MiniLM, mean-pooled embedding, 2 sentences |" in report
    assert '(ranks "." first in' in report and "| the first 5 held out | 100.0% |" in report


def last_recorded() -> Path:
    recorded = sorted((ROOT / "bench" / "results").glob("*-faithfulness.json"))
    assert recorded, "no bench/results/<date>-faithfulness.json: run python -m bench.faithfulness"
    return recorded[-1]


def test_the_readme_quotes_the_last_recorded_table():
    path = last_recorded()
    result = json.loads(path.read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in summary_table(result):
        assert line in readme, f"README.md should quote {path.name}'s table; missing: {line}"
    assert result["date"] in readme and "python -m bench.faithfulness" in readme
    assert not any(math.isnan(value) for value in result["minilm"]["mean"].values())


def test_a_quick_run_never_replaces_the_record(small, monkeypatch, tmp_path, capsys):
    ablation = {"held_out": {"5": {"trained": 1.0}}, "other_draws": {"count": 5, "draws": 0, "range": {}}}
    monkeypatch.setattr(faithfulness, "RESULTS", tmp_path)
    monkeypatch.setattr(faithfulness, "faithfulness_table", lambda sentences, repeats: small)
    monkeypatch.setattr(faithfulness, "ablation", lambda counts, draws: ablation)
    faithfulness.main(["--sentences", "2", "--repeats", "5", "--no-timing"])
    written = sorted(path.name.split("-", 3)[-1] for path in tmp_path.iterdir())
    assert written == ["faithfulness-quick.json", "faithfulness-quick.md"]
    assert "| MiniLM, mean-pooled embedding, 2 sentences |" in capsys.readouterr().out


@pytest.mark.parametrize("lang", ["en", "zh-Hans", "zh-Hant"])
def test_the_page_quotes_the_last_recorded_figures(lang):
    """The page's summary ("What the maps say over many inputs") gives each map's ρ of the last recorded run, in
    every language."""
    from attnviz.i18n import t

    result = json.loads(last_recorded().read_text(encoding="utf-8"))
    text = t("faithful.findings", lang)
    for model in ("minilm", "induction"):
        for method in ("raw", "rollout", "flow", "norm", "integrated"):
            assert signed(result[model]["mean"][method]) in text, (model, method)
    assert signed(result["minilm"]["mean"]["gradient"]) in text
