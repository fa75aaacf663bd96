"""The live class's shared state, behind one small interface with two backends (SQLite, Redis) that pass one test
suite (tests/test_class_store.py).

A class is a row of plain values: its code, a version that grows with every change its students must see, the page
and its link parameters, and the question open or revealed. Its students and their answers sit beside it. The teacher
is whoever holds the secret the class was created with; the store keeps only its SHA-256 and checks it on every
change. Every value is JSON or text: the store never unpickles or evaluates anything.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from attnviz.core.errors import AttnvizError

# Limits, named in the messages that enforce them (and in README, "Run a live class")
MAX_STUDENTS = 250  # per class
MAX_CLASSES = 100  # per store (per server, or per Redis shared by the replicas)
MAX_NICKNAME = 24  # characters
MAX_ANSWER_BYTES = 2048  # an answer's JSON
MAX_PARAMS_BYTES = 512 * 1024  # a class's link parameters as JSON (a link's own limit: attnviz/app/links.py)
IDLE_SECONDS = 3 * 3600  # a class nobody changed for this long ends by itself
JOIN_ATTEMPTS = 10  # failed joins per client ...
JOIN_WINDOW_SECONDS = 600  # ... within this window, then the client waits

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read off a projector
CODE_LENGTH = 6  # 31**6 = 887 million codes


def new_code() -> str:
    """A random class code."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(text: str) -> str | None:
    """A code as typed (any case, spaces, dashes) in its normal form; None if it cannot be a code."""
    code = "".join(str(text).split()).replace("-", "").upper()[: CODE_LENGTH + 1]
    if len(code) != CODE_LENGTH or any(char not in CODE_ALPHABET for char in code):
        return None
    return code


def new_secret() -> str:
    """A teacher's secret (the class's control rests on it)."""
    return secrets.token_urlsafe(24)


def secret_hash(secret: str) -> str:
    """What the store keeps of a teacher's secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Question:
    """A question the teacher asked: `id` counts the class's questions from 1; `kind` names its type; `spec` holds
    what the students see and the truth (plain JSON values); `revealed`: the answers are shown."""

    id: int
    kind: str
    spec: dict[str, Any]
    revealed: bool = False


@dataclass(frozen=True)
class ClassState:
    """A class as its students see it."""

    code: str
    follow_id: str  # random, public: the students' browsers ask for the version under it (never the code)
    version: int
    page: str  # the page's catalogue name ("self", "model", ...)
    params: dict[str, str]  # the page's link parameters
    question: Question | None
    created: float
    updated: float
    questions_asked: int = 0  # how many questions this class has had (the next one's id is this + 1)
    extra: dict[str, Any] = field(default_factory=dict)


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
    raise AttnvizError("class_store_url", url=url)


_SHARED: dict[str, ClassStore] = {}
_SHARED_LOCK = threading.Lock()


def shared_store() -> ClassStore:
    """The store of this server process (at default_url()), opened once and used by every session and request."""
    url = default_url()
    with _SHARED_LOCK:
        if url not in _SHARED:
            _SHARED[url] = open_store(url)
        return _SHARED[url]
