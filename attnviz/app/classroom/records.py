"""The live class's records, limits, codes and secrets: plain values that store.py's interface and both of its
backends speak (they import them from here, so that store.py's open_store may import the backends without a circle).
store.py re-exports every name: import them from either.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any

# Limits, named in the messages that enforce them (and in README, "Run a live class")
MAX_STUDENTS = 250  # per class
MAX_CLASSES = 100  # per store (per server, or per Redis shared by the replicas)
MAX_NICKNAME = 24  # characters
MAX_ANSWER_BYTES = 2048  # an answer's JSON
MAX_PARAMS_BYTES = 512 * 1024  # a class's link parameters as JSON (a link's own limit: attnviz/app/links.py)
IDLE_SECONDS = 3 * 3600  # a class nobody changed for this long ends by itself
JOIN_ATTEMPTS = 30  # failed joins per client address (a class behind one NAT shares one) ...
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
