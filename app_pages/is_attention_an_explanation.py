"""Is attention an explanation? Attention maps of the pretrained model against blank-out, each with its Spearman ρ."""

from attnviz.app.ui.explanation_page import explanation_page
from attnviz.app.ui.frame import page_frame

page_frame("faithful")
explanation_page()
