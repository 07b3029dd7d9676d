"""Hostile cassettes, generated (issue 28): replay answers from the cassette or raises a
named ghostrun error, and never opens a connection.

Hypothesis edits a recorded cassette the way a stranger's pull request could:
random and forbidden response headers (control characters, line breaks, long
names and values), redirects, statuses, bodies of every encoding nested deep
or cut in many chunks, stream errors, wrong versions and keys. Each edited
file is replayed through httpx, requests and aiohttp (requests and aiohttp
follow redirects). The outcome must be a response, a `CassetteError` or a
`CacheMiss`; and the provider's listener (which counts every connection it
accepts) and ``socket.connect`` (which counts every attempt) stay at zero.

Redirect targets stay on the listed loopback host, so that every followed hop
is a request the guard must answer: where a hop to another host goes is the
redirect rule's test (``test_guard``), not this one's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import socket
import string
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simulator import ProviderSimulator

import ghostrun
from ghostrun._store import _validate
from ghostrun._store._limits import FORBIDDEN_HEADERS, LIMITS

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
Edit = Callable[[dict[str, Any]], None]


class Counted:
    """Connections made while replaying: accepted by the provider, or attempted at all."""

    def __init__(self) -> None:
        self.accepted = 0
        self.attempted = 0
        self.lock = threading.Lock()

    def add(self, field: str) -> None:
        with self.lock:
            setattr(self, field, getattr(self, field) + 1)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProviderSimulator, Path]]:
    """The provider, and one recorded cassette the examples edit."""
    directory = tmp_path_factory.mktemp("recorded")
    with ProviderSimulator() as provider:
        with ghostrun.session(mode="record", cassette_dir=directory, hosts=LOOPBACK):
            httpx.post(provider.url("/v1/chat/completions"), json=BODY)
        (path,) = directory.glob("*.json")
        yield provider, path


@pytest.fixture(scope="module")
def counted(world: tuple[ProviderSimulator, Path]) -> Iterator[Counted]:
    provider, _path = world
    counts = Counted()
    server = provider._server
    assert server is not None
    accept = server.process_request

    def process_request(request: Any, address: Any) -> None:
        counts.add("accepted")
        accept(request, address)

    server.process_request = process_request  # type: ignore[method-assign]
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def counting_connect(self: socket.socket, address: Any) -> None:
        counts.add("attempted")
        connect(self, address)

    def counting_connect_ex(self: socket.socket, address: Any) -> int:
        counts.add("attempted")
        return connect_ex(self, address)

    socket.socket.connect = counting_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = counting_connect_ex  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
        server.process_request = accept  # type: ignore[method-assign]


# -- what a stranger may write --------------------------------------------------------------

CONTROL = "".join(map(chr, [*range(0x20), 0x7F, 0x85, 0x9B, 0x202E]))
TEXT = st.text(alphabet=st.sampled_from(string.printable + CONTROL + "é☃\u2028"), max_size=40)
TOKEN = st.text(alphabet=string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=20)
HEADER_NAMES = st.one_of(
    st.sampled_from([*FORBIDDEN_HEADERS, "Content-Encoding", "proxy-authenticate", "location"]),
    TOKEN,
    TEXT.filter(bool),
    st.just("x-" + "n" * (LIMITS["header_name"].value + 1)),
)
HEADER_VALUES = st.one_of(
    TEXT,
    st.sampled_from(["gzip", "chunked", "0", "99999", "a=b; Path=/", "close", "h2c"]),
    st.just("v" * (LIMITS["header_value"].value + 1)),
)
LOCATIONS = st.one_of(
    st.builds(lambda p: f"/redirected/{p}", TOKEN),
    st.builds(lambda p: f"redirected-{p}", TOKEN),
    st.sampled_from(
        [
            *("file:///etc/passwd", "javascript:alert(1)", "data:text/plain,x", "ftp://h/"),
            *("http:foo", "https://", "http:///x", "http://[::1/x", "http://a b/", "/a b"),
            *("//127.0.0.1:1/x", "HTTP://127.0.0.1/x", " http://127.0.0.1/y", "?q=1", "#f"),
        ]
    ),
    TEXT,
)


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _children(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(TOKEN, inner, max_size=4)


BODIES = st.one_of(
    st.builds(lambda v: {"json": v}, st.recursive(st.none() | st.booleans() | TEXT, _children)),
    st.builds(lambda d: {"json": nested(d)}, st.integers(90, 110)),
    st.builds(lambda t: {"text": t}, TEXT),
    st.builds(lambda b: {"base64": base64.b64encode(b).decode()}, st.binary(max_size=64)),
    st.builds(lambda c: {"sse": c}, st.lists(TEXT, max_size=30)),
    st.builds(lambda c: {"ndjson": c}, st.lists(TEXT, max_size=5)),
    st.builds(lambda c: {"chunks_base64": c}, st.lists(st.just("AAAA"), max_size=5)),
    st.builds(lambda k, v: {k: v}, TOKEN, TEXT),  # an unknown encoding
    st.builds(lambda: {"base64": "not base64!"}),
    st.builds(lambda: {"json": {}, "format": "weird"}),
)


def _set(path: tuple[str | int, ...], value: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        node: Any = document
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return edit


def _headers(headers: dict[str, Any]) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document["responses"][0]["headers"].update(headers)

    return edit


def _many_headers(count: int) -> Edit:
    return _headers({f"x-h{i}": "v" for i in range(count)})


def _redirect(status: int, location: str) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        response = document["responses"][0]
        response["status"] = status
        response["headers"]["location"] = location

    return edit


def _responses(count: int) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document["responses"] = document["responses"] * count

    return edit


EDITS: st.SearchStrategy[Edit] = st.one_of(
    st.builds(_headers, st.dictionaries(HEADER_NAMES, HEADER_VALUES | st.lists(TEXT), max_size=3)),
    st.builds(
        _many_headers, st.integers(LIMITS["headers"].value - 30, LIMITS["headers"].value + 5)
    ),
    st.builds(_redirect, st.sampled_from([301, 302, 303, 307, 308]), LOCATIONS),
    st.builds(lambda s: _set(("responses", 0, "status"), s), st.integers(-5, 1005) | TEXT),
    st.builds(lambda b: _set(("responses", 0, "body"), b), BODIES),
    st.builds(
        lambda e: _set(("responses", 0, "stream_error"), e),
        st.fixed_dictionaries({"type": TEXT, "message": TEXT}) | TEXT,
    ),
    st.builds(lambda v: _set(("version",), v), st.integers(-2, 5) | TEXT | st.none()),
    st.builds(lambda k: _set(("key",), k), TEXT),
    st.builds(lambda r: _set(("responses", 0, "session"), r), TEXT | st.integers()),
    st.builds(_responses, st.integers(1, 4)),
    st.builds(lambda h: _set(("responses", 0, "headers"), h), st.lists(TEXT) | TEXT),
)


def _apply(edits: list[Edit], document: dict[str, Any]) -> None:
    """Each edit in turn; one an earlier edit left no place for (no headers object) is skipped."""
    for edit in edits:
        with contextlib.suppress(AttributeError, IndexError, KeyError, TypeError):
            edit(document)


# -- the property ---------------------------------------------------------------------------


def _replay(client: str, url: str, directory: Path) -> None:
    with ghostrun.session(mode="replay", cassette_dir=directory, hosts=LOOPBACK):
        if client == "httpx":
            with httpx.Client(follow_redirects=True, timeout=5) as http:
                http.post(url, json=BODY).read()
        elif client == "requests":
            with requests.Session() as session:
                session.post(url, json=BODY, timeout=5).content  # noqa: B018  # read it all
        else:

            async def talk() -> None:
                async with aiohttp.ClientSession() as session:
                    async with session.post(url, json=BODY) as response:
                        await response.read()

            asyncio.run(talk())


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=st.lists(EDITS, min_size=1, max_size=3))
def test_a_hostile_cassette_replays_or_raises_a_ghostrun_error_and_never_connects(
    edits: list[Edit],
    world: tuple[ProviderSimulator, Path],
    counted: Counted,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    provider, good = world
    document = orjson.loads(good.read_bytes())
    _apply(edits, document)
    directory = tmp_path_factory.mktemp("hostile")
    (directory / good.name).write_text(json.dumps(document))  # any integer, as JSON allows
    url = provider.url("/v1/chat/completions")
    before = (counted.accepted, counted.attempted)
    for client in ("httpx", "requests", "aiohttp"):
        try:
            _replay(client, url, directory)
        except (ghostrun.CassetteError, ghostrun.CacheMiss):
            pass
        except Exception as exc:  # only a break the cassette recorded, replayed as it was
            assert _breaks(document), (client, repr(exc), document)
        assert (counted.accepted, counted.attempted) == before, (client, document)


def _breaks(document: dict[str, Any]) -> bool:
    """Whether the cassette records a stream that broke: replay raises the client's error."""
    responses = document.get("responses")
    return isinstance(responses, list) and any(
        isinstance(r, dict) and isinstance(r.get("stream_error"), dict) for r in responses
    )


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(edits=st.lists(EDITS, min_size=1, max_size=3))
def test_the_validators_fast_path_is_never_looser_than_its_full_check(edits: list[Edit]) -> None:
    """A document the fast path accepts, the field-by-field check accepts too."""
    key = "0" * 32
    document: dict[str, Any] = {
        "key": key,
        "version": 2,
        "request": {"method": "POST", "url": "http://127.0.0.1/v1", "body": {"json": BODY}},
        "responses": [{"status": 200, "headers": {"content-type": "application/json"}}],
    }
    _apply(edits, document)
    if _validate._plain_cassette(copy.deepcopy(document), key):
        _validate._cassette(document, key)  # raises Invalid if the fast path was looser
