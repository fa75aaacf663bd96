"""The join link's address (attnviz/app/classroom/address.py): a teacher at localhost gives the students the
machine's address on the class's network, the operator's public URL wins, and a link that only this computer can
open is said to be one (issue 50: a class started from localhost could not be joined from a phone)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from attnviz.app.classroom.address import JoinBase, is_local, join_base, network_address, public_base

LAN = "192.168.1.20"


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("app.localhost", True),
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("[::1]", True),
        ("::1", True),
        ("", True),
        ("192.168.1.20", False),
        ("0.0.0.0", False),  # (listening on every interface)
        ("class.example.org", False),
        ("[2001:db8::1]", False),
    ],
)
def test_which_hosts_name_this_computer_only(host, local):
    assert is_local(host) is local


def test_a_teacher_at_localhost_gives_the_machines_network_address_with_the_same_port_and_path():
    assert join_base("http://localhost:8501/", "", None, LAN) == JoinBase(f"http://{LAN}:8501/", False)
    assert join_base("http://127.0.0.1:8710/", None, None, LAN) == JoinBase(f"http://{LAN}:8710/", False)
    assert join_base("http://localhost:8501/attnviz/", "0.0.0.0", None, LAN) == JoinBase(
        f"http://{LAN}:8501/attnviz/", False
    )


def test_an_address_others_can_reach_is_kept():
    for url in ("http://10.0.0.5:8501/", "https://class.example.org/attnviz/"):
        assert join_base(url, "", None, LAN) == JoinBase(url, False)


def test_the_operators_public_url_wins_and_a_bad_one_is_ignored():
    assert join_base("http://localhost:8501/", "", "https://class.example.org/attnviz", LAN) == JoinBase(
        "https://class.example.org/attnviz/", False
    )
    assert join_base("http://127.0.0.1:8501/", "127.0.0.1", "http://class.example.org:8080", None) == JoinBase(
        "http://class.example.org:8080/", False
    )
    for bad in ("javascript:alert(1)", "class.example.org", "https://", "https://x.org/?a=1", "ftp://x.org/"):
        assert public_base(bad) is None, bad
        assert join_base("http://localhost:8501/", "", bad, LAN) == JoinBase(f"http://{LAN}:8501/", False)


def test_a_server_that_listens_on_this_computer_only_or_a_machine_without_a_network_says_so():
    assert join_base("http://127.0.0.1:8501/", "127.0.0.1", None, LAN) == JoinBase("http://127.0.0.1:8501/", True)
    assert join_base("http://localhost:8501/", "localhost", None, LAN) == JoinBase("http://localhost:8501/", True)
    assert join_base("http://localhost:8501/", "", None, None) == JoinBase("http://localhost:8501/", True)


def test_this_machines_network_address_is_one_another_machine_could_reach():
    """On a machine with a network (every CI runner reaches a package index) an IPv4 address that is neither a
    loopback nor the unspecified one, and that is this machine's: a socket can listen on it."""
    found = network_address()
    assert found is not None
    address = ipaddress.ip_address(found)
    assert address.version == 4 and not address.is_loopback and not address.is_unspecified
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind((found, 0))
