"""A cassette is data, never an instruction (issue 28): what replay refuses to trust.

Cassettes arrive in pull requests from strangers and CI replays them with real
keys at hand. A response header ghostrun never writes (``content-encoding``,
``set-cookie``, hop-by-hop) would make the client act on it, so the file is a
`CassetteError` naming the file and the field, through every client; and a
file past a documented limit (`ghostrun._store._limits.LIMITS`) is refused
before it costs memory. Each test here fails on a ghostrun that trusts them.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
import pytest
import requests
import websockets.sync.client as sync_client
from helpers import ROOT
from simulator import ProviderSimulator
from ws_simulator import WebSocketSimulator

import ghostrun
from ghostrun._store import _limits
from ghostrun._store._limits import FORBIDDEN_HEADERS, LIMITS, Limit
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
DOCS = ROOT / "docs" / "security-cassettes.md"


def planted(good: Path, directory: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the good cassette in ``directory`` with ``edit`` applied by hand."""
    directory.mkdir(exist_ok=True)
    document = orjson.loads(good.read_bytes())
    edit(document)
    path = directory / good.name
    path.write_bytes(orjson.dumps(document))
    return path


def response_headers(**headers: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document["responses"][0]["headers"].update(headers)

    return edit


def gzip_bomb(document: dict[str, Any]) -> None:
    """100 MB of zeros in 100 KB, announced as gzip."""
    response = document["responses"][0]
    response["headers"]["content-encoding"] = "gzip"
    bomb = gzip.compress(b"\0" * 100_000_000, 9)
    response["body"] = {"base64": base64.b64encode(bomb).decode("ascii")}


def replay(client: str, url: str, directory: Path) -> Any:
    """Replay one POST through ``client``; what it saw, and its cookie jar after."""
    with ghostrun.session(mode="replay", cassette_dir=directory, hosts=LOOPBACK):
        if client == "httpx":
            with httpx.Client() as http:
                try:
                    return http.post(url, json=BODY).content
                finally:
                    cookies = dict(http.cookies)
                    assert cookies == {}, cookies
        if client == "requests":
            with requests.Session() as session:
                try:
                    return session.post(url, json=BODY).content
                finally:
                    assert session.cookies.get_dict() == {}

        async def talk() -> bytes:
            async with aiohttp.ClientSession() as session:
                try:
                    async with session.post(url, json=BODY) as response:
                        return await response.read()
                finally:
                    assert [c.key for c in session.cookie_jar] == []

        return asyncio.run(talk())


CLIENTS = ["httpx", "requests", "aiohttp"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_gzip_bomb_is_refused_before_any_client_inflates_it(
    client: str, simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    path = planted(good, tmp_path / "c", gzip_bomb)
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        replay(client, simulator.url("/v1/chat/completions"), path.parent)
    message = str(info.value)
    assert str(path) in message
    assert "responses[0].headers.content-encoding: ghostrun never writes this header" in message


@pytest.mark.parametrize("client", CLIENTS)
def test_a_planted_cookie_never_reaches_the_cookie_jar(
    client: str, simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    edit = response_headers(**{"set-cookie": "session=planted; Path=/"})
    path = planted(good, tmp_path / "c", edit)
    with pytest.raises(
        (ghostrun.CassetteError, ghostrun.DamagedCassette),
        match=r"responses\[0\]\.headers\.set-cookie",
    ):
        replay(client, simulator.url("/v1/chat/completions"), path.parent)


FORBIDDEN = [*FORBIDDEN_HEADERS, "proxy-authenticate", "Proxy-Connection", "Content-Encoding"]


@pytest.mark.parametrize("name", FORBIDDEN)
def test_every_header_ghostrun_never_writes_is_refused_in_replay_and_by_show(
    name: str,
    simulator: ProviderSimulator,
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = planted(good, tmp_path / "c", response_headers(**{name: "x"}))
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)
    assert str(path) in str(info.value)
    assert f"responses[0].headers.{name}: ghostrun never writes this header" in str(info.value)
    assert _cli.main(["show", str(path)]) == 2
    assert f"headers.{name}" in capsys.readouterr().err


def test_a_header_sent_twice_is_checked_value_by_value(
    simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["responses"][0]["headers"]["x-note"] = ["fine", "bad\r\nset-cookie: a=b"]

    path = planted(good, tmp_path / "c", edit)
    with pytest.raises(
        (ghostrun.CassetteError, ghostrun.DamagedCassette),
        match="x-note: a header value is visible ASCII",
    ):
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)


@pytest.mark.parametrize(
    ("name", "complaint"),
    [("bad name", "not a valid header name"), ("x-long", "length of one header value")],
)
def test_a_malformed_or_oversized_header_is_refused(
    name: str, complaint: str, simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    value = "v" * (LIMITS["header_value"].value + 1) if name == "x-long" else "v"
    path = planted(good, tmp_path / "c", response_headers(**{name: value}))
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette), match=complaint):
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)


def test_recording_keeps_no_hop_by_hop_header_so_its_own_files_replay(
    simulator: ProviderSimulator, tmp_path: Path
) -> None:
    """The simulator answers with ``connection: keep-alive``: not written, so it replays."""
    simulator.extra_response_headers = {"connection": "keep-alive", "keep-alive": "timeout=5"}
    try:
        with ghostrun.session(mode="record", cassette_dir=tmp_path, hosts=LOOPBACK):
            httpx.post(simulator.url("/v1/chat/completions"), json=BODY)
    finally:
        simulator.extra_response_headers = {}
    (path,) = tmp_path.glob("*.json")
    headers = json.loads(path.read_text())["responses"][0]["headers"]
    assert not {"connection", "keep-alive"} & set(headers)
    assert replay("httpx", simulator.url("/v1/chat/completions"), tmp_path)


@pytest.mark.parametrize(
    "location",
    ["file:///etc/passwd", "javascript:alert(1)", "http:foo", "https://", "http://a b/x"],
)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_redirect_anywhere_but_an_http_url_is_refused(
    location: str, client: str, simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    """Each of these made a client raise its own error, or look up the host ``a b``."""

    def edit(document: dict[str, Any]) -> None:
        document["responses"][0].update(status=302)
        document["responses"][0]["headers"]["location"] = location

    path = planted(good, tmp_path / "c", edit)
    with pytest.raises(
        (ghostrun.CassetteError, ghostrun.DamagedCassette),
        match=r"headers\.location: a redirect goes to",
    ):
        replay(client, simulator.url("/v1/chat/completions"), path.parent)


def test_an_error_naming_a_hostile_field_prints_no_escape_sequence(
    simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    """The field's name comes from the file: the message shows its ESC as ``\\x1b``."""
    path = planted(good, tmp_path / "c", response_headers(**{"\x1b]52;c;aGk=\x07": "v"}))
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)
    assert "\x1b" not in str(info.value) and "headers.\\x1b]52;c;aGk=\\x07:" in str(info.value)


# -- limits ----------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def test_json_nested_past_the_limit_is_refused_with_the_limit_named(
    simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    depth = LIMITS["json_depth"].value + 20

    def edit(document: dict[str, Any]) -> None:
        document["responses"][0]["body"] = {"json": nested(depth)}

    path = planted(good, tmp_path / "c", edit)
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)
    message = str(info.value)
    assert str(path) in message
    assert "over ghostrun's limit of 100 for the nesting depth" in message
    assert "LIMITS['json_depth']" in message and "docs/security-cassettes.md" in message


def test_json_nested_up_to_the_limit_replays(
    simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    def edit(document: dict[str, Any]) -> None:
        # The file's own object and responses list hold the body two levels down.
        body = nested(LIMITS["json_depth"].value - 4)
        document["responses"][0]["body"] = {"json": body}

    path = planted(good, tmp_path / "c", edit)
    assert replay("httpx", simulator.url("/v1/chat/completions"), path.parent).startswith(b"[[[")


def _lower(monkeypatch: pytest.MonkeyPatch, name: str, value: int) -> None:
    monkeypatch.setitem(_limits.LIMITS, name, Limit(value, LIMITS[name].what, LIMITS[name].unit))


def _more_responses(document: dict[str, Any]) -> None:
    document["responses"] = document["responses"] * 6


def _more_chunks(document: dict[str, Any]) -> None:
    document["responses"][0]["body"] = {"sse": ["data: {}\n\n"] * 6}


def _more_headers(document: dict[str, Any]) -> None:
    document["responses"][0]["headers"].update({f"x-h{i}": "v" for i in range(40)})


def _long_name(document: dict[str, Any]) -> None:
    document["responses"][0]["headers"]["x-" + "n" * 50] = "v"


def _big_body(document: dict[str, Any]) -> None:
    document["responses"][0]["body"] = {"text": "b" * 6000}


@pytest.mark.parametrize(
    ("limit", "value", "edit", "where"),
    [
        ("file_bytes", 2000, _big_body, ""),
        ("body_bytes", 5000, _big_body, "a response body"),
        ("responses", 5, _more_responses, "responses: 6 is over"),
        ("chunks", 5, _more_chunks, "responses[0].body.sse: 6 is over"),
        ("headers", 30, _more_headers, "responses[0].headers:"),
        ("header_name", 40, _long_name, "responses[0].headers.x-nnn"),
    ],
)
def test_each_limit_is_enforced_and_named_in_the_message(
    limit: str,
    value: int,
    edit: Callable[[dict[str, Any]], None],
    where: str,
    simulator: ProviderSimulator,
    good: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each limit lowered to a few units, so a small file shows it is enforced."""
    path = planted(good, tmp_path / "c", edit)
    assert replay("httpx", simulator.url("/v1/chat/completions"), path.parent) is not None
    _lower(monkeypatch, limit, value)
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        replay("httpx", simulator.url("/v1/chat/completions"), path.parent)
    message = str(info.value)
    assert str(path) in message and where in message
    assert f"over ghostrun's limit of {value:,}" in message and f"LIMITS[{limit!r}]" in message


def test_the_docs_table_shows_every_limit_and_forbidden_header() -> None:
    page = DOCS.read_text()
    for name, limit in LIMITS.items():
        row = re.search(rf"^\| `{name}` \| ([^|]+) \|", page, re.MULTILINE)
        assert row is not None, name
        assert f"{limit.value:,}" in row.group(1).replace(" ", ""), (name, row.group(1))
    for header in FORBIDDEN_HEADERS:
        assert f"`{header}`" in page, header


# -- WebSocket cassettes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def ws_cassette(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("ws")
    with WebSocketSimulator() as ws:
        url = ws.url("/echo")
        with ghostrun.session(mode="record", cassette_dir=directory, hosts=LOOPBACK):
            with sync_client.connect(url) as raw:
                raw.send("hello")
                raw.recv()
    (path,) = directory.glob("*.json")
    return path, url


def ws_replay(url: str, directory: Path) -> Any:
    with ghostrun.session(mode="replay", cassette_dir=directory, hosts=LOOPBACK):
        with sync_client.connect(url) as raw:
            raw.send("hello")
            return raw.recv()


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        (
            lambda c: c["handshake"]["response_headers"].update({"set-cookie": "a=b"}),
            "conversations[0].handshake.response_headers.set-cookie: ghostrun never writes",
        ),
        (
            lambda c: c["handshake"]["response_headers"].update({"x-n": 5}),
            "response_headers.x-n: expected a string",
        ),
        (
            lambda c: c["handshake"].update({"subprotocol": "chat\r\nset-cookie: a=b"}),
            "handshake.subprotocol: not a valid subprotocol",
        ),
        (
            lambda c: c["frames"].append({"close": {"by": "server", "code": 99999}}),
            "close.code: expected null or 1000..4999",
        ),
    ],
)
def test_a_websocket_cassette_is_checked_the_same_way(
    edit: Callable[[dict[str, Any]], None],
    complaint: str,
    ws_cassette: tuple[Path, str],
    tmp_path: Path,
) -> None:
    good, url = ws_cassette
    assert json.loads(ws_replay(url, good.parent)) == {"echo": "hello"}
    document = orjson.loads(good.read_bytes())
    edit(document["conversations"][0])
    path = tmp_path / good.name
    path.write_bytes(orjson.dumps(document))
    with pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info:
        ws_replay(url, tmp_path)
    assert str(path) in str(info.value) and complaint in str(info.value)


def test_a_websocket_cassette_past_the_frame_limit_is_refused(
    ws_cassette: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, url = ws_cassette
    path = tmp_path / good.name
    path.write_bytes(good.read_bytes())
    frames = len(orjson.loads(good.read_bytes())["conversations"][0]["frames"])
    _lower(monkeypatch, "frames", frames - 1)
    with pytest.raises(
        (ghostrun.CassetteError, ghostrun.DamagedCassette),
        match=r"conversations\[0\]\.frames: \d+ is over",
    ):
        ws_replay(url, tmp_path)
