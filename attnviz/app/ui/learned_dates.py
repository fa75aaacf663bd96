"""The dates model on the learned-attention page: the date box and its examples (two of them known mistakes), what
the typed text is as a date, the translation with each wrong output character marked, its cross-attention and the
first wrong row worked out, and the accuracy of each trained format (where the model is weak)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import streamlit as st

from attnviz.app.learned_state import DATE_PRESETS, LEARNED_FIELDS, LearnedState, output_labels, visible
from attnviz.app.ui.common import PROJECTOR_FIT, beside_chart, chart, shared_value
from attnviz.app.ui.editors import selected_row
from attnviz.app.ui.learned_training import SESSION, translation, weight_tables
from attnviz.app.ui.settings import current_language, md_escape, palette, tr
from attnviz.app.ui.work import work_panel, work_panel_content
from attnviz.core.fields import field
from attnviz.figures import attention as figures
from attnviz.figures import learned as learned_figures
from attnviz.figures.attention import AttentionGrid
from attnviz.figures.style import POSITION_MARK
from attnviz.i18n import N_
from attnviz.lessons.explain import explain_row
from attnviz.models.bert_views import token_labels
from attnviz.models.learned import dates
from attnviz.models.learned.date_mistakes import OTHER_YEARS, FormatAccuracy, WrongRow, format_accuracy, wrong_rows
from attnviz.models.learned.date_reading import (
    NOT_DATE,
    NOT_REAL,
    OTHER_FORMAT,
    UNSEEN_YEAR,
    DateReading,
    days_in_month,
    read_date,
)
from attnviz.models.learned.seq2seq import Translation
from attnviz.models.learned.train import TrainingRun

PER_FORMAT = 100  # dates per format in the accuracy table, in each column
PRESET_TITLES = {
    "": N_("learned.date_preset_none"),
    "recorded": N_("learned.date_preset_recorded"),
    "chinese": N_("learned.date_preset_chinese"),
    "format": N_("learned.date_preset_format"),
    "years": N_("learned.date_preset_years"),
}
FIELD_WORDS = {"year": N_("learned.field_year"), "month": N_("learned.field_month"), "day": N_("learned.field_day")}


def _load_date_preset() -> None:
    """Callback of the examples picker: its date in the date box."""
    chosen = st.session_state[SESSION.key("date_preset")]
    if chosen:
        st.session_state[SESSION.key("date")] = DATE_PRESETS[chosen]


def date_presets(text: str) -> None:
    """The dates task's examples; the one whose date is in the box is shown as chosen (the date is the state)."""
    key = SESSION.key("date_preset")
    st.session_state[key] = next((name for name, date in DATE_PRESETS.items() if date == text), "")
    st.selectbox(
        tr("learned.date_preset"),
        ["", *DATE_PRESETS],
        key=key,
        format_func=lambda name: tr(PRESET_TITLES[name], date=DATE_PRESETS.get(name, "")),
        on_change=_load_date_preset,
    )


def reading_message(text: str, reading: DateReading) -> None:
    """Say what the text is when it is not a date in a trained format and a year the model learned."""
    shown = md_escape(text)
    example = dates.FORMATS_BY_NAME[reading.format].example if reading.format else ""
    if reading.kind == OTHER_FORMAT:
        written = md_escape(reading.written or "")
        st.warning(tr("learned.reading_format", text=shown, example=example, written=written), icon="🧭")
    elif reading.kind == UNSEEN_YEAR and reading.date is not None:
        first, last = dates.FIRST_DAY.year, dates.LAST_DAY.year
        st.warning(tr("learned.reading_years", text=shown, year=reading.date.year, first=first, last=last), icon="🧭")
    elif reading.kind == NOT_REAL and reading.numbers is not None:
        year, month, day = reading.numbers
        if not 1 <= month <= 12:
            st.warning(tr("learned.reading_not_real_month", text=shown, example=example, month=month), icon="📅")
        else:
            when, days = f"{year:04d}-{month:02d}", days_in_month(year, month)
            message = tr("learned.reading_not_real_day", text=shown, example=example, when=when, days=days, day=day)
            st.warning(message, icon="📅")
    elif reading.kind == NOT_DATE:
        st.warning(tr("learned.reading_not_date", text=shown), icon="📅")


def marked_output(output: str, wrong: list[int]) -> str:
    """The output as Markdown, each wrong character in bold on a red background."""
    return "".join(
        f":red-background[**{character}**]" if index in wrong else character for index, character in enumerate(output)
    )


def checked_translation(result: Translation, reading: DateReading) -> list[WrongRow]:
    """The translation, checked against the true date when the text is one: each wrong character marked, counted and
    named, and the attention of the first wrong row. Returns the wrong rows (first to last)."""
    shown = md_escape(result.text)
    rows = wrong_rows(reading, result.text, result.output, result.trace.weights)
    expected = reading.expected
    if expected is None or not rows:
        st.markdown(tr("learned.translation", text=shown, output=result.output))
        if expected is not None:
            st.caption(tr("learned.all_right", total=len(expected), expected=expected))
        return rows
    wrong = [row.row for row in rows]
    output = marked_output(result.output, wrong)
    st.markdown(tr("learned.translation_checked", text=shown, output=output, expected=expected))
    details = "; ".join(tr("learned.wrong_position", position=row.row + 1, want=row.want, got=row.got) for row in rows)
    if len(rows) == 1:
        st.markdown(tr("learned.wrong_one", total=len(expected), details=details))
    else:
        st.markdown(tr("learned.wrong_many", wrong=len(rows), total=len(expected), details=details))
    st.markdown(wrong_row_sentence(rows[0], result, reading))
    return rows


def _character(reading: DateReading, text: str, position: int) -> str:
    """Input character `position` (0-based) named with its field: "the day's “9” (character 10)"."""
    field = reading.field_at(position)
    character = md_escape(text[position])
    if field is None:
        return tr("learned.plain_character", character=character, position=position + 1)
    return tr("learned.source_digit", field=tr(FIELD_WORDS[field]), character=character, position=position + 1)


def wrong_row_sentence(row: WrongRow, result: Translation, reading: DateReading) -> str:
    """What the attention of a wrong row did: its weight on the right character, and its largest weight."""
    text = result.text
    label = f"{row.got}·{row.row + 1}"
    named = {"row": label, "want": row.want, "got": row.got, "top_weight": f"{row.top_weight:.2f}"}
    top = _character(reading, text, row.top)
    if not row.sources:
        return tr("learned.wrong_row_separator", top=top, **named)
    source = _character(reading, text, row.sources[0]) if row.digit else _field_text(row, text)
    if row.top in row.sources:
        return tr("learned.wrong_row_looked", source=source, **named)
    places = 2 if f"{row.source_weight:.2f}" != f"{row.top_weight:.2f}" else 3  # 0.407 and 0.411 are not both 0.41
    named["top_weight"] = f"{row.top_weight:.{places}f}"
    return tr("learned.wrong_row", source=source, source_weight=f"{row.source_weight:.{places}f}", top=top, **named)


def _field_text(row: WrongRow, text: str) -> str:
    """The field's whole text: "the month, “April”"."""
    characters = md_escape("".join(text[position] for position in row.sources))
    return tr("learned.source_field", field=tr(FIELD_WORDS[row.field or "year"]), characters=characters)


def opening_row(wrong: list[WrongRow]) -> int | None:
    """The row show-your-work opens on for a new input: the first wrong one (None: the kept row). A link that names
    a row opens on it, on the session's first run."""
    first_run = SESSION.get("rows_opened") is None
    SESSION.put(True, "rows_opened")
    if not wrong or (first_run and "r" in (SESSION.link or {})):
        return None
    return wrong[0].row


def format_table(run: TrainingRun) -> None:
    """Exact matches per trained format: on held-out days, and on days of years the model never saw."""
    rows: list[FormatAccuracy] = shared_value(
        ("learned_formats", run.settings.seed, run.settings.steps, PER_FORMAT),
        lambda: format_accuracy(run.model, PER_FORMAT),
    )
    first, last = dates.FIRST_DAY.year, dates.LAST_DAY.year
    ranges = ", ".join(f"{low}–{high}" for low, high in OTHER_YEARS)
    # Short headers (the years are in the note below): three columns fit a phone's width without scrolling
    header = [tr("learned.format_column"), tr("learned.held_out_column"), tr("learned.other_years_column")]
    lines = ["| " + " | ".join(header) + " |", "|---|---:|---:|"]
    for row in rows:
        example = md_escape(dates.FORMATS_BY_NAME[row.format].example, in_table=True)
        lines.append(f"| {example} | {row.held_out} / {row.count} | {row.other_years} / {row.count} |")
    st.markdown(f"**{tr('learned.format_heading')}**")
    st.markdown("\n".join(lines))
    st.caption(tr("learned.format_note", count=PER_FORMAT, first=first, last=last, ranges=ranges))


def date_input(state: LearnedState) -> tuple[LearnedState, bool]:
    """The examples and the date box; False (with the reason on the page) when the model cannot read it."""
    date_presets(str(SESSION.value("date")))
    text = st.text_input(
        tr("learned.date"),
        key=SESSION.key("date"),
        max_chars=field(LEARNED_FIELDS, "date").max_len,
        help=tr("learned.date_help", examples=" · ".join(f.example for f in dates.FORMATS)),
    )
    state = replace(state, date=text)
    unknown = dates.unknown_characters(text)
    if not text.strip():
        st.info(tr("learned.date_empty"), icon="✍️")
        return state, False
    if unknown:
        st.error(tr("learned.unknown_characters", characters=md_escape(" ".join(unknown))), icon="🚫")
        return state, False
    return state, True


def try_dates(state: LearnedState, run: TrainingRun) -> None:
    """The translation checked against the true date, its cross-attention (output characters x input characters)
    with the wrong rows marked, one row worked out (the first wrong one), and the accuracy of each format."""
    result = translation(run, state.date)
    reading = read_date(state.date)
    charts, side = beside_chart()  # on a projector the check beside the chart: the chart on the first screen
    with side if side is not None else contextlib.nullcontext():
        wrong = checked_translation(result, reading)
        reading_message(state.date, reading)
        st.caption(tr("learned.dates_accuracy", accuracy=f"{run.accuracy:.1%}", count=2000, steps=run.settings.steps))
    inputs = visible(result.text)
    outputs = output_labels(result.output, [row.row for row in wrong])
    language = current_language()
    with charts:
        _dates_chart(result, outputs, inputs, [row.row for row in wrong], language)
    with st.expander(tr("learned.work_heading"), expanded=bool(wrong)):
        row = selected_row(SESSION, outputs, tr("learned.row_date"), first=opening_row(wrong))
        keys = token_labels(inputs, POSITION_MARK, start=1)  # shown literally in the steps (the chart escapes its own)
        steps = explain_row(result.trace, row, outputs[row], keys, language, run.model.decoder.attention)
        work_panel(work_panel_content(steps), heading=f"{tr('learned.work_heading')} · {outputs[row]}")
        st.caption(tr("learned.trained_weights"))
        attention = run.model.decoder.attention
        weight_tables({"W_q": attention.W_q.weight, "W_k": attention.W_k.weight, "w_v": attention.w_v.weight})
    format_table(run)


def _dates_chart(result: Translation, outputs: list[str], inputs: list[str], wrong: list[int], language: str) -> None:
    """The cross-attention of the date, output characters x input characters, the wrong rows marked; on a projector
    no taller than what the first screen has left below the heading (PROJECTOR_FIT)."""
    chart(
        lambda: learned_figures.mark_rows(
            figures.weights_heatmap(
                AttentionGrid(result.trace.weights.numpy(), query_labels=outputs, key_labels=inputs),
                scores=result.trace.scores.numpy(),
                title=tr("learned.dates_chart"),
                palette=palette(),
                lang=language,
            ),
            wrong,
        ),
        "attnviz_dates_attention",
        fit=PROJECTOR_FIT,
    )
