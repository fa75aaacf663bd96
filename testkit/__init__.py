"""What the tests and the benchmarks share to drive the app from outside, as a browser or a class would.

- testkit.server: a Streamlit server process on 127.0.0.1 and a free port (`python -m attnviz.app.server`).
- testkit.browser: Debian's Chromium settings and the Playwright helpers (readiness, Plotly figures, screenshots).
- testkit.nginx: a real nginx with the project's site file in front of app replicas.
- testkit.wire: Streamlit's websocket protocol without a browser (`SimulatedUser`).
- testkit.proxyclient: a simulated browser tab that goes through the proxy (`ProxyUser`).
- testkit.uploads: the upload flood of issue 36 and the replica's memory while it runs.
- testkit.cgroups, testkit.procstat: real control groups with CPU and memory limits; CPU and memory from /proc.
- testkit.functionlength: how long each function is, for the checks that keep functions short.

`tests/` and `bench/` both import testkit; testkit imports neither, and they never import each other
(tests/test_layers.py checks all three).
"""
