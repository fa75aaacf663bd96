"""The live class's store in Redis: for several app replicas (Compose, Kubernetes) that must see one class.

Every key starts with `attnviz:`, so the store can share a Redis with other applications:

    attnviz:classes                   sorted set: code -> when the class last changed (expire, the class limit)
    attnviz:class:<code>              hash: the class's fields (as ClassState's, plus the teacher's hash)
    attnviz:follow:<follow id>        the code of the class with that follow id
    attnviz:students:<code>           hash: student id -> nickname
    attnviz:questions:<code>          hash: question id -> the question's JSON
    attnviz:answers:<code>:<id>       hash: student id -> answer JSON
    attnviz:joins:<client>            sorted set: a client's failed joins in the window, by time

Each change that checks something first (the teacher's secret, the limits, the open question) runs as one Lua
script, which Redis runs atomically; opening or revealing a question checks its id in Python inside WATCH/MULTI (the
same rule as the SQLite store's). A single Redis, not a Redis Cluster: the scripts name their keys themselves.

A Redis that cannot be reached never holds a page for long: connecting gives up after CONNECT_TIMEOUT, a reply after
READ_TIMEOUT, and every Redis error becomes AttnvizError("class_store_unavailable"). Nothing needs restarting when
Redis is back: the client opens a new connection for the next call (and replaces one that Redis closed).

A change whose reply timed out may still be applied: Redis runs what it received once it answers again.
"""

from __future__ import annotations

import hmac
import json
import secrets
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

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

PREFIX = "attnviz:"
CONNECT_TIMEOUT = 0.5  # seconds
READ_TIMEOUT = 1.0  # seconds; the scripts take well under a millisecond
MAX_FAILED_JOINS_KEPT = 1000  # a client's attempts remembered in the window (the limit acts long before)

guarded = unavailable_on(redis.RedisError)

# Every script gets ARGV[1] = the prefix, ARGV[2] = the class's code. Each returns {status, value}: status "ok", or
# the code of the AttnvizError to raise.
PRELUDE = """
local P, code = ARGV[1], ARGV[2]
local class = P .. 'class:' .. code
local function teacher(hash)
    local stored = redis.call('HGET', class, 'teacher')
    if not stored then return 'class_unknown' end
    -- compared as digests, so that how long it takes tells nothing of the stored value
    if redis.sha1hex(stored) ~= redis.sha1hex(hash) then return 'class_not_teacher' end
    return nil
end
local function bump(now)
    redis.call('HSET', class, 'updated', now)
    redis.call('ZADD', P .. 'classes', now, code)
    return redis.call('HINCRBY', class, 'version', 1)
end
local function drop(c)
    local key = P .. 'class:' .. c
    local fields = redis.call('HMGET', key, 'follow_id', 'questions_asked')
    if fields[1] then redis.call('DEL', P .. 'follow:' .. fields[1]) end
    for q = 1, tonumber(fields[2] or '0') do redis.call('DEL', P .. 'answers:' .. c .. ':' .. q) end
    redis.call('DEL', key, P .. 'students:' .. c, P .. 'questions:' .. c)
    redis.call('ZREM', P .. 'classes', c)
end
"""
CREATE = """
local follow_id, now = ARGV[4], ARGV[7]
if redis.call('ZCARD', P .. 'classes') >= tonumber(ARGV[8]) then return {'class_limit', 0} end
if redis.call('EXISTS', class, P .. 'follow:' .. follow_id) > 0 then return {'taken', 0} end
redis.call('HSET', class, 'teacher', ARGV[3], 'follow_id', follow_id, 'version', 1, 'page', ARGV[5],
    'params', ARGV[6], 'question', '', 'question_id', 0, 'revealed', 0, 'questions_asked', 0,
    'created', now, 'updated', now)
redis.call('SET', P .. 'follow:' .. follow_id, code)
redis.call('ZADD', P .. 'classes', now, code)
return {'ok', 1}
"""
SET_STATE = """
local refused = teacher(ARGV[3])
if refused then return {refused, 0} end
redis.call('HSET', class, 'page', ARGV[4], 'params', ARGV[5])
return {'ok', bump(ARGV[6])}
"""
END = """
local refused = teacher(ARGV[3])
if refused == 'class_not_teacher' then return {refused, 0} end
if not refused then drop(code) end
return {'ok', 0}
"""
EXPIRE = """
local codes = redis.call('ZRANGEBYSCORE', P .. 'classes', '-inf', ARGV[3])
for _, c in ipairs(codes) do drop(c) end
return {'ok', codes}
"""
JOIN = """
if redis.call('EXISTS', class) == 0 then return {'class_unknown', 0} end
local students = P .. 'students:' .. code
if redis.call('HEXISTS', students, ARGV[3]) == 0 and redis.call('HLEN', students) >= tonumber(ARGV[5]) then
    return {'class_full', 0}
end
redis.call('HSET', students, ARGV[3], ARGV[4])
return {'ok', 0}
"""
ANSWER = """
if redis.call('EXISTS', class) == 0 then return {'class_unknown', 0} end
local open = redis.call('HMGET', class, 'question_id', 'revealed')
if open[1] == '0' or open[1] ~= ARGV[3] or open[2] ~= '0' then return {'question_closed', 0} end
redis.call('HSET', P .. 'answers:' .. code .. ':' .. ARGV[3], ARGV[4], ARGV[5])
return {'ok', 0}
"""
FAILED_JOIN = """
local key = P .. 'joins:' .. code  -- here `code` is the client
redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[4])
redis.call('ZADD', key, ARGV[3], ARGV[5])
redis.call('ZREMRANGEBYRANK', key, 0, -1 - tonumber(ARGV[6]))
redis.call('EXPIRE', key, ARGV[7])
return {'ok', redis.call('ZCOUNT', key, '(' .. ARGV[4], ARGV[3])}
"""


class RedisStore:
    """The ClassStore in the Redis at `url` (redis://host:port/db, rediss://..., unix:///path/to/socket)."""

    def __init__(self, url: str, *, max_students: int = MAX_STUDENTS, max_classes: int = MAX_CLASSES) -> None:
        self.max_students = max_students
        self.max_classes = max_classes
        try:  # connects on first use, not here
            self._redis = redis.Redis.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=READ_TIMEOUT,
                # A connection that Redis closed (it restarted) is replaced when the pool hands it out; one lost
                # during a call is retried once, at once. A timeout is not retried: a Redis that does not answer
                # costs one READ_TIMEOUT, not several.
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
                health_check_interval=0,
            )
        except ValueError as error:  # not a URL redis can read (a port that is no number, an unknown option)
            raise AttnvizError("class_store_url", url=_without_password(url)) from error
        self._scripts = {
            name: self._redis.register_script(PRELUDE + body)
            for name, body in {
                "create": CREATE,
                "set_state": SET_STATE,
                "end": END,
                "expire": EXPIRE,
                "join": JOIN,
                "answer": ANSWER,
                "failed_join": FAILED_JOIN,
            }.items()
        }

    def close(self) -> None:
        """Close the connections (the store opens new ones if used again)."""
        self._redis.close()

    def _run(self, script: str, code: str, *args: Any) -> Any:
        """Run a script for the class `code`; its value, or the AttnvizError it names."""
        status, value = self._scripts[script](args=[PREFIX, code, *(_text(arg) for arg in args)])
        if status == "ok":
            return value
        if status == "class_full":
            raise AttnvizError(status, limit=self.max_students)
        if status == "class_limit":
            raise AttnvizError(status, limit=self.max_classes)
        if status == "taken":
            return None
        raise AttnvizError(status)

    # ----- the teacher ----------------------------------------------------------------------------------------------

    @guarded
    def create(self, teacher_hash: str, page: str, params: dict[str, str], now: float) -> ClassState:
        params_text = params_json(params)
        while True:  # a code or follow id already taken (one chance in 887 million): draw again
            code, follow_id = new_code(), secrets.token_urlsafe(16)
            if self._run("create", code, teacher_hash, follow_id, page, params_text, now, self.max_classes):
                return ClassState(code, follow_id, 1, page, json.loads(params_text), None, now, now)

    @guarded
    def set_state(self, code: str, teacher_hash: str, page: str, params: dict[str, str], now: float) -> int:
        return int(self._run("set_state", code, teacher_hash, page, params_json(params), now))

    @guarded
    def set_question(self, code: str, teacher_hash: str, question: Question | None, now: float) -> int:
        key = f"{PREFIX}class:{code}"

        def change(pipe: redis.client.Pipeline) -> None:  # pipe reads at once (WATCH), then queues after multi()
            stored, asked, open_id = pipe.hmget(key, "teacher", "questions_asked", "question_id")
            if stored is None:
                raise AttnvizError("class_unknown")
            if not hmac.compare_digest(stored.encode(), str(teacher_hash).encode()):
                raise AttnvizError("class_not_teacher")
            action = question_action(question, int(asked), int(open_id) or None)
            text = question_json(question) if question is not None else ""
            pipe.multi()
            if action == "open":
                pipe.hset(key, "questions_asked", question.id)
            if action != "close":
                pipe.hset(f"{PREFIX}questions:{code}", str(question.id), text)
            question_id = question.id if question is not None else 0
            revealed = int(question is not None and question.revealed)
            pipe.hset(key, mapping={"question": text, "question_id": question_id, "revealed": revealed})
            pipe.hset(key, "updated", _text(now))
            pipe.zadd(f"{PREFIX}classes", {code: now})
            pipe.hincrby(key, "version", 1)

        return int(self._redis.transaction(change, key)[-1])

    @guarded
    def end(self, code: str, teacher_hash: str) -> None:
        self._run("end", code, teacher_hash)

    @guarded
    def expire(self, now: float, idle_seconds: float = IDLE_SECONDS) -> list[str]:
        return list(self._run("expire", "", now - idle_seconds))

    # ----- what the students' pages read ----------------------------------------------------------------------------

    @guarded
    def is_teacher(self, code: str, teacher_hash: str) -> bool:
        stored = self._redis.hget(f"{PREFIX}class:{code}", "teacher")
        return stored is not None and hmac.compare_digest(stored.encode(), str(teacher_hash).encode())

    @guarded
    def get(self, code: str) -> ClassState | None:
        fields = self._redis.hgetall(f"{PREFIX}class:{code}")
        return class_state(code, fields) if fields else None

    @guarded
    def code_of(self, follow_id: str) -> str | None:
        return self._redis.get(f"{PREFIX}follow:{follow_id}")

    @guarded
    def versions(self, codes: list[str]) -> dict[str, int]:
        codes = list(dict.fromkeys(codes))
        pipe = self._redis.pipeline(transaction=False)  # one round trip for them all
        for code in codes:
            pipe.hget(f"{PREFIX}class:{code}", "version")
        return {code: int(version) for code, version in zip(codes, pipe.execute(), strict=True) if version is not None}

    @guarded
    def questions(self, code: str) -> list[Question]:
        found = self._redis.hgetall(f"{PREFIX}questions:{code}")
        return [question_of(found[key]) for key in sorted(found, key=int)]

    # ----- the students ---------------------------------------------------------------------------------------------

    @guarded
    def join(self, code: str, student_id: str, nickname: str, now: float) -> None:
        self._run("join", code, student_id, short_nickname(nickname), self.max_students)

    @guarded
    def students(self, code: str) -> dict[str, str]:
        return self._redis.hgetall(f"{PREFIX}students:{code}")

    @guarded
    def answer(self, code: str, question_id: int, student_id: str, answer: str, now: float) -> None:
        self._run("answer", code, int(question_id), student_id, checked_answer(answer))

    @guarded
    def answers(self, code: str, question_id: int) -> dict[str, str]:
        return self._redis.hgetall(f"{PREFIX}answers:{code}:{int(question_id)}")

    @guarded
    def failed_join(self, client: str, now: float) -> int:
        attempt = f"{_text(now)}:{secrets.token_hex(4)}"  # one member per attempt, even two at the same time
        window = JOIN_WINDOW_SECONDS
        return int(self._run("failed_join", client, now, now - window, attempt, MAX_FAILED_JOINS_KEPT, window))

    @guarded
    def failed_joins(self, client: str, now: float) -> int:
        return int(self._redis.zcount(f"{PREFIX}joins:{client}", f"({_text(now - JOIN_WINDOW_SECONDS)}", _text(now)))


def _text(value: Any) -> str:
    """A script's argument as text: floats exactly (repr), so that Redis compares the same times Python gave."""
    return repr(value) if isinstance(value, float) else str(value)


def _without_password(url: str) -> str:
    """The URL as a message may show it: a password in it replaced by ***."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))
