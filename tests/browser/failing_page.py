"""A page that fails, to check what a class sees of an error (tests/browser/test_class_settings.py)."""

import streamlit as st

st.title("failing page")
raise RuntimeError("an internal detail at /srv/secret/path.py")
