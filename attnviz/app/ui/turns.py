"""Large reruns take their turn at the server's gate (attnviz/app/gate.py), with the wait shown on the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from attnviz.app.gate import GATE, HEAVY_SECONDS, ServerBusyError
from attnviz.app.ui.settings import tr

__all__ = ["ServerBusyError", "busy_note", "turn"]


@contextmanager
def turn(seconds: float) -> Iterator[None]:
    """Run the `with` block at once when its estimated cost is small, else in its turn at the gate, saying on the
    page how many large requests are ahead while it waits. Raises ServerBusyError when the turn cannot be had: the
    caller says so with `busy_note` and draws what it can without the large part."""
    if seconds <= HEAVY_SECONDS:
        yield
        return
    note = st.empty()

    def waiting(ahead: int, waited: float) -> None:
        # Every call sends a small message: it is also where Streamlit stops this run when the student's next
        # change replaces it, so a replaced request leaves the queue at once.
        note.caption(tr("gate.waiting", ahead=ahead, seconds=f"{waited:.1f}"))

    try:
        with GATE.turn(waiting):
            note.empty()
            yield
    except ServerBusyError:
        note.empty()  # busy_note says why instead
        raise


def busy_note(exc: ServerBusyError) -> None:
    """The page's message when a large request found the server too busy, in the interface language."""
    st.warning(tr("gate.busy", ahead=exc.ahead), icon="⏳")
