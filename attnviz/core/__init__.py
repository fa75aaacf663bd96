"""The core: attention in PyTorch only, written to be read beside the maths (no Plotly, no Streamlit, no server).

A computation returns a trace (`trace.py`) that holds every intermediate tensor, named; the views read the trace.
Errors on bad input carry a code and their parameters (`errors.py`), so the app can say them in any language.
"""
