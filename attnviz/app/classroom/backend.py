"""What the two class stores share (sqlite_store.py, redis_store.py): the limits' checks, the JSON of records, and
how a backend's own failure becomes the one error the pages expect.

Both backends keep a class as plain fields (text and numbers) and build the same ClassState from them, so that one
test suite (tests/test_class_store.py) can hold them to one behaviour.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from attnviz.app.classroom.records import (
    MAX_ANSWER_BYTES,
    MAX_NICKNAME,
    MAX_PARAMS_BYTES,
    ClassState,
    Question,
)
from attnviz.core.errors import AttnvizError

_log = logging.getLogger(__name__)
Method = TypeVar("Method", bound=Callable[..., Any])


def unavailable_on(*errors: type[BaseException]) -> Callable[[Method], Method]:
    """A store method whose backend `errors` (a lost connection, a timeout, a locked file) raise
    AttnvizError("class_store_unavailable") instead: the pages then go on alone. The cause goes to the log."""

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except errors as error:
                _log.warning("class store: %s failed: %r", method.__name__, error)
                raise AttnvizError("class_store_unavailable") from error

        return guarded  # type: ignore[return-value]

    return decorate


def params_json(params: Mapping[str, str]) -> str:
    """A class's link parameters as JSON; AttnvizError("class_params_large") past MAX_PARAMS_BYTES."""
    return _capped(json.dumps(dict(params), ensure_ascii=False, separators=(",", ":")))


def checked_answer(answer: str) -> str:
    """A student's answer as given; AttnvizError("answer_too_large") past MAX_ANSWER_BYTES."""
    if len(str(answer).encode()) > MAX_ANSWER_BYTES:
        raise AttnvizError("answer_too_large", limit=MAX_ANSWER_BYTES)
    return str(answer)


def short_nickname(nickname: str) -> str:
    """A nickname as kept: at most MAX_NICKNAME characters, outer spaces dropped."""
    return str(nickname).strip()[:MAX_NICKNAME]


def question_json(question: Question) -> str:
    """A question as the stores keep it; AttnvizError("class_params_large") past MAX_PARAMS_BYTES, as a page's
    parameters (a question's spec is the teacher's input too)."""
    record = {"id": int(question.id), "kind": question.kind, "spec": question.spec, "revealed": bool(question.revealed)}
    return _capped(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


def _capped(text: str) -> str:
    if len(text.encode()) > MAX_PARAMS_BYTES:
        raise AttnvizError("class_params_large", limit=MAX_PARAMS_BYTES // 1024)
    return text


def question_of(text: str | None) -> Question | None:
    """The question kept as `text` (None for none)."""
    if not text:
        return None
    record = json.loads(text)
    return Question(int(record["id"]), str(record["kind"]), dict(record["spec"]), bool(record["revealed"]))


def question_action(question: Question | None, asked: int, open_id: int | None) -> str:
    """What set_question does: "close", "open" (the next id, not yet revealed) or "reveal" (the open question's id);
    AttnvizError("question_stale") for anything else (another window of the teacher's changed the question)."""
    if question is None:
        return "close"
    if question.id == asked + 1 and not question.revealed:
        return "open"
    if question.revealed and open_id is not None and question.id == open_id:
        return "reveal"
    raise AttnvizError("question_stale")


def class_state(code: str, fields: Mapping[str, Any]) -> ClassState:
    """A ClassState from a backend's fields (numbers as numbers or as text: both backends' rows fit)."""
    return ClassState(
        code=code,
        follow_id=str(fields["follow_id"]),
        version=int(fields["version"]),
        page=str(fields["page"]),
        params=json.loads(fields["params"]),
        question=question_of(fields["question"]),
        created=float(fields["created"]),
        updated=float(fields["updated"]),
        questions_asked=int(fields["questions_asked"]),
    )
