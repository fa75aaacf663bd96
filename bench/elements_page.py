"""The floor of a page like the self-attention page: its elements, made by Streamlit, with nothing computed.

The same widgets, columns, folded sections, text, link update and one 8x8 heatmap as one rerun of the self-attention
page's controls fragment, each made the plain way, in an st.fragment moved by the temperature: `python -m bench.elements
self elements` lists both pages' messages and says whether they are the same kinds (a browser test checks it). Measured
against the minimal page in the same run, it shows what Streamlit itself costs for that many elements: the part of the
self-attention page's cost that no code of attnviz can cut.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

TOKENS = ["the", "cat", "sat", "on", "the", "mat", "and", "purred"]
LABELS = [f"{i}:{t}" for i, t in enumerate(TOKENS)]
STOPS = [float(f"{m * 10.0**e:.3g}") for e in range(-2, 4) for m in (1, 1.5, 2, 3, 5, 7)]
FORMULA = "$$\na(\\mathbf q, \\mathbf k) = \\mathbf q^\\top \\mathbf k\n$$"
TABLE = "| key | a | z | weight |\n|---|---|---|---|\n" + "\n".join(
    f"| {label} | {i * 0.1:.4f} | {i * 0.05:.4f} | {1 / 8:.4f} |" for i, label in enumerate(LABELS)
)

st.title("Elements of the self-attention page")


@st.fragment
def controls_and_results() -> None:
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.selectbox("Scoring function", ["dot", "scaled_dot", "additive", "general", "cosine", "gaussian",
                                          "concat", "concat_tanh", "given"], key="score")  # fmt: skip
        st.markdown(FORMULA)
        exact, scale = st.columns([2, 3], vertical_alignment="bottom")
        temperature = exact.number_input("Temperature T", 0.001, 1000.0, 1.0, key="temperature")
        scale.select_slider("T on a log scale", STOPS, value=1.0, key="temperature_log", format_func=lambda v: f"{v:g}")
        st.toggle("Causal mask", key="causal")
        st.radio("Valid lengths", ["none", "per row", "per query"], horizontal=True, key="lens")
        st.expander("More: heads, projections, comparison", key="open_more", on_change="rerun")
    st.query_params.from_dict({"t": f"{temperature:g}"})  # the page's link follows its controls
    with right:
        st.caption("Repeated tokens carry their position on the axes.")
        st.radio("Colour range", ["this chart", "0 to 1", "each row"], horizontal=True, key="crange")
        generator = torch.Generator().manual_seed(0)
        embeddings = torch.randn(len(TOKENS), 16, generator=generator)
        weights = torch.softmax(embeddings @ embeddings.T / 16**0.5 / temperature, dim=-1)
        fig = go.Figure(go.Heatmap(z=weights.numpy().astype("float32"), x=LABELS, y=LABELS, zmin=0, zmax=1,
                                   colorscale="Cividis", texttemplate="%{z:.2f}"))  # fmt: skip
        fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis={"autorange": "reversed"})
        st.plotly_chart(fig, width="stretch")
        st.expander("The numbers: the charts as tables", key="open_numbers", on_change="rerun")
    st.subheader("Show your work")
    st.selectbox("Query row to explain", LABELS, key="row")
    st.markdown("**1. Score the query against every key**\n\n" + FORMULA)
    st.markdown("**With the numbers**\n\n" + TABLE)
    st.expander("Share and export", key="open_share", on_change="rerun")


controls_and_results()
