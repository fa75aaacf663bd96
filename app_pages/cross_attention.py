"""Cross-attention: queries from one sequence, keys and values from another."""

from attnviz.app.ui.attention_page import attention_page
from attnviz.app.ui.frame import page_frame

page_frame("cross")
attention_page("cross")
