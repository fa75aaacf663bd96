"""What the app teaches with the core: the study notes' examples as presets (`presets.py`) and show-your-work, a
row's computation written out step by step (`explain.py`). Lessons know the core, not the models: the app passes a
trained model's weights in.
"""
