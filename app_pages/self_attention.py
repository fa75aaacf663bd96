"""Self-attention: a sequence attends to itself."""

from attnviz.app.ui.attention_page import attention_page
from attnviz.app.ui.frame import page_frame

page_frame("self")
attention_page("self")
