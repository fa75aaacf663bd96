"""The benchmark suite: load, browser, cold start and memory, each figure beside its target.

    make bench                      # or: python -m bench.run [--quick] [--skip-browser]

Writes bench/results/<date>.md (the table), <date>.json (every number) and <date>.html (latency against users).
Not part of the unit tests' pass/fail: the table says which targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import random
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.loadclient import run_load
from bench.scenarios import SCENARIOS, Scenario, start_server
from testkit.procstat import cpu_seconds, machine, rss_mb
from testkit.server import StreamlitServer
from testkit.wire import SimulatedUser

RESULTS = Path(__file__).resolve().parent / "results"
USERS = (1, 10, 30)

TARGETS = {
    "throughput": ("Self-attention, 30 users: reruns/s per server process (median of paired rounds)", ">=", 100.0),
    "p95": ("Self-attention, 30 users: p95 response (ms, median of paired rounds)", "<=", 300.0),
    "errors": ("Self-attention, all user counts: errors", "<=", 0),
    "cost_ratio": (
        "Self-attention / minimal page, server CPU per rerun (30 users, median of paired rounds)",
        "<=",
        1.3,
    ),
    "cost_ratio_cross": ("Cross-attention / minimal page, server CPU per rerun (as above)", "<=", 1.3),
    "cost_ratio_kernel": ("Kernel attention / minimal page, server CPU per rerun (as above)", "<=", 1.3),
    "cost_ratio_model": (
        "Pretrained model, 128 tokens, a view control / minimal page, server CPU per rerun (as above)",
        "<=",
        3.0,
    ),
    "first_chart_self": (
        "Browser: a new visitor opens a link, first chart drawn, self-attention / minimal page (median)",
        "<=",
        1.2,
    ),
    "first_chart_model": ("Browser: the same, pretrained-model page (128 tokens) / minimal page", "<=", 1.2),
    "change_small": ("Browser: control change -> heatmap, 8 tokens, p50 (ms)", "<=", 100.0),
    "change_large": ("Browser: control change -> heatmap, 512 tokens, p50 (s)", "<=", 1.5),
    "payload_large": ("512-token heatmap payload on the wire (MB, permessage-deflate)", "<=", 1.2),
    "cold_start": ("Cold start: `streamlit run` -> first rendered page (s)", "<=", 4.0),
    "memory_30": ("Server memory with 30 sessions (MB)", "<=", 450.0),
    "memory_growth": ("Memory growth over 2,000 reruns (MB, after warm-up)", "<=", 15.0),
    "model_load": ("Pretrained model: load in a fresh process, after torch (s, median of 3)", "<=", 1.0),
    "model_heads_128": ("Pretrained model: all 6 x 12 heads of a 128-token sentence (ms, p50)", "<=", 50.0),
}


def measure_window(server: StreamlitServer, scenario: Scenario, users: int, seconds: float) -> dict[str, Any]:
    """One timed window of `users` users on a running server: the load summary plus server CPU per rerun and RSS."""
    pid = server.pid
    assert pid is not None
    cpu: dict[str, float] = {}

    def mark(event: str) -> None:
        cpu[event] = cpu_seconds(pid)

    result = asyncio.run(
        run_load(server.url, scenario.page, scenario.control, users, seconds, query=scenario.query, on_window=mark)
    )
    row = result.summary()
    row.update(
        page=scenario.name,
        cpu_ms_per_rerun=round(1000 * (cpu["end"] - cpu["start"]) / max(1, len(result.latencies)), 2),
        rss_mb=round(rss_mb(pid), 1),
        first_load_ms=round(1000 * statistics.median(result.first_run), 1) if result.first_run else None,
        error_samples=result.errors[:3],
    )
    return row


def warm_up(server: StreamlitServer, scenario: Scenario) -> None:
    """Two users for two seconds: imports, caches and first sessions are done before anything is timed."""
    asyncio.run(run_load(server.url, scenario.page, scenario.control, 2, 2.0, query=scenario.query))


def load_page(scenario: Scenario, users: tuple[int, ...], seconds: float, **options: object) -> list[dict[str, Any]]:
    """Reruns/s, latency percentiles, errors, server CPU per rerun and RSS for each user count on one server."""
    rows = []
    with start_server(scenario, **options) as server:
        warm_up(server, scenario)
        for count in users:
            row = measure_window(server, scenario, count, seconds)
            rows.append(row)
            print(
                f"  {scenario.name:8s} {count:3d} users: {row['reruns_per_s']:7.1f} reruns/s, "
                f"p50 {row['p50_ms']:7.1f} ms, p95 {row['p95_ms']:7.1f} ms, {row['errors']} errors, "
                f"{row['cpu_ms_per_rerun']:.1f} ms CPU/rerun, {row['rss_mb']:.0f} MB",
                flush=True,
            )
    return rows


PAIRED_PAGES = ("elements", "self", "cross", "kernel", "model", "model_sentence", "modern", "learned_replay")


def paired_rounds(
    rounds: int, seconds: float, users: int = 30, pages: tuple[str, ...] = PAIRED_PAGES
) -> list[dict[str, Any]]:
    """The target comparisons, made robust to a machine whose speed drifts (a shared VM does): the minimal page and
    each of `pages`, each on its own server, `rounds` times. In a round the minimal page is measured before each page
    and after the last (minimal, page 1, minimal, page 2, ..., minimal), and a page's cost ratio is taken against
    the mean of the two minimal windows around it: a machine that slows down during a round no longer counts as
    the later pages' cost (on 2026-11-24 every page's CPU per rerun rose by a third in one round's last minute)."""
    scenarios = {name: SCENARIOS[name] for name in ("minimal", *pages)}
    servers = {}
    rows = []
    try:
        for name, scenario in scenarios.items():
            servers[name] = start_server(scenario)
            warm_up(servers[name], scenario)
        order = [name for page in pages for name in ("minimal", page)] + ["minimal"]
        for index in range(rounds):
            for slot, name in enumerate(order):
                row = {
                    "round": index + 1,
                    "slot": slot,
                    **measure_window(servers[name], scenarios[name], users, seconds),
                }
                rows.append(row)
                print(
                    f"  round {index + 1} {name:14s}: {row['reruns_per_s']:7.1f} reruns/s, "
                    f"p95 {row['p95_ms']:7.1f} ms, {row['cpu_ms_per_rerun']:.1f} ms CPU/rerun, {row['errors']} errors",
                    flush=True,
                )
    finally:
        for server in servers.values():
            server.stop()
    return rows


def cost_ratios(paired: list[dict[str, Any]], page: str) -> list[float]:
    """Server CPU per rerun of `page` over the minimal page's around it, one ratio a round: the mean of the minimal
    windows just before and just after it."""
    floors = {(row["round"], row["slot"]): row["cpu_ms_per_rerun"] for row in paired if row["page"] == "minimal"}
    ratios = []
    for row in paired:
        around = [floors.get((row["round"], row["slot"] + step)) for step in (-1, 1)] if row["page"] == page else []
        measured = [value for value in around if value]
        if measured:
            ratios.append(row["cpu_ms_per_rerun"] / statistics.fmean(measured))
    return ratios


def memory_over_reruns(total: int = 2000, users: int = 10, **options: object) -> dict[str, Any]:
    """RSS of one server sampled while the same `users` sessions make `total` reruns of the self-attention page."""
    scenario = SCENARIOS["self"]
    with start_server(scenario, **options) as server:
        pid = server.pid
        assert pid is not None

        async def drive() -> list[tuple[int, float]]:
            sims = [
                SimulatedUser(server.url, scenario.page, scenario.query, scenario.control, random.Random(i))
                for i in range(users)
            ]
            await asyncio.gather(*(sim.open() for sim in sims))
            for _ in range(20):  # warm-up: imports, caches, first allocations
                await asyncio.gather(*(sim.change() for sim in sims))
            samples = [(0, rss_mb(pid))]
            done = 0
            while done < total:
                await asyncio.gather(*(sim.change() for sim in sims))
                done += users
                if done % 250 == 0 or done >= total:
                    samples.append((done, rss_mb(pid)))
            await asyncio.gather(*(sim.close() for sim in sims))
            return samples

        samples = asyncio.run(drive())
    return {
        "reruns": samples[-1][0],
        "samples": samples,
        "growth_mb": round(samples[-1][1] - samples[0][1], 1),
        "start_mb": round(samples[0][1], 1),
        "end_mb": round(samples[-1][1], 1),
    }


def large_payload(tokens: int = 512) -> dict[str, Any]:
    """Size of the heatmap message and server time of one rerun for a `tokens`-token sentence (one user)."""
    from urllib.parse import quote

    from bench.browser import sentence

    scenario = SCENARIOS["self"]
    with start_server(scenario) as server:

        async def measure() -> tuple[float, list[int]]:
            user = SimulatedUser(
                server.url, scenario.page, f"s={quote(sentence(tokens))}", scenario.control, random.Random(0)
            )
            user.measure_wire = True
            await user.open()
            times = [await user.change() for _ in range(3)]
            sizes = {"chart_bytes": user.chart_bytes, "chart_wire_bytes": user.chart_wire_bytes}
            await user.close()
            return statistics.median(times), sizes

        rerun_s, sizes = asyncio.run(measure())
    return {"tokens": tokens, "rerun_s": round(rerun_s, 3), **sizes}


def versions() -> dict[str, str]:
    """Versions of the stack and the commit measured."""
    import plotly
    import streamlit
    import torch

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=RESULTS.parent
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "streamlit": streamlit.__version__,
        "plotly": plotly.__version__,
        "commit": commit,
    }


# ----- report -----------------------------------------------------------------------------------------------------


def verdict(key: str, measured: float | None) -> tuple[str, str, str]:
    """(target text, measured text, met?) for a target key."""
    _label, op, target = TARGETS[key]
    if measured is None:
        return f"{op} {target:g}", "not measured", "—"
    ok = measured <= target if op == "<=" else measured >= target
    return f"{op} {target:g}", f"{measured:.3g}", "met" if ok else "**not met**"


def figures_from(results: dict[str, Any]) -> dict[str, float | None]:
    """The measured value behind each target."""
    rows = results.get("load", [])
    paired = results.get("paired") or []

    def median_of(page: str, field: str) -> float | None:
        values = [row[field] for row in paired if row["page"] == page]
        return statistics.median(values) if values else None

    by = {(row["page"], row["users"]): row for row in rows}
    self30, minimal30 = by.get(("self", 30)), by.get(("minimal", 30))
    ratios = cost_ratios(paired, "self")

    def ratio(page: str) -> float | None:
        values = cost_ratios(paired, page)
        return statistics.median(values) if values else None

    browser = results.get("browser") or {}
    payload = results.get("payload") or {}
    memory = results.get("memory") or {}
    return {
        "throughput": median_of("self", "reruns_per_s") or (self30["reruns_per_s"] if self30 else None),
        "p95": median_of("self", "p95_ms") or (self30["p95_ms"] if self30 else None),
        "errors": sum(row["errors"] for row in rows + paired if row["page"] == "self"),
        "cost_ratio": statistics.median(ratios)
        if ratios
        else (self30["cpu_ms_per_rerun"] / minimal30["cpu_ms_per_rerun"] if self30 and minimal30 else None),
        "cost_ratio_cross": ratio("cross"),
        "cost_ratio_kernel": ratio("kernel"),
        "cost_ratio_model": ratio("model"),
        "change_small": browser.get("small", {}).get("p50_ms"),
        "change_large": browser["large"]["p50_ms"] / 1000 if browser.get("large") else None,
        "payload_large": max(payload["chart_wire_bytes"]) / 1e6 if payload.get("chart_wire_bytes") else None,
        "first_chart_self": _first_chart_ratio(browser, "self"),
        "first_chart_model": _first_chart_ratio(browser, "model"),
        "cold_start": browser.get("cold_render_s"),
        "memory_30": self30["rss_mb"] if self30 else None,
        "memory_growth": memory.get("growth_mb"),
        "model_load": (results.get("model") or {}).get("load", {}).get("load_s_median"),
        "model_heads_128": (results.get("model") or {}).get("compute", {}).get("128", {}).get("p50_ms"),
    }


def _first_chart_ratio(browser: dict[str, Any], page: str) -> float | None:
    """A new visitor's time to the first chart on `page` over the minimal page's (medians of the same run)."""
    visits = browser.get("first_chart") or {}
    if page not in visits or "minimal" not in visits:
        return None
    return visits[page]["median_s"] / visits["minimal"]["median_s"]


def markdown(results: dict[str, Any]) -> str:
    """The results table, with the machine and versions, then each step's figures."""
    lines = _header(results) + _targets(results) + _load(results)
    for step, section in STEP_SECTIONS:
        if results.get(step):
            lines += section(results[step])
    return "\n".join(lines) + "\n"


def _header(results: dict[str, Any]) -> list[str]:
    """The title, the machine, the versions and the server's settings."""
    info = results["machine"] | results["versions"]
    return [
        f"# attnviz benchmark, {results['date']}",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}; Python {info['python']}, "
        f"torch {info['torch']}, Streamlit {info['streamlit']}, Plotly {info['plotly']}; commit {info['commit']}.",
        f"Server settings: those of `.streamlit/config.toml` (runner.postScriptGC = false), headless, no file "
        f"watcher. Each load window: {results['seconds']:g} s of continuous interaction per user count.",
    ]


def _targets(results: dict[str, Any]) -> list[str]:
    """Each target, its goal, the figure measured and whether it is met; where to read about those not met."""
    lines = ["", "## Targets", "", "| target | goal | measured | |", "|---|---|---|---|"]
    missed = []
    for key, measured in figures_from(results).items():
        goal, shown, ok = verdict(key, measured)
        lines.append(f"| {TARGETS[key][0]} | {goal} | {shown} | {ok} |")
        if ok != "met":
            missed.append(TARGETS[key][0])
    if missed:
        lines += [
            "",
            f"{len(missed)} not met. What explains each (with the profile) and what would close the gap: "
            "[bench/README.md, What the rest is spent on]"
            "(../README.md#what-the-rest-is-spent-on-and-what-would-close-each-gap); what each change did: "
            "[the performance history](../../CHANGELOG.md#performance-history).",
        ]
    return lines


def _load(results: dict[str, Any]) -> list[str]:
    """The load windows of each page (the model page's too), a row per user count."""
    lines = [
        "",
        "## Load (browserless websocket clients)",
        "",
        "| page | users | reruns/s | p50 ms | p95 ms | p99 ms | errors | server CPU ms/rerun | RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results.get("load", []) + (results.get("model") or {}).get("page", []):
        lines.append(
            f"| {SCENARIOS[row['page']].title} | {row['users']} | {row['reruns_per_s']} | {row['p50_ms']} | "
            f"{row['p95_ms']} | {row['p99_ms']} | {row['errors']} | {row['cpu_ms_per_rerun']} | {row['rss_mb']} |"
        )
    return lines


def _paired(paired: list[dict[str, Any]]) -> list[str]:
    """The paired rounds' windows, then each page's cost ratio per round."""
    lines = ["", "## Paired rounds: the minimal page before each page and after the last, 30 users", ""]
    lines += [
        "| round | page | reruns/s | p50 ms | p95 ms | errors | server CPU ms/rerun |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in paired:
        lines.append(
            f"| {row['round']} | {row['page']} | {row['reruns_per_s']} | {row['p50_ms']} | {row['p95_ms']} | "
            f"{row['errors']} | {row['cpu_ms_per_rerun']} |"
        )
    lines += ["", "Server CPU per rerun over the minimal page's around it, per round (median):", ""]
    for page in dict.fromkeys(row["page"] for row in paired if row["page"] != "minimal"):
        values = cost_ratios(paired, page)
        shown = ", ".join(f"{value:.2f}" for value in values)
        lines.append(f"- {SCENARIOS[page].title}: {shown} (median {statistics.median(values):.2f})")
    return lines


def _gc_on(rows: list[dict[str, Any]]) -> list[str]:
    """The self-attention page with Streamlit's post-run gc.collect() on."""
    lines = ["", "## The same self-attention page with Streamlit's post-run gc.collect() on (the default)", ""]
    lines += ["| users | reruns/s | p50 ms | p95 ms | server CPU ms/rerun | RSS MB |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['users']} | {row['reruns_per_s']} | {row['p50_ms']} | {row['p95_ms']} | "
            f"{row['cpu_ms_per_rerun']} | {row['rss_mb']} |"
        )
    return lines


def _memory(memory: dict[str, Any]) -> list[str]:
    """The server's memory after n reruns."""
    series = ", ".join(f"{n}: {mb:.0f}" for n, mb in memory["samples"])
    return ["", f"## Memory over {memory['reruns']} reruns (10 users, MB after n reruns)", "", series]


def _browser(browser: dict[str, Any]) -> list[str]:
    """Chromium's figures: a control change to the new heatmap, a new visitor's first chart, the cold start."""
    lines = ["", "## Browser (Chromium, control change -> updated heatmap)", ""]
    for timing in [browser[key] for key in ("small", "large", "minimal")] + browser.get("model", []):
        lines.append(
            f"- {timing['label']}: p50 {timing['p50_ms']:.0f} ms, p95 {timing['p95_ms']:.0f} ms "
            f"({len(timing['samples'])} changes)"
        )
    for name, visit in (browser.get("first_chart") or {}).items():
        shown = ", ".join(f"{value:.2f}" for value in visit["samples"])
        lines.append(f"- A new visitor opens {SCENARIOS[name].title}: first chart after {shown} s (median "
                     f"{visit['median_s']:.2f} s)")  # fmt: skip
    runs = ", ".join(f"{run['render_s']:.2f} s" for run in browser["cold_runs"])
    lines.append(
        f"- Cold start to first rendered page: {runs} (health answered after {browser['cold_health_s']:.2f} s, "
        f"median); the minimal page, same harness: {browser['cold_minimal_render_s']:.2f} s"
    )
    return lines


def _payload(payload: dict[str, Any]) -> list[str]:
    """The large page's heatmap message, raw and on the wire, and one rerun's time (a line after the browser's)."""
    sizes = ", ".join(
        f"{raw / 1e6:.2f} MB ({wire / 1e6:.2f} MB on the wire)"
        for raw, wire in zip(payload["chart_bytes"], payload["chart_wire_bytes"], strict=True)
    )
    return [
        f"- {payload['tokens']}-token page (all tokens different): heatmap message {sizes}; one rerun "
        f"{payload['rerun_s']} s from request to finished script (one user)"
    ]


def _model(model: dict[str, Any]) -> list[str]:
    """The pretrained model: its load, and all its heads computed at each length."""
    compute = ", ".join(
        f"{tokens} tokens {timing['p50_ms']} ms (p90 {timing['p90_ms']})"
        for tokens, timing in model["compute"].items()
        if tokens != "threads"
    )
    return [
        "",
        "## Pretrained model (all-MiniLM-L6-v2)",
        "",
        f"- Load in a fresh process after torch: {', '.join(f'{s:.3f} s' for s in model['load']['load_s'])}; "
        f"first sentence after loading: {model['load']['first_run_s_median']:.3f} s",
        f"- All 6 x 12 heads, every intermediate traced ({model['compute']['threads']} threads): {compute}",
        "- The model page under load (128 tokens) is in the load table above.",
    ]


# The sections of the steps a run took, in the report's order: each gets its step's results.
STEP_SECTIONS: tuple[tuple[str, Callable[[Any], list[str]]], ...] = (
    ("paired", _paired),
    ("gc_on", _gc_on),
    ("memory", _memory),
    ("browser", _browser),
    ("payload", _payload),
    ("model", _model),
)


def html_chart(results: dict[str, Any]) -> str:
    """Plotly chart (standalone HTML) of latency and throughput against users, one line per page."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["p50 / p95 latency (ms)", "reruns per second"])
    for name in dict.fromkeys(row["page"] for row in results.get("load", [])):
        rows = [row for row in results["load"] if row["page"] == name]
        users = [row["users"] for row in rows]
        fig.add_scatter(x=users, y=[r["p50_ms"] for r in rows], name=f"{name} p50", row=1, col=1)
        fig.add_scatter(x=users, y=[r["p95_ms"] for r in rows], name=f"{name} p95", line={"dash": "dot"}, row=1, col=1)
        fig.add_scatter(x=users, y=[r["reruns_per_s"] for r in rows], name=f"{name} reruns/s", row=1, col=2)
    fig.update_xaxes(title_text="simulated users", type="log")
    fig.update_layout(title=f"attnviz load benchmark, {results['date']}", height=500)
    return fig.to_html(include_plotlyjs="cdn", full_html=True)  # a few kB per result, not 4.6 MB of plotly.js


def measure_model(seconds: float, users: tuple[int, ...] = (1, 10)) -> dict[str, Any]:
    """The pretrained model's load and compute times (bench/model.py), plus its page under the load client (128
    tokens)."""
    from bench.model import measure

    return {**measure(), "page": load_page(SCENARIOS["model"], users, seconds)}


def main() -> None:
    """Run the suite and write the results."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short windows (a smoke run, not for the record)")
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--pages", default="minimal,self,cross,kernel")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--steps",
        default="",
        help="only these steps, comma-separated (load, paired, gc_on, memory, payload, model, "
        "browser); the results file then holds only them",
    )
    parser.add_argument("--seconds", type=float, help="the length of each load window (default 15, 3 with --quick)")
    parser.add_argument(
        "--paired-pages",
        default=",".join(PAIRED_PAGES),
        help="the pages of the paired rounds, each against the minimal page (default: all of them)",
    )
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 15.0)
    date = dt.date.today().isoformat()
    results: dict[str, Any] = {"date": date, "seconds": seconds, "machine": machine(), "versions": versions()}
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("load", lambda: [row for name in args.pages.split(",") for row in load_page(SCENARIOS[name], USERS, seconds)]),
        ("paired", lambda: paired_rounds(1 if args.quick else 3, seconds, pages=tuple(args.paired_pages.split(",")))),
        ("gc_on", lambda: load_page(SCENARIOS["self"], (10, 30), seconds, **{"runner.postScriptGC": True})),
        ("memory", lambda: memory_over_reruns(400 if args.quick else 2000)),
        ("payload", large_payload),
        ("model", lambda: measure_model(seconds)),
    ]
    if not args.skip_browser:
        from bench.browser import run_browser

        steps.append(
            ("browser", lambda: run_browser(5 if args.quick else 20, 2 if args.quick else 5, 1 if args.quick else 3))
        )
    if args.steps:
        chosen = args.steps.split(",")
        unknown = set(chosen) - {name for name, _ in steps}
        if unknown:
            parser.error(f"unknown steps: {', '.join(sorted(unknown))}")
        steps = [(name, step) for name, step in steps if name in chosen]
    for name, step in steps:
        print(f"[bench] {name} ...", flush=True)
        results[name] = step()
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / (
        date + ("-quick" if args.quick else "") + (f"-{args.steps.replace(',', '-')}" if args.steps else "")
    )
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(results))
    stem.with_suffix(".html").write_text(html_chart(results))
    print(markdown(results))
    print(f"[bench] results: {stem}.md, .json, .html")


if __name__ == "__main__":
    main()
