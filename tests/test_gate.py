"""The server's gate for large reruns (attnviz/app/gate.py): one at a time, in order, at most a share of the time."""

from __future__ import annotations

import threading
import time

import pytest

from attnviz.app.gate import Gate, ServerBusyError


class FakeTime:
    """A clock that moves only when a waiter sleeps (single-threaded tests)."""

    def __init__(self) -> None:
        self.now = 100.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_turn_with_nobody_ahead_starts_at_once() -> None:
    fake = FakeTime()
    gate = Gate(clock=fake.clock, sleep=fake.sleep)
    waits: list[tuple[int, float]] = []
    with gate.turn(lambda ahead, waited: waits.append((ahead, waited))):
        pass
    assert waits == []
    assert fake.now == 100.0


def test_after_a_turn_the_gate_stays_shut_so_large_work_takes_at_most_its_share() -> None:
    fake = FakeTime()
    gate = Gate(share=0.25, clock=fake.clock, sleep=fake.sleep)
    with gate.turn():
        fake.now += 2.0  # a large rerun of 2 s
    ended = fake.now
    waits: list[tuple[int, float]] = []
    with gate.turn(lambda ahead, waited: waits.append((ahead, waited))):
        started = fake.now
    # 2 s of work at a share of 1/4: shut for 6 s, so the two turns took 2 s of 8
    assert started - ended == pytest.approx(6.0, abs=0.11)
    assert waits and all(ahead == 0 for ahead, _ in waits)  # nobody ahead: only the pause
    assert waits[-1][1] == pytest.approx(6.0, abs=0.11)


def test_the_whole_share_means_no_pause() -> None:
    fake = FakeTime()
    gate = Gate(share=1.0, clock=fake.clock, sleep=fake.sleep)
    with gate.turn():
        fake.now += 5.0
    with gate.turn(lambda ahead, waited: pytest.fail("waited")):
        pass


def test_a_turn_is_re_entrant_in_its_own_thread() -> None:
    fake = FakeTime()
    gate = Gate(clock=fake.clock, sleep=fake.sleep)
    with gate.turn(), gate.turn(lambda ahead, waited: pytest.fail("waited for itself")):
        assert gate.waiting == 0


def test_after_runs_after_each_turn() -> None:
    calls: list[str] = []
    gate = Gate(after=lambda: calls.append("trim"))
    with gate.turn():
        calls.append("work")
    assert calls == ["work", "trim"]


def test_a_failing_turn_still_opens_the_gate() -> None:
    fake = FakeTime()
    gate = Gate(share=1.0, clock=fake.clock, sleep=fake.sleep)
    with pytest.raises(RuntimeError), gate.turn():
        raise RuntimeError("the rerun failed")
    with gate.turn(lambda ahead, waited: pytest.fail("the gate stayed shut")):
        pass


class Holder:
    """A thread that holds the gate's turn until released."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.holding = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.holding.wait(5)

    def _run(self) -> None:
        with self.gate.turn():
            self.holding.set()
            self.release.wait(10)

    def done(self) -> None:
        self.release.set()
        self.thread.join(5)


def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_waiters_get_their_turns_in_order_and_see_how_many_are_ahead() -> None:
    gate = Gate(share=1.0, max_waiting=4)
    holder = Holder(gate)
    order: list[str] = []
    seen: dict[str, set[int]] = {"b": set(), "c": set()}

    def waiter(name: str) -> None:
        with gate.turn(lambda ahead, waited: seen[name].add(ahead)):
            order.append(name)

    b = threading.Thread(target=waiter, args=("b",))
    b.start()
    _until(lambda: gate.waiting == 1)
    c = threading.Thread(target=waiter, args=("c",))
    c.start()
    _until(lambda: gate.waiting == 2 and seen["c"])
    holder.done()
    b.join(5)
    c.join(5)
    assert order == ["b", "c"]
    assert 1 in seen["b"]  # the running turn
    assert 2 in seen["c"]  # the running turn and b


def test_a_full_queue_refuses_at_once() -> None:
    gate = Gate(share=1.0, max_waiting=1)
    holder = Holder(gate)
    waiter = threading.Thread(target=lambda: gate.turn().__enter__())
    waiter.start()
    _until(lambda: gate.waiting == 1)
    started = time.monotonic()
    with pytest.raises(ServerBusyError) as refused, gate.turn():
        pass
    assert time.monotonic() - started < 1.0
    assert refused.value.ahead == 2  # the one running and the one waiting
    holder.done()
    waiter.join(5)


def test_a_waiter_gives_up_after_the_longest_wait() -> None:
    gate = Gate(share=1.0, max_wait=0.3)
    holder = Holder(gate)
    with pytest.raises(ServerBusyError) as refused, gate.turn():
        pass
    assert refused.value.waited > 0.3
    assert gate.waiting == 0  # it left the queue
    holder.done()


def test_a_replaced_rerun_leaves_the_queue() -> None:
    """Streamlit stops a waiting rerun by raising from the page's next message: the on_wait call."""

    class Replaced(BaseException):
        pass

    gate = Gate(share=1.0)
    holder = Holder(gate)

    def replaced(ahead: int, waited: float) -> None:
        raise Replaced

    with pytest.raises(Replaced), gate.turn(replaced):
        pass
    assert gate.waiting == 0
    holder.done()
    with gate.turn(lambda ahead, waited: pytest.fail("a left waiter still blocks")):
        pass


@pytest.mark.parametrize(
    ("value", "share"),
    [(None, 0.1), ("", 0.1), ("0.5", 0.5), ("1", 1.0), ("0", 0.1), ("1.5", 0.1), ("nan", 0.1), ("-1", 0.1),
     ("abc", 0.1), ("inf", 0.1)],
)  # fmt: skip
def test_the_share_a_server_is_given(value, share, caplog) -> None:
    """ATTNVIZ_GATE_SHARE: a number in (0, 1], else the default with a line in the log."""
    from attnviz.app.gate import SHARE, configured_share

    assert SHARE == 0.1
    assert configured_share(value) == share
    assert ("ATTNVIZ_GATE_SHARE" in caplog.text) == (value not in (None, "", "0.5", "1"))
