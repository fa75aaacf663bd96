"""Watch attention learn: small models trained on tasks with a known answer."""

from attnviz.ui.common import page_frame
from attnviz.ui.learned_page import learned_page

page_frame("learned", "🌱")
learned_page()
