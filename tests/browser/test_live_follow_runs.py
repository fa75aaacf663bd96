"""What a following student's server runs for a teacher's change: the page's fragment alone when the change moves
only the fragment's controls (the temperature, σ), the whole page for anything else (a sentence, another page, a
question). Counted from the script runs the server finished for each student's session (the browser's run tracker),
on one server with the default SQLite store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from testkit.browser import TabPool, finished_runs, wait_ready
from tests.browser.test_live_class import (
    Room,
    join,
    rooms,
    set_number,
    sqlite_server,  # noqa: F401 (a fixture: one server with its SQLite store)
    start_class,
    students_on,
    teacher_opens,
    wait_param,
)


@pytest.fixture
def one_server_room(tabs: TabPool, request: pytest.FixtureRequest) -> Iterator[Room]:
    """A class of its own for each test on one server with its SQLite store, in English: a teacher and three
    students, each a browser of their own."""
    server, url = request.getfixturevalue("sqlite_server")
    for found in rooms(tabs, server.url_for, url, request):
        found.network = True  # (the server listens on every interface: the join link carries the network address)
        yield found


def follow(room: Room, label: str, key: str, value: str) -> list[tuple[int, int]]:
    """The teacher sets a number; every student's address and control show it. The runs each student's session
    finished for it: (whole page, fragment alone)."""
    before = [finished_runs(student) for student in room.students]
    set_number(room.teacher, label, value, room.lang)
    for student in room.students:
        wait_param(student, key, value, timeout=30_000)
        wait_ready(student)
        expect(student.get_by_role("spinbutton", name=label, exact=True)).to_have_value(value)
    after = [finished_runs(student) for student in room.students]
    return [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before, strict=True)]


def sentence_reruns_the_whole_page(room: Room) -> None:
    """The teacher types a sentence (outside the fragment): every student's page shows it after a whole-page run."""
    before = [finished_runs(student) for student in room.students]
    box = room.teacher.get_by_role("textbox", name=room.t("attention.sentence"), exact=True)
    if not box.is_visible():  # a projector folds the inputs away
        room.teacher.locator('[data-testid="stExpander"] summary', has_text=room.t("frame.inputs")).first.click()
    box.fill("a cat sat on the mat")
    box.press("Enter")
    for student in room.students:
        student.wait_for_function(
            "() => new URLSearchParams(window.location.search).get('s')?.startsWith('a cat')", timeout=10_000
        )
        wait_ready(student)
        expect(student.get_by_role("textbox", name=room.t("attention.sentence"), exact=True)).to_have_value(
            "a cat sat on the mat"
        )
    after = [finished_runs(student) for student in room.students]
    assert all(a[0] > b[0] for a, b in zip(after, before, strict=True)), (before, after)


SCROLL_DOWN_JS = """(title) => {
  let box = title.parentElement;  // what scrolls the page: the title's first scrolling ancestor
  const scrolls = (el) =>
    ["auto", "scroll"].includes(getComputedStyle(el).overflowY) && el.scrollHeight > el.clientHeight;
  while (box && !scrolls(box)) box = box.parentElement;
  box = box || document.scrollingElement;
  box.scrollTop = box.scrollHeight;
}"""


def test_what_a_following_students_server_runs_and_where_a_new_page_opens(one_server_room: Room) -> None:
    """One class walked once: a change of the fragment's controls (the temperature, three times) reruns only each
    student's fragment; a sentence reruns the whole page; students scrolled down the self-attention page land on the
    kernel page's title when the teacher opens it (it kept the last page's scroll: a phone showed the new page's
    controls, its title and the class's banner above the screen); there σ reruns only the fragment too."""
    room = one_server_room
    start_class(room, "Self_attention?pm=1")
    for student in room.students:
        join(room, student)
    temperature = room.t("attention.temperature")
    for value in ("0.5", "2", "0.25"):
        runs = follow(room, temperature, "T", value)
        assert all(page == 0 and fragment >= 1 for page, fragment in runs), (value, runs)
    sentence_reruns_the_whole_page(room)

    for student in room.students:
        student.locator("h1").first.evaluate(SCROLL_DOWN_JS)
        expect(student.locator("h1").first).not_to_be_in_viewport()
    teacher_opens(room, "Kernel_attention")
    students_on(room, "Kernel_attention")
    for student in room.students:
        expect(student.locator("h1").first).to_be_in_viewport()
    bandwidth = room.t("widget.bandwidth")
    runs = follow(room, bandwidth, "bw", "2.5")
    assert all(page == 0 and fragment >= 1 for page, fragment in runs), runs
