"""Modern attention: RoPE, ALiBi, masks beyond causal, grouped-query heads, the KV cache and FlashAttention."""

from attnviz.ui.common import page_frame
from attnviz.ui.modern_page import modern_page

page_frame("modern", "🚀")
modern_page()
