"""The live class's store: one contract, both backends (a SQLite file, a real Redis), then what only Redis needs
(its restart, its death, a Redis that hangs).

No stand-in for Redis: Debian's redis-server runs on 127.0.0.1 (testkit/redis_server.py; scripts/system-deps.sh
installs it).
"""

from __future__ import annotations

import inspect
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from attnviz.app.classroom.redis_store import READ_TIMEOUT, RedisStore
from attnviz.app.classroom.sqlite_store import SQLiteStore
from attnviz.app.classroom.store import (
    IDLE_SECONDS,
    JOIN_WINDOW_SECONDS,
    MAX_ANSWER_BYTES,
    MAX_NICKNAME,
    ClassStore,
    Question,
    normal_code,
    open_store,
    secret_hash,
)
from attnviz.core.errors import AttnvizError, render
from testkit.redis_server import RedisServer

TEACHER = secret_hash("the teacher's secret")
INTRUDER = secret_hash("a guess")
NOW = 1_800_000_000.0
PARAMS = {"Q": "[[1, 0], [0, 1]]", "sentence": "注意力 is all 你需要 🙂", "empty": "", "quote": "a \"b\" 'c'\nd"}
QUESTION = Question(1, "choice", {"prompt": "Which key wins? 哪个键？", "options": ["k1", "k2"], "truth": 1})


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(params=["sqlite", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., ClassStore]:
    """Makes stores of one backend on one empty store (limits as keyword arguments): each is another server
    process's view of the same classes."""
    if request.param == "sqlite":
        path = tmp_path / "not yet made" / "classes.sqlite3"
        return lambda **limits: SQLiteStore(path, **limits)
    server = request.getfixturevalue("redis_server")
    redis.Redis.from_url(server.url).flushall()
    return lambda **limits: RedisStore(server.url, **limits)


@pytest.fixture
def store(make_store: Callable[..., ClassStore]) -> ClassStore:
    return make_store()


def refused(code: str, call: Callable[[], object]) -> AttnvizError:
    with pytest.raises(AttnvizError) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value


# ----- classes ---------------------------------------------------------------------------------------------------


def test_a_class_has_a_fresh_code_and_a_random_follow_id(store: ClassStore) -> None:
    made = [store.create(TEACHER, "self", {"T": str(i)}, NOW + i) for i in range(20)]
    codes = [state.code for state in made]
    assert len(set(codes)) == 20 and len({state.follow_id for state in made}) == 20
    for state in made:
        assert normal_code(state.code) == state.code
        assert normal_code(f" {state.code[:3].lower()}-{state.code[3:]} ") == state.code  # as a student types it
        assert len(state.follow_id) >= 16 and state.code not in state.follow_id
        assert store.code_of(state.follow_id) == state.code
        assert store.get(state.code) == state  # what create returned is what is stored
    first = store.get(codes[0])
    assert (first.version, first.page, first.params, first.question) == (1, "self", {"T": "0"}, None)
    assert (first.created, first.updated, first.questions_asked) == (NOW, NOW, 0)
    assert store.get("ABCDEF") is None and store.code_of("no-such-follow-id") is None


def test_set_state_bumps_the_version_and_keeps_page_and_params_exactly(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    assert store.set_state(code, TEACHER, "model", PARAMS, NOW + 5) == 2
    state = store.get(code)
    assert (state.version, state.page, state.params) == (2, "model", PARAMS)
    assert (state.created, state.updated) == (NOW, NOW + 5)
    large = {"K": "x" * 500 * 1024}  # under 512 KiB, kept whole
    assert store.set_state(code, TEACHER, "self", large, NOW + 6) == 3
    assert store.get(code).params == large


def test_params_and_questions_over_512_kib_are_refused_and_change_nothing(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", PARAMS, NOW).code
    before = store.get(code)
    # 200,000 characters, but 600,000 bytes in UTF-8: the limit is on bytes
    for params in ({"K": "x" * 600 * 1024}, {"sentence": "注" * 200_000}):
        error = refused("class_params_large", lambda p=params: store.set_state(code, TEACHER, "self", p, NOW + 1))
        assert error.params == {"limit": 512}
        refused("class_params_large", lambda p=params: store.create(TEACHER, "self", p, NOW))
    huge = Question(1, "choice", {"prompt": "注" * 200_000})  # a question's spec is capped alike
    refused("class_params_large", lambda: store.set_question(code, TEACHER, huge, NOW + 1))
    assert store.get(code) == before and store.questions(code) == []
    assert store.versions([code, "ABCDEF"]) == {code: 1}  # and no class was made


def test_only_the_teacher_changes_a_class(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", PARAMS, NOW).code
    store.join(code, "s1", "Ann", NOW)
    before = store.get(code)
    refused("class_not_teacher", lambda: store.set_state(code, INTRUDER, "model", {}, NOW + 1))
    refused("class_not_teacher", lambda: store.set_question(code, INTRUDER, QUESTION, NOW + 1))
    refused("class_not_teacher", lambda: store.end(code, INTRUDER))
    refused("class_not_teacher", lambda: store.set_state(code, "", "model", {}, NOW + 1))
    assert store.get(code) == before and store.questions(code) == [] and store.students(code) == {"s1": "Ann"}
    # a reloaded teacher's page asks whether its secret is the class's (a wrong one, or a class that is gone: no)
    assert store.is_teacher(code, TEACHER)
    assert not store.is_teacher(code, INTRUDER) and not store.is_teacher(code, "")
    assert not store.is_teacher("ABCDEF", TEACHER)


def test_a_class_that_is_gone_is_named_as_such(store: ClassStore) -> None:
    for call in (
        lambda: store.set_state("ABCDEF", TEACHER, "self", {}, NOW),
        lambda: store.set_question("ABCDEF", TEACHER, QUESTION, NOW),
        lambda: store.join("ABCDEF", "s1", "Ann", NOW),
        lambda: store.answer("ABCDEF", 1, "s1", "1", NOW),
    ):
        refused("class_unknown", call)
    store.end("ABCDEF", TEACHER)  # ending a class that is gone already is no error (two windows, or expired)
    assert store.students("ABCDEF") == {} and store.answers("ABCDEF", 1) == {} and store.questions("ABCDEF") == []


def test_versions_of_many_classes_at_once(store: ClassStore) -> None:
    a, b = (store.create(TEACHER, "self", {}, NOW).code for _ in range(2))
    store.set_state(b, TEACHER, "self", {"T": "2"}, NOW)
    assert store.versions([a, b, "ABCDEF", a]) == {a: 1, b: 2}
    assert store.versions([]) == {}


# ----- questions and answers -------------------------------------------------------------------------------------


def test_a_question_is_opened_revealed_and_closed_each_with_a_new_version(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    assert store.set_question(code, TEACHER, QUESTION, NOW + 1) == 2
    state = store.get(code)
    assert (state.question, state.questions_asked, state.updated) == (QUESTION, 1, NOW + 1)
    revealed = Question(1, QUESTION.kind, QUESTION.spec, revealed=True)
    assert store.set_question(code, TEACHER, revealed, NOW + 2) == 3
    assert store.get(code).question == revealed
    assert store.set_question(code, TEACHER, None, NOW + 3) == 4
    assert store.get(code).question is None and store.get(code).questions_asked == 1
    second = Question(2, "number", {"prompt": "Σ weights?", "truth": 1.0})
    assert store.set_question(code, TEACHER, second, NOW + 4) == 5
    assert store.questions(code) == [revealed, second]  # every question asked, in order, for the CSV


def test_a_question_out_of_turn_is_refused_and_changes_nothing(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    for question in (Question(2, "choice", {}), Question(0, "choice", {}), Question(1, "choice", {}, revealed=True)):
        refused("question_stale", lambda q=question: store.set_question(code, TEACHER, q, NOW + 1))
    store.set_question(code, TEACHER, QUESTION, NOW + 1)
    refused("question_stale", lambda: store.set_question(code, TEACHER, QUESTION, NOW + 2))  # opened already
    refused("question_stale", lambda: store.set_question(code, TEACHER, Question(2, "c", {}, True), NOW + 2))
    state = store.get(code)
    assert (state.version, state.question, state.questions_asked) == (2, QUESTION, 1)


def test_answers_go_only_to_the_open_question_and_a_second_replaces_the_first(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    refused("question_closed", lambda: store.answer(code, 1, "s1", "0", NOW))  # none open yet
    store.set_question(code, TEACHER, QUESTION, NOW)
    store.answer(code, 1, "s1", '{"choice": 0}', NOW)
    store.answer(code, 1, "s2", '{"choice": "注意"}', NOW)
    store.answer(code, 1, "s1", '{"choice": 1}', NOW)
    assert store.answers(code, 1) == {"s1": '{"choice": 1}', "s2": '{"choice": "注意"}'}
    refused("question_closed", lambda: store.answer(code, 2, "s1", "0", NOW))  # not asked
    version = store.get(code).version
    store.answer(code, 1, "s3", "2", NOW)
    assert store.get(code).version == version  # answers are not what the students' pages follow
    store.set_question(code, TEACHER, Question(1, QUESTION.kind, QUESTION.spec, revealed=True), NOW)
    refused("question_closed", lambda: store.answer(code, 1, "s4", "1", NOW))  # revealed: too late
    store.set_question(code, TEACHER, Question(2, "choice", {}), NOW)
    refused("question_closed", lambda: store.answer(code, 1, "s4", "1", NOW))  # another one is open now
    store.answer(code, 2, "s4", "1", NOW)
    store.set_question(code, TEACHER, None, NOW)
    refused("question_closed", lambda: store.answer(code, 2, "s4", "0", NOW))  # closed
    assert store.answers(code, 1) == {"s1": '{"choice": 1}', "s2": '{"choice": "注意"}', "s3": "2"}
    assert store.answers(code, 2) == {"s4": "1"}


def test_an_answer_over_the_limit_is_refused(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    store.set_question(code, TEACHER, QUESTION, NOW)
    exact = '"' + "x" * (MAX_ANSWER_BYTES - 2) + '"'
    store.answer(code, 1, "s1", exact, NOW)
    error = refused("answer_too_large", lambda: store.answer(code, 1, "s2", exact + " ", NOW))
    assert error.params == {"limit": MAX_ANSWER_BYTES}
    refused("answer_too_large", lambda: store.answer(code, 1, "s2", '"' + "注" * 700 + '"', NOW))  # 2,102 bytes
    assert store.answers(code, 1) == {"s1": exact}


# ----- students --------------------------------------------------------------------------------------------------


def test_students_join_with_a_nickname_kept_short(store: ClassStore) -> None:
    code = store.create(TEACHER, "self", {}, NOW).code
    store.join(code, "s1", "A" * 30, NOW)
    store.join(code, "s2", "李" * 30, NOW)
    store.join(code, "s3", "", NOW)
    assert store.students(code) == {"s1": "A" * MAX_NICKNAME, "s2": "李" * MAX_NICKNAME, "s3": ""}
    store.join(code, "s3", "Bo", NOW)  # again: the nickname is updated
    assert store.students(code)["s3"] == "Bo" and len(store.students(code)) == 3


def test_a_full_class_takes_no_new_student(make_store: Callable[..., ClassStore]) -> None:
    store = make_store(max_students=3)
    code = store.create(TEACHER, "self", {}, NOW).code
    for student in ("s1", "s2", "s3"):
        store.join(code, student, student.upper(), NOW)
    error = refused("class_full", lambda: store.join(code, "s4", "D", NOW))
    assert error.params == {"limit": 3}
    store.join(code, "s2", "Bea", NOW)  # one who is in may come back
    assert store.students(code) == {"s1": "S1", "s2": "Bea", "s3": "S3"}


def test_a_store_holds_at_most_its_limit_of_classes(make_store: Callable[..., ClassStore]) -> None:
    store = make_store(max_classes=3)
    codes = [store.create(TEACHER, "self", {}, NOW).code for _ in range(3)]
    error = refused("class_limit", lambda: store.create(TEACHER, "self", {}, NOW))
    assert error.params == {"limit": 3}
    store.end(codes[0], TEACHER)
    assert store.create(TEACHER, "self", {}, NOW).code not in codes


# ----- the end of a class ----------------------------------------------------------------------------------------


def full_class(store: ClassStore, now: float) -> tuple[str, str]:
    """A class with two students, two questions and their answers: (code, follow id)."""
    state = store.create(TEACHER, "self", PARAMS, now)
    code = state.code
    store.join(code, "s1", "Ann", now)
    store.join(code, "s2", "Bo", now)
    store.set_question(code, TEACHER, QUESTION, now)
    store.answer(code, 1, "s1", "0", now)
    store.set_question(code, TEACHER, Question(2, "choice", {}), now)
    store.answer(code, 2, "s2", "1", now)
    return code, state.follow_id


def assert_gone(store: ClassStore, code: str, follow_id: str) -> None:
    assert store.get(code) is None and store.code_of(follow_id) is None and store.versions([code]) == {}
    assert store.students(code) == {} and store.questions(code) == []
    assert store.answers(code, 1) == {} and store.answers(code, 2) == {}


def test_ending_a_class_deletes_it_and_all_it_held(store: ClassStore) -> None:
    code, follow_id = full_class(store, NOW)
    other, _ = full_class(store, NOW)
    store.end(code, TEACHER)
    assert_gone(store, code, follow_id)
    assert store.get(other).questions_asked == 2 and len(store.students(other)) == 2
    assert store.answers(other, 1) == {"s1": "0"}


def test_idle_classes_expire_and_the_others_stay(store: ClassStore) -> None:
    idle, idle_follow = full_class(store, NOW)
    busy, _ = full_class(store, NOW)
    store.set_state(busy, TEACHER, "model", {}, NOW + 2 * 3600)
    assert store.expire(NOW + IDLE_SECONDS - 1) == []
    assert store.expire(NOW + IDLE_SECONDS + 1) == [idle]
    assert_gone(store, idle, idle_follow)
    assert store.get(busy).page == "model" and store.answers(busy, 2) == {"s2": "1"}
    assert store.expire(NOW + 2 * 3600 + 600, idle_seconds=300) == [busy]


def test_failed_joins_are_counted_within_the_window_and_then_forgotten(store: ClassStore) -> None:
    assert store.failed_joins("10.0.0.1", NOW) == 0
    assert [store.failed_join("10.0.0.1", NOW + i) for i in range(3)] == [1, 2, 3]
    assert store.failed_join("10.0.0.2", NOW) == 1  # another client counts apart
    assert store.failed_joins("10.0.0.1", NOW + 2) == 3
    assert store.failed_joins("10.0.0.1", NOW + JOIN_WINDOW_SECONDS + 0.5) == 2  # the first left the window
    assert store.failed_joins("10.0.0.1", NOW + JOIN_WINDOW_SECONDS + 2) == 0
    assert store.failed_join("10.0.0.1", NOW + JOIN_WINDOW_SECONDS + 3) == 1


# ----- concurrency -----------------------------------------------------------------------------------------------


def in_threads(count: int, work: Callable[[int], object]) -> list[object]:
    """work(0) ... work(count - 1), each in its own thread, started together; their results."""
    results: list[object] = [None] * count
    start = threading.Barrier(count)

    def run(index: int) -> None:
        start.wait()
        try:
            results[index] = work(index)
        except Exception as error:  # reported below, with the thread's index
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not [r for r in results if isinstance(r, Exception)], results
    return results


def test_concurrent_changes_each_get_their_own_version(make_store: Callable[..., ClassStore]) -> None:
    """8 threads x 50 changes, through two store objects (two server processes): no change is lost, and no two
    are given the same version."""
    stores = [make_store(), make_store()]
    code = stores[0].create(TEACHER, "self", {}, NOW).code

    def teach(index: int) -> list[int]:
        store = stores[index % 2]
        return [store.set_state(code, TEACHER, "self", {"T": f"{index}.{i}"}, NOW + i) for i in range(50)]

    versions = [version for result in in_threads(8, teach) for version in result]
    assert sorted(versions) == list(range(2, 402))
    assert stores[1].get(code).version == 1 + 400


def test_a_class_answers_and_joins_at_once(make_store: Callable[..., ClassStore]) -> None:
    stores = [make_store(), make_store()]
    code = stores[0].create(TEACHER, "self", {}, NOW).code
    stores[0].set_question(code, TEACHER, QUESTION, NOW)

    def student(index: int) -> None:
        store = stores[index % 2]
        store.join(code, f"s{index}", f"student {index}", NOW)
        store.answer(code, 1, f"s{index}", str(index % 2), NOW)

    in_threads(30, student)
    assert stores[0].answers(code, 1) == {f"s{i}": str(i % 2) for i in range(30)}
    assert len(stores[1].students(code)) == 30


# ----- each backend on its own -----------------------------------------------------------------------------------


def test_open_store_reads_the_url(tmp_path: Path, redis_server: RedisServer) -> None:
    path = tmp_path / "a" / "b.sqlite3"
    sqlite = open_store(f"sqlite:///{path}")
    assert isinstance(sqlite, SQLiteStore) and sqlite.path == path
    assert isinstance(open_store(redis_server.url), RedisStore)
    error = refused("class_store_url", lambda: open_store("postgres://db/classes"))
    assert "postgres://db/classes" in render(error, "zh-Hant")
    error = refused("class_store_url", lambda: open_store("redis://:s3cret@redis:port/0"))  # no port number
    assert "s3cret" not in render(error, "en") and "redis://:***@redis:port/0" in render(error, "en")


def test_sqlite_shares_one_file_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new folder" / "classes.sqlite3"
    code = SQLiteStore(path).create(TEACHER, "self", PARAMS, NOW).code
    assert path.is_file()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert SQLiteStore(path).get(code).params == PARAMS  # another process's store reads it


def test_a_sqlite_file_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)  # a folder, not a file
    refused("class_store_unavailable", lambda: store.get("ABCDEF"))
    refused("class_store_unavailable", lambda: store.create(TEACHER, "self", {}, NOW))


def every_method(store: ClassStore, code: str) -> dict[str, Callable[[], object]]:
    """One call of each method of the protocol."""
    calls = {
        "create": lambda: store.create(TEACHER, "self", {}, NOW),
        "get": lambda: store.get(code),
        "code_of": lambda: store.code_of("some-follow-id"),
        "versions": lambda: store.versions([code]),
        "set_state": lambda: store.set_state(code, TEACHER, "self", {}, NOW),
        "set_question": lambda: store.set_question(code, TEACHER, None, NOW),
        "join": lambda: store.join(code, "s9", "Cy", NOW),
        "students": lambda: store.students(code),
        "answer": lambda: store.answer(code, 1, "s9", "0", NOW),
        "answers": lambda: store.answers(code, 1),
        "questions": lambda: store.questions(code),
        "end": lambda: store.end(code, INTRUDER),
        "expire": lambda: store.expire(NOW),
        "failed_join": lambda: store.failed_join("10.0.0.1", NOW),
        "failed_joins": lambda: store.failed_joins("10.0.0.1", NOW),
        "is_teacher": lambda: store.is_teacher(code, TEACHER),
    }
    protocol = {name for name, _ in inspect.getmembers(ClassStore, inspect.isfunction) if not name.startswith("_")}
    assert set(calls) == protocol
    return calls


def snapshot(store: ClassStore, code: str) -> tuple[object, ...]:
    return (
        store.get(code),
        store.students(code),
        store.questions(code),
        store.answers(code, 1),
        store.answers(code, 2),
        store.failed_joins("10.0.0.1", NOW),
    )


def test_redis_keys_are_prefixed_and_an_ended_class_leaves_none(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    client.flushall()
    client.set("another:app", "kept")  # a Redis shared with another application
    store = RedisStore(redis_server.url)
    code, follow_id = full_class(store, NOW)
    store.failed_join("10.0.0.1", NOW)
    keys = set(client.keys("*")) - {"another:app"}
    assert keys and all(key.startswith("attnviz:") for key in keys)
    assert any(code in key for key in keys) and any(follow_id in key for key in keys)
    store.end(code, TEACHER)
    assert set(client.keys("*")) == {"another:app", "attnviz:joins:10.0.0.1"}
    assert client.get("another:app") == "kept"


@pytest.fixture
def own_redis(tmp_path: Path):
    """A Redis of this test's own (to stop, kill or freeze), a store on it and a full class: (server, store, code)."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        store = RedisStore(server.url)
        code, _ = full_class(store, NOW)
        yield server, store, code
    finally:
        server.stop()


def assert_every_call_unavailable(store: ClassStore, code: str, within: float, only: tuple[str, ...] = ()) -> None:
    for name, call in every_method(store, code).items():
        if only and name not in only:
            continue
        started = time.monotonic()
        refused("class_store_unavailable", call)
        assert time.monotonic() - started < within, name


def test_a_redis_restart_loses_no_class_question_or_answer(own_redis) -> None:
    server, store, code = own_redis
    store.failed_join("10.0.0.1", NOW)
    before = snapshot(store, code)
    assert before[1] and before[2] and before[3] and before[4] and before[5] == 1
    server.stop()  # SIGTERM
    server.start()
    assert snapshot(store, code) == before  # the same store object, reconnected
    store.answer(code, 2, "s1", "0", NOW)
    after = snapshot(store, code)
    server.kill()  # SIGKILL: every write was on disk before Redis answered it
    server.start()
    assert snapshot(store, code) == after


def test_a_dead_redis_fails_every_call_at_once_and_is_used_again_when_back(own_redis) -> None:
    server, store, code = own_redis
    server.kill()
    assert_every_call_unavailable(store, code, within=2.0)
    server.start()
    state = store.get(code)  # the same object: no new store, no restart
    assert state.questions_asked == 2 and store.students(code) == {"s1": "Ann", "s2": "Bo"}
    assert store.set_state(code, TEACHER, "model", {}, NOW) == state.version + 1


@pytest.mark.timeout(120)
def test_a_redis_that_hangs_holds_no_call_longer_than_its_timeout(own_redis) -> None:
    """A Redis that accepts connections but answers nothing (SIGSTOP: a frozen machine, a network that drops
    packets): each call gives up after about READ_TIMEOUT, instead of holding the page for ever. One call of each
    way the store talks to Redis: a command, a pipeline, a script, a WATCH/MULTI transaction."""
    server, store, code = own_redis
    server.pause()
    paths = ("get", "versions", "set_state", "set_question")
    assert_every_call_unavailable(store, code, within=READ_TIMEOUT + 1.0, only=paths)
    server.resume()
    assert store.get(code).page == "self"
