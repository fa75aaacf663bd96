"""Streamlit widgets of attnviz: the only part of the package that imports streamlit."""
