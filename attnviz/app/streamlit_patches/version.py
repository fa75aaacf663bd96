"""The one version gate of every use of Streamlit's private API in attnviz.

Each module of this package reaches into Streamlit's internals, which change between releases without a word. They
were all checked against one release, `CHECKED_STREAMLIT`: installing a patch, or importing a module that reads
private state, under any other Streamlit stops with a message that says what to check. To move to a new release,
run tests/test_streamlit_patches.py under it: its fingerprints name each patch whose Streamlit code changed.
"""

from __future__ import annotations

CHECKED_STREAMLIT = "1.67.0"  # the Streamlit release every module of this package was checked against


def require_streamlit(what: str) -> None:
    """Refuse to patch, or read the private state of, any other Streamlit than CHECKED_STREAMLIT."""
    import streamlit

    if streamlit.__version__ != CHECKED_STREAMLIT:
        raise RuntimeError(
            f"attnviz.app.streamlit_patches: {what} relies on Streamlit {CHECKED_STREAMLIT}'s private API, and this "
            f"is Streamlit {streamlit.__version__}: run tests/test_streamlit_patches.py under it, check each patch it "
            "names, then update CHECKED_STREAMLIT and the fingerprints in attnviz/app/streamlit_patches/registry.py"
        )
