"""attnviz.server: the launcher switches Nagle's algorithm off on the connections Streamlit's server accepts."""

import asyncio
import asyncio.base_events
import concurrent.futures
import socket

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
