"""attnviz.server: the launcher switches Nagle's algorithm off on the connections Streamlit's server accepts, and
keeps glibc to two malloc arenas."""

import asyncio
import asyncio.base_events
import concurrent.futures
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz import server


def accepted_nodelay() -> int:
    """TCP_NODELAY of a connection accepted by asyncio on a protocol-0 listener, as Streamlit binds it."""

    async def run() -> int:
        listener = socket.socket(socket.AF_INET)  # protocol 0, exactly like Streamlit's _bind_socket
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        result: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            result.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        srv = await asyncio.start_server(on_connect, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname())
        value = await asyncio.wait_for(result, 5)
        writer.close()
        srv.close()
        await srv.wait_closed()
        return value

    # A thread of its own: other tests (Playwright's sync API) may leave an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result(timeout=30)


@pytest.fixture
def restore_asyncio(monkeypatch):
    """Undo enable_nodelay() after the test (it patches asyncio process-wide)."""
    monkeypatch.setattr(asyncio.base_events, "_set_nodelay", asyncio.base_events._set_nodelay)


def test_plain_asyncio_leaves_nagle_on_for_a_protocol_0_listener(restore_asyncio):
    assert accepted_nodelay() == 0  # the upstream behaviour the launcher works around


def test_enable_nodelay_switches_nagle_off_on_accepted_connections(restore_asyncio):
    server.enable_nodelay()
    assert accepted_nodelay() != 0


ARENAS_SCRIPT = """
import ctypes, ctypes.util, sys, threading
from attnviz.server import limit_malloc_arenas
print(limit_malloc_arenas(), flush=True)
import torch
def work():
    for _ in range(200):
        a = torch.empty(20000); b = torch.empty(300000); del a, b
        bytes(100000)
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
ctypes.CDLL(ctypes.util.find_library("c")).malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def arenas(env: dict[str, str]) -> tuple[str, int]:
    """(what limit_malloc_arenas returned, the malloc arenas) of a process whose 8 threads allocate at once."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_the_launcher_keeps_two_malloc_arenas():
    """Freed memory of large reruns stayed spread over many arenas: replicas peaked over their limit (glibc, as in
    the image and CI)."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert arenas(env) == ("True", 2)
    env["MALLOC_ARENA_MAX"] = "3"  # a deployment's own setting wins
    returned, count = arenas(env)
    assert returned == "False" and count <= 3
    without = arenas({**env, "MALLOC_ARENA_MAX": "8"})[1]
    assert without > 2  # the threads do meet: with more arenas allowed, they take them
