"""The notebooks in docs/ run from top to bottom in a real kernel, draw their charts inline and offline, and are kept
in the repository without outputs."""

from __future__ import annotations

import os
import re
import shutil
from html import unescape
from pathlib import Path

import nbformat
import plotly.offline
import pytest
from nbclient import NotebookClient

from tests.messages import message

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "docs" / "notebooks"


def _run(name: str, folder: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return notebook


def _html_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        output["data"]["text/html"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]


def test_the_committed_notebooks_hold_no_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert all(not cell.get("outputs") and cell.get("execution_count") is None
                   for cell in notebook.cells if cell.cell_type == "code"), path.name  # fmt: skip


def test_the_basics_notebook_draws_each_example_inline_and_writes_the_offline_file(tmp_path):
    notebook = _run("attention_basics.ipynb", tmp_path)
    outputs = _html_outputs(notebook)
    assert len(outputs) == 5  # Nadaraya–Watson, additive (2 batch rows, one output), causal, multi-head, modern
    bundle = plotly.offline.get_plotlyjs()
    # Plotly's library once, in the kernel's first output; the later ones use it (not 5 copies of 4.7 MB)
    assert [html.count(bundle) for html in outputs] == [1, 0, 0, 0, 0]
    assert sum(len(html) for html in outputs) < len(bundle) + 2**20
    for html in outputs:
        assert "Plotly.newPlot(" in html
        assert not re.search(r"https?://|src=|href=", html.replace(bundle, ""))
    assert outputs[1].count("Plotly.newPlot(") == 2  # a chart per batch row
    assert message("display.worked_row", row=3) in outputs[2]
    printed = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", []))
    assert "tensor([45.5000])" in printed
    written = tmp_path / "attention.html"
    assert written.exists() and written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_model_notebook_names_the_sdpa_fix_then_shows_the_real_heads(tmp_path):
    notebook = _run("any_model.ipynb", tmp_path)
    printed = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", []))
    assert "'sdpa', which returns no attention weights" in printed and 'attn_implementation="eager"' in printed
    from transformers import AutoTokenizer

    from attnviz.models.bert import model_dir

    count = len(AutoTokenizer.from_pretrained(model_dir())("The cat sat on the mat because it was tired.")["input_ids"])
    assert f"torch.Size([6, 12, {count}, {count}])" in printed  # MiniLM: 6 layers x 12 heads over the word pieces
    assert "Loading weights" not in printed  # the notebook switches the progress bars off
    outputs = _html_outputs(notebook)
    assert len(outputs) == 2 and all(message("display.part_encoder") in unescape(output) for output in outputs)
    which = [message("model.which_one", head=head) for head in (1, 12)]
    assert message("model.head_view_title", layer=1, which=which[0]) in outputs[0]
    assert message("model.head_view_title", layer=6, which=which[1]) in outputs[1]


@pytest.fixture(autouse=True)
def _no_stray_files(tmp_path):
    """Each notebook writes only into its own folder."""
    yield
    assert not (ROOT / "attention.html").exists()
    shutil.rmtree(tmp_path, ignore_errors=True)
