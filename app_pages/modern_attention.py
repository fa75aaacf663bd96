"""Modern attention: RoPE, ALiBi, masks beyond causal, grouped-query heads, the KV cache and FlashAttention."""

from attnviz.app.ui.frame import page_frame
from attnviz.app.ui.modern_page import modern_page

page_frame("modern")
modern_page()
