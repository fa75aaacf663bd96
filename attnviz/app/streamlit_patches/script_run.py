"""What a page asks of the script run it is in, and where its elements go.

Streamlit has no public way to tell one run of a script from the next, to name the fragment that is running, to say
whether this run is a fragment's own rerun, or to reach the main container's DeltaGenerator (its type included). The
pages need each: the byte budget of a rerun and the offline file's record keep what one run drew (`this_run`,
`running_fragment`), the first paint's fragment tells its registration from its rerun (`rerunning_this_fragment`),
and the chart element is sent to the current container (`main_container`).

No gain to measure: these are reads of Streamlit's run context (`ScriptRunContext`, `ThreadState`), kept here so that
a release that moves them fails tests/test_streamlit_patches.py, not a page.
"""

from __future__ import annotations

from typing import Any

from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx

__all__ = ["DeltaGenerator", "main_container", "rerunning_this_fragment", "running_fragment", "session_id", "this_run"]


def this_run() -> object | None:
    """This run of the script (of the page, or of a fragment): an object that is new in every run and stays the
    same throughout it (Streamlit's cursors of the run); None outside a script run."""
    ctx = get_script_run_ctx()
    return ctx.cursors if ctx is not None else None


def running_fragment() -> str | None:
    """The id of the fragment whose code is running now; None outside every fragment."""
    return ThreadState.get().fragment_id


def session_id() -> str | None:
    """The id of the session this script run belongs to; None outside a script run."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def rerunning_this_fragment() -> bool:
    """True when the fragment running now is what this script run was started for (its own rerun); False when it
    is being registered by a run of the whole page, and outside a script run."""
    ctx = get_script_run_ctx()
    return ctx is not None and ThreadState.get().fragment_id in (ctx.fragment_ids_this_run or ())


def main_container() -> Any:
    """`st`'s own DeltaGenerator: what `st.<element>` draws into (the current `with` container, else the page)."""
    import streamlit as st

    return st._main
