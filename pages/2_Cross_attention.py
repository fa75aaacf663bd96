"""Cross-attention: queries from one sequence, keys and values from another."""

from attnviz.ui.attention_page import attention_page
from attnviz.ui.common import page_frame

page_frame(
    "Cross-attention",
    "🔀",
    "Queries come from one sequence (e.g. the target sentence), keys and values from "
    "another (the source): the output has one row per query, blended from the source's values.",
)
attention_page("cross")
