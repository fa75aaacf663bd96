"""A pretrained model's real attention heads (all-MiniLM-L6-v2, offline)."""

from attnviz.app.ui.frame import page_frame
from attnviz.app.ui.model_page import model_page

page_frame("model")
model_page()
