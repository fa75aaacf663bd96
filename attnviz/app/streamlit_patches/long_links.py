"""Long links open, and a link Streamlit ignores is named on the page.

Streamlit's HTTP server (uvicorn, with h11) refuses a request head over 16 KiB that reaches it in more than one
piece, as any long one does over a network: a shared link of 20 KiB, which the app writes, did not open at all. Here
it reads heads of up to `LINK_REQUEST_BYTES`. Streamlit then reads a query string of at most 512 Ki characters and
1,000 fields, and runs the page without a longer one without a word: the student saw the defaults and no reason.
Here each rerun request records whether its query string was ignored (`ignored_link`), for the page to say so
(attnviz/app/ui/session.py).
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import Any

from attnviz.app.streamlit_patches.version import require_streamlit

LINK_REQUEST_BYTES = 1024 * 1024  # the longest request head a server reads: a link of 512 Ki characters, with room


def read_long_links(limit: int = LINK_REQUEST_BYTES) -> None:
    """Make Streamlit's HTTP server read request heads of up to `limit` bytes, however they arrive (h11's default
    is 16 KiB once a head comes in more than one piece)."""
    require_streamlit("read_long_links")
    from streamlit.web.server.starlette import starlette_server

    uvicorn_kwargs = starlette_server._get_uvicorn_config_kwargs
    if getattr(uvicorn_kwargs, "reads_long_links", False):
        return

    def uvicorn_kwargs_reading_long_links() -> dict[str, Any]:
        return {**uvicorn_kwargs(), "h11_max_incomplete_event_size": limit}

    uvicorn_kwargs_reading_long_links.reads_long_links = True  # type: ignore[attr-defined]
    starlette_server._get_uvicorn_config_kwargs = uvicorn_kwargs_reading_long_links


@dataclass(frozen=True)
class IgnoredLink:
    """A page's query string that Streamlit ignored (over its limits): how long it was and how many fields it had."""

    characters: int
    fields: int


# Sessions by id, for `ignored_link` to find the one a script run belongs to (weak: an ended session just goes).
_SESSIONS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def report_ignored_links() -> None:
    """Make each rerun request record, on its session, whether Streamlit will ignore its query string."""
    require_streamlit("report_ignored_links")
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.state import query_params

    request_rerun = AppSession.request_rerun
    if getattr(request_rerun, "reports_ignored_links", False):
        return

    @functools.wraps(request_rerun)  # keeps the markers of patches below this one
    def request_rerun_reporting(self: AppSession, client_state: Any) -> None:
        if client_state is not None:
            query = client_state.query_string
            fields = query.count("&") + 1 if query else 0  # counted as Streamlit counts them
            ignored = (
                len(query) > query_params.CLIENT_STATE_QUERY_STRING_MAX_LENGTH
                or fields > query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS
            )
            self.__dict__["_attnviz_ignored_link"] = IgnoredLink(len(query), fields) if ignored else None
            _SESSIONS[self.id] = self
        request_rerun(self, client_state)

    request_rerun_reporting.reports_ignored_links = True  # type: ignore[attr-defined]
    AppSession.request_rerun = request_rerun_reporting  # type: ignore[method-assign]


def ignored_link() -> IgnoredLink | None:
    """The query string Streamlit ignored for the rerun this script run answers; None when it read it (or when the
    server was not started by the launcher)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    session = _SESSIONS.get(ctx.session_id) if ctx is not None else None
    return None if session is None else session.__dict__.get("_attnviz_ignored_link")
