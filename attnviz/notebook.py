"""See a trace outside the app: the app's figures, their numbers as tables and a worked row, as one HTML document
with Plotly's JavaScript inlined and the formulas as MathML (nothing is fetched: it opens from a USB stick in an exam
room).

In IPython or Jupyter, a trace is shown with `to_html` (IPython's HTML formatter, registered by `import attnviz`), or
call `attnviz.show(trace)`. In a plain script, `show(trace, path="attention.html")` writes the file, and
`open_browser=True` opens it. The app's share box makes the same kind of file of the page as it is (`html_document`).
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import re
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import latex2mathml.converter
import numpy as np
import plotly.graph_objects as go
import plotly.io
import plotly.offline
import torch

from attnviz.core.trace import AttentionTrace
from attnviz.figures.attention import AttentionGrid, figure_tables, heads_grid, weights_heatmap
from attnviz.figures.model import model_view
from attnviz.figures.style import WEIGHTS_PALETTE
from attnviz.i18n import DEFAULT_LANGUAGE, t
from attnviz.lessons.explain import Step, explain_kernel_row, explain_row
from attnviz.models.bert_views import pooled_labels, thumbnails

# A table keeps its first rows and columns (the chart has them all): at 1,024 tokens the whole head view would be a
# million cells, and a table of 64 rows of 1,024 columns alone slowed the file's opening by a second
MAX_TABLE_ROWS = 64
MAX_TABLE_COLUMNS = 64
_IDS = itertools.count(1)  # element ids unique within a notebook's page, where several outputs share one document
_library_sent = False  # whether this kernel's notebook outputs have carried Plotly's library yet

# After each chart: draw it, with a second download button for SVG beside Plotly's PNG one, and without the button
# that uploads the chart to Plotly's cloud (the file is for places without a network, and for data kept private).
# In a notebook, Plotly's library comes once, with the kernel's first output (`_library_sent`): a later output's
# chart waits for it (the outputs of a notebook that is opened again run in order), and says so if it never comes.
_DRAW = """<script>(function () {{
  var gd = document.getElementById({id});
  var waiting = gd.previousElementSibling;
  var draw = function () {{
    var svg = {{name: {svg_name}, icon: Plotly.Icons.camera, click: function (g) {{
      Plotly.downloadImage(g, {{format: "svg", filename: {file}}}); }}}};
    var config = {{displaylogo: false, showSendToCloud: false, responsive: true, modeBarButtonsToAdd: [svg],
      toImageButtonOptions: {{format: "png", filename: {file}, scale: 2}}}};
    var figure = {figure};
    Plotly.newPlot(gd, figure.data, figure.layout, config);
    if (waiting && waiting.className === "attnviz-no-script") waiting.remove();
  }};
  if (window.Plotly) {{ draw(); return; }}
  var tries = 0;
  var timer = setInterval(function () {{
    if (window.Plotly) {{ clearInterval(timer); draw(); }}
    else if (++tries >= 100 && waiting) {{ clearInterval(timer); waiting.textContent = {no_library}; }}
  }}, 100);
}})();</script>"""

# MathML Core (Chromium, Firefox, Safari) draws \mathbf as bold only through Unicode letters, which LaTeX-to-MathML
# does not use: the style makes mathvariant="bold" upright and bold, as a vector is printed.
_STYLE = """<style>
.attnviz { font-family: system-ui, sans-serif; max-width: 1100px; overflow-wrap: anywhere; }
.attnviz table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
.attnviz .scroll { overflow-x: auto; max-width: 100%; }
.attnviz span.scroll { display: inline-block; vertical-align: middle; }
.attnviz td, .attnviz th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.attnviz th { background: #f4f4f4; }
.attnviz code { background: #f4f4f4; padding: 1px 4px; overflow-wrap: anywhere; }
.attnviz details { margin: 0.5em 0; }
.attnviz math [mathvariant="bold"] { font-weight: bold; font-style: normal; text-transform: none; }
</style>"""


@dataclass(frozen=True)
class Chart:
    """A chart of a document: its figure as JSON, as Plotly.js takes it (arrays may be base64 typed arrays, as the
    app sends them); the name of its PNG and SVG downloads; and the figure itself when at hand (for its tables)."""

    spec: str
    name: str
    figure: go.Figure | None = None

    @classmethod
    def of(cls, figure: go.Figure, name: str) -> Chart:
        return cls(plotly.io.to_json(figure, validate=False), name, figure)


@dataclass(frozen=True)
class Worked:
    """A worked computation of a document: a heading and its steps (formulas, notes and tables)."""

    heading: str
    steps: tuple[Step, ...]


def figures_for(
    obj: Any, *, lang: str = DEFAULT_LANGUAGE, palette: str = WEIGHTS_PALETTE, layer: int = 1, head: int = 1
) -> list[go.Figure]:
    """The figures the app draws for `obj`: a trace's weights (masked cells marked, scores on hover), every head of
    a multi-head or modern trace; for a model trace, every layer's heads (the model view, pooled as the app pools a
    long input) and the full weights of head `head` of layer `layer` (the head view; both counted from 1)."""
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
                AttentionGrid(weights.numpy(), torch.stack(masks).numpy()),
                palette=palette,
                columns=min(4, len(heads)),
                lang=lang,
            )
        ]
    layers = getattr(obj, "layers", None)
    if isinstance(layers, list) and layers and hasattr(obj, "tokens"):  # the app's model (BertTrace)
        return _model_figures(
            "", AttentionGrid(obj.attentions, None, obj.tokens, obj.tokens), lang, palette, layer, head
        )
    parts = getattr(obj, "parts", None)
    if isinstance(parts, dict):  # a Hugging Face model's trace: each stack's model view, then its head view
        figures = []
        for part in parts.values():
            title = t(f"display.part_{part.part}", lang)
            stack = AttentionGrid(part.weights, part.mask, part.query_tokens, part.key_tokens)
            figures += _model_figures(title, stack, lang, palette, layer, head)
        return figures
    raise TypeError(f"attnviz can show an AttentionTrace, a multi-head or modern trace, or a model trace; got {obj!r}")


def _model_figures(title: str, stack: AttentionGrid, lang: str, palette: str, layer: int, head: int) -> list[go.Figure]:
    """Every layer's heads of one stack (weights (L, h, Q, K) as tensors, the mask (Q, K) or None) as thumbnails,
    max-pooled to MAX_THUMBNAIL tokens a side (the app's rule), the chosen head outlined; then that head's weights,
    every token (a decoder's future keys marked masked)."""
    weights, mask = stack.weights, stack.mask
    queries, keys = list(stack.query_labels or ()), list(stack.key_labels or ())
    layers, heads = weights.shape[:2]
    if not (1 <= layer <= layers and 1 <= head <= heads):
        raise ValueError(f"this model has layers 1 to {layers} and heads 1 to {heads}; got layer {layer}, head {head}")
    views, _ = thumbnails(weights, list(range(len(queries))), list(range(len(keys))))
    overview = model_view(
        views.numpy(),
        row_labels=pooled_labels(queries, views.shape[-2]),
        col_labels=pooled_labels(keys, views.shape[-1]),
        selected_layer=layer,
        selected_heads=(head,),
        palette=palette,
        lang=lang,
    )
    if title:
        overview.update_layout(title={"text": title})
    which = t("model.which_one", lang, head=head)
    chosen = weights[layer - 1, head - 1]
    # the mask: what the model never lets through (a decoder's future keys)
    drawn = AttentionGrid(chosen.numpy(), None if mask is None else mask.numpy(), queries, keys)
    detail = weights_heatmap(
        drawn,
        title=(f"{title} · " if title else "") + t("model.head_view_title", lang, layer=layer, which=which),
        palette=palette,
        lang=lang,
    )
    return [overview, detail]


def _weights(trace: AttentionTrace, lang: str, palette: str, suffix: str = "") -> go.Figure:
    return weights_heatmap(
        AttentionGrid(trace.weights.numpy(), trace.mask.numpy()),
        scores=trace.scores.numpy(),
        title=t("fig.attention_weights", lang) + suffix,
        palette=palette,
        colour_range="data",
        lang=lang,
    )


def _chart(chart: Chart, lang: str) -> str:
    """A chart's <div> and the script that draws it (Plotly must be loaded before). Before it, a line the script
    removes: where scripts do not run (a notebook Jupyter does not trust), it says why no chart is there."""
    element = f"attnviz-{next(_IDS)}"
    figure = chart.spec.replace("</", "<\\/")  # never ends the <script> early
    name = json.dumps(chart.name)
    no_library = json.dumps(t("display.no_library", lang)).replace("</", "<\\/")
    script = _DRAW.format(
        id=json.dumps(element), svg_name=json.dumps("SVG"), file=name, figure=figure, no_library=no_library
    )
    waiting = f'<p class="attnviz-no-script">{html.escape(t("display.no_script", lang))}</p>'
    return f'{waiting}<div id="{element}" style="width:100%"></div>{script}'


def _figure(chart: Chart) -> go.Figure:
    """The chart's figure: the one at hand, or read back from its JSON (base64 typed arrays decoded)."""
    if chart.figure is not None:
        return chart.figure
    return go.Figure(_arrays(json.loads(chart.spec)), skip_invalid=True)


def _arrays(value: Any) -> Any:
    """`value` with Plotly's base64 typed arrays ({"dtype", "bdata", "shape"}) as numpy arrays."""
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            shape = value.get("shape")
            if shape:
                array = array.reshape([int(n) for n in str(shape).split(",")])
            return array
        return {key: _arrays(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_arrays(item) for item in value]
    return value


def _tables(chart: Chart, lang: str) -> str:
    parts = []
    for name, columns, rows in figure_tables(_figure(chart)):
        if name:
            parts.append(f"<p><b>{html.escape(html.unescape(name))}</b></p>")
        parts.append(_table(columns, rows, lang) if rows else f"<p>{html.escape(t('frame.table_too_large', lang))}</p>")
    if not parts:
        return ""
    return f"<details><summary>{html.escape(t('frame.table', lang))}</summary>{''.join(parts)}</details>"


def _table(columns: list[Any], rows: list[list[Any]], lang: str) -> str:
    """A table of its first MAX_TABLE_ROWS rows and, after the first (the labels), MAX_TABLE_COLUMNS columns."""

    def cell(value: Any, tag: str) -> str:
        text = "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)
        return f"<{tag}>{html.escape(html.unescape(text))}</{tag}>"  # figure labels arrive escaped once already

    width = 1 + MAX_TABLE_COLUMNS
    head = "".join(cell(c, "th") for c in columns[:width])
    body = "".join("<tr>" + "".join(cell(v, "td") for v in row[:width]) + "</tr>" for row in rows[:MAX_TABLE_ROWS])
    table = f'<div class="scroll"><table><tr>{head}</tr>{body}</table></div>'
    if len(rows) > MAX_TABLE_ROWS or len(columns) > width:
        shown = {"rows": min(len(rows), MAX_TABLE_ROWS), "columns": min(len(columns), width) - 1}
        cut = t("display.table_cut", lang, **shown, total_rows=len(rows), total_columns=len(columns) - 1)
        table += f"<p><small>{html.escape(cut)}</small></p>"
    return table


# A minus right after an opening bracket, a comma or another operator is a sign, not a subtraction
_UNARY_MINUS = re.compile(
    r"(<mo[^>]*>(?:\[|&#x(?:00028|0005B|0003D|000D7|0002B|0002C|02212|0002F|022C5);)</mo>)<mo>&#x02212;</mo>"
)


# What attnviz.lessons.explain writes for a character LaTeX would interpret, inside \text{...}, and the character
# it shows.
_TEXT_ESCAPES = {
    r"\backslash{}": "\\",
    r"\hat{}": "^",
    r"\sim{}": "~",
    **{"\\" + char: char for char in "{}$&#%_"},
}
_PLACEHOLDER = 0xE000  # a private-use character per \text{...}, which the converter passes through as it is
_TEXT_START = "\\text{"


def _text_argument(latex: str, start: int) -> tuple[str, int]:
    r"""The text of the \text{...} whose argument starts at `start`, its escapes undone, and the index of its closing
    brace (or the end)."""
    chars, depth, i = [], 1, start
    while i < len(latex):
        escape = next((e for e in _TEXT_ESCAPES if latex.startswith(e, i)), None)
        if escape is not None:
            chars.append(_TEXT_ESCAPES[escape])
            i += len(escape)
            continue
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        if depth == 0:
            break
        chars.append(latex[i])
        i += 1
    return "".join(chars), i


def _protect_texts(latex: str) -> tuple[str, list[str]]:
    r"""The formula with each \text{...}'s text replaced by one placeholder character, and those texts.

    The converter copies a \text's characters into MathML as they are (a token `<s>` became an <s> element, which
    struck through the rest of the file) and misreads its escapes (\} ends the text early), so the texts go around it
    and are put back escaped."""
    pieces, texts, i = [], [], 0
    while (found := latex.find(_TEXT_START, i)) >= 0 and len(texts) < 6400:  # the private-use area's size
        text, end = _text_argument(latex, found + len(_TEXT_START))
        pieces.append(latex[i:found] + _TEXT_START + chr(_PLACEHOLDER + len(texts)) + "}")
        texts.append(text)
        i = end + 1
    pieces.append(latex[i:])
    return "".join(pieces), texts


def math(latex: str, display: bool = True) -> str:
    """LaTeX as MathML, which every current browser draws without fetching anything; the source, as code, in the
    rare case the converter cannot read it. Text in the formula (a student's tokens) is always escaped."""
    try:
        protected, texts = _protect_texts(latex)
        mathml = latex2mathml.converter.convert(protected, display="block" if display else "inline")
        for number, text in enumerate(texts):
            mathml = mathml.replace(chr(_PLACEHOLDER + number), html.escape(text, quote=False).replace(" ", "&#xA0;"))
        mathml = mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")  # HTML knows <math> without it
        mathml = _UNARY_MINUS.sub(r'\1<mo form="prefix">&#x02212;</mo>', mathml)  # "(−0.25)", not "( − 0.25)"
        tag = "div" if display else "span"  # a long formula scrolls by itself on a phone; the page does not
        return f'<{tag} class="scroll">{mathml}</{tag}>'
    except Exception:  # the converter's errors have no common base, and a formula must never stop a file
        return f"<code>{html.escape(latex)}</code>"


_INLINE_MATH = re.compile(r"\$([^$]+)\$")


def _latex_note(note: str) -> str:
    """An app-made note with $…$ formulas: the text escaped, each formula as MathML, a paragraph per line."""
    paragraphs = []
    for paragraph in note.split("\n\n"):
        pieces, last = [], 0
        for found in _INLINE_MATH.finditer(paragraph):
            pieces.append(html.escape(paragraph[last : found.start()]))
            pieces.append(math(found.group(1), display=False))
            last = found.end()
        pieces.append(html.escape(paragraph[last:]))
        paragraphs.append(f"<p>{''.join(pieces)}</p>")
    return "".join(paragraphs)


def _worked(worked: Worked, lang: str) -> str:
    """The worked steps: each step's title, its formula, its note and its table."""
    parts = []
    for step in worked.steps:
        parts.append(f"<h4>{step.number}. {html.escape(step.title)}</h4>{math(step.formula)}")
        if step.note and step.note_is_latex:
            parts.append(_latex_note(step.note))
        elif step.note:  # plain text, may quote the user's tokens
            parts.append(f"<p>{html.escape(step.note)}</p>")
        if step.rows:
            parts.append(_table(step.columns, step.rows, lang))
    heading = html.escape(worked.heading)
    return f"<details open><summary>{heading}</summary>{''.join(parts)}</details>"


def html_document(
    items: list[Chart | Worked],
    *,
    lang: str = DEFAULT_LANGUAGE,
    title: str = "attnviz",
    heading: str = "",
    intro: str = "",
    link: str | None = None,
    full: bool = True,
    max_bytes: int | None = None,
    library: bool = True,
) -> str:
    """One HTML document of `items` in order: each chart with its numbers as tables, each worked computation;
    under `heading` and the text `intro` when given, and `link`, the address that opens the same state in
    the app (as text: the file refers to nothing). `full=False`: the fragment a notebook output holds. Both carry
    Plotly's JavaScript inlined, so nothing is fetched; `library=False` leaves it out, for a fragment of a page
    that has it already (a notebook's later outputs). `max_bytes`: what the items may take besides Plotly's code
    (UTF-8); an item past it is left out, and the document says which."""
    parts = [_STYLE]
    if heading:
        parts.append(f"<h1>{html.escape(heading)}</h1>")
    if intro:
        parts.append(f"<p>{html.escape(intro)}</p>")
    if link:
        parts.append(f"<p>{html.escape(t('display.link', lang))} <code>{html.escape(link)}</code></p>")
    if library and any(isinstance(item, Chart) for item in items):
        parts.append(f"<script>{plotly.offline.get_plotlyjs()}</script>")
    used = 0
    for item in items:
        part = _chart(item, lang) + _tables(item, lang) if isinstance(item, Chart) else _worked(item, lang)
        size = len(part.encode("utf-8"))
        if max_bytes is not None and used + size > max_bytes:
            name = item.name if isinstance(item, Chart) else item.heading
            note = t("display.left_out", lang, name=name, limit=f"{max_bytes / 2**20:g}")
            part = f"<p><em>{html.escape(note)}</em></p>"
            size = 0
        used += size
        parts.append(part)
    body = f'<div class="attnviz">{"".join(parts)}</div>'
    if not full:
        return body
    return (
        f'<!DOCTYPE html><html lang="{html.escape(lang)}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title></head><body>{body}</body></html>"
    )


def to_html(
    obj: Any,
    *,
    row: int | None = 0,
    lang: str = DEFAULT_LANGUAGE,
    palette: str = WEIGHTS_PALETTE,
    title: str = "attnviz",
    document: bool = True,
    layer: int = 1,
    head: int = 1,
) -> str:
    """`obj`'s figures (see `figures_for`) with their numbers as tables and, for an unbatched AttentionTrace, query
    `row` worked out (None: no worked row). A whole HTML document, or (`document=False`) the fragment a notebook
    output holds. Nothing is fetched: a document carries Plotly's JavaScript inlined, and so does the first fragment
    of a kernel; the later ones use it (Plotly's own notebook renderer does the same), so that ten charts do not
    make a notebook of ten copies of the library."""
    figures = figures_for(obj, lang=lang, palette=palette, layer=layer, head=head)
    items: list[Chart | Worked] = [Chart.of(fig, f"{title}_{i}") for i, fig in enumerate(figures, start=1)]
    if isinstance(obj, AttentionTrace) and not obj.batched and row is not None:
        labels = [f"k{j + 1}" for j in range(obj.weights.shape[1])]
        if obj.distances is not None:  # Nadaraya–Watson: distances and kernel values, not scores
            steps = explain_kernel_row(obj, row, labels, lang)
        else:
            steps = explain_row(obj, row, f"q{row + 1}", labels, lang)
        items.append(Worked(t("display.worked_row", lang, row=row + 1), tuple(steps)))
    if document:
        return html_document(items, lang=lang, title=title)
    global _library_sent
    fragment = html_document(items, lang=lang, title=title, full=False, library=not _library_sent)
    _library_sent = True
    return fragment


def show(
    obj: Any,
    path: str | Path | None = None,
    *,
    open_browser: bool = False,
    row: int | None = 0,
    lang: str = DEFAULT_LANGUAGE,
    layer: int = 1,
    head: int = 1,
) -> Path | None:
    """Show `obj` inline in a notebook (an IPython kernel's HTML output); with `path`, or outside a notebook,
    write it as one offline HTML file (`attnviz.html` by default) and return its path; `open_browser` opens it."""
    if path is None and not open_browser and _in_notebook():
        from IPython.display import HTML, display  # present wherever a notebook runs

        display(HTML(to_html(obj, row=row, lang=lang, document=False, layer=layer, head=head)))
        return None
    target = Path(path if path is not None else "attnviz.html")
    target.write_text(to_html(obj, row=row, lang=lang, title=target.stem, layer=layer, head=head), encoding="utf-8")
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
