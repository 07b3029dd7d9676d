"""urllib3: the road of ``requests`` and botocore, recorded and replayed like httpx."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
import requests
import urllib3
from helpers import cassettes, record_then_replay
from requests.adapters import HTTPAdapter
from simulator import ProviderSimulator

import ghostrun
from ghostrun import CacheMiss, UnsupportedHttpx
from ghostrun._intercept import _patch

OPENAI_KEY = "sk-" + "test-urllib3-0123456789abcdefghij"  # fake, assembled at run time
Call = Callable[[], Any]


def chat(prompt: str, *, stream: bool = False) -> dict[str, Any]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": prompt}]}


# -- requests --------------------------------------------------------------------------


def test_requests_post_replays_identically_with_the_provider_stopped(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    def call() -> Any:
        reply = requests.post(provider.url("/v1/chat/completions"), json=chat("hello requests"))
        return reply.status_code, reply.reason, reply.headers["content-type"], reply.json()

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live
    assert live[3]["choices"][0]["message"]["content"] == "Echo: hello requests"
    (cassette,) = cassettes(cassette_dir)
    assert cassette["request"]["body"]["json"]["messages"][0]["content"] == "hello requests"


def test_requests_stream_replays_chunk_for_chunk(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        with requests.post(url, json=chat("one two three four", stream=True), stream=True) as r:
            return list(r.iter_content(chunk_size=None))

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live
    assert len(live) == 8 and live[-1] == b"data: [DONE]\n\n"  # one SSE event per chunk
    (cassette,) = cassettes(cassette_dir)
    assert cassette["responses"][0]["body"]["sse"] == [chunk.decode() for chunk in live]


def test_requests_iter_lines_and_small_chunks_replay_as_live(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        with requests.post(url, json=chat("lines please", stream=True), stream=True) as r:
            lines = list(r.iter_lines())
        with requests.post(url, json=chat("lines please", stream=True), stream=True) as r:
            pieces = list(r.iter_content(chunk_size=16))
        return lines, pieces

    live, again = record_then_replay(provider, cassette_dir, call, requests=2)
    assert again == live
    assert all(len(piece) <= 16 for piece in live[1])


def test_requests_keeps_the_cookies_a_provider_sets_while_recording(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.extra_response_headers = {"set-cookie": "__cf_bm=sim-cookie; path=/"}
    http = requests.Session()
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        reply = http.post(provider.url("/v1/chat/completions"), json=chat("cookies"))
    assert reply.headers["set-cookie"] == "__cf_bm=sim-cookie; path=/"
    assert http.cookies.get("__cf_bm") == "sim-cookie"  # as without ghostrun
    (cassette,) = cassettes(cassette_dir)
    assert "set-cookie" not in cassette["responses"][0]["headers"]  # never written


def test_gzip_is_stored_decoded_and_handed_on_decoded_both_ways(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.gzip = True
    http = urllib3.PoolManager()

    def call() -> Any:
        reply = http.request(
            "POST", provider.url("/v1/chat/completions"), json=chat("zipped"), decode_content=False
        )
        return reply.headers.get("content-encoding"), orjson.loads(reply.data)

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live
    assert live[0] is None and live[1]["object"] == "chat.completion"
    (cassette,) = cassettes(cassette_dir)
    assert "json" in cassette["responses"][0]["body"]
    assert "content-encoding" not in cassette["responses"][0]["headers"]


def test_a_broken_stream_replays_its_chunks_then_the_break(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        provider.break_stream_after(2)
        got: list[bytes] = []
        with requests.post(url, json=chat("a b c d e", stream=True), stream=True) as reply:
            with pytest.raises(requests.exceptions.ChunkedEncodingError) as broke:
                got.extend(reply.iter_content(chunk_size=None))
        return got, type(broke.value)

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live and len(live[0]) == 2
    (cassette,) = cassettes(cassette_dir)
    assert cassette["responses"][0]["stream_error"]["type"] == "ProtocolError"


def test_urllib3_retries_stay_its_own_and_the_failure_it_retried_past_is_dropped(
    provider: ProviderSimulator, cassette_dir: Path, urlopen_calls: list[str]
) -> None:
    http = urllib3.PoolManager(
        retries=urllib3.Retry(total=2, status_forcelist=[503], allowed_methods=None)
    )

    def call() -> Any:
        reply = http.request("POST", provider.url("/v1/chat/completions"), json=chat("retry me"))
        return reply.status, reply.json()["choices"]

    provider.fail_next(503)
    hosts = [provider.base_url]
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=hosts) as recording:
        live = call()
    assert provider.served == 2 and recording.recorded == 1
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as replay:
        again = call()
    assert again == live and live[0] == 200 and replay.replayed == 1
    assert len(urlopen_calls) == 3  # live: the 503 and its retry; replay: the 200 at once
    (cassette,) = cassettes(cassette_dir)
    assert [r["status"] for r in cassette["responses"]] == [200]


def test_repeated_requests_replay_in_order(provider: ProviderSimulator, cassette_dir: Path) -> None:
    def call() -> Any:
        url = provider.url("/v1/chat/completions")
        return [requests.post(url, json=chat("same")).json()["id"] for _ in range(2)]

    live, again = record_then_replay(provider, cassette_dir, call, requests=2)
    assert again == live == ["chatcmpl-sim0001", "chatcmpl-sim0002"]


# -- plain urllib3 -----------------------------------------------------------------------


def test_poolmanager_request_replays_a_real_urllib3_response(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    http = urllib3.PoolManager()
    seen: list[Any] = []

    def call() -> Any:
        reply = http.request("POST", provider.url("/v1/chat/completions"), json=chat("pooled"))
        seen.append(reply)
        return reply.status, reply.reason, reply.headers["content-type"], reply.json()

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live and live[:2] == (200, "OK")
    assert all(type(reply) is urllib3.HTTPResponse for reply in seen)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda r: list(r.stream()), id="stream"),
        pytest.param(lambda r: list(r.read_chunked()), id="read_chunked"),
        pytest.param(lambda r: list(iter(lambda: r.read(10), b"")), id="read-amt"),
        pytest.param(lambda r: [r.read()], id="read-all"),
    ],
)
def test_urllib3_streaming_reads_replay_as_they_read_live(
    provider: ProviderSimulator, cassette_dir: Path, read: Callable[[Any], list[bytes]]
) -> None:
    http = urllib3.PoolManager()
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        reply = http.request("POST", url, json=chat("w x y z", stream=True), preload_content=False)
        try:
            return read(reply)
        finally:
            reply.release_conn()

    live, again = record_then_replay(provider, cassette_dir, call)
    assert again == live and len(b"".join(live)) > 100


def test_pool_connections_are_given_back_after_replayed_streams(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    http = urllib3.PoolManager(maxsize=1, block=True)
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        replies = []
        for _ in range(3):  # a blocking pool of one: a connection never given back hangs here
            reply = http.request(
                "POST", url, json=chat("pool", stream=True), preload_content=False, pool_timeout=1
            )
            replies.append(b"".join(reply.stream()))
        return replies

    live, again = record_then_replay(provider, cassette_dir, call, requests=3)
    assert [len(r) for r in again] == [len(r) for r in live]


# -- misses, other hosts, the hook ---------------------------------------------------------


def test_a_miss_through_requests_reaches_the_test_once_and_fast(
    provider: ProviderSimulator, cassette_dir: Path, urlopen_calls: list[str]
) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        requests.post(provider.url("/v1/chat/completions"), json=chat("old prompt"))
    provider.stop()
    http = requests.Session()
    retry = urllib3.Retry(total=5, connect=5, read=5, backoff_factor=1, status_forcelist=[503])
    http.mount("http://", HTTPAdapter(max_retries=retry))
    del urlopen_calls[:]
    started = time.monotonic()
    with pytest.raises(CacheMiss) as miss:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[provider.base_url]):
            http.post(provider.url("/v1/chat/completions"), json=chat("new prompt"))
    assert time.monotonic() - started < 2
    assert len(urlopen_calls) == 1  # not retried by urllib3's Retry
    assert "old prompt" in str(miss.value) and "new prompt" in str(miss.value)


def test_non_provider_hosts_pass_through_untouched(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ProviderSimulator() as other:
        hosts = [provider.base_url]
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as s:
            reply = requests.get(other.url("/plain"))
            streamed = urllib3.PoolManager().request(
                "GET", other.url("/plain"), preload_content=False
            )
            assert b"".join(streamed.stream()) == reply.content
        assert reply.text == "plain text from the simulator\n"
        assert reply.headers["content-length"] == "30"  # the live response itself
        assert other.served == 2 and s.passed_through == 2
    assert not cassette_dir.exists()


@pytest.fixture
def https_proxy() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTPS proxy that notes each CONNECT line and refuses it (it never connects on)."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[str] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.makefile("rb").readline().decode().strip())
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    listener.close()
    thread.join(timeout=5)


def test_a_replay_never_opens_an_https_proxy_tunnel(
    cassette_dir: Path, https_proxy: tuple[str, list[str]]
) -> None:
    proxy, seen = https_proxy
    url = "https://api.openai.com/v1/chat/completions"
    with pytest.raises(CacheMiss):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            requests.post(url, json=chat("via a proxy"), proxies={"https": proxy})
    assert seen == []  # the proxy would have connected to the provider
    with pytest.raises(requests.exceptions.ProxyError):  # sending for real opens it, once
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
            requests.post(url, json=chat("via a proxy"), proxies={"https": proxy})
    assert len(seen) == 1 and seen[0].startswith("CONNECT api.openai.com:443 ")


def test_an_llm_call_to_an_unlisted_host_is_pointed_out(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with pytest.warns(ghostrun.UnlistedHostWarning, match=rf"127\.0\.0\.1:{provider.port}"):
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir) as s:
            requests.post(provider.url("/v1/chat/completions?x=1"), json=chat("unlisted"))
    assert s.passed_through == 1 and provider.served == 1 and not cassette_dir.exists()


def test_unsupported_urllib3_is_left_unhooked_and_the_other_roads_install(
    monkeypatch: pytest.MonkeyPatch, cassette_dir: Path
) -> None:
    def old_make_request(self: Any, conn: Any, method: str, url: str, **kwargs: Any) -> Any:
        raise AssertionError("never called")

    pool = urllib3.connectionpool.HTTPConnectionPool
    monkeypatch.setattr(pool, "_make_request", old_make_request)
    httpx2 = pytest.importorskip("httpx2")
    httpx2_hook = httpx2.Client.__dict__["_transport_for_url"]
    with ghostrun.session(cassette_dir=cassette_dir):
        assert pool.__dict__["_make_request"] is old_make_request  # left unhooked
        assert httpx2.Client.__dict__["_transport_for_url"] is not httpx2_hook  # hooked
        (_adapter, error), *_ = [u for u in _patch.unhooked if u[0].waits_for == "urllib3"]
        assert isinstance(error, UnsupportedHttpx)  # the guard refuses its calls with it
        assert re.search(r"urllib3 .*response_conn.*urllib3>=2", str(error))
    assert httpx2.Client.__dict__["_transport_for_url"] is httpx2_hook


def test_the_hooks_are_restored_by_identity_after_the_last_session(cassette_dir: Path) -> None:
    pools = urllib3.connectionpool

    def hooks() -> tuple[Any, Any]:
        return (
            pools.HTTPConnectionPool.__dict__["_make_request"],
            pools.HTTPSConnectionPool.__dict__["_prepare_proxy"],
        )

    originals = hooks()
    with ghostrun.session(cassette_dir=cassette_dir):
        with ghostrun.session(cassette_dir=cassette_dir):
            assert all(a is not b for a, b in zip(hooks(), originals, strict=True))
        assert all(a is not b for a, b in zip(hooks(), originals, strict=True))
    assert all(a is b for a, b in zip(hooks(), originals, strict=True))


def test_import_ghostrun_never_imports_urllib3() -> None:
    code = "import sys, ghostrun; print(sorted(m for m in sys.modules if 'urllib3' in m))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout


# -- one cassette, any road ----------------------------------------------------------------


def openai_chat(provider: ProviderSimulator, prompt: str) -> Any:
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=provider.url("/v1"), max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}]
    )
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}], stream=True
    )
    return reply.choices[0].message.content, [
        c.choices[0].delta.content for c in stream if c.choices
    ]


def requests_chat(provider: ProviderSimulator, prompt: str) -> Any:
    url = provider.url("/v1/chat/completions")
    headers = {"authorization": f"Bearer {OPENAI_KEY}"}
    messages = [{"role": "user", "content": prompt}]
    reply = requests.post(url, json={"model": "m", "messages": messages}, headers=headers)
    body = {"model": "m", "messages": messages, "stream": True}
    with requests.post(url, json=body, headers=headers, stream=True) as streamed:
        deltas = [
            orjson.loads(line[6:])["choices"][0]["delta"].get("content")
            for line in streamed.iter_lines()
            if line.startswith(b"data: {")
        ]
    return reply.json()["choices"][0]["message"]["content"], deltas


@pytest.mark.parametrize(
    ("recorder", "replayer"),
    [
        pytest.param(openai_chat, requests_chat, id="httpx2-to-urllib3"),
        pytest.param(requests_chat, openai_chat, id="urllib3-to-httpx2"),
    ],
)
def test_a_cassette_recorded_on_one_road_replays_on_the_other(
    provider: ProviderSimulator,
    cassette_dir: Path,
    recorder: Callable[..., Any],
    replayer: Callable[..., Any],
) -> None:
    hosts = [provider.base_url]
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=hosts) as recording:
        live = recorder(provider, "same prompt either way")
    assert recording.recorded == 2
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as replay:
        again = replayer(provider, "same prompt either way")
    assert again == live and replay.replayed == 2
    assert live[0] == "Echo: same prompt either way"
    for path in cassette_dir.glob("*.json"):
        assert OPENAI_KEY not in path.read_text()


class Urllib3Transport(httpx.BaseTransport):
    """An httpx transport that sends through urllib3, as some clients are built."""

    def __init__(self) -> None:
        self.pool = urllib3.PoolManager()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.pool.request(
            request.method, str(request.url), body=request.read(), headers=dict(request.headers)
        )
        return httpx.Response(reply.status, headers=list(reply.headers.items()), content=reply.data)


def test_httpx_sending_through_urllib3_is_recorded_once_and_replayed_once(
    provider: ProviderSimulator, cassette_dir: Path, urlopen_calls: list[str]
) -> None:
    url = provider.url("/v1/chat/completions")

    def call() -> Any:
        with httpx.Client(transport=Urllib3Transport()) as client:
            return [client.post(url, json=chat("layered")).json()["id"] for _ in range(2)]

    live, again = record_then_replay(provider, cassette_dir, call, requests=2)
    assert again == live == ["chatcmpl-sim0001", "chatcmpl-sim0002"]
    assert len(urlopen_calls) == 2  # urllib3 sent live, and was never asked in replay
    (cassette,) = cassettes(cassette_dir)
    assert len(cassette["responses"]) == 2
