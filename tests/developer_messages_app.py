"""A page that shows one value made once per cache: another value after a "Clear cache" (tests/test_server.py)."""

import uuid

import streamlit as st


@st.cache_resource
def made_once() -> str:
    return uuid.uuid4().hex


st.markdown(made_once())
