"""Kernel attention: Nadaraya–Watson regression as attention pooling."""

from attnviz.ui.common import page_frame
from attnviz.ui.kernel_page import kernel_page

page_frame("kernel", "📈")
kernel_page()
