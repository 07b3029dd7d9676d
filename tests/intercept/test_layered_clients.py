"""Exactly once (DESIGN §1): clients that send through two intercepted libraries.

litellm's async path and ``openai.DefaultAioHttpClient`` are httpx transports
that call aiohttp with ``auto_decompress=False``. The outer layer (httpx)
records and replays; aiohttp, below it, passes through. The provider gzips
its JSON here, as real ones do.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest
import simulator
from helpers import cassettes
from simulator import ProviderSimulator

import ghostrun

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price list
import litellm

LOOPBACK = ("127.0.0.1",)
KEY = "sk-" + "test-layers-0123456789abcdefghij"  # fake, assembled at run time
ANTHROPIC_KEY = "sk-ant-" + KEY
Call = Callable[[ProviderSimulator, str], Awaitable[Any]]

# litellm's own pydantic models, built on first use; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier")


def messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def said(result: Any) -> str:
    """All the text in a call's result (a stream's pieces joined)."""
    if isinstance(result, str):
        return result
    if isinstance(result, tuple | list):
        return "".join(said(part) for part in result)
    return ""


# -- the layered clients: each returns (id of the response, text) ------------------------


async def litellm_openai(provider: ProviderSimulator, prompt: str) -> Any:
    reply = await litellm.acompletion(
        model="openai/gpt-sim", api_base=provider.url("/v1"), api_key=KEY, messages=messages(prompt)
    )
    return reply.id, reply.choices[0].message.content


async def litellm_anthropic(provider: ProviderSimulator, prompt: str) -> Any:
    reply = await litellm.acompletion(
        model="anthropic/claude-sim",
        api_base=provider.base_url,
        api_key=ANTHROPIC_KEY,
        messages=messages(prompt),
        max_tokens=64,
    )
    return reply.choices[0].message.content, reply.usage.total_tokens


async def litellm_stream(provider: ProviderSimulator, prompt: str) -> Any:
    stream = await litellm.acompletion(
        model="openai/gpt-sim",
        api_base=provider.url("/v1"),
        api_key=KEY,
        messages=messages(prompt),
        stream=True,
    )
    return await pieces(stream)


async def pieces(stream: Any) -> tuple[list[str], str]:
    """A stream's chunk ids and its text."""
    chunks = [(chunk.id, chunk.choices[0].delta.content or "") async for chunk in stream]
    return [i for i, _ in chunks], "".join(text for _, text in chunks)


async def openai_aiohttp(provider: ProviderSimulator, prompt: str) -> Any:
    async with openai.AsyncOpenAI(
        base_url=provider.url("/v1"), api_key=KEY, http_client=openai.DefaultAioHttpClient()
    ) as client:
        reply = await client.chat.completions.create(model="gpt-sim", messages=messages(prompt))
    return reply.id, reply.choices[0].message.content


async def openai_aiohttp_stream(provider: ProviderSimulator, prompt: str) -> Any:
    async with openai.AsyncOpenAI(
        base_url=provider.url("/v1"), api_key=KEY, http_client=openai.DefaultAioHttpClient()
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-sim", messages=messages(prompt), stream=True
        )
        return await pieces(stream)


LAYERED: dict[str, Call] = {
    "litellm-openai": litellm_openai,
    "litellm-anthropic": litellm_anthropic,
    "litellm-stream": litellm_stream,
    "openai-DefaultAioHttpClient": openai_aiohttp,
    "openai-DefaultAioHttpClient-stream": openai_aiohttp_stream,
}


@pytest.mark.asyncio
@pytest.mark.parametrize("call", LAYERED.values(), ids=LAYERED.keys())
async def test_two_identical_calls_record_once_each_and_replay_in_order(
    provider: ProviderSimulator, cassette_dir: Path, aiohttp_calls: list[str], call: Call
) -> None:
    provider.gzip = True
    answers = iter(["answer #1", "answer #2"])
    provider.reply = lambda body: next(answers)
    async with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK) as rec:
        first, second = await call(provider, "same prompt"), await call(provider, "same prompt")
    assert "answer #1" in said(first) and "answer #2" in said(second)
    assert rec.recorded == 2 and provider.served == 2
    assert len(aiohttp_calls) == 2  # both went down the aiohttp road, below httpx
    (cassette,) = cassettes(cassette_dir)
    assert len(cassette["responses"]) == 2  # [#1, #2], not [#1, #1, #2, #2]

    provider.stop()
    async with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        again = [await call(provider, "same prompt"), await call(provider, "same prompt")]
    assert again == [first, second]
    assert rep.replayed == 2 and rep.recorded == 0 and rep.misses == []


def test_litellm_sync_completion_with_gzip_records_and_replays(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.gzip = True

    def call() -> Any:
        reply = litellm.completion(
            model="openai/gpt-sim",
            api_base=provider.url("/v1"),
            api_key=KEY,
            messages=messages("x"),
        )
        return reply.id, reply.choices[0].message.content

    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK) as rec:
        live = call()
    assert rec.recorded == 1 and provider.served == 1
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        assert call() == live
    assert rep.replayed == 1


# -- aiohttp with auto_decompress=False, in the user's own code --------------------------


async def raw_aiohttp(provider: ProviderSimulator) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as http,
        http.post(provider.url("/v1/chat/completions"), json={"messages": messages("raw")}) as resp,
    ):
        headers = {k.lower(): v for k, v in resp.headers.items() if k.lower() != "date"}
        return resp.status, headers, await resp.read()


@pytest.mark.asyncio
async def test_aiohttp_without_auto_decompress_gets_the_same_decoded_body_recording_and_replaying(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.gzip = True
    async with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = await raw_aiohttp(provider)
    provider.stop()
    async with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as s:
        again = await raw_aiohttp(provider)
    assert s.replayed == 1
    status, headers, body = live
    assert "content-encoding" not in headers  # the body handed on is not compressed
    assert orjson.loads(body)["choices"][0]["message"]["content"] == "Echo: raw"
    assert again[0] == status and orjson.loads(again[2]) == orjson.loads(body)
    for name in ("content-type", "x-request-id"):
        assert again[1][name] == headers[name]


@pytest.mark.asyncio
async def test_aiohttp_without_auto_decompress_records_a_gzipped_stream_decoded(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compressed SSE stream (gzip per response, read chunk by chunk) is stored as events."""
    sent: list[bytes] = []
    original = simulator._sse

    def gzipped(events: list[bytes], content_type: str = "text/event-stream") -> Any:
        sent[:] = events
        whole = gzip.compress(b"".join(events), mtime=0)
        third = len(whole) // 3
        return original([whole[:third], whole[third : 2 * third], whole[2 * third :]], content_type)

    monkeypatch.setattr(simulator, "_sse", gzipped)
    monkeypatch.setattr(provider, "extra_response_headers", {"content-encoding": "gzip"})
    body = {"stream": True, "messages": messages("gz")}

    async def read() -> bytes:
        async with (
            aiohttp.ClientSession(auto_decompress=False) as http,
            http.post(provider.url("/v1/chat/completions"), json=body) as resp,
        ):
            assert "content-encoding" not in {k.lower() for k in resp.headers}
            return b"".join([chunk async for chunk in resp.content.iter_any()])

    async with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = await read()
    assert live == b"".join(sent) and live.endswith(b"data: [DONE]\n\n")
    (cassette,) = cassettes(cassette_dir)
    assert "".join(cassette["responses"][0]["body"]["sse"]).encode() == live
    provider.stop()
    async with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert await read() == live
