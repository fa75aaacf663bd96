"""Reusable controls: matrix editor, scoring picker, masks, share box, show-your-work panel."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import pyarrow as pa
import segno
import streamlit as st

from attnviz.explain import Step
from attnviz.fields import MAX_COLS, MAX_ROWS, Field, Matrix, format_number
from attnviz.links import link_problem, read_state_file, state_file
from attnviz.pipeline import matrix_from_cells
from attnviz.scores import SCORES
from attnviz.server import forget_upload
from attnviz.state import Decoded
from attnviz.ui import offline
from attnviz.ui.common import arrow_table, lazy_expander
from attnviz.ui.fieldwidgets import choice, number
from attnviz.ui.session import PageSession
from attnviz.ui.settings import current_language, error_text, labeller, md_escape, tr


def _frame(rows: list[list[object]], width: int) -> pd.DataFrame:
    """Cells as text: Streamlit's number column drops the "e" of 1e-3 (it stored -13), so the cells are text
    columns, read by `matrix_from_cells`, which takes 1e-3 and refuses, with a message, what is not a number."""
    columns = [f"d{j + 1}" for j in range(width)]
    cells = [[cell if isinstance(cell, str) else format_number(cell) for cell in row] for row in rows]
    return pd.DataFrame(cells, columns=columns, dtype="object")


def text_columns(frame: pd.DataFrame) -> dict[str, Any]:
    """An editor's column settings: every column a text column (numbers are typed as text, then parsed)."""
    return {c: st.column_config.TextColumn(c) for c in frame.columns}


def editor_cells(edited: pd.DataFrame) -> list[list[Any]]:
    """What an editor holds, row by row (None for an empty cell)."""
    return edited.astype(object).where(edited.notna(), None).values.tolist()


def matrix_editor(session: PageSession, name: str, label: str, help: str) -> Matrix | None:
    """An editable matrix (rows = tokens, columns = features). Returns the matrix, or None after an error.

    The editor's input is the matrix last loaded from the state (a link, a preset, a reset), never its own return
    value: feeding the output back in loses every second edit. A row still being typed is left out, with a note.
    """
    loaded: Matrix = session.value(name)
    st.markdown(f"**{label}**", help=help)
    current_width = len(loaded[0]) if loaded else 1
    width = st.number_input(
        tr("widget.features_of", name=label.lower()), 1, MAX_COLS, current_width, key=session.versioned("width", name)
    )
    base = _frame([list(r) for r in loaded], current_width)
    if width != current_width:
        # Resizing keeps what was typed: start from the last edited cells, pad with zeros or cut.
        cells = session.get("cells", name) or [list(r) for r in loaded]
        base = _frame([(list(r) + ["0"] * width)[:width] for r in cells], width)
    edited = st.data_editor(
        base,
        key=session.versioned("editor", name, width),
        num_rows="dynamic",
        width="stretch",
        column_config=text_columns(base),
    )
    cells = editor_cells(edited)
    session.put(cells, "cells", name)
    if len(cells) > MAX_ROWS:
        st.error(tr("widget.too_many_rows", name=md_escape(label), count=len(cells), limit=MAX_ROWS))
        return None
    try:
        read = matrix_from_cells(cells, name, list(base.columns))
    except ValueError as exc:
        st.error(error_text(exc), icon="🚫")
        return None
    if read.incomplete:
        st.caption(tr("widget.incomplete_rows", rows=", ".join(map(str, read.incomplete))))
    return read.matrix


def score_picker(session: PageSession, f: Field) -> str:
    """Selectbox over SCORES with the formula and explanation of the chosen one."""
    name = choice(session, f, "score.{}.label")
    explanation = tr(f"score.{name}.explanation")
    st.markdown(f"$$\n{SCORES[name].full_formula}\n$$\n\n{explanation}")  # one element: formula and explanation
    return name


def score_params(session: PageSession, fields: tuple[Field, ...], name: str) -> dict[str, Any]:
    """Inputs for the chosen score's parameters (seed, hidden units, bandwidth, typed scores), drawn from their
    fields."""
    values = {}
    for param in SCORES[name].params:
        f = next(f for f in fields if f.key == param.key)  # the page's field of this parameter (same link key)
        if f.kind == "matrix":  # typed scores: a row per query, a column per key; the last good ones on an error
            matrix = matrix_editor(session, f.name, tr(f.label), tr(f.help))
            values[f.name] = matrix if matrix is not None else session.value(f.name)
        else:
            values[f.name] = number(session, f)
    return values


def lens_editor(session: PageSession, num_queries: int, num_keys: int) -> tuple[str, tuple[int, ...]]:
    """Valid lengths: none, one for every query, or one per query; returns (mode, lengths)."""
    mode = st.radio(
        tr("widget.valid_lengths"),
        ["none", "all", "per_query"],
        key=session.bound("lens_mode"),
        horizontal=True,
        format_func=labeller("widget.lens_{}"),
        help=tr("widget.lens_help"),
    )
    lens: tuple[int, ...] = tuple(session.value("lens"))
    if mode == "all":
        current = min(lens[0], num_keys) if lens else num_keys
        length = st.slider(tr("widget.valid_length"), 0, num_keys, current, key=session.versioned("lenall", num_keys))
        return mode, (length,)
    if mode == "per_query":
        padded = [min(x, num_keys) for x in (list(lens) + [num_keys] * num_queries)[:num_queries]]
        column_name, lang = tr("widget.valid_length_column"), current_language()
        queries = [tr("widget.query_n", n=i + 1) for i in range(num_queries)]
        frame = pd.DataFrame({column_name: padded}, index=queries)
        edited = st.data_editor(
            frame,
            # the column is named in the page's language: a new editor when the language changes
            key=session.versioned("lens", num_queries, num_keys, lang),
            column_config={column_name: st.column_config.NumberColumn(min_value=0, max_value=num_keys, step=1)},
        )
        column = edited[column_name].tolist()
        bad = [i + 1 for i, x in enumerate(column) if x is None or x != x or not 0 <= x <= num_keys]
        if bad:
            st.error(tr("widget.bad_length", n=bad[0], keys=num_keys))
            return mode, tuple(padded)
        return mode, tuple(int(x) for x in column)
    return mode, ()


def share_box(
    session: PageSession,
    params: dict[str, str],
    decode: Callable[[dict[str, str]], Decoded],
    extra: Callable[[], None] | None = None,
) -> None:
    """The link that reproduces this page and a QR code to project in class; a state file when the state is too
    large for a link, and a place to load one; `extra` draws exports below them."""
    box = lazy_expander(tr("widget.share_and_export" if extra else "widget.share"), key=session.part("open", "share"))
    if box is None:
        return
    with box:
        problem = link_problem(params)
        link = None
        if problem is None:
            link = (st.context.url or "") + ("?" + urlencode(params) if params else "")
            st.caption(tr("widget.share_caption"))
            st.code(link, language=None, wrap_lines=True)
            st.caption(tr("widget.link_length", count=len(link)))
            if len(link) <= 2000:
                buffer = io.BytesIO()
                segno.make(link, error="m").save(buffer, kind="png", scale=4, border=2)
                st.image(buffer.getvalue(), caption=tr("widget.qr_caption"), width=220)
            else:
                st.info(tr("widget.link_too_long"))
        else:
            st.warning(error_text(problem), icon="⚠️")
        offline_button(session.page, link)
        st.download_button(
            tr("widget.download_state"),
            state_file(session.page, params),
            file_name=f"attnviz_{session.page}.json",
            mime="application/json",
            help=tr("widget.state_file_help"),
        )
        key = session.versioned("upload")
        st.file_uploader(
            tr("widget.load_state"), type=["json"], key=key, on_change=_load_state_file, args=(session, key, decode)
        )
        problem = st.session_state.pop(session.part("upload_error"), None)
        if problem is not None:
            st.error(error_text(problem), icon="🚫")
        if extra is not None:
            extra()


def offline_button(page: str, link: str | None) -> None:
    """The page as it is in one HTML file that fetches nothing, made when the button is clicked (`offline`)."""
    lang = current_language()
    make = offline.file_maker(tr(f"{page}.title"), tr(f"{page}.intro"), link, lang)
    if make is None:
        return
    st.download_button(
        tr("widget.offline_html"),
        make,
        file_name=f"attnviz_{page}.html",
        mime="text/html",
        on_click="ignore",  # nothing on the page changes: no rerun
        icon=":material/download:",
        help=tr("widget.offline_help"),
    )


def _load_state_file(session: PageSession, key: str, decode: Callable[[dict[str, str]], Decoded]) -> None:
    """Callback of the state-file uploader: load the file into the page (its parameters checked like a link's), or
    keep what is wrong with it for the share box to say. A callback runs before the page draws its widgets, the only
    time their values may be set; the new state gives the uploader a new key, which empties it."""
    upload = st.session_state.get(key)
    if upload is None:  # the file was removed
        return
    data = upload.getvalue()
    forget_upload(upload)  # read once: the server keeps no copy
    try:
        params = read_state_file(data, session.page)
    except ValueError as exc:
        session.put(exc, "upload_error")
        return
    decoded = decode(params)
    session.load(decoded.state)
    session.warnings = decoded.warnings


MAX_TEXT_TABLE_ROWS = 16  # a longer table becomes a scrollable dataframe


@dataclass(frozen=True)
class WorkPanel:
    """What "show your work" draws: the recipe (markdown with the LaTeX formulas), the numbers (markdown), and the
    table of numbers when it is too long to be text. Made from the steps by `work_panel_content`; a pure value, so a
    page can keep one and draw it again."""

    recipe: str
    numbers: str
    table: pa.Table | None
    steps: tuple[Step, ...] = ()  # what it was made from (the share box's offline file works them out again)


def work_panel_content(steps: list[Step]) -> WorkPanel:
    """The panel's content for `steps` (see `work_panel`)."""
    recipe, lines = [], []
    for step in steps:
        recipe.append(f"**{step.number}. {md_escape(step.title)}**\n\n$$\n{step.formula}\n$$")
        if step.note_is_latex:  # app-made LaTeX that the temperature does not change
            recipe.append(step.note)
        if step.note and not step.note_is_latex:  # plain text, may quote user tokens
            lines.append(f"**{step.number}.** {md_escape(step.note)}")
        elif step.columns[1:]:  # every step has its line: its numbers are the table's columns
            columns = ", ".join(step.columns[1:])
            lines.append(f"**{step.number}.** {md_escape(tr('widget.in_table', columns=columns))}")
    lines.insert(0, tr("widget.with_numbers"))
    columns, rows = merged_table(steps)
    as_text = 0 < len(rows) <= MAX_TEXT_TABLE_ROWS
    if as_text:
        lines.append(markdown_table(columns, rows))
    table = arrow_table(columns, rows) if rows and not as_text else None
    return WorkPanel("\n\n".join(recipe), "\n\n".join(lines), table, tuple(steps))


def work_panel(steps: list[Step] | WorkPanel, heading: str | None = None) -> None:
    """'Show your work' in two elements: the recipe (each step's title and formula) and the numbers (each step's
    working and one table with a column per quantity, a row per key).

    The recipe holds every LaTeX formula and does not change when a control such as the temperature moves, so the
    browser does not typeset it again; the numbers are plain text and tables. Re-typesetting a handful of formulas
    on every change cost ~45 ms in the browser, and each extra element costs the server a message per rerun.
    """
    content = steps if isinstance(steps, WorkPanel) else work_panel_content(steps)
    offline.record_steps(heading or tr("attention.show_work"), content.steps)  # `heading`: the panel's own title
    st.markdown(content.recipe)
    st.markdown(content.numbers)
    if content.table is not None:
        st.dataframe(content.table, hide_index=True, width="stretch")


def merged_table(steps: list[Step]) -> tuple[list[str], list[list[object]]]:
    """The steps' per-key tables side by side: the key column once, then every step's columns, each name once
    (the weights of the softmax and of the weighted sum are one column). A column is never left out for its
    values: with one allowed key, the weight 1 still has its column beside e^(z - m) = 1."""
    tables = [step for step in steps if step.rows]
    if not tables:
        return [], []
    count = len(tables[0].rows)
    keys = [row[0] for row in tables[0].rows]
    columns: list[str] = [tables[0].columns[0]]
    values: list[list[object]] = [keys]
    for step in tables:
        if len(step.rows) != count or [row[0] for row in step.rows] != keys:
            raise ValueError(f"step {step.title!r} has a table over different keys")
        for index, name in enumerate(step.columns[1:], start=1):
            if name not in columns:
                columns.append(name)
                values.append([row[index] for row in step.rows])
    return columns, [list(row) for row in zip(*values, strict=True)]


def _cell(value: object) -> str:
    """A table cell: numbers to 4 significant digits, text escaped so that it shows literally."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return md_escape(str(value), in_table=True)


def markdown_table(columns: list[str], rows: list[list[object]]) -> str:
    """A small table as GitHub-flavoured markdown: text left-aligned, numbers right-aligned."""
    numeric = [all(isinstance(row[i], int | float) for row in rows) for i in range(len(columns))]
    header = "| " + " | ".join(md_escape(str(name), in_table=True) for name in columns) + " |"
    rule = "| " + " | ".join("--:" if is_number else ":--" for is_number in numeric) + " |"
    body = ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def preset_label() -> Callable[[str], str]:
    """A preset picker's format_func: the preset's title, "" as "none" (in this run's language)."""
    none = tr("attention.no_preset")
    title = labeller("preset.{}.title")
    return lambda key: title(key) if key else none


def batch_selector(session: PageSession, f: Field, batches: int, on_change: Callable[[], None]) -> None:
    """For a batched preset: which batch row to show."""
    if batches > 1:
        st.number_input(
            tr(f.label, last=batches - 1),
            0,
            batches - 1,
            key=session.bound(f.name),
            help=tr(f.help),
            on_change=on_change,
        )


def preset_note(key: str) -> None:
    """A preset's source and what it shows (in the sidebar, or beside the chart on a projector)."""
    st.caption(f"**{tr(f'preset.{key}.source')}** · {tr(f'preset.{key}.description')}")


def colour_range_picker(session: PageSession, f: Field, where: Any = st) -> str:
    """The colour range of the weights chart below it: this chart's range, 0-1 or each row's (its colour bar says
    which); kept in the page state and the link."""
    return choice(session, f, "colour_range.{}", where=where, radio=True)


def selected_row(session: PageSession, labels: list[str], label: str) -> int:
    """Which query row to explain, kept in the state's `row`; clamped to the current number of queries.

    The widget's key names the labels it lists: a selectbox keeps its identity (and the browser its option texts)
    across reruns with the same key, so new tokens need a new widget, which starts at the kept row."""
    digest = hashlib.blake2b("\x1f".join(labels).encode(), digest_size=6).hexdigest()
    key = session.part("row", digest)
    if key not in st.session_state:
        st.session_state[key] = min(int(session.value("row")), len(labels) - 1)
    row = st.selectbox(label, list(range(len(labels))), key=key, format_func=lambda i: f"{i + 1}: {labels[i]}")
    st.session_state[session.key("row")] = row
    return row


def show_warning(warning: Exception) -> None:
    """A link's problem, in the interface language, with the user's text shown literally."""
    st.warning(error_text(warning), icon="⚠️")


def show_error(exc: Exception) -> None:
    """Show a computation error to the user without a traceback, in the interface language."""
    st.error(error_text(exc), icon="🚫")
