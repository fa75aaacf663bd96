"""Container health check: exit 0 when Streamlit answers "ok" on /_stcore/health (below the base path, if any).

Only the health endpoint is asked. It does not run app.py, so a freshly started container stays cold until its
first real visitor, and a shared link opened first (the pages/ trap in DESIGN.md) is not hidden by the probe.
"""

from __future__ import annotations

import os
import sys
import urllib.request


def health_url() -> str:
    """The health endpoint of the server in this container, from Streamlit's own environment settings."""
    port = os.environ.get("STREAMLIT_SERVER_PORT", "8501")
    base = os.environ.get("STREAMLIT_SERVER_BASE_URL_PATH", "").strip("/")
    return f"http://127.0.0.1:{port}/" + (f"{base}/" if base else "") + "_stcore/health"


def healthy(url: str, timeout: float = 4.0) -> bool:
    """Whether `url` answers 200 "ok" (never through an HTTP proxy from the environment)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status == 200 and response.read().strip() == b"ok"
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(0 if healthy(health_url()) else 1)
