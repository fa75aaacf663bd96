"""Models whose attention the app shows: MiniLM (`bert.py`), any Hugging Face model (`hf.py`), and the small models
trained on tasks with a known answer (`learned/`). Each returns the core's traces; none imports a view or the app.
"""
