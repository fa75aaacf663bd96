"""HTTP routes of attnviz's own on Streamlit's server: the live class's version endpoint
(attnviz/app/classroom/follow.py), which a student's browser asks instead of rerunning its page every second.

Streamlit 1.67 adds routes only to an app started as `st.App(..., routes=[...])`, which runs under a different
launcher (uvicorn's, through `run_asgi_app`) than the one every patch here was measured and fingerprinted against.
So the routes go into the route list that the usual launcher builds (`create_streamlit_routes`), ahead of Streamlit's
own (its last route serves the app's page for any path). Under the server's base path, like Streamlit's routes.

No gain to measure here: it makes a feature possible. What a follower costs is measured by the live-class benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlit import config
from streamlit.web.server.starlette import starlette_app

_ROUTES: dict[str, Callable[[Any], Any]] = {}  # path relative to the base path -> async endpoint


def add_route(path: str, endpoint: Callable[[Any], Any]) -> None:
    """Serve `endpoint` (a Starlette endpoint, GET) at `path` under the base path, e.g. "_attnviz/x/{id}"."""
    _ROUTES[path.strip("/")] = endpoint


def full_path(path: str) -> str:
    """`path` under the server's base path (server.baseUrlPath), as the browser asks for it."""
    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + "/".join(part for part in (base, path.strip("/")) if part)


def serve_added_routes() -> None:
    """Make Streamlit's server serve the added routes (once; a second call changes nothing)."""
    original = starlette_app.create_streamlit_routes
    if getattr(original, "attnviz_routes", False):
        return
    from starlette.routing import Route

    def create_streamlit_routes(runtime: Any) -> list[Any]:
        ours = [Route(full_path(path), endpoint, methods=["GET"]) for path, endpoint in _ROUTES.items()]
        return [*ours, *original(runtime)]

    create_streamlit_routes.attnviz_routes = True  # type: ignore[attr-defined]
    starlette_app.create_streamlit_routes = create_streamlit_routes
