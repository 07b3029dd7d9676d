"""aiohttp: google-genai's async road and apps' own, recorded and replayed like httpx."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import orjson
import pytest
from google import genai
from helpers import cassettes
from multidict import CIMultiDictProxy
from simulator import ProviderSimulator

import ghostrun
from ghostrun import CacheMiss, UnsupportedHttpx

LOOPBACK = ("127.0.0.1",)
GEMINI_KEY = "AIza" + "SyTEST0123456789abcdefghijklmnopq"  # fake, assembled at run time
OPENAI_KEY = "sk-" + "test-aiohttp-0123456789abcdefghij"
MODEL = "gemini-2.0-flash"

# google-genai subclasses aiohttp.ClientSession, which aiohttp frowns upon; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)


def chat(prompt: str, *, stream: bool = False) -> dict[str, Any]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": prompt}]}


async def replay_with_provider_stopped(
    provider: ProviderSimulator,
    cassette_dir: Path,
    fn: Callable[[], Awaitable[Any]],
    *,
    requests: int,
) -> None:
    """Record `fn` live, stop the provider, replay: the same result and no request served."""
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as recording:
        live = await fn()
    assert recording.recorded == requests and recording.replayed == 0
    served = provider.served
    assert served == requests
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
        again = await fn()
    assert again == live
    assert s.replayed == requests and s.recorded == 0
    assert provider.served == served


# -- google-genai, whose async client goes through aiohttp -------------------------


def gemini(provider: ProviderSimulator) -> genai.Client:
    return genai.Client(api_key=GEMINI_KEY, http_options={"base_url": provider.base_url})


async def gemini_async(provider: ProviderSimulator, prompt: str = "hello gemini") -> Any:
    client = gemini(provider)
    try:
        reply = await client.aio.models.generate_content(model=MODEL, contents=prompt)
        stream = await client.aio.models.generate_content_stream(
            model=MODEL, contents=prompt + " streamed"
        )
        chunks = [chunk.text async for chunk in stream]
        return reply.text, reply.usage_metadata.total_token_count, chunks
    finally:
        await client.aio.aclose()


@pytest.mark.asyncio
async def test_google_genai_async_replays_identically_with_the_provider_stopped(
    provider: ProviderSimulator, cassette_dir: Path, aiohttp_calls: list[str]
) -> None:
    await replay_with_provider_stopped(
        provider, cassette_dir, lambda: gemini_async(provider), requests=2
    )
    assert len(aiohttp_calls) == 4  # genai really took the aiohttp road, both times
    stream = next(
        c for c in cassettes(cassette_dir) if "streamGenerateContent" in c["request"]["url"]
    )
    assert "alt=sse" in stream["request"]["url"]
    events = stream["responses"][0]["body"]["sse"]  # one event per chunk, four words
    assert len(events) == 4 and all(e.startswith("data: ") for e in events)


@pytest.mark.asyncio
async def test_google_genai_async_miss_raises_cache_miss_fast_with_the_diff(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        await gemini(provider).aio.models.generate_content(model=MODEL, contents="old prompt")
    provider.stop()
    started = time.monotonic()
    with pytest.raises(CacheMiss) as miss:
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            await gemini(provider).aio.models.generate_content(model=MODEL, contents="new prompt")
    assert time.monotonic() - started < 2
    message = str(miss.value)
    assert ":generateContent" in message
    assert "old prompt" in message and "new prompt" in message
    assert GEMINI_KEY not in message


def genai_sync_call(provider: ProviderSimulator) -> Any:
    client = gemini(provider)  # the sync client goes through httpx2
    reply = client.models.generate_content(model=MODEL, contents="one client or the other")
    chunks = [
        c.text for c in client.models.generate_content_stream(model=MODEL, contents="streamed too")
    ]
    return reply.text, chunks


async def genai_async_call(provider: ProviderSimulator) -> Any:
    client = gemini(provider)
    try:
        reply = await client.aio.models.generate_content(
            model=MODEL, contents="one client or the other"
        )
        stream = await client.aio.models.generate_content_stream(
            model=MODEL, contents="streamed too"
        )
        return reply.text, [c.text async for c in stream]
    finally:
        await client.aio.aclose()


@pytest.mark.asyncio
async def test_genai_recorded_through_httpx2_replays_through_aiohttp(
    provider: ProviderSimulator, cassette_dir: Path, aiohttp_calls: list[str]
) -> None:
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as recording:
        live = await asyncio.to_thread(genai_sync_call, provider)
    assert recording.recorded == 2 and aiohttp_calls == []
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
        again = await genai_async_call(provider)
    assert again == live and s.replayed == 2 and len(aiohttp_calls) == 2


@pytest.mark.asyncio
async def test_genai_recorded_through_aiohttp_replays_through_httpx2(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as recording:
        live = await genai_async_call(provider)
    assert recording.recorded == 2
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
        again = await asyncio.to_thread(genai_sync_call, provider)
    assert again == live and s.replayed == 2


# -- raw aiohttp ---------------------------------------------------------------------


@pytest.mark.asyncio
async def test_get_and_post_replay_a_real_client_response(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def calls() -> list[Any]:
        out: list[Any] = []
        async with aiohttp.ClientSession() as http:
            async with http.post(provider.url("/v1/chat/completions"), json=chat("hi")) as resp:
                assert isinstance(resp, aiohttp.ClientResponse)
                assert isinstance(resp.headers, CIMultiDictProxy)
                out += [resp.status, resp.ok, resp.reason, str(resp.url)]
                out += [resp.headers["Content-Type"], resp.headers["x-request-id"]]
                out += [str(resp.request_info.url), resp.request_info.method]
                body = await resp.json()
                assert orjson.loads(await resp.text()) == orjson.loads(await resp.read()) == body
                out.append(body)
            resp = await http.get(provider.url("/api/tags"))
            out += [resp.status, orjson.loads(await resp.content.read())]
            resp.release()
            async with http.get(provider.url("/api/version"), params={"b": "2"}) as resp:
                out.append(await resp.json())
        return out

    await replay_with_provider_stopped(provider, cassette_dir, calls, requests=3)


@pytest.mark.asyncio
async def test_error_status_replays_and_raise_for_status_raises(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def call() -> Any:
        url = provider.url("/v1/nothing-here")
        async with aiohttp.ClientSession() as http, http.post(url, json={}) as resp:
            body = await resp.json()
            with pytest.raises(aiohttp.ClientResponseError) as error:
                resp.raise_for_status()
            return resp.status, resp.ok, body, error.value.status

    await replay_with_provider_stopped(provider, cassette_dir, call, requests=1)


READERS: dict[str, Callable[[aiohttp.ClientResponse], Awaitable[list[bytes]]]] = {}


def reader(fn: Callable[[aiohttp.ClientResponse], AsyncIterator[bytes]]) -> None:
    async def collect(resp: aiohttp.ClientResponse) -> list[bytes]:
        return [piece async for piece in fn(resp)]

    READERS[fn.__name__] = collect


@reader
async def iter_any(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for piece in resp.content.iter_any():
        yield piece


@reader
async def iter_chunked(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for piece in resp.content.iter_chunked(7):
        yield piece


@reader
async def iter_chunks(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for piece, end_of_chunk in resp.content.iter_chunks():
        yield piece + (b"|" if end_of_chunk else b"")


@reader
async def lines(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for line in resp.content:
        yield line


@reader
async def readline(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    while line := await resp.content.readline():
        yield line


@reader
async def read(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    yield await resp.content.read()
    yield await resp.read()


@pytest.mark.asyncio
@pytest.mark.parametrize("how", sorted(READERS))
async def test_sse_stream_replays_in_the_recorded_chunks(
    provider: ProviderSimulator, cassette_dir: Path, how: str
) -> None:
    async def call() -> list[bytes]:
        async with aiohttp.ClientSession() as http:
            url = provider.url("/v1/chat/completions")
            async with http.post(url, json=chat("a b c d", stream=True)) as resp:
                return await READERS[how](resp)

    await replay_with_provider_stopped(provider, cassette_dir, call, requests=1)
    (cassette,) = cassettes(cassette_dir)
    events = cassette["responses"][0]["body"]["sse"]
    assert len(events) == 8 and all(e.startswith("data: ") for e in events)


@pytest.mark.asyncio
async def test_replayed_chunks_are_the_recorded_ones_one_by_one(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def events() -> list[bytes]:
        async with aiohttp.ClientSession() as http:
            url = provider.url("/v1/chat/completions")
            async with http.post(url, json=chat("x y", stream=True)) as resp:
                return [piece async for piece in resp.content.iter_any()]

    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = await events()
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        again = await events()
    (cassette,) = cassettes(cassette_dir)
    assert again == live == [e.encode() for e in cassette["responses"][0]["body"]["sse"]]


@pytest.mark.asyncio
async def test_broken_stream_replays_its_events_then_the_break(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def call() -> tuple[list[bytes], str]:
        got: list[bytes] = []
        async with aiohttp.ClientSession() as http:
            url = provider.url("/v1/chat/completions")
            async with http.post(url, json=chat("a b c d", stream=True)) as resp:
                with pytest.raises(aiohttp.ClientPayloadError) as broke:
                    async for piece in resp.content.iter_any():
                        got.append(piece)
        return got, type(broke.value).__name__

    provider.break_stream_after(2)
    await replay_with_provider_stopped(provider, cassette_dir, call, requests=1)
    (cassette,) = cassettes(cassette_dir)
    response = cassette["responses"][0]
    assert len(response["body"]["sse"]) == 2
    assert response["stream_error"]["type"] == "ClientPayloadError"


@pytest.mark.asyncio
async def test_gzip_is_stored_decoded_and_replayed_decoded(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.gzip = True

    async def call() -> Any:
        url = provider.url("/v1/chat/completions")
        async with aiohttp.ClientSession() as http, http.post(url, json=chat("z")) as resp:
            assert "Content-Encoding" not in resp.headers
            return await resp.json()

    await replay_with_provider_stopped(provider, cassette_dir, call, requests=1)
    (cassette,) = cassettes(cassette_dir)
    assert cassette["responses"][0]["body"]["json"]["choices"][0]["message"]["content"] == "Echo: z"


@pytest.mark.asyncio
async def test_repeated_requests_replay_in_order_and_transient_failures_are_dropped(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def ids() -> list[Any]:
        got = []
        async with aiohttp.ClientSession() as http:
            for _ in range(2):
                status = 503
                while status == 503:  # an app's own retry loop
                    async with http.post(provider.url("/v1/chat/completions"), json=chat("r")) as r:
                        status = r.status
                        body = await r.json()
                got.append((status, body["id"]))
        return got

    provider.fail_next(503)
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = await ids()
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
        again = await ids()
    assert again == live and live[0] != live[1] and s.replayed == 2
    (cassette,) = cassettes(cassette_dir)
    assert [r["status"] for r in cassette["responses"]] == [200, 200]


@pytest.mark.asyncio
async def test_miss_raises_cache_miss_fast_with_the_diff(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def ask(prompt: str) -> None:
        async with aiohttp.ClientSession() as http:
            await http.post(provider.url("/v1/chat/completions"), json=chat(prompt))

    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        await ask("the recorded line")
    provider.stop()
    started = time.monotonic()
    with pytest.raises(CacheMiss) as miss:
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
            await ask("the changed line")
    assert time.monotonic() - started < 2
    assert "-" in str(miss.value) and "the recorded line" in str(miss.value)
    assert "+" in str(miss.value) and "the changed line" in str(miss.value)
    assert s.misses == [miss.value]


@pytest.mark.asyncio
async def test_corrupt_cassette_raises_cassette_error(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def ask() -> None:
        async with aiohttp.ClientSession() as http:
            await http.post(provider.url("/v1/chat/completions"), json=chat("c"))

    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        await ask()
    (path,) = cassette_dir.glob("*.json")
    path.write_text("{not json")
    with pytest.raises(ghostrun.DamagedCassette, match=path.name):
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            await ask()


@pytest.mark.asyncio
async def test_a_cassette_recorded_with_httpx2_replays_with_aiohttp_and_back(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    url = provider.url("/v1/chat/completions")

    async def with_httpx2() -> Any:
        async with httpx2.AsyncClient() as http:
            reply = (await http.post(url, json=chat("cross"))).json()
            async with http.stream("POST", url, json=chat("cross", stream=True)) as resp:
                return reply, [chunk async for chunk in resp.aiter_raw()]

    async def with_aiohttp() -> Any:
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json=chat("cross")) as resp:
                reply = await resp.json()
            async with http.post(url, json=chat("cross", stream=True)) as resp:
                return reply, [chunk async for chunk in resp.content.iter_any()]

    for record, replay in [(with_httpx2, with_aiohttp), (with_aiohttp, with_httpx2)]:
        directory = tmp_path / record.__name__
        provider.start()
        async with ghostrun.session(cassette_dir=directory, hosts=LOOPBACK) as recording:
            live = await record()
        provider.stop()
        async with ghostrun.session(cassette_dir=directory, hosts=LOOPBACK, mode="replay") as s:
            again = await replay()
        assert again == live, record.__name__
        assert recording.recorded == 2 and s.replayed == 2


# -- routing, patching and secrets -----------------------------------------------------


@pytest.mark.asyncio
async def test_non_provider_traffic_passes_through(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async with (
        ghostrun.session(cassette_dir=cassette_dir, mode="replay") as s,
        aiohttp.ClientSession() as http,
        http.get(provider.url("/plain")) as resp,
    ):
        text = await resp.text()
    assert text == "plain text from the simulator\n"
    assert s.passed_through == 1 and s.recorded == s.replayed == 0
    assert provider.served == 1 and not cassette_dir.exists()


@pytest.mark.asyncio
async def test_user_middlewares_still_run_in_front_of_the_cassette(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    seen: list[int] = []

    async def middleware(req: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        req.headers["x-app"] = "1"
        resp = await handler(req)
        seen.append(resp.status)
        return resp

    async def call() -> Any:
        url = provider.url("/v1/chat/completions")
        async with (
            aiohttp.ClientSession(middlewares=(middleware,)) as http,
            http.post(url, json=chat("m")) as resp,
        ):
            return await resp.json()

    await replay_with_provider_stopped(provider, cassette_dir, call, requests=1)
    assert seen == [200, 200]


def hook() -> object:
    return aiohttp.ClientSession.__dict__["_request"]


@pytest.mark.asyncio
async def test_patch_is_restored_by_identity_after_the_last_session(cassette_dir: Path) -> None:
    original = hook()
    async with ghostrun.session(cassette_dir=cassette_dir):
        assert hook() is not original
        async with ghostrun.session(cassette_dir=cassette_dir):
            pass
        assert hook() is not original
    assert hook() is original
    with pytest.raises(RuntimeError):
        async with ghostrun.session(cassette_dir=cassette_dir):
            raise RuntimeError("boom")
    assert hook() is original


@pytest.mark.asyncio
async def test_two_tasks_with_their_own_sessions_stay_separate(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    both_open = asyncio.Barrier(2)

    async def task(name: str) -> None:
        async with ghostrun.session(cassette_dir=tmp_path / name, hosts=LOOPBACK):
            await both_open.wait()  # each task asks while the other's session is open too
            async with aiohttp.ClientSession() as http:
                await http.post(provider.url("/v1/chat/completions"), json=chat(name))

    await asyncio.gather(task("first"), task("second"))
    for name in ("first", "second"):
        (cassette,) = cassettes(tmp_path / name)
        assert cassette["request"]["body"]["json"]["messages"][0]["content"] == name


@pytest.mark.asyncio
async def test_secrets_never_reach_the_cassette(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.echo_auth = True  # the reply quotes the credential back
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        async with aiohttp.ClientSession() as http:
            headers = {"Authorization": f"Bearer {OPENAI_KEY}"}
            url = provider.url("/v1/chat/completions")
            async with http.post(url, json=chat("s"), headers=headers) as resp:
                assert OPENAI_KEY in await resp.text()  # the live reply has it
            url = provider.url(f"/v1beta/models/{MODEL}:generateContent")
            body = {"contents": [{"parts": [{"text": "k"}]}]}
            await http.post(url, params={"key": GEMINI_KEY}, json=body)
        await gemini(provider).aio.models.generate_content(model=MODEL, contents="g")
    files = list(cassette_dir.glob("*.json"))
    assert len(files) == 3
    for path in files:
        text = path.read_text()
        assert OPENAI_KEY not in text and GEMINI_KEY not in text, path.name


@pytest.mark.asyncio
async def test_unpatchable_aiohttp_is_left_unhooked_and_the_other_roads_install(
    monkeypatch: pytest.MonkeyPatch, cassette_dir: Path
) -> None:
    """Its calls are refused by the guard (intercept/test_unhooked.py); here: why, and the rest."""
    from ghostrun._intercept import _patch

    async def old_request(self: Any, method: str, str_or_url: Any, *, params: Any = None) -> Any:
        raise AssertionError("never called")

    monkeypatch.setattr(aiohttp.ClientSession, "_request", old_request)
    httpx2_hook = httpx2.AsyncClient.__dict__["_transport_for_url"]
    async with ghostrun.session(cassette_dir=cassette_dir):
        assert hook() is old_request
        assert httpx2.AsyncClient.__dict__["_transport_for_url"] is not httpx2_hook
        why = [str(error) for adapter, error in _patch.unhooked if adapter.waits_for == "aiohttp"]
        assert len(why) == 1 and isinstance(_patch.unhooked[0][1], UnsupportedHttpx)
        assert re.search(r"aiohttp .*middlewares.*aiohttp>=3\.14", why[0])
    assert httpx2.AsyncClient.__dict__["_transport_for_url"] is httpx2_hook


def test_import_ghostrun_never_imports_aiohttp() -> None:
    code = "import sys, ghostrun; print(sorted(m for m in sys.modules if 'aiohttp' in m))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout


@pytest.mark.asyncio
async def test_a_websocket_to_a_provider_is_refused_in_replay(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """A WebSocket with no recorded conversation is a miss in replay, before any connection."""
    with pytest.raises(CacheMiss, match="no recorded WebSocket conversation"):
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            async with aiohttp.ClientSession() as http:
                await http.ws_connect(provider.url("/v1/realtime"))
    assert provider.served == 0
