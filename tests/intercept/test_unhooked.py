"""One road's missing hook never breaks another road (ghostrun/_intercept/_patch.py).

Each road in turn is left without its hook: the session still opens, every
other road records and then replays in that same session, and a call on the
broken road raises `UnsupportedLibrary` (naming the library, its version,
the missing hook and the supported versions) before any byte is sent: the
broken road is aimed at a loopback listener that counts every connection it
accepts, and it accepts none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest
import requests
import websockets.sync.client as sync_client
from simulator import ProviderSimulator
from ws_simulator import WebSocketSimulator

import ghostrun
from ghostrun._intercept import _aiohttp, _aiohttp_ws, _httpx, _patch, _urllib3, _websockets

LOOPBACK = ("127.0.0.1",)
CHAT = "/v1/chat/completions"


class Listener:
    """A loopback TCP listener that counts the connections it accepts and the bytes it gets."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.received = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    self.received += len(conn.recv(65536))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture
def ws_provider() -> Iterator[WebSocketSimulator]:
    with WebSocketSimulator() as simulator:
        yield simulator


def _body(road: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"from {road}"}]}


def _httpx_call(http: str, ws: str) -> Any:
    with httpx.Client() as client:
        return client.post(http + CHAT, json=_body("httpx")).json()


def _httpx2(http: str, ws: str) -> Any:
    with httpx2.Client() as client:
        return client.post(http + CHAT, json=_body("httpx2")).json()


def _aiohttp_http(http: str, ws: str) -> Any:
    async def call() -> Any:
        async with aiohttp.ClientSession() as client:
            async with client.post(http + CHAT, json=_body("aiohttp")) as response:
                return await response.json()

    return asyncio.run(call())


def _requests(http: str, ws: str) -> Any:
    return requests.post(http + CHAT, json=_body("urllib3"), timeout=10).json()


def _websockets_call(http: str, ws: str) -> Any:
    with sync_client.connect(ws + "/echo") as conn:
        conn.send("from websockets")
        return json.loads(conn.recv(timeout=5))


def _aiohttp_ws_call(http: str, ws: str) -> Any:
    async def call() -> Any:
        async with aiohttp.ClientSession() as client:
            async with client.ws_connect(ws + "/echo") as conn:
                await conn.send_str("from aiohttp ws")
                return json.loads((await conn.receive()).data)

    return asyncio.run(call())


Call = Callable[[str, str], Any]
ROADS: dict[str, tuple[type[Any], Call]] = {
    "httpx": (_httpx.HttpxFamilyAdapter, _httpx_call),
    "httpx2": (_httpx.HttpxFamilyAdapter, _httpx2),
    "aiohttp": (_aiohttp.AiohttpAdapter, _aiohttp_http),
    "urllib3": (_urllib3.Urllib3Adapter, _requests),
    "websockets": (_websockets.WebsocketsAdapter, _websockets_call),
    "aiohttp ws": (_aiohttp_ws.AiohttpWsAdapter, _aiohttp_ws_call),
}
HOOKS = {
    "httpx": "AsyncClient._transport_for_url",
    "httpx2": "Client._transport_for_url",
    "aiohttp": "ClientSession._request(middlewares=...)",
    "urllib3": "HTTPConnectionPool._make_request(response_conn=...)",
    "websockets": "asyncio.client.connect.connect",
    "aiohttp ws": "ClientSession._ws_connect",
}


def _break(monkeypatch: pytest.MonkeyPatch, road: str) -> None:
    """The road's library, as a release without the hook ghostrun wraps would be."""
    cls = ROADS[road][0]
    original = cls.check

    def check(adapter: Any) -> bool:
        if adapter.road != road:
            return bool(original(adapter))
        raise ghostrun.UnsupportedLibrary(
            f"{adapter.distribution} 99.0 has no {HOOKS[road]}, the hook ghostrun wraps. "
            f"Install a supported {adapter.distribution}: pip install "
            f"'{adapter.distribution}{adapter.supported}'."
        )

    monkeypatch.setattr(cls, "check", check)
    _patch.forget_plan()  # the roads' last install is no longer what a session would find


def _refused(road: str, call: Call, listener: Listener) -> str:
    aimed = f"127.0.0.1:{listener.port}"
    with pytest.raises(ghostrun.UnsupportedLibrary) as refused:
        call(f"http://{aimed}", f"ws://{aimed}")
    return str(refused.value)


@pytest.mark.parametrize("broken", sorted(ROADS))
def test_a_road_without_its_hook_is_refused_and_the_others_record_and_replay(
    broken: str,
    monkeypatch: pytest.MonkeyPatch,
    provider: ProviderSimulator,
    ws_provider: WebSocketSimulator,
    listener: Listener,
    cassette_dir: Path,
) -> None:
    _break(monkeypatch, broken)
    others = {road: call for road, (_, call) in ROADS.items() if road != broken}
    http, ws = provider.base_url, ws_provider.url()

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="record") as rec:
        live = {road: call(http, ws) for road, call in others.items()}
        message = _refused(broken, ROADS[broken][1], listener)
    assert rec.recorded == len(others)
    served, connections = provider.served, ws_provider.connections

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as rep:
        replayed = {road: call(http, ws) for road, call in others.items()}
        again = _refused(broken, ROADS[broken][1], listener)

    assert replayed == live
    assert rep.replayed == len(others)
    assert (provider.served, ws_provider.connections) == (served, connections)
    assert (listener.accepted, listener.received) == (0, 0)  # not one byte was sent
    adapter = ROADS[broken][0]
    library = "aiohttp" if broken == "aiohttp ws" else broken
    supported = {"httpx": ">=0.27", "httpx2": ">=2"}.get(broken) or adapter.supported
    for text in (message, again):
        assert f"through {broken}, a road ghostrun could not hook" in text
        assert f"{library} 99.0 has no {HOOKS[broken]}" in text
        assert f"pip install '{library}{supported}'" in text
        assert "refused before any byte was sent" in text


def test_an_unhooked_road_is_refused_in_auto_mode_too(
    monkeypatch: pytest.MonkeyPatch, listener: Listener, cassette_dir: Path
) -> None:
    _break(monkeypatch, "urllib3")
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="auto"):
        _refused("urllib3", _requests, listener)
    assert listener.accepted == 0


def test_an_unhooked_road_still_reaches_hosts_no_session_guards(
    monkeypatch: pytest.MonkeyPatch, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Only provider and session hosts are refused: the rest is not ghostrun's to record."""
    _break(monkeypatch, "urllib3")
    with ghostrun.session(cassette_dir=cassette_dir, mode="auto"):
        assert _requests(provider.base_url, "")["object"] == "chat.completion"
    assert provider.served == 1


def test_the_guard_is_released_with_the_last_session(monkeypatch: pytest.MonkeyPatch) -> None:
    from ghostrun._intercept import _guard, _patch

    _break(monkeypatch, "websockets")
    before = _guard.installed()
    with ghostrun.session(mode="auto"):
        import websockets  # noqa: F401  (imported: its road is checked now)

        assert _guard.installed() and _patch.unhooked
    assert _guard.installed() == before
    assert not _patch.unhooked


def test_doctor_prints_each_road_its_version_and_why_one_is_not_hooked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib.metadata import version

    from ghostrun._tools._cli import main

    assert main(["doctor"]) == 0
    healthy = capsys.readouterr().out
    _break(monkeypatch, "aiohttp ws")
    assert main(["doctor"]) == 1
    broken = capsys.readouterr().out
    for road in ROADS:
        library = "aiohttp" if road == "aiohttp ws" else road
        assert re.search(rf"^{road} +{re.escape(version(library))} +hooked$", healthy, re.M)
    assert re.search(r"^aiohttp ws +\S+ +NOT HOOKED$", broken, re.M)
    assert "aiohttp 99.0 has no ClientSession._ws_connect" in broken
    assert f"pip install 'aiohttp{_aiohttp_ws.AiohttpWsAdapter.supported}'" in broken
    assert re.search(r"^aiohttp +\S+ +hooked$", broken, re.M)  # its HTTP road is fine
