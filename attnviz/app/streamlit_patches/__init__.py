"""Every use of Streamlit's private API in attnviz, one module per concern, behind one version gate.

Patches the launcher installs (`install`, called by `python -m attnviz.app.server`, which then hands over to
`streamlit_command_line`):
    nodelay             TCP_NODELAY on the connections Streamlit's server accepts
    fragments           a fragment rerun a reconnected session cannot serve runs the whole page, input kept
    script_events       a run's messages reach the event loop in batches
    widget_state        widgets look up their own key instead of copying the session state
    developer_messages  a class server drops the developer menu's messages from clients
    uploads             uploads capped per session and in all; `forget_upload` drops a file the page has read
    long_links          long links are read; a link Streamlit ignores is reported (`ignored_link`)
    routes              attnviz's own HTTP routes (`add_route`: the live class's version endpoint)

Private reads the pages use (small named functions, imported from their modules):
    plotly_chart        st.plotly_chart's element from a figure's JSON made once (`plotly_json_chart`)
    sent_widgets        the widget values a reconnected browser sent before the widgets are drawn
    script_run          this run, the running fragment, the main container and its type
    components          the widget id of a custom component's trigger, for clients acting as a browser

`registry.PATCHES` lists each with what it touches in Streamlit (fingerprinted), its measured gain and its upstream
issue; `version.CHECKED_STREAMLIT` is the release they were checked against, and importing this package under any
other Streamlit stops with a message that says what to check. Nothing outside this package imports Streamlit's
private modules (tests/test_streamlit_patches.py scans attnviz/ for it; ruff's banned-api rule lists them). Not private:
`streamlit` itself (`st`, `st.components.v2.component` included), `streamlit.config`, `streamlit.testing`, and
`streamlit.errors`, whose `StreamlitAPIException` is what public commands such as `st.page_link` raise: the pages
catch it where they are.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from attnviz.app.streamlit_patches.version import CHECKED_STREAMLIT, require_streamlit

__all__ = ["CHECKED_STREAMLIT", "install", "require_streamlit", "streamlit_command_line"]

require_streamlit("attnviz.app.streamlit_patches")  # before any module of the package imports a private one


def install() -> None:
    """Install every patch of Streamlit's server (each one once; a second call changes nothing)."""
    from attnviz.app.streamlit_patches import (
        developer_messages,
        fragments,
        long_links,
        nodelay,
        routes,
        script_events,
        uploads,
        widget_state,
    )

    nodelay.enable_nodelay()
    fragments.keep_input_of_unknown_fragments()
    script_events.batch_script_events()
    widget_state.widgets_look_up_their_key()
    developer_messages.drop_developer_messages()
    uploads.cap_uploads()
    long_links.read_long_links()
    long_links.report_ignored_links()  # after keep_input_of_unknown_fragments: it wraps that request_rerun
    routes.serve_added_routes()


def streamlit_command_line(args: Sequence[str]) -> None:
    """Run `streamlit <args...>` in this process, through Streamlit's own command line (its console script)."""
    from streamlit.web.cli import main

    sys.argv = ["streamlit", *args]
    main()
