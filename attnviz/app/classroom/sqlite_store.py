"""The live class's store in one SQLite file: the default, for one server (or a few processes on one machine).

Each thread has its own connection (Streamlit runs sessions in threads; sqlite3 connections are not shared across
them), and several processes may open the same file: the file is in WAL mode, so readers never wait for a writer,
and a writer waits for another up to BUSY_TIMEOUT_SECONDS. Every change that must check something first (the
teacher's secret, the number of classes or students, the open question) reads and writes inside one
`BEGIN IMMEDIATE` transaction, which takes the write lock at once: two changes cannot both read version 7 and both
write 8.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from attnviz.app.classroom.backend import (
    checked_answer,
    class_state,
    params_json,
    question_action,
    question_json,
    question_of,
    short_nickname,
    unavailable_on,
)
from attnviz.app.classroom.records import (
    IDLE_SECONDS,
    JOIN_WINDOW_SECONDS,
    MAX_CLASSES,
    MAX_STUDENTS,
    ClassState,
    Question,
    new_code,
)
from attnviz.core.errors import AttnvizError

BUSY_TIMEOUT_SECONDS = 5.0  # how long a change waits for another process's or thread's write to finish

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY,
    follow_id TEXT NOT NULL UNIQUE,
    teacher_hash TEXT NOT NULL,
    version INTEGER NOT NULL,
    page TEXT NOT NULL,
    params TEXT NOT NULL,              -- JSON object: the page's link parameters
    question TEXT,                     -- JSON of the open or revealed question; NULL for none
    questions_asked INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS classes_updated ON classes (updated);
CREATE TABLE IF NOT EXISTS students (
    code TEXT NOT NULL,
    student_id TEXT NOT NULL,
    nickname TEXT NOT NULL,
    PRIMARY KEY (code, student_id)
);
CREATE TABLE IF NOT EXISTS questions (
    code TEXT NOT NULL,
    id INTEGER NOT NULL,
    question TEXT NOT NULL,            -- JSON, as classes.question
    PRIMARY KEY (code, id)
);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL,
    question_id INTEGER NOT NULL,
    student_id TEXT NOT NULL,
    answer TEXT NOT NULL,              -- JSON text, as the student's page sent it
    PRIMARY KEY (code, question_id, student_id)
);
CREATE TABLE IF NOT EXISTS failed_joins (
    client TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS failed_joins_client ON failed_joins (client, at);
"""
CLASS_COLUMNS = "follow_id, version, page, params, question, questions_asked, created, updated"
CLASS_TABLES = ("classes", "students", "questions", "answers")  # each has the column `code`

guarded = unavailable_on(sqlite3.Error, OSError)  # OSError: the folder cannot be made


class SQLiteStore:
    """The ClassStore in the SQLite file at `path` (its folder is made if missing)."""

    def __init__(self, path: Path, *, max_students: int = MAX_STUDENTS, max_classes: int = MAX_CLASSES) -> None:
        self.path = Path(path)
        self.max_students = max_students
        self.max_classes = max_classes
        self._local = threading.local()
        self._schema_ready = False

    # ----- connections and transactions ---------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema made) on first use."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; every change opens its own BEGIN IMMEDIATE.
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
            try:
                connection.execute("PRAGMA journal_mode = WAL")  # kept in the file; a no-op once set
                connection.execute("PRAGMA synchronous = NORMAL")  # WAL's safe setting: a crash loses no commit
                if not self._schema_ready:  # each statement is IF NOT EXISTS: another process may have made it
                    connection.executescript(SCHEMA)
                    self._schema_ready = True
            except BaseException:
                connection.close()
                raise
            self._local.connection = connection
        return connection

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A transaction that holds the write lock from its first statement; rolled back if anything raises."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # what raised, or a COMMIT that failed: the next write starts clean
                connection.execute("ROLLBACK")
            raise

    def _teacher(self, connection: sqlite3.Connection, code: str, teacher_hash: str) -> tuple:
        """Inside a write: (teacher hash, version, question JSON, questions asked), once the secret is checked."""
        row = connection.execute(
            "SELECT teacher_hash, version, question, questions_asked FROM classes WHERE code = ?", (code,)
        ).fetchone()
        if row is None:
            raise AttnvizError("class_unknown")
        if not hmac.compare_digest(row[0].encode(), str(teacher_hash).encode()):
            raise AttnvizError("class_not_teacher")
        return row

    @staticmethod
    def _bump(connection: sqlite3.Connection, code: str, now: float) -> int:
        connection.execute("UPDATE classes SET version = version + 1, updated = ? WHERE code = ?", (now, code))
        return int(connection.execute("SELECT version FROM classes WHERE code = ?", (code,)).fetchone()[0])

    # ----- the teacher ----------------------------------------------------------------------------------------------

    @guarded
    def create(self, teacher_hash: str, page: str, params: dict[str, str], now: float) -> ClassState:
        params_text, follow_id = params_json(params), secrets.token_urlsafe(16)
        with self._write() as connection:
            if connection.execute("SELECT COUNT(*) FROM classes").fetchone()[0] >= self.max_classes:
                raise AttnvizError("class_limit", limit=self.max_classes)
            code = new_code()
            while connection.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone():
                code = new_code()
            connection.execute(
                f"INSERT INTO classes (code, teacher_hash, {CLASS_COLUMNS}) VALUES (?, ?, ?, 1, ?, ?, NULL, 0, ?, ?)",
                (code, teacher_hash, follow_id, page, params_text, now, now),
            )
        return ClassState(code, follow_id, 1, page, json.loads(params_text), None, now, now)

    @guarded
    def set_state(self, code: str, teacher_hash: str, page: str, params: dict[str, str], now: float) -> int:
        params_text = params_json(params)
        with self._write() as connection:
            self._teacher(connection, code, teacher_hash)
            connection.execute("UPDATE classes SET page = ?, params = ? WHERE code = ?", (page, params_text, code))
            return self._bump(connection, code, now)

    @guarded
    def set_question(self, code: str, teacher_hash: str, question: Question | None, now: float) -> int:
        with self._write() as connection:
            _, _, current, asked = self._teacher(connection, code, teacher_hash)
            open_question = question_of(current)
            action = question_action(question, asked, open_question.id if open_question else None)
            text = question_json(question) if question is not None else None
            if action == "open":
                connection.execute("UPDATE classes SET questions_asked = ? WHERE code = ?", (question.id, code))
            if action != "close":
                connection.execute(
                    "INSERT OR REPLACE INTO questions (code, id, question) VALUES (?, ?, ?)", (code, question.id, text)
                )
            connection.execute("UPDATE classes SET question = ? WHERE code = ?", (text, code))
            return self._bump(connection, code, now)

    @guarded
    def end(self, code: str, teacher_hash: str) -> None:
        with self._write() as connection:
            try:
                self._teacher(connection, code, teacher_hash)
            except AttnvizError as error:
                if error.code == "class_unknown":
                    return  # ended already (another window of the teacher's, or expired)
                raise
            self._delete(connection, [code])

    @staticmethod
    def _delete(connection: sqlite3.Connection, codes: list[str]) -> None:
        for table in CLASS_TABLES:
            connection.executemany(f"DELETE FROM {table} WHERE code = ?", [(code,) for code in codes])

    @guarded
    def expire(self, now: float, idle_seconds: float = IDLE_SECONDS) -> list[str]:
        with self._write() as connection:
            codes = [
                row[0]
                for row in connection.execute("SELECT code FROM classes WHERE updated <= ?", (now - idle_seconds,))
            ]
            self._delete(connection, codes)
            connection.execute("DELETE FROM failed_joins WHERE at <= ?", (now - JOIN_WINDOW_SECONDS,))
        return codes

    # ----- what the students' pages read ----------------------------------------------------------------------------

    @guarded
    def is_teacher(self, code: str, teacher_hash: str) -> bool:
        row = self._connection().execute("SELECT teacher_hash FROM classes WHERE code = ?", (code,)).fetchone()
        return row is not None and hmac.compare_digest(row[0].encode(), str(teacher_hash).encode())

    @guarded
    def get(self, code: str) -> ClassState | None:
        row = self._connection().execute(f"SELECT {CLASS_COLUMNS} FROM classes WHERE code = ?", (code,)).fetchone()
        if row is None:
            return None
        return class_state(code, dict(zip(CLASS_COLUMNS.split(", "), row, strict=True)))

    @guarded
    def code_of(self, follow_id: str) -> str | None:
        row = self._connection().execute("SELECT code FROM classes WHERE follow_id = ?", (follow_id,)).fetchone()
        return row[0] if row else None

    @guarded
    def versions(self, codes: list[str]) -> dict[str, int]:
        codes = list(dict.fromkeys(codes))
        if not codes:
            return {}
        marks = ", ".join("?" * len(codes))
        rows = self._connection().execute(f"SELECT code, version FROM classes WHERE code IN ({marks})", codes)
        return {code: int(version) for code, version in rows}

    @guarded
    def questions(self, code: str) -> list[Question]:
        rows = self._connection().execute("SELECT question FROM questions WHERE code = ? ORDER BY id", (code,))
        return [question_of(text) for (text,) in rows]

    # ----- the students ---------------------------------------------------------------------------------------------

    @guarded
    def join(self, code: str, student_id: str, nickname: str, now: float) -> None:
        nickname = short_nickname(nickname)
        with self._write() as connection:
            if not connection.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone():
                raise AttnvizError("class_unknown")
            known = connection.execute(
                "SELECT 1 FROM students WHERE code = ? AND student_id = ?", (code, student_id)
            ).fetchone()
            count = connection.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()[0]
            if not known and count >= self.max_students:
                raise AttnvizError("class_full", limit=self.max_students)
            connection.execute(
                "INSERT OR REPLACE INTO students (code, student_id, nickname) VALUES (?, ?, ?)",
                (code, student_id, nickname),
            )

    @guarded
    def students(self, code: str) -> dict[str, str]:
        rows = self._connection().execute("SELECT student_id, nickname FROM students WHERE code = ?", (code,))
        return dict(rows.fetchall())

    @guarded
    def answer(self, code: str, question_id: int, student_id: str, answer: str, now: float) -> None:
        answer = checked_answer(answer)
        with self._write() as connection:
            row = connection.execute("SELECT question FROM classes WHERE code = ?", (code,)).fetchone()
            if row is None:
                raise AttnvizError("class_unknown")
            question = question_of(row[0])
            if question is None or question.id != question_id or question.revealed:
                raise AttnvizError("question_closed")
            connection.execute(
                "INSERT OR REPLACE INTO answers (code, question_id, student_id, answer) VALUES (?, ?, ?, ?)",
                (code, question_id, student_id, answer),
            )

    @guarded
    def answers(self, code: str, question_id: int) -> dict[str, str]:
        rows = self._connection().execute(
            "SELECT student_id, answer FROM answers WHERE code = ? AND question_id = ?", (code, question_id)
        )
        return dict(rows.fetchall())

    @guarded
    def failed_join(self, client: str, now: float) -> int:
        with self._write() as connection:
            connection.execute(
                "DELETE FROM failed_joins WHERE client = ? AND at <= ?", (client, now - JOIN_WINDOW_SECONDS)
            )
            connection.execute("INSERT INTO failed_joins (client, at) VALUES (?, ?)", (client, now))
            return self._failed_joins(connection, client, now)

    @guarded
    def failed_joins(self, client: str, now: float) -> int:
        return self._failed_joins(self._connection(), client, now)

    @staticmethod
    def _failed_joins(connection: sqlite3.Connection, client: str, now: float) -> int:
        return int(
            connection.execute(
                "SELECT COUNT(*) FROM failed_joins WHERE client = ? AND at > ? AND at <= ?",
                (client, now - JOIN_WINDOW_SECONDS, now),
            ).fetchone()[0]
        )
