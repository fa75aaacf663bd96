"""Clients cannot reach the developer menu's server actions in a class.

Any client may send the messages behind the menu's "Clear cache" (which empties every cache for every session) and
the Deploy button's repository check (which runs `git` subprocesses on the event loop: 200 such messages in one second
took another student's change from 18 ms to over 3 s). When the menu hides them (`client.toolbarMode` viewer or
minimal, as `make run` and the image set), the server drops these messages; `make dev` keeps them.
"""

from __future__ import annotations

from typing import Any

from attnviz.app.streamlit_patches.version import require_streamlit

# Messages of the developer menu: "Clear cache", the Deploy button's repository check, "Run on save"
DEVELOPER_MESSAGES = frozenset({"clear_cache", "load_git_info", "set_run_on_save"})
HIDDEN_MENU = ("viewer", "minimal")  # toolbar modes that show no developer options


def drop_developer_messages() -> None:
    """Make a session ignore the developer menu's messages while the app's toolbar hides that menu."""
    require_streamlit("drop_developer_messages")
    from streamlit import config
    from streamlit.runtime.app_session import AppSession

    handle_backmsg = AppSession.handle_backmsg
    if getattr(handle_backmsg, "drops_developer_messages", False):
        return

    def handle_backmsg_for_class(self: AppSession, msg: Any) -> None:
        if msg.WhichOneof("type") in DEVELOPER_MESSAGES and config.get_option("client.toolbarMode") in HIDDEN_MENU:
            return
        handle_backmsg(self, msg)

    handle_backmsg_for_class.drops_developer_messages = True  # type: ignore[attr-defined]
    AppSession.handle_backmsg = handle_backmsg_for_class  # type: ignore[method-assign]
