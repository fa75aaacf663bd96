"""The launcher (attnviz.app.server) and the patches it installs (attnviz.app.streamlit_patches): Nagle's algorithm
off on the connections Streamlit's server accepts, glibc kept to two malloc arenas, a run's messages handed to the
event loop in batches, widgets that look up their own key, no developer-menu messages in a class, uploads capped,
long links read and ignored ones reported. What each patch relies on in Streamlit is fingerprinted in
tests/test_streamlit_patches.py."""

import asyncio
import asyncio.base_events
import concurrent.futures
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.runtime import Runtime
from streamlit.runtime.scriptrunner import ScriptRunnerEvent

from attnviz.app.streamlit_patches import (
    long_links,
    nodelay,
    script_events,
    uploads,
    version,
    widget_state,
)
from tests.loop import run_in_own_loop


def accepted_nodelay() -> int:
    """TCP_NODELAY of a connection accepted by asyncio on a protocol-0 listener, as Streamlit binds it."""

    async def run() -> int:
        listener = socket.socket(socket.AF_INET)  # protocol 0, exactly like Streamlit's _bind_socket
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        result: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            result.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        srv = await asyncio.start_server(on_connect, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname())
        value = await asyncio.wait_for(result, 5)
        writer.close()
        srv.close()
        await srv.wait_closed()
        return value

    # A thread of its own: other tests (Playwright's sync API) may leave an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result(timeout=30)


@pytest.fixture
def restore_asyncio(monkeypatch):
    """Undo enable_nodelay() after the test (it patches asyncio process-wide)."""
    monkeypatch.setattr(asyncio.base_events, "_set_nodelay", asyncio.base_events._set_nodelay)


def test_plain_asyncio_leaves_nagle_on_for_a_protocol_0_listener(restore_asyncio):
    assert accepted_nodelay() == 0  # the upstream behaviour the launcher works around


def test_enable_nodelay_switches_nagle_off_on_accepted_connections(restore_asyncio):
    nodelay.enable_nodelay()
    assert accepted_nodelay() != 0


ARENAS_SCRIPT = """
import ctypes, ctypes.util, sys, threading
from attnviz.app.server import limit_malloc_arenas
print(limit_malloc_arenas(), flush=True)
import torch
def work():
    for _ in range(200):
        a = torch.empty(20000); b = torch.empty(300000); del a, b
        bytes(100000)
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
ctypes.CDLL(ctypes.util.find_library("c")).malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def arenas(env: dict[str, str]) -> tuple[str, int]:
    """(what limit_malloc_arenas returned, the malloc arenas) of a process whose 8 threads allocate at once."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_the_launcher_keeps_two_malloc_arenas():
    """Freed memory of large reruns stayed spread over many arenas: replicas peaked over their limit (glibc, as in
    the image and CI)."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert arenas(env) == ("True", 2)
    env["MALLOC_ARENA_MAX"] = "3"  # a deployment's own setting wins
    returned, count = arenas(env)
    assert returned == "False" and count <= 3
    without = arenas({**env, "MALLOC_ARENA_MAX": "8"})[1]
    assert without > 2  # the threads do meet: with more arenas allowed, they take them


class LoopThread:
    """A real asyncio event loop in a thread of its own, its thread-safe wake-ups counted; `hold()` keeps it busy
    (as a loop sending another session's messages is) until the block ends."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.wakeups = 0
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        call_soon_threadsafe = self.loop.call_soon_threadsafe

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.wakeups += 1
            return call_soon_threadsafe(*args, **kwargs)

        self.loop.call_soon_threadsafe = counted  # type: ignore[method-assign]

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        release, held = threading.Event(), threading.Event()
        self.loop.call_soon_threadsafe(lambda: (held.set(), release.wait(30)))
        assert held.wait(10)
        self.wakeups = 0
        try:
            yield
        finally:
            release.set()

    def settle(self) -> None:
        """Wait until the loop has run everything it was handed so far (its callbacks run in the order given)."""
        done = threading.Event()
        self.loop.call_soon_threadsafe(done.set)
        assert done.wait(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class RecordingSession:
    """What the hand-over of script events needs of an AppSession: its event loop and the handler, which records
    each event with the thread it ran on. The hand-over itself is AppSession's (patched or not)."""

    _call_soon_on_event_loop = AppSession._call_soon_on_event_loop

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._event_loop = loop
        self.handled: list[tuple[Any, Any, int]] = []

    def _handle_scriptrunner_event_on_event_loop(
        self, sender: Any, event: Any, forward_msg: Any = None, *more: Any, **named: Any
    ) -> None:
        self.handled.append((event, forward_msg, threading.get_ident()))


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    looping = LoopThread()
    yield looping
    looping.close()


@pytest.fixture
def restore_streamlit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo batch_script_events() after the test (it patches Streamlit's classes process-wide)."""
    monkeypatch.setattr(AppSession, "_on_scriptrunner_event", AppSession._on_scriptrunner_event)
    monkeypatch.setattr(Runtime, "_enqueued_some_message", Runtime._enqueued_some_message)


def script_thread_sends(session: RecordingSession, count: int) -> list[tuple[Any, Any]]:
    """From a script thread: a run's events as ScriptRunner sends them (started, `count` messages, stopped)."""
    events = [(ScriptRunnerEvent.SCRIPT_STARTED, None)]
    events += [(ScriptRunnerEvent.ENQUEUE_FORWARD_MSG, f"message {i}") for i in range(count)]
    events += [(ScriptRunnerEvent.SCRIPT_STOPPED_WITH_SUCCESS, None)]

    def run() -> None:
        for event, message in events:
            kwargs = {"forward_msg": message} if message is not None else {}
            AppSession._on_scriptrunner_event(session, "runner", event=event, **kwargs)  # type: ignore[arg-type]

    script = threading.Thread(target=run)
    script.start()
    script.join(10)
    return events


@pytest.mark.parametrize("batched", [False, True])
def test_a_runs_events_reach_the_loop_in_order_with_one_wakeup_when_batched(
    restore_streamlit, loop_thread: LoopThread, batched: bool
) -> None:
    if batched:
        script_events.batch_script_events()
    session = RecordingSession(loop_thread.loop)
    with loop_thread.hold():  # the loop is busy while the script draws its 40 elements
        sent = script_thread_sends(session, 40)
        wakeups = loop_thread.wakeups
    loop_thread.settle()
    assert [(event, message) for event, message, _ in session.handled] == sent  # all, in order
    assert {thread for *_, thread in session.handled} == {loop_thread.thread.ident}  # on the loop only
    assert wakeups == (1 if batched else 42)  # Streamlit's own hand-over wakes the loop once per event


def test_events_sent_after_a_batch_was_taken_wake_the_loop_again(restore_streamlit, loop_thread: LoopThread) -> None:
    script_events.batch_script_events()
    session = RecordingSession(loop_thread.loop)
    first = script_thread_sends(session, 3)
    loop_thread.settle()
    second = script_thread_sends(session, 3)
    loop_thread.settle()
    assert [(event, message) for event, message, _ in session.handled] == first + second  # nothing left behind


def test_the_send_loop_is_asked_for_once_until_it_wakes(restore_streamlit, loop_thread: LoopThread) -> None:
    script_events.batch_script_events()
    runtime = Runtime.__new__(Runtime)  # only what _enqueued_some_message reads: the loop and its events
    need_send_data = asyncio.run_coroutine_threadsafe(_new_event(), loop_thread.loop).result(10)
    runtime._get_async_objs = lambda: types.SimpleNamespace(eventloop=loop_thread.loop, need_send_data=need_send_data)
    with loop_thread.hold():
        for _ in range(30):
            runtime._enqueued_some_message()
        assert loop_thread.wakeups == 1 and not need_send_data.is_set()
    loop_thread.settle()
    assert need_send_data.is_set()
    need_send_data.clear()  # the send loop took the messages; the next one asks again
    runtime._enqueued_some_message()
    loop_thread.settle()
    assert need_send_data.is_set()


async def _new_event() -> asyncio.Event:
    return asyncio.Event()


# ----- 5. widgets look up their own key -----------------------------------------------------------------------------

WIDGETS_SCRIPT = """
import streamlit as st

for key in ("n", "choice", "pick", "level", "words"):
    st.session_state.setdefault("filler:" + key, 1)  # other keys in the session, as a page has
if "set" not in st.session_state:
    st.session_state.set = True
    st.session_state.n = None  # the app empties these widgets by setting their keys to None
    st.session_state.choice = None
    st.session_state.pick = "b"  # and sets this one
st.number_input("n", value=3, key="n")
st.selectbox("choice", ["x", "y"], key="choice")
st.radio("pick", ["a", "b", "c"], key="pick")
st.slider("level", 0, 10, 4, key="level")
st.text_input("words", "hello", key="words")
"""


@pytest.fixture
def restore_widget_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo widgets_look_up_their_key() after the test (it patches the widget modules process-wide)."""
    import importlib

    for name in widget_state.WIDGET_MODULES:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        monkeypatch.setattr(module, "get_session_state", module.get_session_state)


def run_widgets(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The widgets script run twice (the second run reads the first's state); and how many times the session state
    was copied whole (`filtered_state`) in the second run."""
    from streamlit.runtime.state.session_state import SessionState
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(WIDGETS_SCRIPT).run()
    copies = 0
    filtered_state = SessionState.filtered_state

    def counted(self: SessionState) -> dict[str, Any]:
        nonlocal copies
        copies += 1
        return filtered_state.fget(self)  # type: ignore[misc]

    monkeypatch.setattr(SessionState, "filtered_state", property(counted))
    at.run()
    return at, copies


def test_without_the_fix_every_widget_copies_the_whole_session_state(monkeypatch: pytest.MonkeyPatch) -> None:
    _, copies = run_widgets(monkeypatch)
    assert copies >= 4  # the number, select box, radio and text input (the slider only when its key is set)


def test_widgets_look_up_their_key_without_copying_the_session_state(
    monkeypatch: pytest.MonkeyPatch, restore_widget_modules: None
) -> None:
    widget_state.widgets_look_up_their_key()
    widget_state.widgets_look_up_their_key()  # a second call changes nothing
    at, copies = run_widgets(monkeypatch)
    assert copies == 0
    assert not at.exception
    # What the widgets read is what the session says: the keys set to None empty their widgets, the others keep
    # their values, and a value changed in the browser is read back
    assert at.number_input(key="n").value is None
    assert at.selectbox(key="choice").value is None
    assert at.radio(key="pick").value == "b"
    assert at.slider(key="level").value == 4
    assert at.text_input(key="words").value == "hello"
    at.number_input(key="n").set_value(7).run()
    at.radio(key="pick").set_value("c").run()
    assert at.number_input(key="n").value == 7 and at.radio(key="pick").value == "c"
    assert at.session_state["n"] == 7 and at.session_state["pick"] == "c"


# ----- 6. no developer-menu messages from clients in a class ------------------------------------------------------


async def _markdown_and_git_info(url: str, messages: list[str]) -> tuple[list[str], bool]:
    """Over Streamlit's websocket: run the page, send each of `messages` ("rerun" or a BackMsg type with no
    fields), and collect the markdown it draws and whether the server answered with repository information."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    host = url.split("//", 1)[1]
    shown, git_info = [], False
    async with connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit"], origin=f"http://{host}") as ws:
        for message in messages:
            msg = BackMsg()
            if message == "rerun":
                msg.rerun_script.query_string = ""
            else:
                getattr(msg, message)  # a known type
                msg.ParseFromString(BackMsg(**{message: True}).SerializeToString())
            await ws.send(msg.SerializeToString())
            while message == "rerun":  # read to the end of the run (git information may come in between)
                fwd = ForwardMsg()
                fwd.ParseFromString(await ws.recv())
                kind = fwd.WhichOneof("type")
                git_info |= kind == "git_info_changed"
                if kind == "delta" and fwd.delta.new_element.WhichOneof("type") == "markdown":
                    shown.append(fwd.delta.new_element.markdown.body)
                if kind == "script_finished":
                    break
        with contextlib.suppress(TimeoutError):  # anything still coming after the last message
            async with asyncio.timeout(2):
                while True:
                    fwd = ForwardMsg()
                    fwd.ParseFromString(await ws.recv())
                    git_info |= fwd.WhichOneof("type") == "git_info_changed"
    return shown, git_info


@pytest.mark.parametrize("toolbar", ["viewer", "auto"])
def test_a_class_server_drops_clear_cache_and_git_requests_from_clients(toolbar: str, tmp_path: Path) -> None:
    """Issue 36, finding 5: any client could empty every session's caches and make the server run `git` on its event
    loop. With the class's toolbar (`make run`), both messages are dropped; with Streamlit's default toolbar (`make
    dev`) they still work, which shows that the check can fail. A `git` first on the server's PATH notes each call
    and runs the real one."""
    from testkit.server import StreamlitServer

    real_git, calls = shutil.which("git"), tmp_path / "git-calls"
    assert real_git is not None
    (tmp_path / "git").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real_git} "$@"\n')
    (tmp_path / "git").chmod(0o755)
    app = Path(__file__).with_name("developer_messages_app.py")
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    options = {"client.toolbarMode": toolbar}
    with StreamlitServer(app, server_options=options, env=env, log_name=f"developer-messages-{toolbar}") as srv:
        messages = ["rerun", "load_git_info", "clear_cache", "rerun"]
        shown, _ = run_in_own_loop(_markdown_and_git_info(srv.url, messages))
    first, second = shown
    git_calls = calls.read_text().splitlines() if calls.exists() else []
    if toolbar == "viewer":
        assert first == second and git_calls == []  # the cache kept its value; no repository check ran
    else:
        assert first != second and git_calls


# ----- 6. uploads capped ------------------------------------------------------------------------------------------


@pytest.fixture
def restore_upload_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo cap_uploads() after the test (it patches Streamlit's upload manager process-wide)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    monkeypatch.setattr(MemoryUploadedFileManager, "add_file", MemoryUploadedFileManager.add_file)


def upload(file_id: str, size: int) -> Any:
    """An uploaded file as Streamlit's upload route stores it."""
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    return UploadedFileRec(file_id=file_id, name=f"{file_id}.json", type="application/json", data=b"x" * size)


def kept(manager: Any) -> dict[str, list[str]]:
    """session id -> the file ids the manager would give the page, as Streamlit's file_uploader asks for them."""
    return {
        session: [f.file_id for f in manager.get_files(session, list(files))]
        for session, files in manager.file_storage.items()
        if files
    }


def stored_bytes(manager: Any) -> int:
    """The bytes of uploads the manager reports (Streamlit's /_stcore/metrics reads this); 0 when none."""
    stats = manager.get_stats().get("cache_memory_bytes", [])
    return sum(stat.byte_length for stat in stats)


def test_without_the_cap_streamlit_keeps_every_upload_of_a_session() -> None:
    """The problem: any number of files under file ids the client makes up, all kept until the session ends."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    for index in range(50):
        manager.add_file("attacker", upload(f"made-up-{index}", 1000))
    assert len(kept(manager)["attacker"]) == 50 and stored_bytes(manager) == 50_000


def test_a_session_keeps_only_its_newest_upload(restore_upload_manager: None) -> None:
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    uploads.cap_uploads(per_session=1, total_bytes=10**9)
    uploads.cap_uploads()  # a second call changes nothing
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    for index in range(50):
        manager.add_file("attacker", upload(f"made-up-{index}", 1000 + index))
    manager.add_file("student", upload("state", 300))
    assert kept(manager) == {"attacker": ["made-up-49"], "student": ["state"]}
    assert stored_bytes(manager) == 1049 + 300
    manager.add_file("attacker", upload("made-up-49", 10))  # the same id again: replaced, not added
    assert kept(manager)["attacker"] == ["made-up-49"] and stored_bytes(manager) == 10 + 300


def test_the_server_keeps_a_bounded_total_and_drops_the_oldest_first(restore_upload_manager: None) -> None:
    """Many sessions, one file each: past the total, the oldest files go; the one just uploaded always stays, and
    what Streamlit removes itself (a session ends, a file is deleted) is no longer counted."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    uploads.cap_uploads(per_session=1, total_bytes=10_000)
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    for index in range(40):
        manager.add_file(f"session-{index}", upload("f", 1000))
        assert stored_bytes(manager) <= 10_000
    assert kept(manager) == {f"session-{index}": ["f"] for index in range(30, 40)}
    manager.remove_session_files("session-35")  # a session that ended
    manager.remove_file("session-36", "f")  # a file the page deleted
    manager.add_file("late", upload("big", 9000))  # pushes out the oldest files that are still there
    assert kept(manager) == {"session-39": ["f"], "late": ["big"]}
    assert stored_bytes(manager) == 10_000
    manager.add_file("huge", upload("alone", 20_000))  # larger than the total on its own: kept, everything else goes
    assert kept(manager) == {"huge": ["alone"]} and stored_bytes(manager) == 20_000


def test_many_uploads_leave_no_bookkeeping_behind(restore_upload_manager: None) -> None:
    """Sessions come and go: the cap's own record of arrivals stays as small as the files kept."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    uploads.cap_uploads(per_session=1, total_bytes=10**9)
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    for index in range(5000):
        manager.add_file(f"session-{index}", upload("f", 10))
        manager.remove_session_files(f"session-{index}")
    assert kept(manager) == {} and stored_bytes(manager) == 0
    assert len(manager._attnviz_arrivals) <= 64 + 2


def test_a_file_the_page_has_read_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """forget_upload removes the file from the session's uploads; the uploader then finds it deleted."""
    import streamlit.runtime.scriptrunner as scriptrunner
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    manager.add_file("student", upload("state", 300))
    manager.add_file("other", upload("state", 300))
    context = types.SimpleNamespace(uploaded_file_mgr=manager, session_id="student")
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: context)
    uploads.forget_upload(types.SimpleNamespace(file_id="state"))
    assert manager.get_files("student", ["state"]) == [] and kept(manager) == {"other": ["state"]}
    assert stored_bytes(manager) == 300


def test_the_upload_cap_refuses_another_streamlit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate: cap_uploads was checked against the installed Streamlit, and refuses any other (a release may
    change the private upload manager it patches)."""
    import streamlit

    assert streamlit.__version__ == version.CHECKED_STREAMLIT, "Streamlit changed: check cap_uploads against it"
    monkeypatch.setattr(streamlit, "__version__", "1.99.0")
    with pytest.raises(RuntimeError, match=r"1\.99\.0"):
        uploads.cap_uploads()


# ----- 7. long links read, ignored ones reported ----------------------------------------------------------------

LINK_CASES = {
    "short": "p=unit_sentences&T=0.5",
    "at the length limit": "s=" + "x" * (512 * 1024 - 2),
    "one character over": "s=" + "x" * (512 * 1024 - 1),
    "600 KB": "s=" + "x" * 600_000,
    "1,000 fields": "&".join(f"x{i}=1" for i in range(1000)),
    "1,001 fields": "&".join(f"x{i}=1" for i in range(1001)),
    "1,001 empty fields": "&" * 1000,
    "none": "",
}


class RerunRecorder:
    """What request_rerun needs of an AppSession here: an id, and the client states it was asked to run."""

    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.runs: list[Any] = []


@pytest.fixture
def recording_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppSession.request_rerun replaced by a recorder, so that the launcher's patch wraps the recorder."""

    def record(self: RerunRecorder, client_state: Any) -> None:
        self.runs.append(client_state)

    monkeypatch.setattr(AppSession, "request_rerun", record)


def rerun_with(query: str) -> Any:
    """The ClientState a browser sends with its address's query string."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    state = BackMsg().rerun_script
    state.query_string = query
    return state


@pytest.mark.parametrize("case", list(LINK_CASES))
def test_a_link_streamlit_ignores_is_reported_to_the_page_and_no_other(
    recording_rerun: None, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Exactly the query strings Streamlit's own check drops are reported, with their length and fields; the rerun
    itself reaches Streamlit unchanged."""
    import streamlit.runtime.scriptrunner as scriptrunner
    from streamlit.runtime.state.query_params import sanitize_query_string

    query = LINK_CASES[case]
    long_links.report_ignored_links()
    long_links.report_ignored_links()  # a second call changes nothing
    session = RerunRecorder(f"session-{case}")
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: types.SimpleNamespace(session_id=session.id))
    AppSession.request_rerun(session, rerun_with(query))  # type: ignore[arg-type]
    assert [run.query_string for run in session.runs] == [query]
    dropped_by_streamlit = bool(query) and sanitize_query_string(query) == ""
    ignored = long_links.ignored_link()
    assert (ignored is not None) == dropped_by_streamlit
    if ignored is not None:
        assert ignored == long_links.IgnoredLink(len(query), query.count("&") + 1)
    AppSession.request_rerun(session, None)  # type: ignore[arg-type]  # a rerun without client state: unchanged
    assert long_links.ignored_link() == ignored
    AppSession.request_rerun(session, rerun_with("T=1"))  # type: ignore[arg-type]  # the page wrote its own link
    assert long_links.ignored_link() is None


def test_an_ignored_link_is_reported_to_its_own_session_only(
    recording_rerun: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit.runtime.scriptrunner as scriptrunner

    long_links.report_ignored_links()
    long, short = RerunRecorder("long"), RerunRecorder("short")
    AppSession.request_rerun(long, rerun_with(LINK_CASES["600 KB"]))  # type: ignore[arg-type]
    AppSession.request_rerun(short, rerun_with(LINK_CASES["short"]))  # type: ignore[arg-type]
    running = types.SimpleNamespace(session_id="short")
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: running)
    assert long_links.ignored_link() is None
    running.session_id = "long"
    assert long_links.ignored_link() == long_links.IgnoredLink(600_002, 1)
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: None)  # outside a script run
    assert long_links.ignored_link() is None


def send_in_pieces(port: int, target: str, piece: int = 4096) -> bytes:
    """GET `target` from 127.0.0.1:`port`, the request written in pieces of `piece` bytes as a network delivers a
    long one; the response's status line (b"" when the server closed the connection instead)."""
    import time

    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            for start in range(0, len(request), piece):
                sock.sendall(request[start : start + piece])
                time.sleep(0.001)
            return sock.recv(4096).split(b"\r\n", 1)[0]
        except ConnectionError:
            return b""


def test_a_server_started_by_the_launcher_serves_a_page_with_a_long_link() -> None:
    """A shared link of 300,000 characters (the app writes up to 512 Ki) arriving over the network in pieces: the
    page is served. Streamlit's HTTP server alone refused any request head over 16 KiB that came in pieces."""
    from testkit.server import StreamlitServer

    with StreamlitServer("app.py", log_name="long-links") as app:
        assert app.port is not None
        assert send_in_pieces(app.port, "/Self_attention?s=" + "x" * 300_000) == b"HTTP/1.1 200 OK"


def test_the_long_link_patch_relies_on_streamlits_server_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """What read_long_links wraps is there, and passes h11's limit on to uvicorn."""
    from streamlit.web.server.starlette import starlette_server

    monkeypatch.setattr(starlette_server, "_get_uvicorn_config_kwargs", starlette_server._get_uvicorn_config_kwargs)
    before = starlette_server._get_uvicorn_config_kwargs()
    assert "h11_max_incomplete_event_size" not in before and "ws_max_size" in before
    long_links.read_long_links()
    long_links.read_long_links()
    after = starlette_server._get_uvicorn_config_kwargs()
    assert after == {**before, "h11_max_incomplete_event_size": long_links.LINK_REQUEST_BYTES}
    import uvicorn

    assert uvicorn.Config(app=None, **after).h11_max_incomplete_event_size == long_links.LINK_REQUEST_BYTES
