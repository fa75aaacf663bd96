"""Kernel attention: Nadaraya–Watson regression as attention pooling."""

from attnviz.ui.common import page_frame
from attnviz.ui.kernel_page import kernel_page

page_frame(
    "Kernel attention",
    "📈",
    "Nadaraya–Watson regression: a query's prediction is the average of the training "
    "values, weighted by a kernel of the distance between the query and each training key.",
)
kernel_page()
