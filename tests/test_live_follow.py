"""How a follower learns of a change: the watcher's long poll on the real SQLite store, and the endpoint on a real
server (the route added to Streamlit's own route list)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from attnviz.app.classroom import follow
from attnviz.app.classroom.sqlite_store import SQLiteStore
from attnviz.app.classroom.store import IDLE_SECONDS, secret_hash
from testkit.server import StreamlitServer

TEACHER = secret_hash("the teacher's secret")


def run_apart(coroutine):
    """asyncio.run in a thread of its own: in the whole suite the browser tests' driver keeps an event loop running in
    this thread, where asyncio.run refuses to start another."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture
def store(tmp_path):
    return SQLiteStore(tmp_path / "classes.sqlite3")


def test_a_version_other_than_the_browsers_is_answered_at_once(store):
    state = store.create(TEACHER, "self", {}, time.time())
    watcher = follow.VersionWatcher(lambda: store)
    started = time.monotonic()
    answer = run_apart(watcher.wait(state.code, after=0, hold=5))
    assert answer == {"version": state.version} and time.monotonic() - started < 1.0


def test_a_change_made_meanwhile_ends_the_wait(store):
    state = store.create(TEACHER, "self", {}, time.time())
    watcher = follow.VersionWatcher(lambda: store, poll_seconds=0.05)
    changed = threading.Timer(0.4, lambda: store.set_state(state.code, TEACHER, "self", {"T": "2"}, time.time()))
    changed.start()
    started = time.monotonic()
    answer = run_apart(watcher.wait(state.code, after=state.version, hold=5))
    waited = time.monotonic() - started
    assert answer == {"version": state.version + 1}
    assert 0.35 < waited < 1.5  # held until the change, then answered within a poll


def test_without_a_change_the_wait_ends_with_the_same_version(store):
    state = store.create(TEACHER, "self", {}, time.time())
    watcher = follow.VersionWatcher(lambda: store, poll_seconds=0.05)
    answer = run_apart(watcher.wait(state.code, after=state.version, hold=0.3))
    assert answer == {"version": state.version}


def test_an_ended_class_and_an_idle_one_are_said_to_have_ended(store):
    ended = store.create(TEACHER, "self", {}, time.time())
    idle = store.create(TEACHER, "self", {}, time.time() - IDLE_SECONDS - 10)
    watcher = follow.VersionWatcher(lambda: store, poll_seconds=0.05)
    store.end(ended.code, TEACHER)

    async def both():
        return await asyncio.gather(
            watcher.wait(ended.code, after=ended.version, hold=2), watcher.wait(idle.code, after=idle.version, hold=2)
        )

    assert run_apart(both()) == [{"ended": True}, {"ended": True}]  # the idle one ended by the watcher itself
    assert store.get(idle.code) is None


@pytest.mark.parametrize(
    ("text", "value"), [("0", 0), ("17", 17), ("", None), ("-1", None), ("1e3", None), (None, None)]
)
def test_the_browsers_version_is_a_plain_number(text, value):
    assert follow.parse_after(text) == value


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_server_answers_a_followers_long_poll(tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    state = store.create(TEACHER, "self", {}, time.time())
    with StreamlitServer("app.py", env={"ATTNVIZ_CLASS_STORE": url}, log_name="live-follow") as server:
        endpoint = server.url_for(follow.ROUTE.format(follow_id=state.follow_id))
        assert get(endpoint + "?after=0") == (200, {"version": state.version})
        assert get(endpoint + "?after=x")[0] == 400
        assert get(server.url_for(follow.ROUTE.format(follow_id="no-such-class")) + "?after=0") == (
            404,
            {"ended": True},
        )
        threading.Timer(0.5, lambda: store.set_state(state.code, TEACHER, "kernel", {}, time.time())).start()
        started = time.monotonic()
        assert get(endpoint + f"?after={state.version}") == (200, {"version": state.version + 1})
        assert 0.4 < time.monotonic() - started < 2.0


def test_a_long_poll_whose_browser_left_ends_and_does_not_hold_the_servers_shutdown(tmp_path):
    """A student's tab closes during a long poll. The server's shutdown waits for every request in progress: the
    poll held it for the rest of HOLD_SECONDS (a test server stopped after a class took its 10 s grace and a kill;
    `docker stop` gives 10 s too). The poll ends when its browser leaves, and the server exits at once."""
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    state = SQLiteStore(tmp_path / "classes.sqlite3").create(TEACHER, "self", {}, time.time())
    server = StreamlitServer("app.py", env={"ATTNVIZ_CLASS_STORE": url}, log_name="live-follow-left").start()
    try:
        path = urlsplit(server.url_for(follow.ROUTE.format(follow_id=state.follow_id))).path
        with socket.create_connection(("127.0.0.1", server.port)) as browser:
            browser.sendall(f"GET {path}?after={state.version} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            browser.settimeout(1.0)
            with pytest.raises(TimeoutError):
                browser.recv(1)  # held: no answer while the class does not change
        os.kill(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + follow.HOLD_SECONDS / 2
        while server.running and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not server.running, "the server still waits for the poll of a browser that left"
    finally:
        server.stop()
