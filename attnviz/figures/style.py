"""The figures' style without Plotly: palettes, the mask's colour, colour ranges and how much text a chart carries.

Page states and links read these (a colour range is a link parameter) without loading Plotly.
"""

from __future__ import annotations

WEIGHTS_PALETTE = "Cividis"  # sequential and colour-blind safe
SEQUENTIAL_PALETTE = "Viridis"
DIVERGING_PALETTE = "RdBu_r"  # ColorBrewer RdBu is colour-blind safe; reversed so that positive = red
MASK_COLOUR = "#ee66ee"  # masked cells: a colour of no palette here (see tests/test_figures.py), never read as a weight
MASK_NAME = "masked: cannot attend (weight exactly 0)"  # the English legend entries (catalogue: fig.masked, ...)
NO_SUPPORT_NAME = "no key inside the kernel window"
MAX_TEXT_CELLS = 144  # numbers are printed in the cells only up to 12 x 12 ...
MAX_TEXT_COLUMNS = 12  # ... and 12 columns
MAX_TICKS = 24  # a matrix chart labels every token up to this many, then every k-th (all are in the hover)
MAX_PANEL_TICKS = 12  # the same for a small panel of a grid
MAX_HOVER_SCORE_CELLS = 64 * 64  # above this, raw scores stay out of the hover (they would double the payload)
POSITION_MARK = "·"  # "the·1", "the·5": duplicate tokens stay distinct categories
ORANGE, BLUE, VERMILLION, BLACK = "#E69F00", "#0072B2", "#D55E00", "#000000"  # Okabe–Ito, colour-blind safe
GREEN = "#009E73"  # Okabe–Ito bluish green
WEIGHT_GAMMA = 0.5  # weights are coloured by weight ** 0.5 on a fixed [0, 1] range (matplotlib's PowerNorm(0.5))
WEIGHT_STOPS = 21
COLOUR_RANGES = ("data", "unit", "row")  # a weights chart's colour range: its data's, the fixed 0-1, or each row's own
