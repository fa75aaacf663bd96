"""See a trace outside the app: the app's figures, their numbers as tables and a worked row, as one HTML document
with Plotly's JavaScript inlined (nothing is fetched: it opens from a USB stick in an exam room).

In a notebook, a trace shows itself (`AttentionTrace._repr_html_` and the others call `to_html`), or call
`attnviz.show(trace)`. In a plain script, `show(trace, path="attention.html")` writes the file, and
`open_browser=True` opens it.
"""

from __future__ import annotations

import html
import itertools
import json
import webbrowser
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io
import plotly.offline
import torch

from attnviz.bert_views import pooled_labels, thumbnails
from attnviz.explain import Step, explain_kernel_row, explain_row
from attnviz.figures import figure_tables, heads_grid, weights_heatmap
from attnviz.i18n import DEFAULT_LANGUAGE, t
from attnviz.model_figures import model_view
from attnviz.plotting import WEIGHTS_PALETTE
from attnviz.trace import AttentionTrace

MAX_TABLE_ROWS = 64  # a chart's table beyond this many rows is left out of the document (the chart has them all)
_IDS = itertools.count(1)  # element ids unique within a notebook's page, where several outputs share one document

# After each chart: draw it, with a second download button for SVG beside Plotly's PNG one, and without the button
# that uploads the chart to Plotly's cloud (the file is for places without a network, and for data kept private).
_DRAW = """<script>(function () {{
  var gd = document.getElementById({id});
  var svg = {{name: {svg_name}, icon: Plotly.Icons.camera, click: function (g) {{
    Plotly.downloadImage(g, {{format: "svg", filename: {file}}}); }}}};
  var config = {{displaylogo: false, showSendToCloud: false, responsive: true, modeBarButtonsToAdd: [svg],
    toImageButtonOptions: {{format: "png", filename: {file}, scale: 2}}}};
  var figure = {figure};
  Plotly.newPlot(gd, figure.data, figure.layout, config);
}})();</script>"""

_STYLE = """<style>
.attnviz { font-family: system-ui, sans-serif; max-width: 1100px; }
.attnviz table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
.attnviz td, .attnviz th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.attnviz th { background: #f4f4f4; }
.attnviz pre { background: #f7f7f7; padding: 4px 8px; white-space: pre-wrap; }
.attnviz details { margin: 0.5em 0; }
</style>"""


def figures_for(obj: Any, *, lang: str = DEFAULT_LANGUAGE, palette: str = WEIGHTS_PALETTE) -> list[go.Figure]:
    """The figures the app draws for `obj`: a trace's weights (masked cells marked, scores on hover), every head of
    a multi-head or modern trace, the layers' heads of a model trace."""
    if isinstance(obj, AttentionTrace):
        if obj.batched:
            return [_weights(obj.batch_row(b), lang, palette, f" · batch {b}") for b in range(obj.weights.shape[0])]
        return [_weights(obj, lang, palette)]
    heads = getattr(obj, "heads", None)
    if isinstance(heads, list) and heads and isinstance(heads[0], AttentionTrace):  # MultiHeadTrace, ModernTrace
        weights = obj.weights if obj.weights.dim() == 3 else obj.weights[0]  # (h, Q, K)
        masks = [(h.mask if h.mask.dim() == 2 else h.mask[0]) for h in heads]
        return [
            heads_grid(
                weights.numpy(),
                mask=torch.stack(masks).numpy(),
                palette=palette,
                columns=min(4, len(heads)),
                lang=lang,
            )
        ]
    layers = getattr(obj, "layers", None)
    if isinstance(layers, list) and layers and hasattr(obj, "tokens"):  # a model's trace: one grid per layer
        return [
            heads_grid(
                layer.weights.numpy(),
                query_labels=obj.tokens,
                key_labels=obj.tokens,
                palette=palette,
                columns=min(6, layer.weights.shape[0]),
                lang=lang,
            ).update_layout(title={"text": t("fig.layer_n", lang, n=index + 1)})
            for index, layer in enumerate(layers)
        ]
    parts = getattr(obj, "parts", None)
    if isinstance(parts, dict):  # a Hugging Face model's trace: each stack as the app's model view (pooled when long)
        return [_model_view(part, lang, palette) for part in parts.values()]
    raise TypeError(f"attnviz can show an AttentionTrace, a multi-head or modern trace, or a model trace; got {obj!r}")


def _model_view(part: Any, lang: str, palette: str) -> go.Figure:
    """Every layer's heads of one stack as thumbnails, max-pooled to MAX_THUMBNAIL tokens a side (the app's rule)."""
    rows, cols = list(range(len(part.query_tokens))), list(range(len(part.key_tokens)))
    views, _ = thumbnails(part.weights, rows, cols)
    size = views.shape[-1], views.shape[-2]
    figure = model_view(
        views.numpy(),
        row_labels=pooled_labels(part.query_tokens, size[1]),
        col_labels=pooled_labels(part.key_tokens, size[0]),
        palette=palette,
        lang=lang,
    )
    return figure.update_layout(title={"text": t(f"display.part_{part.part}", lang)})


def _weights(trace: AttentionTrace, lang: str, palette: str, suffix: str = "") -> go.Figure:
    return weights_heatmap(
        trace.weights.numpy(),
        scores=trace.scores.numpy(),
        mask=trace.mask.numpy(),
        title=t("fig.attention_weights", lang) + suffix,
        palette=palette,
        colour_range="data",
        lang=lang,
    )


def _chart(fig: go.Figure, name: str) -> str:
    """A chart's <div> and the script that draws it (Plotly must be loaded before)."""
    element = f"attnviz-{next(_IDS)}"
    figure = plotly.io.to_json(fig, validate=False).replace("</", "<\\/")  # never ends the <script> early
    script = _DRAW.format(id=json.dumps(element), svg_name=json.dumps("SVG"), file=json.dumps(name), figure=figure)
    return f'<div id="{element}" style="width:100%"></div>{script}'


def _table(columns: list[Any], rows: list[list[Any]]) -> str:
    def cell(value: Any, tag: str) -> str:
        text = "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)
        return f"<{tag}>{html.escape(html.unescape(text))}</{tag}>"  # figure labels arrive escaped once already

    head = "".join(cell(c, "th") for c in columns)
    body = "".join("<tr>" + "".join(cell(v, "td") for v in row) + "</tr>" for row in rows[:MAX_TABLE_ROWS])
    return f"<table><tr>{head}</tr>{body}</table>"


def _steps(steps: list[Step]) -> str:
    """The worked row: each step's title, its formula (LaTeX source: no typesetting is fetched), note and table."""
    parts = []
    for step in steps:
        parts.append(f"<h4>{step.number}. {html.escape(step.title)}</h4><pre>{html.escape(step.formula)}</pre>")
        if step.note:
            parts.append(f"<p>{html.escape(step.note)}</p>")
        if step.rows:
            parts.append(_table(step.columns, step.rows))
    return "".join(parts)


def to_html(
    obj: Any,
    *,
    row: int | None = 0,
    lang: str = DEFAULT_LANGUAGE,
    palette: str = WEIGHTS_PALETTE,
    title: str = "attnviz",
    document: bool = True,
) -> str:
    """`obj`'s figures with their numbers as tables and, for an unbatched AttentionTrace, query `row` worked out
    (None: no worked row). A whole HTML document, or (`document=False`) the fragment a notebook output holds; both
    carry Plotly's JavaScript inlined, so nothing is fetched."""
    figures = figures_for(obj, lang=lang, palette=palette)
    parts = [_STYLE, f"<script>{plotly.offline.get_plotlyjs()}</script>"]
    for index, fig in enumerate(figures, start=1):
        parts.append(_chart(fig, f"{title}_{index}"))
        tables = "".join(
            (f"<p><b>{html.escape(html.unescape(name))}</b></p>" if name else "") + _table(columns, rows)
            for name, columns, rows in figure_tables(fig)
            if rows
        )
        if tables:
            parts.append(f"<details><summary>{html.escape(t('frame.table', lang))}</summary>{tables}</details>")
    if isinstance(obj, AttentionTrace) and not obj.batched and row is not None:
        labels = [f"k{j + 1}" for j in range(obj.weights.shape[1])]
        if obj.distances is not None:  # Nadaraya–Watson: distances and kernel values, not scores
            steps = explain_kernel_row(obj, row, labels, lang)
        else:
            steps = explain_row(obj, row, f"q{row + 1}", labels, lang)
        heading = html.escape(t("display.worked_row", lang, row=row + 1))
        parts.append(f"<details open><summary>{heading}</summary>{_steps(steps)}</details>")
    body = f'<div class="attnviz">{"".join(parts)}</div>'
    if not document:
        return body
    return (
        f'<!DOCTYPE html><html lang="{html.escape(lang)}"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head><body>{body}</body></html>"
    )


def show(
    obj: Any,
    path: str | Path | None = None,
    *,
    open_browser: bool = False,
    row: int | None = 0,
    lang: str = DEFAULT_LANGUAGE,
) -> Path | None:
    """Show `obj` inline in a notebook (an IPython kernel's HTML output); with `path`, or outside a notebook,
    write it as one offline HTML file (`attnviz.html` by default) and return its path; `open_browser` opens it."""
    if path is None and not open_browser and _in_notebook():
        from IPython.display import HTML, display  # present wherever a notebook runs

        display(HTML(to_html(obj, row=row, lang=lang, document=False)))
        return None
    target = Path(path if path is not None else "attnviz.html")
    target.write_text(to_html(obj, row=row, lang=lang, title=target.stem), encoding="utf-8")
    if open_browser:
        webbrowser.open(target.resolve().as_uri())
    return target


def _in_notebook() -> bool:
    """True inside an IPython kernel (a notebook), not a plain script or a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")
