"""Watch attention learn: small models trained on tasks with a known answer."""

from attnviz.app.ui.frame import page_frame
from attnviz.app.ui.learned_page import learned_page

page_frame("learned")
learned_page()
