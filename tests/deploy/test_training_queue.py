"""An attacker and ten students at the training queue, through the real nginx in front of a real server (issue 36,
finding 2: one client filled the queue, 1 running and 12 waiting, in 7.8 s with 13 distinct settings, and a student's
Train was refused 14 times out of 15).

Each client connects from an address of its own on the loopback network (127.0.0.66 is the attacker, 127.0.0.10-19
the students), so nginx sees eleven clients, as it would on a school's network, and writes each one's address into
X-Forwarded-For. The app is told it sits behind one proxy (ATTNVIZ_TRUSTED_PROXIES=1). The attacker opens 13 tabs
without cookies, each asking for other settings, and writes a made-up X-Forwarded-For of its own into every request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
from collections.abc import Iterator

import pytest

from testkit.nginx import HOST, NginxProxy
from testkit.proxyclient import ProxyUser
from testkit.server import StreamlitServer, free_port

ATTACKER = "127.0.0.66"
STUDENTS = [f"127.0.0.{10 + index}" for index in range(10)]
STEPS = 1000  # dates: ~90 s a training, so the first one runs all through the test
REFUSED = ("in line already", "trainings are waiting already")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NginxProxy]:
    server = StreamlitServer("app.py", env={"ATTNVIZ_TRUSTED_PROXIES": "1"}, log_name="training-queue").start()
    nginx = NginxProxy([f"{HOST}:{server.port}"], free_port(), tmp_path_factory.mktemp("nginx"))
    try:
        nginx.start()
        yield nginx
    finally:
        nginx.stop()
        server.stop()  # its training goes with it


def _run(coroutine):
    """asyncio.run in a thread of its own (Playwright's sync API may hold an event loop in this one)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _press_train(user: ProxyUser) -> list[str]:
    """Open the page, press Train; what the page said after the press."""
    await user.open()
    before = len(user.alerts)
    await user.click("Train")
    return user.alerts[before:]


def _refused(said: list[str]) -> bool:
    return any(reason in alert for alert in said for reason in REFUSED)


def _place_and_ready(said: list[str]) -> tuple[int, float]:
    """The place in line and the estimate (seconds) the page gave a queued training."""
    for alert in said:
        found = re.search(r"Number (\d+) in line.*ready in about (\d+) (s|min)", alert)
        if found:
            return int(found[1]), int(found[2]) * (60 if found[3] == "min" else 1)
    raise AssertionError(f"no place and estimate on the page: {said}")


def test_an_attacker_holds_one_place_and_every_student_gets_one(proxy: NginxProxy) -> None:
    async def scenario() -> tuple[list[list[str]], list[list[str]], list[str]]:
        attacker = [
            ProxyUser(
                proxy.url,
                "Learned_attention",
                f"sd={100 + index}&n={STEPS}",
                source=ATTACKER,
                headers={"X-Forwarded-For": f"198.51.100.{index}"},  # made up: only the proxy's own entry counts
            )
            for index in range(13)
        ]
        attacked = await asyncio.gather(*(_press_train(user) for user in attacker))
        students = [
            ProxyUser(proxy.url, "Learned_attention", f"sd={200 + index}&n={STEPS}", source=address)
            for index, address in enumerate(STUDENTS)
        ]
        pressed = await asyncio.gather(*(_press_train(user) for user in students))
        # One student asks for a second training in the same tab, while the first waits
        again = students[0]
        again.set_widget("w:learned:seed", "int", 299)
        await again.rerun()
        before = len(again.alerts)
        await again.click("Train")
        second = again.alerts[before:]
        for user in attacker + students:
            await user.close()
        return attacked, pressed, second

    attacked, pressed, second = _run(scenario())
    accepted = [said for said in attacked if not _refused(said)]
    assert len(accepted) == 1, attacked  # one training for the attacker's address, whatever its headers said
    refusals = [said for said in attacked if _refused(said)]
    assert all("from your address" in " ".join(said) for said in refusals), refusals
    assert not any(_refused(said) for said in pressed), pressed  # every student got a place
    places = sorted(_place_and_ready(said) for said in pressed)
    assert [place for place, _ in places] == list(range(2, 12))  # behind the attacker's one, in line
    readies = [ready for _, ready in places]
    assert readies == sorted(readies) and readies[0] > 60, (
        places
    )  # later in line, later ready; minutes, not "under one"
    assert any("You have a training in line already" in alert for alert in second), second
