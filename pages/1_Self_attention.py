"""Self-attention: a sequence attends to itself."""

from attnviz.ui.attention_page import attention_page
from attnviz.ui.common import page_frame

page_frame(
    "Self-attention",
    "🔁",
    "Every token of one sequence is a query, a key and a value: each token looks at all "
    "the others and blends their values by how well they match.",
)
attention_page("self")
