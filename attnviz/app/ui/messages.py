"""A problem said on the page, in the interface language, with the user's text shown literally."""

from __future__ import annotations

import streamlit as st

from attnviz.app.ui.settings import error_text


def show_warning(warning: Exception) -> None:
    """A link's problem, in the interface language, with the user's text shown literally."""
    st.warning(error_text(warning), icon="⚠️")


def show_error(exc: Exception) -> None:
    """Show a computation error to the user without a traceback, in the interface language."""
    st.error(error_text(exc), icon="🚫")
