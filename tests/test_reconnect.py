"""A page that reconnects to a new session (its replica died, its server restarted) loses none of its input.

The browser sends the values on its screen with the new session's first run. Two things used to drop the latest
one: the new session restored its state from the link over the widget values the browser sent (the input snapped
back), and a rerun of a fragment the new session did not hold yet was dropped by Streamlit. A browser test
(tests/browser/test_reconnect.py) kills a real replica behind nginx; these check each cause alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.app_session import AppSession
from streamlit.testing.v1 import AppTest

from attnviz.app.streamlit_patches import fragments
from testkit.proxyclient import ProxyUser
from testkit.server import StreamlitServer
from tests.loop import run_in_own_loop
from tests.test_app import KERNEL, ROOT, SELF

TEMPERATURE = "w:self:temperature"
MODERN, LEARNED = "app_pages/modern_attention.py", "app_pages/learned_attention.py"


def browser_values(path: str, link: dict[str, str], key: str, value: Any) -> Any:
    """The widget values a browser holds after opening `link` on `path` and setting widget `key` to `value`."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=90)
    for name, text in link.items():
        at.query_params[name] = text
    at.run()
    next(w for w in at._tree.get_widget_states().widgets if w.id.endswith(f"-{key}"))  # the widget is on the page
    widget = next(node for node in at._tree if getattr(node, "key", None) == key)
    widget.set_value(value)
    return at._tree.get_widget_states()


def new_session(path: str, link: dict[str, str], states: Any) -> AppTest:
    """A new session's first run of `path` at `link`, with the widget values a reconnecting browser sends."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=90)
    for name, text in link.items():
        at.query_params[name] = text
    return at._run(widget_state=states)


def test_a_new_session_keeps_the_value_the_browser_sent_over_its_link():
    states = browser_values(SELF, {"T": "0.5"}, TEMPERATURE, 1.5)
    at = new_session(SELF, {"T": "0.5"}, states)
    assert not at.exception
    assert next(n for n in at.number_input if n.key == TEMPERATURE).value == 1.5
    assert at.query_params["T"] == "1.5"  # the link follows the screen, not the other way round


def test_a_first_run_cut_short_between_the_state_and_the_link_does_not_cost_the_value_sent_after_it():
    """A reconnecting page sends its values with the new session's first run, and a change made at once right after
    it (a whole-page run: the new session does not hold the control's fragment yet). Streamlit's fast reruns stop the
    first run at its next session-state access, which can fall after it stored the page state and before it stored
    the link. The next run then took the link as changed under it and loaded it over the value the browser sent."""
    at = AppTest.from_file(str(ROOT / SELF), default_timeout=90)
    at.query_params["T"] = "0.5"
    at.run()
    del at.session_state["self:link"]  # the first run, stopped before it stored the link
    sent = browser_values(SELF, {"T": "0.5"}, TEMPERATURE, 1.5)
    at = at._run(widget_state=sent)
    assert not at.exception
    assert next(n for n in at.number_input if n.key == TEMPERATURE).value == 1.5
    assert at.query_params["T"] == "1.5"


def test_a_new_session_without_browser_values_starts_from_its_link():
    at = new_session(SELF, {"T": "0.5", "c": "1"}, BackMsg().rerun_script.widget_states)
    assert next(n for n in at.number_input if n.key == TEMPERATURE).value == 0.5
    assert at.toggle(key="w:self:causal").value is True


def test_the_kernel_page_keeps_the_value_the_browser_sent_too():
    states = browser_values(KERNEL, {"bw": "0.3"}, "w:kernel:bandwidth", 0.7)
    at = new_session(KERNEL, {"bw": "0.3"}, states)
    assert not at.exception
    assert next(n for n in at.number_input if n.key == "w:kernel:bandwidth").value == 0.7
    assert at.query_params["bw"] == "0.7"


class FakeSession:
    """What request_rerun needs of an AppSession: which fragments it holds, and what it was asked to run."""

    def __init__(self, fragments: set[str]) -> None:
        self.fragments = fragments
        self.runs: list[Any] = []

    def has_fragment(self, fragment_id: str) -> bool:
        return fragment_id in self.fragments


@pytest.fixture
def recording_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppSession.request_rerun replaced by a recorder, so that the launcher's patch wraps the recorder."""

    def record(self: FakeSession, client_state: Any) -> None:
        self.runs.append(client_state)

    monkeypatch.setattr(AppSession, "request_rerun", record)


def fragment_rerun(fragment_id: str) -> Any:
    """The ClientState a browser sends when a control inside fragment `fragment_id` changes."""
    state = BackMsg().rerun_script
    state.query_string = "T=1.5"
    state.fragment_id = fragment_id
    widget = state.widget_states.widgets.add()
    widget.id = f"$$ID-abc-{TEMPERATURE}"
    widget.double_value = 1.5
    return state


def test_an_unknown_fragment_rerun_becomes_a_whole_page_rerun_with_the_same_values(recording_rerun):
    fragments.keep_input_of_unknown_fragments()
    session = FakeSession({"known"})
    AppSession.request_rerun(session, fragment_rerun("gone"))  # type: ignore[arg-type]
    AppSession.request_rerun(session, fragment_rerun("known"))  # type: ignore[arg-type]
    AppSession.request_rerun(session, None)  # type: ignore[arg-type]
    whole, fragment, previous = session.runs
    assert whole.fragment_id == "" and fragment.fragment_id == "known" and previous is None
    assert whole.query_string == "T=1.5"
    assert [(w.id, w.double_value) for w in whole.widget_states.widgets] == [(f"$$ID-abc-{TEMPERATURE}", 1.5)]


def test_a_timers_rerun_of_an_unknown_fragment_is_left_to_streamlit(recording_rerun):
    """A fragment's timer (the learned page's training progress) that ticks once more after the whole-page run
    dropped the fragment carries no input: it stays a fragment rerun, which Streamlit drops, instead of a whole-page
    run."""
    fragments.keep_input_of_unknown_fragments()
    session = FakeSession({"known"})
    tick = fragment_rerun("gone")
    tick.is_auto_rerun = True
    AppSession.request_rerun(session, tick)  # type: ignore[arg-type]
    (run,) = session.runs
    assert run.fragment_id == "gone" and run.is_auto_rerun


@pytest.mark.parametrize(
    ("path", "key", "value"),
    [
        (MODERN, "w:modern:kv_heads", 2),  # checked against the query heads before it is drawn
        (MODERN, "w:modern:head", 2),  # clamped to the heads before it is drawn
        (LEARNED, "w:learned:steps", 500),  # capped to the task's most before it is drawn
    ],
)
def test_a_value_the_page_checks_before_drawing_it_survives_a_reconnect(path, key, value):
    """These widgets' values are read before the widget is drawn; a reconnecting browser's value is not in Session
    State until then (it used to fail with 'st.session_state has no key')."""
    states = browser_values(path, {}, key, value)
    at = new_session(path, {}, states)
    assert not at.exception, [e.value for e in at.exception]
    widget = next(node for node in at._tree if getattr(node, "key", None) == key)
    assert int(widget.value) == value


def test_a_reconnect_after_fewer_query_heads_offers_a_kv_count_that_divides_them():
    """The student changed the query heads to 3 while 2 key/value heads were on screen, then the server was lost."""
    states = browser_values(MODERN, {}, "w:modern:kv_heads", 2)
    heads = next(w for w in states.widgets if w.id.endswith("-w:modern:heads"))
    heads.int_value = 3
    at = new_session(MODERN, {}, states)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="w:modern:kv_heads").value == 1
    assert len(at.warning) == 1 and "3" in at.warning[0].value


@pytest.fixture(scope="module")
def server() -> Iterator[StreamlitServer]:
    """The app served by its launcher (the Streamlit patches installed), for clients that speak its websocket."""
    with StreamlitServer("app.py", log_name="reconnect") as srv:
        yield srv


@pytest.mark.parametrize(
    ("page", "link", "key", "kind", "value", "param"),
    [
        ("Self_attention", "s=attention+is+all+you+need&T=0.5&c=1", "w:self:causal", "bool", False, "c"),
        ("Kernel_attention", "p=d2l_toy_regression", "w:kernel:bandwidth", "double", 0.632, "bw"),
    ],
)
def test_a_change_sent_during_a_reconnects_first_paint_is_not_taken_back_by_the_rest_of_the_page(
    server: StreamlitServer, page: str, link: str, key: str, kind: str, value: Any, param: str
) -> None:
    """A tab that had changed nothing since it opened its link reconnects to a new session and sends no widget
    values, so the new session's first run is a first paint: it draws no controls, and the rest of the page follows
    once the browser has drawn the chart (`attnviz.app.ui.common.first_paint`). The student changes a control in
    the meantime; the new session holds the control's fragment by then, so the change stays a fragment rerun, which
    runs after the first run and, still a first paint, does not draw the control either. The rest of the page then
    wrote the link's value back over the student's: the class load test lost a causal mask this way (runs seen:
    whole page, fragment, cut short for a rerun, whole page, the link unchanged)."""

    async def scenario() -> tuple[list[int], dict[str, str], object]:
        user = ProxyUser(server.url, page, link)
        try:
            await user.open()
            user.session_id = ""  # its replica died: the new websocket gets a new session
            await user.connect()
            user.chart_later = True
            first = await user.send_rerun()  # the tab changed nothing: no widget values
            await user.wait_run(first)
            assert user.waiting_watcher, "the new session's first run was not a first paint"
            user.set_widget(key, kind, value)
            change = await user.send_rerun(user.fragment_of(key))
            await user.wait_run(change)
            await user.wait_run(await user.ask_for_the_rest())
            statuses = [finish.status for finish in user.finishes[first[0] :]]
            return statuses, user.params(), user.value_of(key)
        finally:
            await user.close()

    statuses, params, shown = run_in_own_loop(scenario())
    whole, fragment, early = (
        ForwardMsg.FINISHED_SUCCESSFULLY,
        ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        ForwardMsg.FINISHED_EARLY_FOR_RERUN,
    )
    assert statuses == [whole, fragment, early, whole]  # the runs the class load test saw
    assert shown == value  # the control was not set back on the screen
    if kind == "bool":
        assert param not in params  # the causal mask off: out of the link
    else:
        assert params.get(param) == f"{value}"
