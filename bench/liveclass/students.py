"""A student: a simulated browser that opens the join link and then behaves as the page's follower component does
in a browser: a long poll of the class's version through the proxy, and a rerun (the component's trigger) when it
changed. It answers each question once, 2-10 s after it appeared, with the page's own answer form."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from streamlit.proto.WidgetStates_pb2 import WidgetState

from bench.liveclass.browser import LiveUser
from testkit.proxyclient import DisconnectedError
from testkit.wire import ScriptError

ANSWER_PREFIX = "live:answer:"  # + question id: the answer widget's key
SEND = "Send"  # the answer form's submit button (English, the default language)
SENT = "Sent:"  # the start of the acknowledgement the page shows


class Student:
    """One student's tab in the class."""

    def __init__(self, index: int, run: Any, code: str) -> None:
        self.index = index
        self.run = run
        self.rng = random.Random(run.config.seed * 1000 + index + 1)
        self.user = LiveUser(run.cluster.url, "", f"class={code}", rng=self.rng, name=f"student {index}")
        self.errors: list[dict[str, Any]] = []
        self.reconnects: list[dict[str, Any]] = []
        self.answers: dict[int, dict[str, Any]] = {}  # question id -> student id, answer, ack time
        self.tasks: set[asyncio.Task[None]] = set()
        self.polls = 0

    def error(self, what: str, detail: str) -> None:
        self.errors.append({"student": self.index, "t": round(self.run.now(), 2), "what": what, "detail": detail[:300]})

    @property
    def student_id(self) -> str:
        value = self.user.cookie("attnviz_class_")
        return value[2:] if value.startswith("s:") else ""

    async def join(self) -> bool:
        try:
            await self.user.open(self.run.config.action_timeout)
        except (DisconnectedError, ScriptError, TimeoutError) as exc:
            self.error("join", f"{type(exc).__name__}: {exc}")
            return False
        self.after_run()
        return bool(self.user.follow_url)

    async def follow(self, stop: asyncio.Event) -> None:
        """The component's loop: long polls, a rerun on each new version; a pause after a failed request."""
        failures = 0
        while not stop.is_set():
            answer = await self.user.poll()
            self.polls += 1
            if answer is None or answer.get("unavailable"):
                failures += 1
                await asyncio.sleep(min(10.0, 0.25 * 2 ** min(failures, 6)))
                continue
            failures = 0
            version = -1 if answer.get("ended") else int(answer.get("version", self.user.known))
            if version == self.user.known:
                continue
            self.user.known = version
            if version == -1:
                return
            if not self.user.connected:
                continue  # the reconnect's first run shows the newest state
            try:
                await self.user.fire_changed(version, self.run.config.action_timeout)
            except DisconnectedError:
                continue
            except (ScriptError, TimeoutError) as exc:
                self.error("follow", f"{type(exc).__name__}: {exc}")
            self.after_run()

    async def watch(self, stop: asyncio.Event) -> None:
        """The frontend: when the websocket closes (its replica died), reconnect."""
        while not stop.is_set():
            await self.user.wait_until(lambda: stop.is_set(), 1.0)
            if stop.is_set() or self.user.connected:
                continue
            closed = self.user.closed_at or time.perf_counter()
            ok = await self.user.reconnect(closed + 90)
            record = {"student": self.index, "closed_at_s": round(closed - self.run.t0, 2), "ok": ok,
                      "reconnect_s": round(time.perf_counter() - closed, 2) if ok else None}  # fmt: skip
            self.reconnects.append(record)
            if not ok:
                self.error("reconnect", "no connection within 90 s")
                return
            self.after_run()

    def after_run(self) -> None:
        """After a run: a question's answer form not answered yet gets an answer 2-10 s later."""
        for key, widget_id in list(self.user.widget_ids.items()):
            if not key.startswith(ANSWER_PREFIX) or not self.user.drawn_since_full_run(widget_id):
                continue
            question = int(key.removeprefix(ANSWER_PREFIX))
            if question not in self.answers:
                self.answers[question] = {"question": question, "student_id": "", "answer": None, "acked": None}
                task = asyncio.create_task(self.answer(question, widget_id))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    def answer_state(self, widget_id: str) -> tuple[WidgetState, str]:
        """A random answer for the form's widget, and the JSON the store should keep for it."""
        state = WidgetState(id=widget_id)
        labels = self.user.options.get(widget_id)
        unique = [i for i, label in enumerate(labels or []) if (labels or []).count(label) == 1]
        if labels and unique:  # pills: the option's label (a label shown twice names either option: not chosen)
            index = self.rng.choice(unique)
            state.string_array_value.data.append(labels[index])
            return state, str(index)
        value = round(self.rng.uniform(0.0, 1.0), 2)
        state.string_value = str(value)
        return state, str(value)

    async def answer(self, question: int, widget_id: str) -> None:
        await asyncio.sleep(self.rng.uniform(2.0, 10.0))
        record = self.answers[question]
        state, stored = self.answer_state(widget_id)
        record.update(student_id=self.student_id, answer=stored, sent=round(self.run.now(), 2))
        alerts = len(self.user.alerts)
        try:
            try:
                await self.user.press(SEND, self.run.config.action_timeout, (state,))
            except DisconnectedError:  # lost with its replica: once back, the student sees no "Sent" and sends again
                record["sent_again"] = True
                deadline = time.perf_counter() + 60
                while not self.user.connected and time.perf_counter() < deadline:
                    await asyncio.sleep(0.2)
                await asyncio.sleep(self.rng.uniform(1.0, 3.0))
                alerts = len(self.user.alerts)
                await self.user.press(SEND, self.run.config.action_timeout, (state,))
        except (DisconnectedError, ScriptError, TimeoutError, KeyError) as exc:
            self.error("answer", f"{type(exc).__name__}: {exc}")
            return
        if any(text.startswith(SENT) for text in self.user.alerts[alerts:]):
            record["acked"] = time.perf_counter()
        else:
            self.error("answer", "no acknowledgement on the page")
