"""No input lost after a reconnect.

A control inside an `st.fragment` asks for a rerun of that fragment alone. A session that does not hold the fragment
(yet) drops the request, and the student's change with it: that is every page that has just reconnected to a new
session (its replica died, or the server restarted) while the new session's first run has not reached the fragment.
The page then shows the new value and the old results, and its link keeps the old value. Such a request becomes a
rerun of the whole page, with the same widget values. A timer's rerun (`run_every`) of such a fragment carries no
input of its own and is left to Streamlit, which drops it: a fragment's timer (the learned page's training progress)
may tick once more before the browser hears of the whole-page run that ended it, and that tick must not start another
one.

Measured in the class load test (bench/README.md, "Lost inputs"): against replicas without this patch, a kernel-page
change sent while the page reconnected was lost 2 times out of 2 in a 40-second run.
"""

from __future__ import annotations

from typing import Any

from attnviz.app.streamlit_patches.version import require_streamlit


def keep_input_of_unknown_fragments() -> None:
    """Make a session run the whole page, instead of nothing, for a fragment rerun it cannot serve."""
    require_streamlit("keep_input_of_unknown_fragments")
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.runtime.app_session import AppSession

    request_rerun = AppSession.request_rerun
    if getattr(request_rerun, "keeps_unknown_fragment_input", False):
        return

    def request_rerun_keeping_input(self: AppSession, client_state: Any) -> None:
        if (
            client_state is not None
            and client_state.fragment_id
            and not client_state.is_auto_rerun
            and not self.has_fragment(client_state.fragment_id)
        ):
            whole_page = BackMsg().rerun_script  # a ClientState: the same widget values, no fragment id
            whole_page.CopyFrom(client_state)
            whole_page.fragment_id = ""
            client_state = whole_page
        request_rerun(self, client_state)

    request_rerun_keeping_input.keeps_unknown_fragment_input = True  # type: ignore[attr-defined]
    AppSession.request_rerun = request_rerun_keeping_input  # type: ignore[method-assign]
