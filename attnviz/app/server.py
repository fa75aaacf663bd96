"""Start the app: `python -m attnviz.app.server app.py [streamlit options]` is `streamlit run app.py` plus fixes.

Two malloc arenas. glibc gives each thread that meets contention an arena of its own, up to 8 per core, and an arena
keeps the memory its thread freed. A server's script threads come and go, so the freed memory of large reruns stayed
spread over many arenas: in the class load test (bench/classload/) each replica peaked over its 1536 MiB limit and
settled at 1.1-1.3 GB. With two arenas (as MALLOC_ARENA_MAX=2 would set) the same load peaked at ~1.1 GB. Set before
Streamlit starts its threads; elsewhere than glibc nothing changes.

Then the patches of Streamlit's server (attnviz/app/streamlit_patches: TCP_NODELAY, no fragment input lost after a
reconnect, a run's messages handed to the event loop in batches, widgets that look up their own key, no
developer-menu messages from clients in a class, uploads capped, long links read and ignored ones reported,
the live class's version endpoint), each explained, measured and fingerprinted there, installed under the one
Streamlit release they were checked against.

Then it hands over to Streamlit's own command line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from attnviz.app import malloc

ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process (MALLOC_ARENA_MAX in the environment wins); True if set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return malloc.set_arena_max(arenas)


def main(argv: Sequence[str] | None = None) -> None:
    """`streamlit run <argv...>` with two malloc arenas and every patch of attnviz.app.streamlit_patches installed."""
    limit_malloc_arenas()  # before anything starts a thread
    from attnviz.app import streamlit_patches
    from attnviz.app.classroom import follow, store
    from attnviz.app.streamlit_patches import routes

    watcher = follow.VersionWatcher(store.shared_store)  # the live class's followers ask it for the class's version
    routes.add_route(follow.ROUTE, follow.version_endpoint(watcher))
    streamlit_patches.install()
    streamlit_patches.streamlit_command_line(["run", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
