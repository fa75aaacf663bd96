"""A question's round: the teacher asks with the page's "Ask" button, the students answer, the teacher's answer count
(its fragment, rerun every second) reaches everyone, the store's answers are compared with the acknowledged ones,
and the teacher reveals and closes the question with the page's buttons."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.liveclass.measures import aggregate_delay, lost_answers

ANSWER_WINDOW = 25.0  # seconds after the question for every answer (each is sent 2-10 s after it shows)
COUNT_WINDOW = 10.0  # seconds after the last answer for the teacher's count to show it


async def until(condition: Any, timeout: float) -> bool:
    """Wait until `condition()` holds, checking every 0.1 s; False on timeout."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def question_round(run: Any) -> None:
    """One question, from "Ask" to "Close the question"; its record goes to run.questions."""
    teacher, store = run.teacher, run.store
    record: dict[str, Any] = {"asked_at_s": None}
    run.questions.append(record)
    try:
        await _round(run, teacher, store, record)
    finally:
        teacher.asking = False


async def _round(run: Any, teacher: Any, store: Any, record: dict[str, Any]) -> None:
    user = teacher.user

    def ask_shown() -> bool:
        return (
            teacher.page == "self"
            and "live:ask" in user.widget_ids
            and user.drawn_since_full_run(user.widget_ids["live:ask"])
        )

    await until(lambda: teacher.page == "self", 10)
    if not ask_shown():  # after a page switch the Ask box shows from the next whole-page run on
        record["ask_after_whole_page_run"] = True
        teacher.want_full = True
    ready = await until(ask_shown, 20)
    if not ready or not await teacher.press("live:ask"):
        record["error"] = "could not ask"
        return
    state = await asyncio.to_thread(store.get, teacher.code)
    question = state.question.id if state is not None and state.question is not None else None
    record.update(id=question, asked_at_s=round(run.now(), 2), kind=state.question.kind if question else None)
    if question is None:
        record["error"] = "no question in the store after Ask"
        return
    joined = [s for s in run.students if s.user.follow_url]

    def acked() -> list[Any]:
        return [s for s in joined if s.answers.get(question, {}).get("acked")]

    await until(lambda: len(acked()) == len(joined), ANSWER_WINDOW)
    answers = {s.index: s.answers[question] for s in acked()}
    last = max((a["acked"] for a in answers.values()), default=None)
    expected = len(answers)
    if last is not None:
        await until(lambda: (teacher.answered() or (0, 0))[0] >= expected, COUNT_WINDOW)
    delay = aggregate_delay(last, user.metrics, expected) if last is not None else None
    stored = await asyncio.to_thread(store.answers, teacher.code, question)
    acknowledged = {a["student_id"]: a["answer"] for a in answers.values()}
    lost = lost_answers(acknowledged, stored)
    record.update(
        students=len(joined), acknowledged=expected, stored=len(stored),
        lost=[{"student_id": i, "sent": acknowledged[i], "stored": stored.get(i)} for i in lost],
        count_shown=teacher.answered(),
        aggregate_delay_s=None if delay is None else round(delay, 3),
        answers_sent=sum(1 for s in joined if s.answers.get(question, {}).get("sent") is not None),
        sent_again=sum(1 for s in joined if s.answers.get(question, {}).get("sent_again")),
    )  # fmt: skip
    await asyncio.sleep(0.5)
    record["revealed"] = await teacher.press("live:reveal")
    await asyncio.sleep(3.0)
    record["closed"] = await teacher.press("live:close")
