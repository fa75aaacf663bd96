"""The load tools and benchmarks: the load client and its simulated students, the class load test, the upload
flood, the speed benchmarks and their floor pages. Each tool runs as `python -m bench.<tool>` (bench/README.md); its
own tests are in bench/tests/, which `make test` runs with the rest.

bench drives the app with testkit (the server runner, the nginx fixture, the websocket clients) and never imports
tests/; tests/ never imports bench.
"""
