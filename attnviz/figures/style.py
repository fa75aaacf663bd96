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
MAX_TEXT_CELLS = 144  # numbers are printed in the cells only up to this many cells, and where they fit (below)
MAX_TICKS = 24  # a matrix chart labels every token up to this many, then every k-th (all are in the hover)
MAX_PANEL_TICKS = 12  # the same for a small panel of a grid
MAX_HOVER_SCORE_CELLS = 64 * 64  # above this, raw scores stay out of the hover (they would double the payload)
POSITION_MARK = "·"  # "the·1", "the·5": duplicate tokens stay distinct categories
ORANGE, BLUE, VERMILLION, BLACK = "#E69F00", "#0072B2", "#D55E00", "#000000"  # Okabe–Ito, colour-blind safe
GREEN = "#009E73"  # Okabe–Ito bluish green
WEIGHT_GAMMA = 0.5  # weights are coloured by weight ** 0.5 on a fixed [0, 1] range (matplotlib's PowerNorm(0.5))
WEIGHT_STOPS = 21
COLOUR_RANGES = ("data", "unit", "row")  # a weights chart's colour range: its data's, the fixed 0-1, or each row's own
# Text on a chart, at least WCAG AA's 4.5:1 against what it sits on (tests/test_chart_contrast.py measures it).
# Streamlit's chart theme greys the axes, the legend and the colour bars (#808495, 3.7:1 on white): every figure sets
# its own colours (plotting.readable), so the theme's are never used.
TEXT_COLOUR = "#31333F"  # the page's own text colour: 12.5:1 on white
BACKGROUND = "#ffffff"
VERMILLION_TEXT = "#B34D00"  # a label beside a vermilion line: the line's colour is 3.9:1 on white, this 5.3:1
CELL_DARK, CELL_LIGHT = "#000000", "#ffffff"  # a cell's number in whichever contrasts more with the cell: >= 4.58:1
CELL_TEXT_SIZE, MIN_CELL_TEXT_SIZE = 12, 10  # px of the numbers in cells: at most, and never less (on a phone too)
# Numbers are printed in cells only where they fit a phone at MIN_CELL_TEXT_SIZE: a heatmap's plot area on a 390 px
# phone is about PHONE_PLOT_WIDTH px beside its colour bar (207 px measured in Chromium); a number takes
# CHARACTER_EM em a character ("0.14" is 1.7 em in the page's sans-serif) and GAP_EM em between two cells.
PHONE_PLOT_WIDTH = 200
CHARACTER_EM, GAP_EM = 0.45, 0.25
