"""How a student's screen learns that the class changed, without a rerun per student per second.

Streamlit cannot push to a session from outside, and a fragment polling through a rerun every second costs every
follower a script run per second. So the student's browser asks, with a plain HTTP request, for the class's version
(`version_endpoint`, under the class's random follow id, never its code) and asks Streamlit for a rerun only when it
changed (attnviz/app/ui/live_follow.py, a component that draws nothing).

The request is a long poll: the server answers at once when the version differs from the one the browser has, else
holds the request until it changes or HOLD_SECONDS pass. One task per server process (`VersionWatcher`) reads the
versions of every class someone is waiting on, in one round trip to the store every POLL_SECONDS, so the store is
asked 5 times a second whatever the number of students, and a waiting student costs the server nothing but an open
connection. The store is shared by every replica (Redis), so a change made on one replica reaches a student held on
another within POLL_SECONDS. The store's blocking calls run in a thread, never on the server's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from attnviz.app.classroom.store import ClassStore
from attnviz.core.errors import AttnvizError

POLL_SECONDS = 0.2  # how often the watcher reads the versions of the classes someone waits on
EXPIRE_EVERY_SECONDS = 60.0  # how often the watcher ends the classes idle for IDLE_SECONDS (store.expire)
HOLD_SECONDS = 20.0  # a long poll answers after this long without a change (under nginx's 60 s read timeout)
FOLLOW_ID_CHARS = 64  # a follow id longer than this is not one (the store makes them ~22 characters)
ROUTE = "_attnviz/class/{follow_id}/version"  # relative to the server's base path


class VersionWatcher:
    """Waits for classes' versions to change, for every long poll of one server process (on its event loop)."""

    def __init__(self, store: Callable[[], ClassStore], poll_seconds: float = POLL_SECONDS) -> None:
        self._store = store
        self._poll = poll_seconds
        self._codes: dict[str, str | None] = {}  # follow id -> code (None: no such class), as the store said
        self._waiting: dict[str, list[tuple[int, asyncio.Future[dict[str, Any]]]]] = {}  # code -> (version, future)
        self._task: asyncio.Task[None] | None = None
        self._expired_at = 0.0  # when the watcher last ended the idle classes

    async def code_of(self, follow_id: str) -> str | None:
        """The code of a follow id (asked of the store once per id and process; an unknown id is asked again)."""
        code = self._codes.get(follow_id)
        if code is None:
            code = await asyncio.to_thread(self._store().code_of, follow_id)
            if code is not None:
                self._codes[follow_id] = code
        return code

    async def wait(self, code: str, after: int, hold: float = HOLD_SECONDS) -> dict[str, Any]:
        """{"version": v} once the class's version is not `after` (or after `hold` seconds, with the same version);
        {"ended": True} when the class is gone; {"unavailable": True} when the store cannot be reached."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(code, []).append((after, future))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())
        try:
            return await asyncio.wait_for(asyncio.shield(future), hold)
        except TimeoutError:
            return {"version": after}
        finally:
            waiters = self._waiting.get(code, [])
            with contextlib.suppress(ValueError):
                waiters.remove((after, future))
            if not waiters:
                self._waiting.pop(code, None)

    async def _watch(self) -> None:
        """Read the versions of the classes waited on, every POLL_SECONDS, while anyone waits (and once a minute end
        the classes nobody changed for IDLE_SECONDS: their students are told the class ended)."""
        while self._waiting:
            if time.monotonic() - self._expired_at >= EXPIRE_EVERY_SECONDS:
                self._expired_at = time.monotonic()
                with contextlib.suppress(AttnvizError):
                    await asyncio.to_thread(self._store().expire, time.time())
            codes = list(self._waiting)
            try:
                versions = await asyncio.to_thread(self._store().versions, codes)
            except AttnvizError:
                versions = None
            for code in codes:
                for after, future in list(self._waiting.get(code, [])):
                    if future.done():
                        continue
                    if versions is None:
                        future.set_result({"unavailable": True, "version": after})
                    elif code not in versions:
                        future.set_result({"ended": True})
                        self._codes = {f: c for f, c in self._codes.items() if c != code}
                    elif versions[code] != after:
                        future.set_result({"version": versions[code]})
            await asyncio.sleep(self._poll if versions is not None else 1.0)


def parse_after(text: str | None) -> int | None:
    """The `after` query parameter: the version the browser has (a non-negative integer), None if malformed."""
    if text is None or not text.isdigit() or len(text) > 12:
        return None
    return int(text)


def version_endpoint(watcher: VersionWatcher) -> Callable[[Any], Any]:
    """The HTTP endpoint `GET <base>/_attnviz/class/<follow id>/version?after=<version>` (a Starlette endpoint):
    JSON {"version": n}, {"ended": true} (404 for an id that names no class), or {"unavailable": true}."""
    from starlette.responses import JSONResponse

    headers = {"Cache-Control": "no-store"}

    async def endpoint(request: Any) -> JSONResponse:
        follow_id = request.path_params.get("follow_id", "")
        after = parse_after(request.query_params.get("after"))
        if after is None or not follow_id or len(follow_id) > FOLLOW_ID_CHARS:
            return JSONResponse({"error": "bad request"}, status_code=400, headers=headers)
        started = time.monotonic()
        try:
            code = await watcher.code_of(follow_id)
        except AttnvizError:
            return JSONResponse({"unavailable": True, "version": after}, headers=headers)
        if code is None:
            return JSONResponse({"ended": True}, status_code=404, headers=headers)
        hold = max(0.0, HOLD_SECONDS - (time.monotonic() - started))
        waiting = asyncio.ensure_future(watcher.wait(code, after, hold=hold))
        gone = asyncio.ensure_future(_until_disconnected(request))
        done, _ = await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if waiting in done:
            return JSONResponse(waiting.result(), headers=headers)
        waiting.cancel()
        # The browser left (a closed tab, another page): the poll ends now instead of holding the server, whose
        # shutdown waits for every request in progress, for the rest of HOLD_SECONDS.
        return JSONResponse({"gone": True}, status_code=499, headers=headers)

    return endpoint


async def _until_disconnected(request: Any) -> None:
    """Returns once the client of a bodiless request has closed its connection (ASGI's "http.disconnect")."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
