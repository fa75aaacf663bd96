"""Students: a tab each on one page, changing its real controls, checking each change in the link, reconnecting
when their replica dies."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from bench.classload.config import Lesson
from testkit.proxyclient import DisconnectedError, ProxyUser
from testkit.wire import ScriptError

PAGES = {
    "self": "Self_attention",
    "cross": "Cross_attention",
    "kernel": "Kernel_attention",
    "model": "Pretrained_model",
}
LEARN = "Learn σ from the training points"
USE_LEARNED = "Use the learned σ"
# Links a class passes around; "link" students open one, then reopen another now and then (a new tab).
SHARE_LINKS = (
    ("self", "p=unit_sentences&b=1"),
    ("cross", "p=d2l_additive"),
    ("kernel", "p=d2l_toy_regression"),
    ("model", "s=the+teacher+asked+a+question+about+the+map&l=3"),
    ("self", "s=attention+is+all+you+need&T=0.5&c=1"),
)
# Words a student types (short sentences on the attention and model pages).
_WORDS = (
    "the cat sat on a mat while dogs ran past old trees near quiet rivers and children read books about stars "
    "planets oceans music history maps numbers birds clouds rain wind snow bread apples green blue red small large "
    "fast slow happy tired bright dark teacher student school lesson question answer"
)
WORDS = tuple(_WORDS.split())
KERNEL_KEYS = ("gaussian", "laplace", "boxcar", "epanechnikov")  # attnviz.core.kernel.KERNELS, in the picker's order


def _decimal(rng: random.Random, low: float, high: float) -> float:
    """A value with three decimals, the last one not 0: never a preset's or a default's round number."""
    while True:
        value = round(rng.uniform(low, high), 3)
        if round(value * 1000) % 10:
            return value


def _number_text(value: float) -> str:
    from attnviz.core.fields import format_number

    return format_number(value)


def sentence(rng: random.Random, low: int = 4, high: int = 12) -> str:
    """A short sentence a student might type."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


@dataclass(frozen=True)
class Change:
    """One control a student changes, and what the link must show afterwards."""

    action: str  # name in the report
    key: str  # widget key
    kind: str  # the widget state's kind: double, int, string, bool
    value: float | int | str | bool
    param: str  # the link parameter that carries the control
    expected: str | None  # its text in the link; None: a toggle, checked as "changed"
    exact: bool = True  # numbers and texts (never a default's value here); False: toggles and choices

    def applied(self, before: str | None, after: str | None) -> bool:
        """Whether the link after the run carries this change (`before`, `after`: the parameter's text).

        A number or a text must appear as sent. A toggle or a choice may be back at the page's base value, which
        the link leaves out: then the parameter must have changed, to the value sent or out of the link."""
        if self.exact:
            return after == self.expected
        return after != before and (after == self.expected or after is None or self.expected is None)


class Student:
    """One student: a tab on one page, changing its controls, reconnecting when its replica dies."""

    def __init__(self, index: int, run: Lesson) -> None:
        self.index = index
        self.run = run
        self.rng = random.Random(run.config.seed * 1000 + index)
        kinds = ("self", "cross", "kernel", "model", "link")
        self.role = kinds[index % len(kinds)]
        if self.role == "link":
            self.kind, query = SHARE_LINKS[(index // len(kinds)) % len(SHARE_LINKS)]
        else:
            self.kind, query = self.role, ""
        self.user = ProxyUser(run.cluster.url, PAGES[self.kind], query, rng=self.rng, name=f"student {index}")
        self.actions: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.recoveries: list[dict[str, Any]] = []
        self.links: list[dict[str, Any]] = []
        self.pending: tuple[Change, str | None] | None = None  # a change sent and not yet seen finished

    @property
    def name(self) -> str:
        return f"student {self.index} ({self.role})"

    def error(self, what: str, detail: str) -> None:
        self.errors.append(
            {"student": self.index, "page": self.kind, "t": self.run.now(), "what": what, "detail": detail}
        )

    # ----- choosing what to do ------------------------------------------------------------------------------------
    def present(self, key: str) -> bool:
        """Whether the widget with `key` was drawn by the page's last full run (or a later fragment run)."""
        return key in self.user.widget_ids and self.user.drawn_since_full_run(self.user.widget_ids[key])

    def button(self, label: str) -> bool:
        """Whether an enabled button labelled `label` is on the page now."""
        widget_id, disabled = self.user.buttons.get(label, ("", True))
        return bool(widget_id) and not disabled and self.user.drawn_since_full_run(widget_id)

    def changes(self) -> list[tuple[int, Callable[[], Change]]]:
        """(weight, make) for each control of this page that can be changed right now."""
        p, rng = self.kind, self.rng
        options: list[tuple[int, str, Callable[[], Change]]] = []
        if p in ("self", "cross"):
            options += [
                (5, f"w:{p}:temperature", lambda: self._number(f"w:{p}:temperature", "T", 0.1, 4.0, "temperature")),
                (2, f"w:{p}:causal", lambda: self._toggle(f"w:{p}:causal", "c", "causal")),
                (1, f"w:{p}:sentence", lambda: self._text(f"w:{p}:sentence", "s", sentence(rng), "sentence")),
            ]
            if p == "self":
                options.append((1, "w:self:embed_seed", self._seed))
        elif p == "kernel":
            options += [
                (5, "w:kernel:bandwidth", lambda: self._number("w:kernel:bandwidth", "bw", 0.2, 3.0, "bandwidth")),
                (2, "w:kernel:kernel", lambda: self._choice("w:kernel:kernel", "kn", KERNEL_KEYS, "kernel")),
            ]
        elif p == "model":
            layers = tuple(str(n) for n in range(1, 7))
            options += [
                (3, "w:model:layer", lambda: self._choice("w:model:layer", "l", layers, "layer")),
                (2, "w:model:renormalise", lambda: self._toggle("w:model:renormalise", "rn", "renormalise")),
                (1, "w:model:hide_special", lambda: self._toggle("w:model:hide_special", "hs", "hide special")),
                (1, "w:model:sentence", lambda: self._text("w:model:sentence", "s", sentence(rng, 6, 16), "sentence")),
            ]
        return [(weight, make) for weight, key, make in options if self.present(key)]

    def _number(self, key: str, param: str, low: float, high: float, action: str) -> Change:
        value = _decimal(self.rng, low, high)
        return Change(action, key, "double", value, param, _number_text(value))

    def _seed(self) -> Change:
        value = self.rng.randint(1, 9999)
        return Change("embedding seed", "w:self:embed_seed", "int", value, "es", str(value))

    def _toggle(self, key: str, param: str, action: str) -> Change:
        current = bool(self.user.value_of(key))
        return Change(action, key, "bool", not current, param, None if current else "1", exact=False)

    def _text(self, key: str, param: str, text: str, action: str) -> Change:
        return Change(action, key, "string", text, param, text)

    def _choice(self, key: str, param: str, keys: tuple[str, ...], action: str) -> Change:
        labels = self.user.options.get(self.user.widget_ids[key], [])
        current = self.user.value_of(key)
        choices = [i for i, label in enumerate(labels[: len(keys)]) if label != current]
        if not choices:
            raise ScriptError(f"no option to choose in {key!r}: {labels}")
        index = self.rng.choice(choices)
        return Change(action, key, "string", labels[index], param, keys[index], exact=False)

    def choose(self) -> str | Change:
        """The next action: a Change, "learn" (kernel page) or "reopen" (link students)."""
        weighted: list[tuple[int, str | Callable[[], Change]]] = list(self.changes())
        if self.kind == "kernel" and self.button(LEARN):
            weighted.append((1, "learn"))
        if self.role == "link":
            weighted.append((1, "reopen"))
        if not weighted:
            return "reload"  # nothing to change: the page did not draw its controls (counted as an error below)
        pick = self.rng.choices([w for _, w in weighted], [weight for weight, _ in weighted])[0]
        return pick if isinstance(pick, str) else pick()

    # ----- acting -------------------------------------------------------------------------------------------------
    async def change(self, change: Change) -> None:
        """Set one control, wait for the run, check the link carries the new value."""
        user = self.user
        before = user.params().get(change.param)
        user.set_widget(change.key, change.kind, change.value)
        self.pending = (change, before)
        started = time.perf_counter()
        finish = await user.wait_run(
            await user.send_rerun(user.fragment_of(change.key)), self.run.config.action_timeout
        )
        self.pending = None
        after = {k: v[-1] for k, v in parse_qs(finish.query, keep_blank_values=True).items()}.get(change.param)
        ok = change.applied(before, after)
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": change.action,
                "t": self.run.now(),
                "s": finish.at - started,
                "applied": ok,
            }
        )
        if not ok:
            self.run.lost.append(
                {
                    "student": self.index,
                    "page": self.kind,
                    "when": "normal",
                    "t": self.run.now(),
                    "param": change.param,
                    "sent": change.value,
                    "before": before,
                    "after": after,
                }
            )

    async def learn(self) -> None:
        """Press "Learn σ", then "Use the learned σ"; the link's bandwidth must become the learned one."""
        user = self.user
        seconds = await user.click(LEARN, self.run.config.action_timeout)
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": "learn σ",
                "t": self.run.now(),
                "s": seconds,
                "applied": True,
            }
        )
        if not self.button(USE_LEARNED):
            self.error("learn σ", "no 'Use the learned σ' button after learning")
            return
        alerts = len(user.alerts)
        seconds = await user.click(USE_LEARNED, self.run.config.action_timeout)
        # The σ field must now hold the learned σ (the page's message says it), and the link must carry it; a σ
        # equal to the page's base value (σ did not move from its start, 1) is left out of the link.
        shown = user.value_of("w:kernel:bandwidth")
        said = re.findall(r"σ = ([0-9.e+-]+)", " ".join(user.alerts[alerts:]))
        link = user.params().get("bw")
        ok = shown is not None and bool(said) and float(shown) == float(said[-1])
        ok = ok and (link == _number_text(float(shown)) or (link is None and float(shown) == 1.0))
        self.actions.append(
            {
                "student": self.index,
                "page": self.kind,
                "action": "use learned σ",
                "t": self.run.now(),
                "s": seconds,
                "applied": ok,
            }
        )
        if not ok:
            self.run.lost.append(
                {"student": self.index, "page": self.kind, "when": "normal", "t": self.run.now(), "param": "bw",
                 "sent": f"learned σ {shown}", "before": None, "after": user.params().get("bw")}
            )  # fmt: skip

    async def reopen(self) -> None:
        """Open another shared link in a new tab of the same browser; the page must come from the link."""
        kind, query = SHARE_LINKS[self.rng.randrange(len(SHARE_LINKS))]
        await self.user.close()
        self.user.forget_page()
        self.kind, self.user.page, self.user.query = kind, PAGES[kind], query
        started = time.perf_counter()
        await self.user.open(self.run.config.action_timeout)
        seconds = time.perf_counter() - started
        restored = self.user.params() == {k: v[-1] for k, v in parse_qs(query).items()}
        self.links.append({"student": self.index, "link": f"{PAGES[kind]}?{query}", "s": seconds, "restored": restored})
        self.actions.append(
            {
                "student": self.index,
                "page": kind,
                "action": "open link",
                "t": self.run.now(),
                "s": seconds,
                "applied": True,
            }
        )
        if not restored:
            self.error("open link", f"{PAGES[kind]}?{query} showed ?{self.user.query}")

    async def act(self) -> None:
        """One action, with its failures sorted: a lost replica (reconnect), an error on the page, a timeout."""
        action: str | Change = "choose"
        try:
            action = self.choose()
            if action == "learn":
                await self.learn()
            elif action == "reopen":
                await self.reopen()
            elif action == "reload":
                self.error("controls", f"no control drawn on {self.user.page}?{self.user.query}")
                await self.reopen_same()
            else:
                assert isinstance(action, Change)
                await self.change(action)
        except DisconnectedError:
            await self.recover()
        except (ScriptError, TimeoutError) as exc:
            self.pending = None
            self.error(action if isinstance(action, str) else action.action, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a fault of this client: reported (never silent), and the student goes on
            self.pending = None
            self.error("client error", f"{type(exc).__name__}: {exc}")

    async def reopen_same(self) -> None:
        await self.user.close()
        self.user.forget_page()
        await self.user.open(self.run.config.action_timeout)

    async def live(self) -> None:
        """Arrive, then act and think until the end of the run."""
        config = self.run.config
        await asyncio.sleep(self.rng.uniform(0, config.arrival))
        try:
            seconds = await self.user.open(config.action_timeout)
            self.actions.append(
                {
                    "student": self.index,
                    "page": self.kind,
                    "action": "open",
                    "t": self.run.now(),
                    "s": seconds,
                    "applied": True,
                }
            )
        except DisconnectedError:
            await self.recover()
        except (ScriptError, TimeoutError) as exc:
            self.error("open", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a fault of this client: reported, never silent
            self.error("client error", f"{type(exc).__name__}: {exc}")
        while self.run.now() < config.seconds:
            think = self.rng.uniform(*config.think)
            if not await self.user.wait_until(lambda: False, think) and self.user.closed_at is not None:
                await self.recover()
                continue
            if self.run.now() >= config.seconds:
                break
            await self.act()
        await self.user.close()

    # ----- after a lost replica -----------------------------------------------------------------------------------
    async def recover(self, immediate: bool | None = None) -> None:
        """Reconnect as a browser does, then change a control soon after and check the change and the page: at once
        or after 0.5-2 s, as `immediate` says (a coin toss when None)."""
        closed = self.user.closed_at or time.perf_counter()
        record, pending = self._lost_websocket(closed)
        if not await self._reconnect(record, closed):
            return
        record["reconnect_s"] = round(time.perf_counter() - closed, 3)
        record["reconnected_at_s"] = round(self.run.now(), 2)  # beside the kill's "restarted_at_s"
        # The replica nginx sent the reconnect to (its health request, logged when answered): the survivor, or the
        # killed one already restarted (cold: its first runs import the app and load the model)
        record["reconnected_to"] = (await asyncio.to_thread(self.run.cluster.replica_of)).get(self.user.affinity)
        if immediate is None:
            immediate = self.rng.random() < 0.5
        record["moment"] = "immediately" if immediate else "after 0.5-2 s"
        try:
            await self._change_after_reconnect(record, closed, pending, immediate)
        except DisconnectedError:
            record["works_again_s"] = None
            self.error("after reconnect", "the websocket closed again")
            if self.run.now() < self.run.config.seconds:
                await self.recover()
        except (ScriptError, TimeoutError) as exc:
            record["works_again_s"] = None
            self.error("after reconnect", f"{type(exc).__name__}: {exc}")

    def _lost_websocket(self, closed: float) -> tuple[dict[str, Any], tuple[Change, str | None] | None]:
        """A closed websocket: an error unless it closed at a replica's loss. Starts its record in the recoveries;
        returns it, and the change that was in flight (no longer pending)."""
        closed_t = closed - self.run.t0
        kill_t = self.run.kill_t
        expected = kill_t is not None and kill_t - 0.5 <= closed_t <= kill_t + self.run.config.kill_window
        if not expected:
            self.error("websocket", f"closed at {closed_t:.1f} s, not at a replica's loss")
        pending, self.pending = self.pending, None
        record: dict[str, Any] = {
            "student": self.index,
            "page": self.kind,
            "closed_at_s": round(closed_t, 2),
            "before": self.user.query,
            "pending": pending[0].param if pending else None,
            "attempts": 0,
        }
        self.recoveries.append(record)
        return record, pending

    async def _reconnect(self, record: dict[str, Any], closed: float) -> bool:
        """The frontend: ping /_stcore/health until it answers, then a new websocket with the same cookies. False
        (an error) when there is no connection within 90 s of the close."""
        user = self.user
        delay = self.rng.uniform(0.1, 0.5)
        deadline = closed + 90
        while True:
            await asyncio.sleep(delay)
            record["attempts"] += 1
            reply = await user.health()
            if reply.status == 200:
                try:
                    await user.connect()
                    return True
                except DisconnectedError:
                    pass
            if time.perf_counter() > deadline:
                record["works_again_s"] = None
                self.error("reconnect", f"no connection within 90 s (last health: {reply.status} {reply.error})")
                return False
            delay = min(delay * 2, 5.0)

    async def _change_after_reconnect(
        self, record: dict[str, Any], closed: float, pending: tuple[Change, str | None] | None, immediate: bool
    ) -> None:
        """The reconnected tab's first run, and a change sent with it or soon after: the page must come from its
        link, the change must reach the link, and a change in flight at the kill must not be lost."""
        user = self.user
        marks = await user.send_rerun()  # the page's query string and widget values, as a browser sends them
        change = await self._change_soon(record, closed, marks, immediate)
        change_before = user.params().get(change.param)
        user.set_widget(change.key, change.kind, change.value)
        started = time.perf_counter()
        change_marks = await user.send_rerun(user.fragment_of(change.key))
        applied = await self._applied(change, change_before, change_marks)
        ignore = {change.param} | ({pending[0].param} if pending else set())
        self._note_first_run(record, closed, marks, immediate, ignore)
        record["change"] = {"param": change.param, "sent": change.value, "before": change_before}
        record["after_change"] = user.query
        if user.exceptions[marks[1] :]:
            self.error("after reconnect", f"exception on the page: {user.exceptions[marks[1]]}")
        if applied:
            record["works_again_s"] = round(time.perf_counter() - closed, 3)
            record["change_s"] = round(time.perf_counter() - started, 3)
        else:
            self._lost_after_reconnect(record, change, change_before, user.finished_ok(change_marks) is not None)
        record["lost"] = not applied
        record["runs_after_reconnect"] = runs_after(user.finishes[marks[0] :], closed, change.param)
        if pending is not None and pending[0].param != change.param:
            self._check_pending(record, pending)

    async def _change_soon(
        self, record: dict[str, Any], closed: float, marks: tuple[int, int], immediate: bool
    ) -> Change:
        """The change a student makes after reconnecting: at once, or 0.5-2 s after the first run ended."""
        user = self.user
        options = self.changes() or [(1, lambda: self._number(f"w:{self.kind}:temperature", "T", 0.1, 4.0, "T"))]
        if not immediate:
            first = await user.wait_run(marks, self.run.config.action_timeout)
            record["first_run_s"] = round(first.at - closed, 3)
            await asyncio.sleep(self.rng.uniform(0.5, 2.0))
            options = self.changes() or options
        return self.rng.choices([m for _, m in options], [w for w, _ in options])[0]()

    async def _applied(self, change: Change, before: str | None, marks: tuple[int, int]) -> bool:
        """Whether the run of `change` (sent with `marks`) ended with the change in the link, within the timeout."""
        user = self.user

        def settled() -> bool:
            return user.finished_ok(marks) is not None and change.applied(before, user.params().get(change.param))

        applied = await user.wait_until(settled, self.run.config.action_timeout)
        if not applied and user.closed_at is None:
            await user.wait_until(lambda: False, 2.0)  # a late message: give it a moment more
            applied = settled()
        return applied

    def _note_first_run(
        self, record: dict[str, Any], closed: float, marks: tuple[int, int], immediate: bool, ignore: set[str]
    ) -> None:
        """When the first run after the reconnect ended, and whether it showed the page of the student's link."""
        first = self.user.finished_ok(marks)
        if immediate and first is not None:
            record["first_run_s"] = round(first.at - closed, 3)
        after_first = first.query if first else None
        record["after_first_run"] = after_first
        record["restored"] = page_restored(self.kind, record["before"], after_first, ignore)

    def _lost_after_reconnect(self, record: dict[str, Any], change: Change, before: str | None, ended: bool) -> None:
        """A change sent after the reconnect that did not reach the link (`ended`: its run ended without it)."""
        record["works_again_s"] = None
        record["why"] = why_lost(ended)
        self.run.lost.append(
            {
                "student": self.index,
                "page": self.kind,
                "when": f"after reconnect ({record['moment']})",
                "t": self.run.now(),
                "param": change.param,
                "sent": change.value,
                "before": before,
                "after": self.user.params().get(change.param),
                "why": record["why"],
                "reconnected_to": record["reconnected_to"],
            }
        )

    def _check_pending(self, record: dict[str, Any], pending: tuple[Change, str | None]) -> None:
        """Whether the change in flight when the replica died reached the link after all; a lost input if not."""
        change, before = pending
        kept = change.applied(before, self.user.params().get(change.param))
        record["pending_kept"] = kept
        if not kept:
            self.run.lost.append(
                {"student": self.index, "page": self.kind, "when": "in flight at the kill", "t": self.run.now(),
                 "param": change.param, "sent": change.value, "before": before,
                 "after": self.user.params().get(change.param)}
            )  # fmt: skip


def runs_after(finishes: list[Any], closed: float, param: str) -> list[list[Any]]:
    """The runs a reconnected tab saw end: [seconds since its websocket closed, status, `param` in the link then]."""
    return [
        [round(f.at - closed, 3), f.status, {k: v[-1] for k, v in parse_qs(f.query).items()}.get(param)]
        for f in finishes
    ]


def why_lost(finished: bool) -> str:
    """Why a change sent after a reconnect is counted lost: its run ended without it in the link (the app dropped
    or overwrote it: a race), or no run ended within the action timeout (a slow server: load)."""
    if finished:
        return "its run ended without it in the link"
    return "no run ended within the action timeout"


def _without(query: str, ignore: set[str]) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(query, keep_blank_values=True).items() if k not in ignore}


def page_restored(kind: str, before: str, after_first: str | None, ignore: set[str]) -> bool:
    """Whether the first run after a reconnect showed the page of the student's link (`before`), apart from the
    parameters in `ignore` (the change sent with that run, one typed while the replica died) and what follows from
    them by design: a new sentence shorter than the followed token's position moves the model page's followed token
    to its first word."""
    if after_first is None:
        return False
    if kind == "model" and "s" in ignore:
        ignore = ignore | {"tk"}
    return _without(before, ignore) == _without(after_first, ignore)


def reevaluate(results: dict[str, Any]) -> None:
    """Apply page_restored again to the recoveries of a results file (after a change of the rule)."""
    for run in results["runs"]:
        for record in run["recoveries"]:
            if "after_first_run" in record and "change" in record:
                ignore = {record["change"]["param"]} | ({record["pending"]} if record.get("pending") else set())
                record["restored"] = page_restored(record["page"], record["before"], record["after_first_run"], ignore)
