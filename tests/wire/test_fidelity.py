"""Replay hands back what the provider sent, byte for byte (DESIGN §3, exact; issue 22).

Every response of the corpus (`fidelity_corpus`) is served by the simulator
exactly as a provider writes it, recorded through each road, and replayed
with the simulator stopped: status, body bytes, chunk boundaries and every
header that §4 does not drop must be what the client saw live, in order and
spelling, while the cassette stays readable: JSON as JSON, SSE and NDJSON as
text chunks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import aiohttp
import httpx
import httpx2
import orjson
import pytest
import requests
import urllib3
from fidelity_corpus import (
    CORPUS,
    DROPPED,
    GEMINI_HEADERS,
    OPENAI_COMPLETION,
    OPENAI_HEADERS,
    SECOND_CORPUS,
)
from helpers import record_then_replay
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._secrets._headers import keep_response_header

LOOPBACK = ("127.0.0.1",)
FRAMING = ("content-length", "content-encoding", "transfer-encoding")  # the body is decoded
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "fidelity"}]}


@dataclass(frozen=True)
class Seen:
    """What a client saw of a response."""

    status: int
    headers: list[tuple[str, str]]  # as the library lists them: order, spelling, repeats
    chunks: list[bytes]
    url: str
    history: list[int]  # the statuses of the redirects followed on the way

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def _httpx_road(lib: Any) -> Callable[..., Seen]:
    def fetch(url: str, method: str = "POST") -> Seen:
        body = REQUEST if method == "POST" else None
        with lib.Client(follow_redirects=True) as client:
            with client.stream(method, url, json=body) as response:
                chunks = list(response.iter_raw())
                raw = response.headers.raw
                return Seen(
                    response.status_code,
                    [(k.decode(), v.decode()) for k, v in raw],
                    chunks,
                    str(response.url),
                    [r.status_code for r in response.history],
                )

    return fetch


def _aiohttp_fetch(url: str, method: str = "POST") -> Seen:
    async def fetch() -> Seen:
        body = REQUEST if method == "POST" else None
        async with aiohttp.ClientSession() as client:
            async with client.request(method, url, json=body) as response:
                # iter_chunks may also say where an HTTP chunk ended with an empty piece.
                chunks = [chunk async for chunk, _end in response.content.iter_chunks() if chunk]
                return Seen(
                    response.status,
                    list(response.headers.items()),
                    chunks,
                    str(response.url),
                    [r.status for r in response.history],
                )

    return asyncio.run(fetch())


def _urllib3_fetch(url: str, method: str = "POST") -> Seen:
    body = orjson.dumps(REQUEST) if method == "POST" else None
    with urllib3.PoolManager() as pool:
        response = pool.request(
            method,
            url,
            body=body,
            headers={"content-type": "application/json"},
            preload_content=False,
            redirect=True,
        )
        try:
            chunks = [chunk for chunk in response.stream(None) if chunk]
        finally:
            response.release_conn()
        history = [step.status for step in response.retries.history] if response.retries else []
        # As on the wire: response.headers groups a repeated name at its first place. The
        # adapter writes its own framing for the wire it builds: compared without it.
        wire = response._original_response.msg.items()  # type: ignore[union-attr]
        headers = [(n, v) for n, v in wire if n.lower() not in FRAMING]
        where = urljoin(url, response.url or "")
        return Seen(response.status, headers, chunks, where, history)


# One entry per road; a new road is one more line.
ROADS: dict[str, Callable[..., Seen]] = {
    "httpx": _httpx_road(httpx),
    "httpx2": _httpx_road(httpx2),
    "aiohttp": _aiohttp_fetch,
    "urllib3": _urllib3_fetch,
}


def only_cassette(directory: Path, path_part: str = "") -> dict[str, Any]:
    (found,) = [
        orjson.loads(p.read_bytes())
        for p in directory.glob("*.json")
        if path_part in orjson.loads(p.read_bytes())["request"]["url"]
    ]
    return found


def replayed_as_without_us(
    provider: ProviderSimulator, cassette_dir: Path, fetch: Callable[[], Seen]
) -> tuple[Seen, Seen]:
    """What the client saw recording and replaying, each checked against a run without us."""
    without = fetch()
    live, again = recorded_and_replayed(provider, cassette_dir, fetch)
    headers = [(n, v) for n, v in without.headers if n.lower() not in FRAMING]
    assert live == replace(without, headers=headers)  # recording hands on all but framing
    assert again == replace(without, headers=kept(headers))  # replay all but §4's drops too
    return live, again


def recorded_and_replayed(
    provider: ProviderSimulator, cassette_dir: Path, fetch: Callable[[], Seen]
) -> tuple[Seen, Seen]:
    """Recorded (one request or more, a redirect's too), then replayed with the provider gone."""
    return record_then_replay(
        provider, cassette_dir, fetch, mode="record", requests=None, hosts=LOOPBACK
    )


def kept(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() not in DROPPED]


def lowered(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in headers]


@pytest.mark.parametrize("road", ROADS)
@pytest.mark.parametrize("name", CORPUS)
def test_the_corpus_replays_byte_for_byte_and_stays_readable(
    provider: ProviderSimulator, cassette_dir: Path, name: str, road: str
) -> None:
    entry = CORPUS[name]
    provider.raw_replies[name] = entry.reply
    url = provider.url(f"/raw/{name}")
    live, again = replayed_as_without_us(provider, cassette_dir, lambda: ROADS[road](url))

    sent = entry.reply.chunks if entry.reply.chunks is not None else [entry.reply.body]
    assert live.status == again.status == entry.reply.status
    assert live.body == again.body == b"".join(sent)
    assert again.chunks == live.chunks
    if entry.reply.chunks is not None:
        assert live.chunks == sent  # each chunk arrived on its own, the splits as written
    # Recording hands on every header (aiohttp spells the names it knows its own way) ...
    assert lowered(live.headers) == lowered(entry.reply.headers)
    assert again.headers == kept(live.headers)  # ... and replay all but §4's drops, as listed

    body = only_cassette(cassette_dir)["responses"][0]["body"]
    assert tuple(sorted(body)) == entry.stored
    assert body.get("format") == entry.format
    if "text" in body:
        assert body["text"] == live.body.decode()
    for kind in ("sse", "ndjson"):
        if kind in body:  # readable: the text of the stream, chunk by chunk
            assert "".join(body[kind]) == live.body.decode()


def test_only_cookies_and_account_ids_are_dropped_from_real_headers() -> None:
    """Each real header of the corpus is kept, but for §4's drops."""
    names = {n.lower() for entry in CORPUS.values() for n, _v in entry.reply.headers}
    assert {n for n in names if not keep_response_header(n)} == DROPPED


@pytest.mark.parametrize("road", ROADS)
def test_a_redirect_replays_as_it_happened_live(
    provider: ProviderSimulator, cassette_dir: Path, road: str
) -> None:
    """The live run follows a 302 to a 200; replay does the same, from two cassettes."""
    provider.raw_replies["moved"] = RawReply(
        302,
        [("location", "/raw/landing?page=2"), ("cache-control", "no-store")],
    )
    provider.raw_replies["landing"] = RawReply(
        200, [("content-type", "application/json")], b'{"landed": true}'
    )
    url = provider.url("/raw/moved")
    live, again = replayed_as_without_us(provider, cassette_dir, lambda: ROADS[road](url, "GET"))

    assert provider.served == 4  # the redirect and its target, without us and recording
    assert (live.status, live.history, live.body) == (200, [302], b'{"landed": true}')
    assert (again.status, again.history, again.body) == (live.status, live.history, live.body)
    assert again.url == live.url == provider.url("/raw/landing?page=2")
    moved = only_cassette(cassette_dir, "/raw/moved")["responses"][0]
    location = {name.lower(): value for name, value in moved["headers"].items()}["location"]
    assert moved["status"] == 302 and location == "/raw/landing?page=2"


def test_the_openai_sdk_raw_response_replays_its_headers_and_text(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    import openai

    provider.raw_replies["openai-pretty"] = CORPUS["openai-pretty"].reply

    def call() -> tuple[list[tuple[str, str]], str, str | None]:
        client = openai.OpenAI(
            base_url=provider.url("/raw/openai-pretty/v1"), api_key="sk-test", max_retries=0
        )
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
        return list(raw.headers.multi_items()), raw.text, raw.parse().choices[0].message.content

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = call()
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        again = call()

    assert again[1] == live[1] == CORPUS["openai-pretty"].reply.body.decode()
    assert again[2] == live[2] == OPENAI_COMPLETION["choices"][0]["message"]["content"]
    assert again[0] == kept(live[0]) == lowered(kept(OPENAI_HEADERS))


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("openai-pretty", "body (json, indent2+newline):"),
        ("openai-sse-split", "reassembled text:\n    Grüße aus Köln 😀\n"),
    ],
)
def test_show_reads_a_formatted_body_and_a_carried_stream(
    provider: ProviderSimulator,
    cassette_dir: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    shown: str,
) -> None:
    from ghostrun._tools import _cli

    provider.raw_replies[name] = CORPUS[name].reply
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as s:
        ROADS["httpx2"](provider.url(f"/raw/{name}"))
    (key,) = s._deck.used_keys
    assert _cli.main(["show", key, "--cassette-dir", str(cassette_dir)]) == 0
    assert shown in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
@pytest.mark.parametrize("road", ["sync", "async"])
def test_gemini_sdk_http_response_headers_replay_as_received(
    provider: ProviderSimulator, cassette_dir: Path, road: str
) -> None:
    """google-genai hands its users the headers (sdk_http_response): sync on httpx2, async on
    aiohttp, where Google's spelling of the names shows."""
    from google import genai

    provider.raw_replies["gemini-count-tokens"] = CORPUS["gemini-count-tokens"].reply

    def call() -> tuple[int | None, dict[str, str] | None]:
        client = genai.Client(
            api_key="AIza" + "x" * 35,
            http_options={"base_url": provider.url("/raw/gemini-count-tokens")},
        )
        if road == "sync":
            reply = client.models.count_tokens(model="gemini-2.5-flash", contents="hi")
        else:
            count = client.aio.models.count_tokens(model="gemini-2.5-flash", contents="hi")
            reply = asyncio.run(count)
        assert reply.sdk_http_response is not None
        return reply.total_tokens, reply.sdk_http_response.headers

    live, again = recorded_and_replayed(provider, cassette_dir, call)
    expected: dict[str, str] = {}
    for name, value in GEMINI_HEADERS:  # the SDK joins a repeated header's values
        name = name if road == "async" else name.lower()  # httpx2 lists names lower-cased
        expected[name] = f"{expected[name]}, {value}" if name in expected else value
    assert again == live == (31, expected)


# -- the second corpus (issue 29): status, reason phrase, body bytes and chunks -------------


@dataclass(frozen=True)
class Answer:
    """What a client saw of an answer: the status line, and the body as the library cut it."""

    status: int
    reason: str
    chunks: list[bytes]  # decoded; aiohttp's HTTP chunks as its end_of_http_chunk flags say

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def _httpx_answer(lib: Any) -> Callable[[str], Answer]:
    def fetch(url: str) -> Answer:
        with lib.Client() as client, client.stream("POST", url, json=REQUEST) as response:
            chunks = [chunk for chunk in response.iter_bytes() if chunk]
            return Answer(response.status_code, response.reason_phrase, chunks)

    return fetch


def _requests_answer(url: str) -> Answer:
    with requests.post(url, json=REQUEST, stream=True) as response:
        chunks = [chunk for chunk in response.iter_content(None) if chunk]
        return Answer(response.status_code, response.reason, chunks)


def _aiohttp_answer(url: str) -> Answer:
    async def fetch() -> Answer:
        chunks, pending = [], b""
        async with aiohttp.ClientSession() as client, client.post(url, json=REQUEST) as response:
            async for data, end_of_chunk in response.content.iter_chunks():
                pending += data
                if end_of_chunk and pending:
                    chunks.append(pending)
                    pending = b""
            chunks += [pending] if pending else []  # a response not chunked: all of it
            return Answer(response.status, response.reason or "", chunks)

    return asyncio.run(fetch())


ANSWER_ROADS: dict[str, Callable[[str], Answer]] = {
    "httpx": _httpx_answer(httpx),
    "httpx2": _httpx_answer(httpx2),
    "requests": _requests_answer,
    "aiohttp": _aiohttp_answer,
}
# httpx hands on what each read brought (h11 cuts an HTTP chunk where TCP did), so where
# a chunk arrives in two pieces its cut depends on timing: there it is compared as a body.
CUT_BY_READS = {"httpx", "httpx2"}


@pytest.mark.filterwarnings("ignore::ghostrun.AuthFailureWarning")
@pytest.mark.parametrize("road", ANSWER_ROADS)
@pytest.mark.parametrize("name", SECOND_CORPUS)
def test_the_second_corpus_replays_what_the_provider_answered(
    provider: ProviderSimulator, cassette_dir: Path, name: str, road: str
) -> None:
    """Without ghostrun, recording, and replaying with the server stopped: the same answer."""
    reply = SECOND_CORPUS[name]
    provider.raw_replies[name] = reply
    url, fetch = provider.url(f"/raw/{name}"), ANSWER_ROADS[road]
    without = fetch(url)
    live, again = recorded_and_replayed(provider, cassette_dir, lambda: fetch(url))

    assert (live.status, live.reason, live.body) == (without.status, without.reason, without.body)
    assert again == live  # status, reason, body bytes and chunks, as recorded
    if reply.split_pause and road in CUT_BY_READS:
        return
    assert live.chunks == without.chunks
    if reply.chunks is not None:
        assert live.chunks == reply.chunks  # one chunk a chunk the server wrote
