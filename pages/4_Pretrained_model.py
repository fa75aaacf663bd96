"""A pretrained model's real attention heads (all-MiniLM-L6-v2, offline)."""

from attnviz.ui.common import page_frame
from attnviz.ui.model_page import model_page

page_frame(
    "Pretrained model",
    "🧠",
    "The 72 real attention heads (6 layers × 12 heads) of all-MiniLM-L6-v2, a small BERT, run on your sentence by "
    "attnviz's own attention code: every head at a glance, one head up close, and one token's q·k worked out.",
)
model_page()
