"""aiohttp chunks as aiohttp reports them (issue 29, item 3).

A server (or a proxy before it) may write one HTTP chunk in several TCP
pieces. aiohttp reports where each HTTP chunk ends (``iter_chunks()`` gives
``(data, end_of_http_chunk)``), so one chunk the server wrote is one chunk in
the cassette and in replay, however many reads it took to arrive. The server
here writes each SSE event as one HTTP chunk in two pieces with a pause between.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import orjson
import pytest
from simulator import ProviderSimulator, RawReply

import ghostrun

LOOPBACK = ("127.0.0.1",)
SSE = [("content-type", "text/event-stream")]
PAUSE = 0.05  # between the two pieces of each chunk: they arrive in two reads
WORDS = ("Bonjour", ", ça", " va", " ?")
GEMINI_EVENTS = [
    b"data: "
    + orjson.dumps(
        {
            "candidates": [{"content": {"parts": [{"text": word}], "role": "model"}}],
            "modelVersion": "gemini-2.5-flash",
        }
    )
    + b"\r\n\r\n"
    for word in WORDS
]


def stored_chunks(cassette_dir: Path) -> list[str]:
    (path,) = cassette_dir.glob("*.json")
    chunks: list[str] = orjson.loads(path.read_bytes())["responses"][0]["body"]["sse"]
    return chunks


def read_chunks(url: str) -> tuple[list[bytes], int]:
    """The HTTP chunks aiohttp reports, and how many reads ended inside one."""

    async def read() -> tuple[list[bytes], int]:
        chunks, pending, partial = [], b"", 0
        async with aiohttp.ClientSession() as client, client.post(url, json={}) as response:
            async for data, end_of_chunk in response.content.iter_chunks():
                pending += data
                if end_of_chunk and pending:  # an end may come alone, after the data
                    chunks.append(pending)
                    pending = b""
                elif data:
                    partial += 1
        return chunks + ([pending] if pending else []), partial

    return asyncio.run(read())


def test_raw_aiohttp_sees_each_chunk_the_server_wrote_once_in_record_and_replay(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.raw_replies["split"] = RawReply(200, SSE, chunks=GEMINI_EVENTS, split_pause=PAUSE)
    url = provider.url("/raw/split")
    without, split_reads = read_chunks(url)
    assert without == GEMINI_EVENTS and split_reads >= 1  # the pieces did arrive apart
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live, live_partial = read_chunks(url)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        again, again_partial = read_chunks(url)
    assert again == live == without  # 0 chunk differences
    assert live_partial == again_partial == 0  # each chunk handed on whole
    assert [chunk.encode() for chunk in stored_chunks(cassette_dir)] == GEMINI_EVENTS


@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
def test_google_genai_async_streams_over_aiohttp_one_chunk_an_event(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    from google import genai

    provider.raw_replies["gemini"] = RawReply(200, SSE, chunks=GEMINI_EVENTS, split_pause=PAUSE)

    async def stream() -> list[str]:
        client = genai.Client(
            api_key="AIza" + "x" * 35, http_options={"base_url": provider.url("/raw/gemini")}
        )
        texts = []
        async for reply in await client.aio.models.generate_content_stream(
            model="gemini-2.5-flash", contents="Salut"
        ):
            texts.append(reply.text or "")
        return texts

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as rec:
        live = asyncio.run(stream())
    assert live == list(WORDS) and rec.recorded == 1
    assert [chunk.encode() for chunk in stored_chunks(cassette_dir)] == GEMINI_EVENTS
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        assert asyncio.run(stream()) == live
    assert rep.replayed == 1
