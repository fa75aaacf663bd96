"""The live class's shared state, behind one small interface with two backends (SQLite, Redis) that pass one test
suite (tests/test_class_store.py).

A class is a row of plain values: its code, a version that grows with every change its students must see, the page
and its link parameters, and the question open or revealed. Its students and their answers sit beside it. The teacher
is whoever holds the secret the class was created with; the store keeps only its SHA-256 and checks it on every
change. Every value is JSON or text: the store never unpickles or evaluates anything.

The records, limits and codes are defined in records.py (the backends import them from there) and named here too.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

from attnviz.app.classroom.records import (
    CODE_ALPHABET,
    CODE_LENGTH,
    IDLE_SECONDS,
    JOIN_ATTEMPTS,
    JOIN_WINDOW_SECONDS,
    MAX_ANSWER_BYTES,
    MAX_CLASSES,
    MAX_NICKNAME,
    MAX_PARAMS_BYTES,
    MAX_STUDENTS,
    ClassState,
    Question,
    new_code,
    new_secret,
    normal_code,
    secret_hash,
)
from attnviz.core.errors import AttnvizError, short

__all__ = [
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "IDLE_SECONDS",
    "JOIN_ATTEMPTS",
    "JOIN_WINDOW_SECONDS",
    "MAX_ANSWER_BYTES",
    "MAX_CLASSES",
    "MAX_NICKNAME",
    "MAX_PARAMS_BYTES",
    "MAX_STUDENTS",
    "ClassState",
    "ClassStore",
    "Question",
    "default_url",
    "new_code",
    "new_secret",
    "normal_code",
    "open_store",
    "secret_hash",
]


class ClassStore(Protocol):
    """The live class's shared state. Every method may raise AttnvizError("class_store_unavailable") when the
    backend cannot be reached; the pages then go on alone."""

    def create(self, teacher_hash: str, page: str, params: dict[str, str], now: float) -> ClassState:
        """A new class with a fresh code; AttnvizError("class_limit") at MAX_CLASSES."""

    def is_teacher(self, code: str, teacher_hash: str) -> bool:
        """Whether `teacher_hash` is the hash of the class's teacher secret (False for a class that is gone)."""

    def get(self, code: str) -> ClassState | None:
        """The class of `code`, None if there is none (never created, ended or expired)."""

    def code_of(self, follow_id: str) -> str | None:
        """The code of the class with this follow id."""

    def versions(self, codes: list[str]) -> dict[str, int]:
        """The current version of each class that still exists (one round trip)."""

    def set_state(self, code: str, teacher_hash: str, page: str, params: dict[str, str], now: float) -> int:
        """The teacher's page and its parameters; the new version. AttnvizError("class_not_teacher") for a wrong
        secret, ("class_unknown") for a class that is gone."""

    def set_question(self, code: str, teacher_hash: str, question: Question | None, now: float) -> int:
        """Open a question (its id must be questions_asked + 1), reveal it (the same id, revealed=True), or close
        it (None); the new version. The questions asked are kept for the CSV."""

    def join(self, code: str, student_id: str, nickname: str, now: float) -> None:
        """Add a student (again: the nickname is updated); ("class_full") at MAX_STUDENTS, ("class_unknown")."""

    def students(self, code: str) -> dict[str, str]:
        """student id -> nickname ("" if none given)."""

    def answer(self, code: str, question_id: int, student_id: str, answer: str, now: float) -> None:
        """A student's answer (JSON text, at most MAX_ANSWER_BYTES) to the open question; a second one replaces
        the first. ("question_closed") when that question is not open or already revealed."""

    def answers(self, code: str, question_id: int) -> dict[str, str]:
        """student id -> answer JSON."""

    def questions(self, code: str) -> list[Question]:
        """Every question the class was asked, in order (for the CSV)."""

    def end(self, code: str, teacher_hash: str) -> None:
        """Delete the class, its students and its answers."""

    def expire(self, now: float, idle_seconds: float = IDLE_SECONDS) -> list[str]:
        """Delete the classes not changed for `idle_seconds`; their codes."""

    def failed_join(self, client: str, now: float) -> int:
        """Count a failed join attempt by `client`; how many it made within JOIN_WINDOW_SECONDS."""

    def failed_joins(self, client: str, now: float) -> int:
        """How many failed join attempts `client` made within JOIN_WINDOW_SECONDS."""


def default_url() -> str:
    """ATTNVIZ_CLASS_STORE, else a SQLite file in the data folder (ATTNVIZ_DATA, else ~/.local/share/attnviz)."""
    url = os.environ.get("ATTNVIZ_CLASS_STORE", "").strip()
    if url:
        return url
    folder = Path(os.environ.get("ATTNVIZ_DATA") or Path.home() / ".local" / "share" / "attnviz")
    return f"sqlite:///{folder / 'classes.sqlite3'}"


def open_store(url: str | None = None) -> ClassStore:
    """The store at `url` (default_url()): sqlite:///path/to/file or redis://host:port/db."""
    url = url or default_url()
    if url.startswith("sqlite:///"):
        from attnviz.app.classroom.sqlite_store import SQLiteStore

        return SQLiteStore(Path(url.removeprefix("sqlite:///")))
    if url.startswith(("redis://", "rediss://", "unix://")):
        from attnviz.app.classroom.redis_store import RedisStore

        return RedisStore(url)
    raise AttnvizError("class_store_url", url=short(url.split("@")[-1], 80))  # never a password


_SHARED: dict[str, ClassStore] = {}
_SHARED_LOCK = threading.Lock()


def shared_store() -> ClassStore:
    """The store of this server process (at default_url()), opened once and used by every session and request."""
    url = default_url()
    with _SHARED_LOCK:
        if url not in _SHARED:
            _SHARED[url] = open_store(url)
        return _SHARED[url]
