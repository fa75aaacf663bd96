"""Editors and pickers of the pages' inputs and controls: a matrix, valid lengths, a score and its parameters, a
batch row, the colour range, the row to explain, a preset's label and note."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from attnviz.app.pipeline import matrix_from_cells
from attnviz.app.ui import live_sync
from attnviz.app.ui.fieldwidgets import choice, number
from attnviz.app.ui.session import PageSession
from attnviz.app.ui.settings import current_language, error_text, labeller, md_escape, tr
from attnviz.core.fields import MAX_COLS, MAX_ROWS, Field, Matrix, format_number
from attnviz.core.scores import SCORES


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
    """A preset's source and what it shows (in the sidebar, or beside the chart on a projector). While a live class's
    question is open the source alone: the description works the example out ("the prediction is ... = 45.5")."""
    source = f"**{tr(f'preset.{key}.source')}**"
    st.caption(source if live_sync.answers_hidden() else f"{source} · {tr(f'preset.{key}.description')}")


def colour_range_picker(session: PageSession, f: Field, where: Any = st) -> str:
    """The colour range of the weights chart below it: this chart's range, 0-1 or each row's (its colour bar says
    which); kept in the page state and the link."""
    return choice(session, f, "colour_range.{}", where=where, radio=True)


def last_row_unless_linked(session: PageSession, labels: list[str], param: str = "r") -> int | None:
    """Where show-your-work opens for new tokens: on the last query row, which under a causal mask sees every key
    (the first sees only itself, with weight 1: nothing to work out); None (the kept row) when the page's link names a
    row (`param`)."""
    return None if param in (session.link or {}) else len(labels) - 1


def selected_row(session: PageSession, labels: list[str], label: str, first: int | None = None) -> int:
    """Which query row to explain, kept in the state's `row`; clamped to the current number of queries.

    The widget's key names the labels it lists: a selectbox keeps its identity (and the browser its option texts)
    across reruns with the same key, so new tokens need a new widget, which starts at row `first`, or at the kept
    row when it is None."""
    digest = hashlib.blake2b("\x1f".join(labels).encode(), digest_size=6).hexdigest()
    key = session.part("row", digest)
    if key not in st.session_state:
        start = int(session.value("row")) if first is None else first
        st.session_state[key] = min(start, len(labels) - 1)
    row = st.selectbox(label, list(range(len(labels))), key=key, format_func=lambda i: f"{i + 1}: {labels[i]}")
    st.session_state[session.key("row")] = row
    return row
