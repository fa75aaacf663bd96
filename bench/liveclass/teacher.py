"""The teacher: a simulated browser on the teacher link, changing a control every 2 s, asking questions with the
page's own "Ask" and "Reveal the answers" buttons, and sending the reruns of the answer count's fragment timer
(`run_every`) as a browser's timer does."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench.classload.students import _decimal, sentence
from bench.liveclass.browser import LiveUser
from bench.liveclass.measures import answered_counts, page_state
from testkit.proxyclient import DisconnectedError
from testkit.wire import ScriptError

PAGES = {"self": "Self_attention", "kernel": "Kernel_attention"}


class Teacher:
    """The class's teacher: its tab, the changes it wrote, the questions it asked."""

    def __init__(self, run: Any, code: str, secret: str) -> None:
        self.run = run
        self.code = code
        self.rng = random.Random(run.config.seed)
        self.user = LiveUser(run.cluster.url, PAGES["self"], f"class={code}&teach={secret}", name="teacher")
        self.page = "self"
        self.changes: list[dict[str, Any]] = []  # every change: sent, written, page state, what, phase
        self.errors: list[dict[str, Any]] = []
        self.reconnects: list[dict[str, Any]] = []
        self.phase = ""
        self.asking = False  # a question open: only the temperature changes (the question is about this page)
        self.want_full = False  # the next change on this page reruns the whole page (a sentence)

    def error(self, what: str, detail: str) -> None:
        self.errors.append({"t": round(self.run.now(), 2), "what": what, "detail": detail[:300]})

    async def open(self) -> None:
        await self.user.open(120)
        if not self.user.cookie("attnviz_class_").startswith("t:"):
            raise ScriptError("the teacher link did not make this tab the class's teacher")

    def next_change(self) -> tuple[str, str, str, float | str]:
        """(what, widget key or page, kind, value): mostly the temperature, a sentence or a page switch now and then."""
        if self.page == "kernel":
            if self.asking or self.rng.random() < 0.5:
                return "page", "self", "double", _decimal(self.rng, 0.1, 4.0)
            return "bandwidth", "w:kernel:bandwidth", "double", _decimal(self.rng, 0.2, 3.0)
        pick = self.rng.random()
        if self.want_full:
            self.want_full = False
            return "sentence", "w:self:sentence", "string", sentence(self.rng)
        if self.asking or pick < 0.7:
            return "temperature", "w:self:temperature", "double", _decimal(self.rng, 0.1, 4.0)
        if pick < 0.85:
            return "sentence", "w:self:sentence", "string", sentence(self.rng)
        return "page", "kernel", "double", _decimal(self.rng, 0.2, 3.0)

    async def change(self, only_temperature: bool = False) -> dict[str, Any] | None:
        """One change, as a browser sends it; its record (None if it failed)."""
        what, key, kind, value = self.next_change()
        if only_temperature and self.page == "self":
            what, key, kind, value = "temperature", "w:self:temperature", "double", _decimal(self.rng, 0.1, 4.0)
        user = self.user
        try:
            async with user.lock:
                sent = time.perf_counter()
                if what == "page":  # a link to the other page of the lesson, in this tab (st.page_link)
                    param = "T" if key == "self" else "bw"
                    user.page, user.page_hash, user.query = PAGES[key], "", f"class={self.code}&{param}={value}"
                    self.page = key
                    fragment, marks = "", await user.send_rerun()
                else:
                    user.set_widget(key, kind, value)
                    fragment = user.fragment_of(key)
                    marks = await user.send_rerun(fragment)
                finish = await user.wait_run(marks, self.run.config.action_timeout)
        except (DisconnectedError, ScriptError, TimeoutError) as exc:
            self.error(what, f"{type(exc).__name__}: {exc}")
            return None
        record = {"what": what, "phase": self.phase, "t": round(sent - self.run.t0, 2), "sent": sent,
                  "written": finish.at, "state": page_state(finish.query), "run_s": round(finish.at - sent, 3),
                  "whole_page": not fragment}  # fmt: skip
        self.changes.append(record)
        return record

    async def timers(self, stop: asyncio.Event) -> None:
        """The browser's fragment timers: each fragment the page asked for is rerun every `interval` seconds, on a
        schedule of its own (the join box every 2 s, the answer count every second)."""
        user = self.user
        due: dict[str, float] = {}  # fragment id -> when its next rerun is due
        while not stop.is_set():
            if not user.timers or not user.connected:
                due.clear()
                await asyncio.sleep(0.1)
                continue
            now = time.perf_counter()
            due = {f: due.get(f, now + interval) for f, interval in user.timers.items()}  # new timers start now
            fragment_id = min(due, key=due.__getitem__)
            await asyncio.sleep(max(0.0, due[fragment_id] - now))
            if fragment_id not in user.timers or not user.connected:
                continue
            due[fragment_id] = time.perf_counter() + user.timers[fragment_id]
            try:
                async with user.lock:
                    await user.wait_run(await user.send_rerun(fragment_id, auto=True), self.run.config.action_timeout)
            except (DisconnectedError, ScriptError, TimeoutError) as exc:
                if user.connected:
                    self.error("fragment timer", f"{type(exc).__name__}: {exc}")

    async def press(self, key: str) -> bool:
        """Press one of the class's buttons ("Ask", "Reveal the answers", "Close the question")."""
        try:
            try:
                await self.user.press(key, self.run.config.action_timeout)
            except DisconnectedError:  # lost with its replica: pressed again once the page is back
                self.error(key, "lost with its replica: pressed again after the reconnect")
                deadline = time.perf_counter() + 60
                while not self.user.connected and time.perf_counter() < deadline:
                    await asyncio.sleep(0.2)
                await asyncio.sleep(1.0)
                await self.user.press(key, self.run.config.action_timeout)
            return True
        except (DisconnectedError, ScriptError, TimeoutError, KeyError) as exc:
            self.error(key, f"{type(exc).__name__}: {exc}")
            return False

    def answered(self) -> tuple[int, int] | None:
        """The last "n of m answered" the teacher's screen showed."""
        return answered_counts(self.user.metrics[-1][1]) if self.user.metrics else None

    async def watch(self, stop: asyncio.Event) -> None:
        """The frontend: when the websocket closes (its replica died), reconnect at once."""
        while not stop.is_set():
            await self.user.wait_until(stop.is_set, 1.0)
            if not stop.is_set() and not self.user.connected:
                await self.recover()

    async def recover(self) -> None:
        """The websocket closed (its replica died): reconnect as the frontend does."""
        closed = self.user.closed_at or time.perf_counter()
        ok = await self.user.reconnect(closed + 90)
        self.reconnects.append({"closed_at_s": round(closed - self.run.t0, 2), "ok": ok,
                                "reconnect_s": round(time.perf_counter() - closed, 2) if ok else None})  # fmt: skip
        if not ok:
            self.error("reconnect", "no connection within 90 s")
