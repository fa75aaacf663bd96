"""Input typed around a replica's death: nginx in front of two replicas, the serving one killed with SIGKILL.

    python -m bench.reconnect --trials 8          # 8 trials at each of three moments

Each trial opens the self-attention page through the proxy in a fresh Chromium context, sets the temperature to
0.5, kills the replica that holds the session, then types a new temperature: while the page reconnects (Chromium
types as soon as the field takes input again), right after it reconnected, or once the page has settled (1.5 s
later). The change counts as kept when the page's link carries it and the field still shows it; otherwise it was
lost. The killed replica is then restarted on its port, as a supervisor would. tests/browser/test_reconnect.py runs
two trials of each moment in the test suite.
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import sync_playwright

from testkit.browser import CHROMIUM_ARGS, CHROMIUM_PATH, NOT_RUNNING, RECONNECT_MOMENTS, kill_serving_replica
from testkit.nginx import NginxProxy
from testkit.server import HOST, StreamlitServer, free_port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=8, help="trials at each moment")
    args = parser.parse_args()
    env = {"STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
    replicas = [StreamlitServer(env=env, log_name=f"reconnect{i}").start() for i in range(2)]
    workdir = Path(tempfile.mkdtemp(prefix="attnviz-reconnect-"))
    proxy = NginxProxy([f"{HOST}:{r.port}" for r in replicas], free_port(), workdir)
    proxy.start()
    lost = 0
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS)
            for moment in RECONNECT_MOMENTS:
                for trial in range(args.trials):
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    page = context.new_page()
                    page.goto(proxy.url_for("Self_attention"))
                    page.wait_for_selector(NOT_RUNNING)
                    field = page.get_by_role("spinbutton", name="Temperature T", exact=True)
                    field.fill("0.5", timeout=60_000)
                    field.press("Enter")
                    page.wait_for_function("() => new URLSearchParams(location.search).get('T') === '0.5'")
                    killed = time.monotonic()
                    serving = kill_serving_replica(page, replicas, moment)
                    value = f"{1.55 + trial / 10:.2f}"
                    field.fill(value, timeout=60_000)
                    field.press("Enter")
                    typed = time.monotonic() - killed
                    page.wait_for_timeout(4000)
                    page.wait_for_selector(NOT_RUNNING, timeout=60_000)
                    link = parse_qs(urlsplit(page.url).query).get("T", [""])[0]
                    kept = link == value and field.input_value() == value
                    lost += not kept
                    print(
                        f"{moment:18s} trial {trial}: typed {typed:4.1f} s after the kill; link T={link},"
                        f" field {field.input_value()}: {'kept' if kept else 'LOST'}",
                        flush=True,
                    )
                    context.close()
                    serving.restart()
            browser.close()
    finally:
        proxy.stop()
        for replica in replicas:
            replica.stop()
    print(f"lost {lost} of {len(RECONNECT_MOMENTS) * args.trials}")


if __name__ == "__main__":
    main()
