"""Plotly figures of the traces: arrays in, a figure out (`attention.py`, `kernel.py`, `model.py`, `modern.py`,
`learned.py`, and their building blocks in `plotting.py`). `style.py` holds the palettes and colour ranges without
loading Plotly.
"""
