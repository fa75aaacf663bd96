"""A live class's questions: which ones a page's state allows, the question with its truth, the class's answers
marked, summed up and exported. Pure: no Streamlit (the pages draw them; the figures are attnviz/figures/classroom.py).

    offers(page, params)                         what may be asked now, and about which query
    make_question(page, params, kind, about, id) the question: its spec holds what the students see and the truth
    parse_answer(question, raw)                  a student's answer, checked, as JSON to store
    is_correct(question, answer_json)            marked by the question's tolerance (answers.py says which, and why)
    aggregate(question, answers)                 the class's answers summed up for the reveal
    answers_csv(questions, answers, nicknames)   every answer as a spreadsheet row

Kinds and pages:

    top_key  self, cross      "Which key gets the most weight from query i?" (the heads' mean when several)
             model            "Which token will this head look at?" (the chosen layer and head(s), shown tokens)
             learned          the recorded attention at the chosen step (dates: output character i; induction:
                              the followed head's query position i)
    row      self, cross      "Type row i of the weights" (its keys that may be attended to)
    number   kernel           f(x) at one of the page's query points
             self, cross      the first value of query i's output
    head     learned          "Which head is the induction head?" (induction task; the heads the page labels so)
    best_map faithful         "Which map will agree best with blank-out here?" (the chosen layer and head; the maps
                              the page shows, each with its ρ for the reveal: faithful.py)

A spec is plain JSON: {"page", "kind", "about": {"index", "label"}, "options", "truth", "tolerance" (row, number),
"context"}. For top_key and head `truth` lists the indices of every right option; for row it is the weights, for
number the value. For best_map `truth` lists the right maps' indices too, and the context each map's ρ.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.app.classroom.answers import (
    CHOICE_KINDS,
    NUMBER_ABSOLUTE,
    NUMBER_RELATIVE,
    ROW_TOLERANCE,
    TIE,
    is_correct,
    marked,
    parse_answer,
    read_answer,
    value_text,
)
from attnviz.app.classroom.faithful import asks_best_map, best_map_prompt, best_map_spec, map_labels, rho_note
from attnviz.app.classroom.store import Question
from attnviz.app.classroom.subjects import Subject, induction_heads, subject
from attnviz.app.exports import csv_safe
from attnviz.core.errors import AttnvizError, short
from attnviz.core.fields import shortest32
from attnviz.i18n import DEFAULT_LANGUAGE, N_, t
from attnviz.models.bert import BertEncoder, ModelUnavailableError

__all__ = ["Aggregate", "Offer", "aggregate", "answers_csv", "is_correct", "make_question", "offers", "parse_answer"]

MAX_ROW_KEYS = 16  # a row question asks for at most this many numbers (more is not a question for a class)
KIND_NAMES = {"top_key": N_("class.kind_top_key"), "row": N_("class.kind_row"), "number": N_("class.kind_number"),
              "head": N_("class.kind_head"), "best_map": N_("class.kind_best_map")}  # fmt: skip


@dataclass(frozen=True)
class Offer:
    """A kind of question the page's state allows, and what it may be about: (index, label) of each query (one
    (0, "") for a question about the whole model)."""

    kind: str
    choices: list[tuple[int, str]]


def _rows_for(found: Subject, kind: str) -> list[int]:
    if kind == "row":
        return [i for i in found.rows if 1 <= len(found.valid(i)) <= MAX_ROW_KEYS]
    return list(found.rows)


def _head_offer(page: str, params: Mapping[str, str]) -> list[Offer]:
    """The induction-head question, when the page tries the induction model and labels a head so (its "Try" section:
    the shipped model until a training of the chosen seed and steps is recorded)."""
    try:
        heads = induction_heads(params) if page == "learned" else None
    except ValueError:  # what the page shows as a message
        return []
    return [Offer("head", [(0, "")])] if heads is not None and "induction" in heads.labels else []


def _best_map_offer(page: str, params: Mapping[str, str], model: BertEncoder | None) -> list[Offer]:
    """The question about the explanation page's maps, when it shows maps with a ρ to compare."""
    try:
        ready = page == "faithful" and asks_best_map(params, model)
    except ModelUnavailableError:  # the page says so itself
        return []
    return [Offer("best_map", [(0, "")])] if ready else []


def offers(page: str, params: Mapping[str, str], *, model: BertEncoder | None = None) -> list[Offer]:
    """The questions the page's state allows (decoded from its link parameters and checked like a link). `model`:
    the pretrained model the app already holds (else it is loaded here once)."""
    found = subject(page, params, model)
    result = []
    for kind in found.kinds if found is not None else ():
        rows = _rows_for(found, kind)
        if rows:
            result.append(Offer(kind, [(i, found.query_labels[i]) for i in rows]))
    return result + _head_offer(page, params) + _best_map_offer(page, params, model)


def _choice_spec(found: Subject, about: int) -> dict[str, Any]:
    """The options (the shown keys) and the right ones: every allowed key with the row's largest weight."""
    weights = found.weights(about).tolist()
    allowed = set(found.valid(about))
    best = max(weights[j] for j in allowed)
    right = [n for n, j in enumerate(found.cols) if j in allowed and weights[j] >= best - TIE]
    return {"options": [found.key_labels[j] for j in found.cols], "truth": right}


def _head_spec(params: Mapping[str, str]) -> dict[str, Any]:
    """Every head of the induction model as an option; the right ones: those the page labels "induction"."""
    heads = induction_heads(params)
    right = [n for n, label in enumerate(heads.labels) if label == "induction"] if heads else []
    if not right:
        raise AttnvizError("question_unavailable", kind="head", about=0)
    return {
        "about": {"index": 0, "label": ""},
        "options": [f"L{layer} H{head}" for layer, head in heads.heads],
        "truth": right,
        "context": {"task": "induction", "heads": [list(h) for h in heads.heads], "scores": heads.scores},
    }


def _spec(page: str, params: Mapping[str, str], kind: str, about: int, model: BertEncoder | None) -> dict[str, Any]:
    if kind == "head" and page == "learned":
        return _head_spec(params)
    if kind == "best_map" and page == "faithful":
        return best_map_spec(params, model)
    found = subject(page, params, model)
    if found is None or kind not in found.kinds:
        raise AttnvizError("question_unavailable", kind=short(kind), about=short(about))
    if isinstance(about, bool) or not isinstance(about, int) or about not in _rows_for(found, kind):
        raise AttnvizError("question_unavailable", kind=kind, about=short(about))
    spec: dict[str, Any] = {"about": {"index": about, "label": found.query_labels[about]}, "context": found.context}
    if kind == "top_key":
        spec.update(_choice_spec(found, about))
    elif kind == "row":
        keys = found.valid(about)
        weights = found.weights(about)
        spec["options"] = [found.key_labels[j] for j in keys]
        spec["truth"] = [shortest32(float(weights[j])) for j in keys]
        spec["tolerance"] = {"absolute": ROW_TOLERANCE}
    else:
        spec["truth"] = shortest32(found.number(about))
        spec["tolerance"] = {"relative": NUMBER_RELATIVE, "absolute": NUMBER_ABSOLUTE}
    return spec


def make_question(
    page: str,
    params: Mapping[str, str],
    kind: str,
    about: int,
    question_id: int,
    *,
    model: BertEncoder | None = None,
) -> Question:
    """A question of `kind` about query `about` (an index offered by `offers`) on the page's current state, with its
    truth computed as the page computes it; AttnvizError("question_unavailable") when the state does not allow it."""
    spec = {"page": page, "kind": kind, **_spec(page, params, kind, about, model)}
    return Question(id=int(question_id), kind=kind, spec=spec)


def option_labels(question: Question, lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """The options as the students read them (a head as "L1 H2" and a map by its name in `lang`; keys and tokens as
    they are)."""
    heads = question.spec.get("context", {}).get("heads")
    if question.kind == "head" and heads:
        return [t("learned.head_short", lang, layer=layer, head=head) for layer, head in heads]
    if question.kind == "best_map":
        return map_labels(question.spec, lang)
    return list(question.spec.get("options", []))


def prompt(question: Question, lang: str = DEFAULT_LANGUAGE) -> str:
    """The question as the students read it, in `lang`."""
    spec = question.spec
    label, page = spec.get("about", {}).get("label", ""), spec.get("page")
    task = spec.get("context", {}).get("task")
    if question.kind == "head":
        return t("class.prompt_head", lang)
    if question.kind == "best_map":
        return best_map_prompt(spec, lang)
    if question.kind == "row":
        return t("class.prompt_row", lang, query=label)
    if question.kind == "number":
        return (
            t("class.prompt_number", lang, x=label) if page == "kernel" else t("class.prompt_output", lang, query=label)
        )
    if page == "model" or task == "induction":
        return t("class.prompt_token", lang, query=label)
    if task == "dates":
        return t("class.prompt_dates", lang, query=label)
    return t("class.prompt_top_key", lang, query=label)


def reveal_note(question: Question, lang: str = DEFAULT_LANGUAGE) -> str | None:
    """What the reveal adds below the truth, in `lang`: each map's ρ for best_map; None for the other kinds."""
    return rho_note(question.spec, lang) if question.kind == "best_map" else None


@dataclass(frozen=True)
class Aggregate:
    """A question's answers summed up. `answered` counts the readable answers; `invalid` the stored ones that could
    not be read (left out of everything else)."""

    kind: str
    answered: int
    correct: int
    invalid: int
    counts: list[int] | None = None  # top_key, head: students per option
    mean: list[float] | None = None  # row: per key, the class's mean weight ...
    std: list[float] | None = None  # ... and its population standard deviation (statistics.pstdev)
    truth: list[float] | float | list[int] | None = None  # the spec's truth
    values: list[float] | None = None  # number: every answer (for a histogram) ...
    median: float | None = None  # ... and their median
    commonest_wrong: tuple[str, int] | None = None  # the most frequent wrong answer as text, and how many gave it


def aggregate(question: Question, answers: Mapping[str, str], *, lang: str = DEFAULT_LANGUAGE) -> Aggregate:
    """The class's answers (student id -> stored JSON) summed up for the reveal (the commonest wrong answer written
    in `lang`: a head's label)."""
    values = [read_answer(question, text) for text in answers.values()]
    readable = [value for value in values if value is not None]
    labels = option_labels(question, lang)
    wrong: Counter[str] = Counter()  # answers that round alike count as one (0.333 and 0.3333) ...
    written: dict[str, set[str]] = {}  # ... and are written as typed when they were all the same
    for value in readable:
        if not marked(question, value):
            near = value_text(question, value, labels, decimals=2)
            wrong[near] += 1
            written.setdefault(near, set()).add(value_text(question, value, labels))
    common = wrong.most_common(1)[0] if wrong else None  # a tie: the one answered first
    if common is not None:
        exact = written[common[0]]
        common = (next(iter(exact)) if len(exact) == 1 else "≈ " + common[0], common[1])
    summary: dict[str, Any] = {}
    if question.kind in CHOICE_KINDS:
        summary["counts"] = [sum(1 for v in readable if v == n) for n in range(len(question.spec["options"]))]
    elif question.kind == "row" and readable:
        columns = list(zip(*readable, strict=True))
        summary["mean"] = [statistics.fmean(column) for column in columns]
        summary["std"] = [statistics.pstdev(column) for column in columns]
    elif question.kind == "number":
        summary["values"] = list(readable)
        summary["median"] = statistics.median(readable) if readable else None
    return Aggregate(
        kind=question.kind,
        answered=len(readable),
        correct=sum(1 for value in readable if marked(question, value)),
        invalid=len(values) - len(readable),
        truth=question.spec.get("truth"),
        commonest_wrong=(common[0], common[1]) if common else None,
        **summary,
    )


CSV_COLUMNS = (N_("class.csv_question"), N_("class.csv_kind"), N_("class.csv_about"), N_("class.csv_student"),
               N_("class.csv_answer"), N_("class.csv_correct"), N_("class.csv_truth"))  # fmt: skip
MAX_CSV_RAW = 100  # characters of an unreadable stored answer written to the CSV


def answers_csv(
    questions: list[Question],
    answers: Mapping[int, Mapping[str, str]],
    nicknames: Mapping[str, str],
    *,
    lang: str = DEFAULT_LANGUAGE,
) -> bytes:
    """Every answer as a row (question, kind, what it was about, student, answer, right or not, truth), as UTF-8
    with a byte-order mark (so that a spreadsheet reads Chinese nicknames right). A student is named by nickname,
    else "student 1", "student 2", ... in order of first appearance; never by the internal id. A cell that a
    spreadsheet would read as a formula (= + - @ first) is written with a leading apostrophe."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([t(column, lang) for column in CSV_COLUMNS])
    unnamed: dict[str, int] = {}
    yes, no = t("class.csv_yes", lang), t("class.csv_no", lang)
    for question in questions:
        labels = option_labels(question, lang)
        truth = value_text(question, question.spec.get("truth"), labels)
        about = question.spec.get("about", {}).get("label", "")
        for student, stored in answers.get(question.id, {}).items():
            name = str(nicknames.get(student) or "").strip()
            if not name:
                number = unnamed.setdefault(student, len(unnamed) + 1)
                name = t("class.csv_student_n", lang, n=number)
            value = read_answer(question, stored)
            shown = str(stored)[:MAX_CSV_RAW] if value is None else value_text(question, value, labels)
            right = value is not None and marked(question, value)
            kind = t(KIND_NAMES[question.kind], lang) if question.kind in KIND_NAMES else question.kind
            row = [str(question.id), kind, about, name, shown, yes if right else no, truth]
            writer.writerow([csv_safe(cell) for cell in row])
    return buffer.getvalue().encode("utf-8-sig")
