"""Kernel attention: Nadaraya–Watson regression as attention pooling."""

from attnviz.app.ui.frame import page_frame
from attnviz.app.ui.kernel_page import kernel_page

page_frame("kernel")
kernel_page()
