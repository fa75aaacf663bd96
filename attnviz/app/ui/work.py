"""Show-your-work: a computation's steps, their formulas and one merged table."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import streamlit as st

from attnviz.app.ui import offline
from attnviz.app.ui.common import arrow_table
from attnviz.app.ui.settings import md_escape, tr
from attnviz.lessons.explain import Step

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
