"""attnviz home page. The other pages live in pages/ (Streamlit discovers them)."""

import streamlit as st

from attnviz import PRESETS, figures
from attnviz.ui.common import chart, page_frame

page_frame(
    "attnviz",
    "🔍",
    "Attention mechanisms you can see: type numbers or a sentence, pick a scoring function "
    "and masks, and watch what PyTorch computes, step by step.",
)

st.header("Attention is soft addressing")
st.markdown(
    "Think of a memory where every item is stored as a **key** (its address) and a **value** (its content). "
    "An ordinary lookup takes the one item whose key equals the query. Attention instead compares the **query** "
    "with *every* key, turns the similarities into weights that sum to 1 (a softmax), and returns the weighted "
    "sum of *all* the values. The weights are where the model is paying attention."
)
st.latex(
    r"f(\mathbf q) = \sum_{i} \alpha(\mathbf q, \mathbf k_i)\, \mathbf v_i, \qquad "
    r"\alpha(\mathbf q, \mathbf k_i) = \frac{\exp a(\mathbf q, \mathbf k_i)}{\sum_j \exp a(\mathbf q, \mathbf k_j)}"
)

st.header("A worked example: predicting weight from waist size")
example = PRESETS["waist_weight"]
trace = example.run()
weights = trace.weights[0].tolist()
st.markdown(
    "Three people have waists **51, 56, 58** (the keys) and weigh **40, 43, 48** (the values). What should we "
    "predict for a waist of **57** (the query)? Score each key with a Gaussian kernel, "
    r"$a(q, k) = -\tfrac{1}{2}(q - k)^2$:"
)
st.latex(r"a(57, 51) = -18,\quad a(57, 56) = -0.5,\quad a(57, 58) = -0.5")
st.latex(
    r"\alpha(57, 51) = \frac{e^{-18}}{e^{-18} + 2e^{-0.5}} \approx "
    + f"{weights[0]:.1e}"
    + r",\qquad \alpha(57, 56) = \alpha(57, 58) \approx "
    + f"{weights[1]:.4f}"
)
st.latex(r"f(57) \approx 0 \times 40 + \tfrac12 \times 43 + \tfrac12 \times 48 = " + f"{float(trace.output[0]):.4g}")
chart(
    figures.weights_heatmap(
        trace.weights.numpy(),
        scores=trace.scores.numpy(),
        query_labels=["57"],
        key_labels=["51", "56", "58"],
        title="Weights of the query 57 over the three keys",
    ),
    "home_waist_weight",
)

st.header("Explore")
cards = st.columns(4)
for column, (path, title, text) in zip(
    cards,
    (
        (
            "pages/1_Self_attention.py",
            "🔁 Self-attention",
            "A sentence or a matrix attends to itself: scoring functions, temperature, causal and length masks, "
            "projections and several heads.",
        ),
        (
            "pages/2_Cross_attention.py",
            "🔀 Cross-attention",
            "A target sentence attends over a source sentence; queries and key/value matrices of different lengths; "
            "the residual E + ΔE.",
        ),
        (
            "pages/3_Kernel_attention.py",
            "📈 Kernel attention",
            "Nadaraya–Watson regression: kernels, bandwidth, the weights behind each prediction, and learning σ.",
        ),
        (
            "pages/4_Pretrained_model.py",
            "🧠 Pretrained model",
            "The 72 real heads of a small BERT (all-MiniLM-L6-v2) on your sentence, offline: every head at once, "
            "one head up close, and one token's q·k worked out.",
        ),
    ),
    strict=True,
):
    with column.container(border=True):
        st.subheader(title)
        st.write(text)
        st.page_link(path, label="Open", icon="➡️")
