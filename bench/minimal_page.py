"""The floor of the stack: the smallest page that draws the self-attention page's default heatmap.

Streamlit + torch + Plotly, one control and one 8x8 weights heatmap, nothing else: the benchmark serves it with the
same server settings as the app, and the app's pages are measured against it.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

TOKENS = ["the", "cat", "sat", "on", "the", "mat", "and", "purred"]

st.title("Minimal heatmap")
temperature = st.number_input("Temperature", 0.05, 10.0, 1.0, key="temperature")

generator = torch.Generator().manual_seed(0)
embeddings = torch.randn(len(TOKENS), 16, generator=generator)  # (T, d)
scores = embeddings @ embeddings.T / 16**0.5  # (T, T)
weights = torch.softmax(scores / temperature, dim=-1)

labels = [f"{i}:{t}" for i, t in enumerate(TOKENS)]
fig = go.Figure(
    go.Heatmap(
        z=weights.numpy().astype("float32"),
        x=labels,
        y=labels,
        zmin=0,
        zmax=1,
        colorscale="Cividis",
        texttemplate="%{z:.2f}",
    )
)
fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis={"autorange": "reversed"})
st.plotly_chart(fig, width="stretch")
