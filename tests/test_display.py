"""attnviz.show and the traces' display in IPython: the app's figures, their tables and a worked row in one HTML
document that fetches nothing (Plotly inlined)."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import plotly.offline
import pytest
import torch

import attnviz
from attnviz import notebook
from attnviz.core.modern import modern_attention
from attnviz.models.bert import load_minilm
from attnviz.notebook import figures_for, to_html
from tests.messages import message, pattern

ROOT = Path(__file__).resolve().parent.parent


def _outside_plotly(page: str) -> str:
    """The document without the inlined Plotly bundle (whose source mentions map-tile servers it never calls here)."""
    bundle = plotly.offline.get_plotlyjs()
    assert page.count(bundle) == 1, "Plotly is inlined exactly once"
    return page.replace(bundle, "")


@pytest.fixture(autouse=True)
def _kernel_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether this process's notebook outputs carried Plotly's library yet, as it was before the test."""
    monkeypatch.setattr(notebook, "_library_sent", notebook._library_sent)


def _shown(obj: object) -> str:
    """The HTML an IPython shell shows for `obj` (the formatter `import attnviz` registers) as a new kernel's first
    output: the one that carries Plotly's library."""
    from IPython.core.interactiveshell import InteractiveShell

    notebook._library_sent = False
    shell = InteractiveShell.instance()
    assert attnviz.register_notebook_display(shell)
    data, _ = shell.display_formatter.format(obj)
    return data["text/html"]


def _trace() -> attnviz.AttentionTrace:
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    values = torch.tensor([[10.0], [20.0], [30.0]])
    queries = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    return attnviz.attend(queries, keys, values, valid_lens=torch.tensor([2, 3]))


def test_an_attention_trace_shows_its_weights_tables_and_a_worked_row():
    trace = _trace()
    page = _outside_plotly(_shown(trace))
    assert page.count("Plotly.newPlot(") == 1 and not page.startswith("<!DOCTYPE")  # a notebook output's fragment
    figure = figures_for(trace)[0]
    assert figure.data[0].type == "heatmap" and figure.data[0].name == "weights"
    assert message("frame.table") in page and message("display.worked_row", row=1) in page
    assert re.search(r"<h4>1\. " + pattern("explain.score").pattern, html.unescape(page))
    # the formulas are MathML, which a browser draws without fetching a typesetter; no LaTeX source is left
    assert page.count('<math display="block">') == 5 and "\\frac" not in page and "\\mathbf" not in page
    assert '<mi mathvariant="bold">q</mi>' in page  # vectors in bold (the style makes them upright)
    # query 1 may see keys 1 and 2 only (valid length 2): its weight on key 3 is exactly 0, and the table says so
    weights = trace.weights[0].tolist()
    assert weights[2] == 0.0
    assert f"<td>{weights[0]:.4g}</td><td>{weights[1]:.4g}</td>" in page


def test_every_trace_type_displays_itself_offline():
    heads = attnviz.self_attention(torch.randn(5, 8), num_heads=2, projections="random")
    modern = modern_attention(torch.randn(6, 16), num_heads=4, kv_heads=2, positions="rope")
    model = load_minilm().run("the cat sat on the mat")
    batched = attnviz.attend(torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2))
    for obj, charts in ((heads, 1), (modern, 1), (model, 2), (batched, 2)):  # a model: the model and head views
        page = _outside_plotly(_shown(obj))
        assert page.count("Plotly.newPlot(") == charts, type(obj).__name__
        assert not re.search(r"https?://|src=|href=", page), type(obj).__name__
    grid = figures_for(modern)[0]
    assert sum(trace.type == "heatmap" and trace.name != "masked" for trace in grid.data) == 4  # a panel per head


def test_show_writes_one_offline_file_in_a_script_and_opens_it_when_asked(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    script = (
        "import torch, attnviz\n"
        "trace = attnviz.attend(torch.eye(3), torch.eye(3), torch.eye(3), causal=True)\n"
        "print(attnviz.show(trace, 'weights.html', lang='zh-Hans', open_browser=True))\n"
    )
    env = {**os.environ, "BROWSER": str(browser), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    written = tmp_path / "weights.html"
    assert result.stdout.strip() == "weights.html" and written.exists()
    page = written.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<html lang="zh-Hans">' in page
    assert "写出计算过程：查询 1" in page  # the worked row in Chinese, and the chart's title (JSON writes it escaped)
    assert json.dumps("注意力权重").strip('"') in page
    assert not re.search(r"https?://|src=|href=", _outside_plotly(page))
    assert opened.read_text().strip() == written.resolve().as_uri()


def test_user_labels_are_text_never_markup():
    trace = load_minilm().run("a b")  # [CLS] a b [SEP]: four tokens, relabelled as a hostile user's text
    hostile = dataclasses.replace(trace, tokens=["<script>alert(1)</script>", "a", "b", "[SEP]"])
    outside = _outside_plotly(to_html(hostile))
    assert "<script>alert(1)" not in outside and "&lt;script&gt;alert(1)" in outside


def test_anything_else_is_refused_with_what_it_takes():
    with pytest.raises(TypeError, match="AttentionTrace"):
        attnviz.show(42)


def test_a_document_of_charts_as_the_app_sends_them_keeps_their_numbers(tmp_path):
    """The app's share box gives `html_document` each chart's JSON as sent to the browser, with its arrays as
    base64 typed arrays: the document's tables read the numbers back exactly."""
    from attnviz.app.ui.plotly_element import figure_json
    from attnviz.lessons.explain import explain_row
    from attnviz.notebook import Chart, Worked, html_document

    trace = _trace()
    figure = figures_for(trace)[0]
    spec, _ = figure_json(figure)
    assert '"bdata"' in spec  # the arrays really are typed arrays here
    steps = tuple(explain_row(trace, 1, "q2", ["k1", "k2", "k3"], "zh-Hans"))
    page = html_document(
        [Chart(spec, "weights"), Worked("写出计算过程", steps)],
        lang="zh-Hans",
        title="自注意力 · attnviz",
        heading="自注意力",
        intro="<b>not markup</b>",
        link="https://example.org/self?q=1&k=2",
    )
    outside = _outside_plotly(page)
    assert "<h1>自注意力</h1>" in outside and "&lt;b&gt;not markup&lt;/b&gt;" in outside
    assert "<code>https://example.org/self?q=1&amp;k=2</code>" in outside  # the link as text, never as a reference
    assert not re.search(r"src=|href=", outside)
    weights = trace.weights[1].tolist()  # query 2 sees all three keys
    assert "<td>q2</td>" + "".join(f"<td>{w:.4g}</td>" for w in weights) in outside
    assert outside.count("Plotly.newPlot(") == 1 and "<math" in outside


def test_formulas_are_mathml_with_signs_set_tight_and_the_source_when_unreadable():
    from attnviz.notebook import math

    worked = math(r"a = (-0.25) \times (-1.3) - 2")
    signs = worked.count('<mo form="prefix">&#x02212;</mo>')
    assert signs == 2 and worked.count("<mo>&#x02212;</mo>") == 1  # two signs, one subtraction
    assert worked.startswith('<div class="scroll"><math display="block">')  # scrolls by itself on a phone
    assert math("x_1", display=False).startswith('<span class="scroll"><math display="inline">')
    assert math(r"\begin{nothing} <b>") == r"<code>\begin{nothing} &lt;b&gt;</code>"


def _beside_chart_script() -> None:
    import streamlit as st

    from attnviz.app.ui.common import beside_chart

    charts, side = beside_chart()
    with charts:
        st.caption("the chart")
    if side is not None:
        with side:
            st.caption("beside it")


def test_the_charts_place_off_the_projector_is_the_page_itself_not_one_more_element() -> None:
    """Every element of a control's rerun costs the server (CHANGELOG.md, Performance history):
    off the projector the charts go where the page is, without a container of their own; on it, two columns."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_beside_chart_script).run()
    assert not at.exception
    assert [node.type for node in at.main.children.values()] == ["caption"]
    at = AppTest.from_function(_beside_chart_script)
    at.session_state["pm"] = "1"  # presentation mode, as the sidebar's switch or a link's pm=1 stores it
    at.run()
    assert not at.exception
    (row,) = at.main.children.values()
    assert row.type == "flex_container" and [column.type for column in row.children.values()] == ["column", "column"]


def test_importing_attnviz_in_ipython_registers_the_display_and_no_trace_knows_a_view():
    code = (
        "from IPython.core.interactiveshell import InteractiveShell; import sys; shell = InteractiveShell.instance(); "
        "import attnviz, torch; t = attnviz.attend(torch.ones(1, 2), torch.ones(3, 2), torch.ones(3, 1)); "
        "assert 'plotly' not in sys.modules; data, _ = shell.display_formatter.format(t); "
        "assert 'Plotly.newPlot(' in data['text/html'] and 'plotly' in sys.modules; "
        "assert not any(hasattr(cls, '_repr_html_') for cls in (attnviz.AttentionTrace, attnviz.MultiHeadTrace)); "
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_kernels_later_outputs_use_the_library_its_first_output_carried():
    """Ten traces made a 47 MB notebook, each output carrying Plotly's 4.7 MB: the first carries it, the later ones
    draw with it (tests/browser/test_display.py draws them in Chromium, and says why when it is gone)."""
    first = _shown(_trace())
    later = [to_html(_trace(), document=False) for _ in range(9)]
    bundle = plotly.offline.get_plotlyjs()
    assert first.count(bundle) == 1 and all(bundle not in page for page in later)
    assert all("Plotly.newPlot(" in page and "window.Plotly" in page for page in later)
    assert sum(len(page) for page in [first, *later]) < len(bundle) + 2**20
    assert to_html(_trace()).count(bundle) == 1  # an offline file always carries it
