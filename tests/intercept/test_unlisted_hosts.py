"""Hosts that are neither provider nor tool hosts, in replay (DESIGN §1, the guard).

By default their traffic goes live, but the first lookup of or connect to each
one in a run says so (`UnlistedHostWarning`, naming the host and the fix,
``tool_hosts=[...]``); the CI recipe (``GHOSTRUN_BLOCK_NETWORK=1``,
``--ghostrun-block-network``) refuses them, advising ``tool_hosts=``/``hosts=``.
The network is a stand-in: ``tools.example.com`` resolves to a TEST-NET address,
and a connect there is recorded and refused, so nothing leaves the machine.
"""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import ghostrun
from ghostrun._intercept import _live

TOOLS = "tools.example.com"
ADDRESS = "192.0.2.10"  # TEST-NET-1: documentation only, never routed


@pytest.fixture(autouse=True)
def new_run() -> Iterator[None]:
    """Each test is a run of its own: no host named yet."""
    saved = _live.swap(_live.LiveHosts())
    yield
    _live.swap(saved)


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The resolver knows TOOLS; a connect beyond loopback is recorded and refused."""
    reached: list[Any] = []
    real_lookup, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == TOOLS:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ADDRESS, port))]
        return real_lookup(host, port, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if str(address[0]).startswith("127."):
            return real_connect(self, address)
        reached.append(address)
        raise ConnectionRefusedError(f"test connect: {address} reached connect")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return reached


def unlisted(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if w.category is ghostrun.UnlistedHostWarning]


def test_in_replay_an_unlisted_host_that_goes_live_is_said_once_per_run(
    network: list[Any], cassette_dir: Path
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # two sessions of one run
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="t"):
                for _ in range(2):
                    with pytest.raises(httpx.ConnectError):
                        httpx.get(f"http://{TOOLS}/tracking/A1")
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="t"):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("192.0.2.99", 8080), timeout=1)
    assert network == [(ADDRESS, 80)] * 4 + [("192.0.2.99", 8080)]  # it did go live
    first, second = unlisted(caught)  # the name once (not its address again), the IP once
    assert f"went to {TOOLS} live, unrecorded, in session t" in first
    assert f'ghostrun.session(tool_hosts=["{TOOLS}"])' in first
    assert f'hosts=["{TOOLS}"]' in first and "--ghostrun-block-network" in first
    assert "httpcore (" in first  # who made the call
    assert 'tool_hosts=["192.0.2.99:8080"]' in second


@pytest.mark.parametrize(
    ("mode", "host"),
    [("auto", TOOLS), ("record", TOOLS), ("replay", "127.0.0.1")],
)
def test_nothing_is_said_outside_replay_nor_of_loopback(
    network: list[Any], cassette_dir: Path, mode: str, host: str
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir):
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"http://{host}:9/tracking/A1")  # port 9 (discard): refused
    assert unlisted(caught) == []


def test_a_declared_tool_host_is_replayed_and_never_said(
    network: list[Any], cassette_dir: Path
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ghostrun.CacheMiss):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, tool_hosts=[TOOLS]):
                httpx.get(f"http://{TOOLS}/tracking/A1")
    assert unlisted(caught) == [] and network == []


def test_the_ci_recipe_refuses_it_advising_tool_hosts(
    network: list[Any], cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GHOSTRUN_BLOCK_NETWORK", "1")
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            httpx.get(f"http://{TOOLS}/tracking/A1")
    message = str(caught.value)
    assert network == []
    assert "GHOSTRUN_BLOCK_NETWORK=1 or --ghostrun-block-network" in message
    assert f'ghostrun.session(tool_hosts=["{TOOLS}"])' in message
    assert f'hosts=["{TOOLS}"]' in message
    assert "block_network=False" not in message
