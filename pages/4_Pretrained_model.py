"""A pretrained model's real attention heads (all-MiniLM-L6-v2, offline)."""

from attnviz.ui.common import page_frame
from attnviz.ui.model_page import model_page

page_frame("model", "🧠")
model_page()
