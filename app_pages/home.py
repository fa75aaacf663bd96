"""The home page: attention as soft addressing, a worked example, and a card for every other page."""

import streamlit as st

from attnviz import PRESETS
from attnviz.app.ui.common import PROJECTOR_FIT, chart
from attnviz.app.ui.frame import page_frame
from attnviz.app.ui.navigation import PAGES
from attnviz.app.ui.settings import current_language, palette, presenting, tr
from attnviz.figures import attention as figures
from attnviz.lessons.explain import number_tex

page_frame("home", link_warnings=True)

example = PRESETS["waist_weight"]
trace = example.run()
weights = trace.weights[0].tolist()


def example_chart() -> None:
    chart(
        figures.weights_heatmap(
            figures.AttentionGrid(trace.weights.numpy(), query_labels=["57"], key_labels=["51", "56", "58"]),
            scores=trace.scores.numpy(),
            title=tr("home.example_chart"),
            palette=palette(),
            lang=current_language(),
        ),
        "home_waist_weight",
        fit=PROJECTOR_FIT,
    )


# On a projector the worked example's chart stands beside the definition, so that the first screen shows a chart
definition, beside = st.columns(2, gap="medium") if presenting() else (st.container(), None)
with definition:
    st.header(tr("home.soft_addressing"))
    st.markdown(tr("home.soft_addressing_text"))
    # One formula per line: each fits a phone's width (390 px) without scrolling
    st.latex(r"f(\mathbf q) = \sum_{i} \alpha(\mathbf q, \mathbf k_i)\, \mathbf v_i")
    st.latex(
        r"\alpha(\mathbf q, \mathbf k_i) = \frac{\exp a(\mathbf q, \mathbf k_i)}{\sum_j \exp a(\mathbf q, \mathbf k_j)}"
    )
if beside is not None:
    with beside:
        example_chart()

st.header(tr("home.example"))
st.markdown(tr("home.example_text") + r" $a(q, k) = -\tfrac{1}{2}(q - k)^2$:")
st.latex(r"\begin{gathered} a(57, 51) = -18, \\ a(57, 56) = a(57, 58) = -0.5 \end{gathered}")
st.latex(r"\alpha(57, 51) = \frac{e^{-18}}{e^{-18} + 2e^{-0.5}} \approx " + number_tex(weights[0], 2))
st.latex(r"\alpha(57, 56) = \alpha(57, 58) \approx " + f"{weights[1]:.4f}")
st.latex(r"f(57) \approx 0 \times 40 + \tfrac12 \times 43 + \tfrac12 \times 48 = " + f"{float(trace.output[0]):.4g}")
if beside is None:
    example_chart()

st.header(tr("home.explore"))
for start in range(1, len(PAGES), 3):  # rows of three: five or six in a row were too narrow for their text
    row = PAGES[start : start + 3]
    for column, page in zip(st.columns(3), row, strict=False):
        with column.container(border=True):
            st.subheader(f"{page.icon} {tr(page.title)}")
            st.write(tr(f"home.card_{page.name}"))
            st.page_link(page.script, label=tr("home.open"), icon="➡️")
