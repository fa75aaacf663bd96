"""The web app: everything that knows Streamlit or a server. The pages' sections and widgets (`ui/`), each page's
state and its link codec (`state.py` and the `*_state.py`), the pipeline from a state to a trace, the exports, the
launcher (`server.py`), every use of Streamlit's private API (`streamlit_patches/`, one module per patch, behind
one version gate), the gate and the budget of one rerun, and the training queue
(`training/`). Nothing outside this folder imports it.
"""
