"""The share box's offline HTML file: the page as it is, in one file that fetches nothing.

While a page's share box is open, each run records what the page draws: every chart as the JSON the browser was sent
(`common.chart`) and every worked computation (`work.work_panel`). The box's button makes the file from that
record only when it is clicked (Streamlit calls it on another thread, after the run), so a class moving sliders pays
nothing for it, and a closed box records nothing.

A file holds at most FILE_BYTES of charts, tables and worked steps besides Plotly's code (attnviz/app/budget.py); what
goes past it is left out, and the file names it. Making a file is large work (a 512-token page's file was ~20 MB of
JSON and tables before the budgets): it takes its turn at the process's
gate (attnviz/app/gate.py) like a large rerun, so a class clicking it together, or a client asking for it again and
again, takes at most the gate's share of the process; and a file already made for the same contents is served again
from a cache bounded in bytes instead of being made twice. When the gate is too busy the file says so, in the page's
language.

A fragment's rerun draws its part again: its charts replace the ones it drew before, and what it no longer draws is
left out (each item remembers the run that drew it, and each fragment its latest run).
"""

from __future__ import annotations

import hashlib
import html
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st
from cachetools import LRUCache

from attnviz.app.budget import FILE_BYTES
from attnviz.app.gate import GATE, ServerBusyError
from attnviz.app.streamlit_patches.script_run import running_fragment, this_run
from attnviz.i18n import t
from attnviz.lessons.explain import Step
from attnviz.notebook import Chart, Worked, html_document

RECORD_KEY = "attnviz_offline_record"
PAGE_KEY = "attnviz_offline_page"  # the page of the last full run
MADE_BYTES = 64 * 2**20  # the files kept to be served again: a few large pages' files, dozens of small ones
_MADE: LRUCache[str, bytes] = LRUCache(maxsize=MADE_BYTES, getsizeof=len)
_MADE_LOCK = threading.Lock()


def share_open_key(page: str) -> str:
    """Session key of a page's share box (`PageSession.part("open", "share")`)."""
    return f"{page}:open:share"


@dataclass
class _Item:
    scope: str | None  # the fragment that drew it (None: the page outside every fragment)
    run: object  # the run that drew it
    content: Chart | Worked


@dataclass
class PageRecord:
    """What a page drew, in order, for its offline file."""

    items: dict[str, _Item] = field(default_factory=dict)
    latest: dict[str | None, object] = field(default_factory=dict)  # each scope's latest run
    lock: threading.Lock = field(default_factory=threading.Lock)  # the file is made on another thread

    def begin(self) -> None:
        """A run of the page, or of one of its fragments, starts: what that scope drew before is out of date."""
        scope, run = _where()
        with self.lock:
            self.latest[scope] = run

    def add(self, name: str, content: Chart | Worked) -> None:
        scope, run = _where()
        with self.lock:
            self.latest[scope] = run  # also for a fragment that does not call `begin` (a timer's progress)
            key, count = name, 1
            while key in self.items and self.items[key].run is run:  # two items of one name in one run
                count += 1
                key = f"{name}#{count}"
            self.items[key] = _Item(scope, run, content)  # a name drawn again keeps its place

    def contents(self) -> list[Chart | Worked]:
        with self.lock:
            return [item.content for item in self.items.values() if self.latest.get(item.scope) is item.run]


def _where() -> tuple[str | None, object]:
    """(the fragment running now, or None; this run: its cursors, a new dict in every run of the script)."""
    return running_fragment(), this_run()


def begin(page: str | None = None) -> None:
    """A run starts: a full run of `page` (page_frame), or without `page` a fragment's run (settings.begin_run).

    While the page's share box is open, a full run starts a new record and a fragment's run makes what it drew
    before out of date (or starts the record, when the box was opened in it); a closed box keeps no record."""
    full_run = page is not None
    if full_run:
        st.session_state[PAGE_KEY] = page
    page = st.session_state.get(PAGE_KEY)
    if not (isinstance(page, str) and st.session_state.get(share_open_key(page))):
        st.session_state[RECORD_KEY] = None
        return
    record = _record()
    if record is None or full_run:
        record = st.session_state[RECORD_KEY] = PageRecord()
    record.begin()


def _record() -> PageRecord | None:
    record = st.session_state.get(RECORD_KEY)
    return record if isinstance(record, PageRecord) else None


def record_chart(spec: str, name: str) -> None:
    """A chart drawn from its JSON `spec`, named `name` (its downloads' file name)."""
    record = _record()
    if record is not None:
        record.add(f"chart:{name}", Chart(spec, name))


def record_steps(heading: str, steps: list[Step] | tuple[Step, ...]) -> None:
    """A worked computation drawn under `heading`."""
    record = _record()
    if record is not None and steps:
        record.add(f"worked:{heading}", Worked(heading, tuple(steps)))


def file_maker(title: str, intro: str, link: str | None, lang: str) -> Callable[[], bytes] | None:
    """What the share box's button calls to make the file, as UTF-8 (None when nothing is recorded: the box is
    closed). It holds only plain values: it runs on another thread, after the run, where the session cannot be
    read."""
    record = _record()
    if record is None:
        return None
    full_title = f"{title} · attnviz"

    def document(contents: list[Chart | Worked]) -> bytes:
        made = html_document(
            contents, lang=lang, title=full_title, heading=title, intro=intro, link=link, max_bytes=FILE_BYTES
        )
        return made.encode("utf-8")

    def make() -> bytes:
        contents = record.contents()
        key = _digest(contents, lang, full_title, intro, link)
        try:
            return _made(key) or _make_in_turn(key, lambda: document(contents))
        except ServerBusyError as busy:
            return _busy_file(full_title, t("gate.busy", lang, ahead=busy.ahead), lang)

    return make


def _made(key: str) -> bytes | None:
    """A file made before for the same contents, if it is still kept."""
    with _MADE_LOCK:
        return _MADE.get(key)


def _make_in_turn(key: str, document: Callable[[], bytes]) -> bytes:
    """Make a file in the process's turn for large work (unless another click made it while this one waited), and
    keep it. Raises ServerBusyError."""
    with GATE.turn():
        made = _made(key) or document()
    with _MADE_LOCK:
        _MADE[key] = made
    return made


def _digest(contents: list[Chart | Worked], *parts: str | None) -> str:
    """A key of what a file is made of: the same contents and words make the same file."""
    digest = hashlib.sha256(repr(parts).encode())
    for item in contents:
        digest.update(item.spec.encode() if isinstance(item, Chart) else repr(item).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _busy_file(title: str, message: str, lang: str) -> bytes:
    """A small file that says why the page's file was not made, in the page's language."""
    page = f'<!DOCTYPE html><html lang="{html.escape(lang)}"><meta charset="utf-8"><title>{html.escape(title)}</title>'
    return (page + f"<p>{html.escape(message)}</p></html>").encode("utf-8")
