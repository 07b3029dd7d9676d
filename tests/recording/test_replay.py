"""Record through the real SDKs, then replay with the provider gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import httpx2
import orjson
import pytest
import sdk_calls
from helpers import cassettes
from simulator import ProviderSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)


@pytest.mark.parametrize("call", sorted(sdk_calls.SYNC_CALLS))
def test_sync_call_replays_identically_with_the_provider_stopped(
    provider: ProviderSimulator, cassette_dir: Path, call: str
) -> None:
    fn = sdk_calls.SYNC_CALLS[call]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as recording:
        live = fn(provider.base_url)
    assert recording.recorded == 1 and recording.replayed == 0
    served = provider.served
    provider.stop()

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as replay:
        again = fn(provider.base_url)

    assert again == live
    assert live  # the simulator answered something real
    assert replay.replayed == 1 and replay.recorded == 0
    assert provider.served == served


@pytest.mark.anyio
async def test_async_calls_replay_under_asyncio_and_trio(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    async def conversation() -> tuple[Any, ...]:
        return (
            await sdk_calls.openai_async(provider.base_url),
            await sdk_calls.anthropic_async(provider.base_url),
            await sdk_calls.ollama_async(provider.base_url),
        )

    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as recording:
        live = await conversation()
    assert recording.recorded == 4
    provider.stop()
    async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
        again = await conversation()
    assert again == live and s.replayed == 4


def test_sse_stream_replays_byte_for_byte_in_the_recorded_chunks(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c d"}]}
    url = provider.url("/v1/chat/completions")

    def chunks() -> list[bytes]:
        with httpx2.Client() as client, client.stream("POST", url, json=body) as response:
            return list(response.iter_raw())

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = chunks()
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        again = chunks()
    assert again == live
    assert len(live) > 3
    (stored,) = cassettes(cassette_dir)
    assert stored["responses"][0]["body"]["sse"][0].startswith("data: ")


def test_binary_body_replays_byte_for_byte_and_is_stored_as_base64(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    client = sdk_calls.openai_client(provider.base_url)

    def speech() -> bytes:
        return client.audio.speech.create(model="tts-1", voice="alloy", input="hi").content

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = speech()
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        again = speech()
    assert again == live and b"\xff" in live
    (stored,) = cassettes(cassette_dir)
    assert "base64" in stored["responses"][0]["body"]


def test_gzip_bodies_are_stored_decoded_and_replayed(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.gzip = True
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = sdk_calls.groq_chat(provider.base_url)
    assert provider.last_request.path.endswith("/chat/completions")
    (stored,) = cassettes(cassette_dir)
    response = stored["responses"][0]
    assert response["body"]["json"]["choices"][0]["message"]["content"] == live
    assert "content-encoding" not in response["headers"]
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        assert sdk_calls.groq_chat(provider.base_url) == live


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_recording_hands_back_what_replay_will(
    lib: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """A gzipped reply comes back decoded, framing headers gone, in both modes alike."""
    provider.gzip = True
    url = provider.url("/v1/chat/completions")
    body = {"model": "m", "messages": [{"role": "user", "content": "zip it"}]}
    with lib.Client() as client:
        wire = client.post(url, json=body)
    assert wire.headers["content-encoding"] == "gzip"  # the stand-in really compresses
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="record"):
        with lib.Client() as client, client.stream("POST", url, json=body) as live:
            live_raw = b"".join(live.iter_raw())
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        with lib.Client() as client, client.stream("POST", url, json=body) as again:
            again_raw = b"".join(again.iter_raw())
    assert orjson.loads(live_raw) == orjson.loads(again_raw)  # decoded: gzip is not JSON
    for response in (live, again):
        assert "content-encoding" not in response.headers
        assert "content-length" not in response.headers


def test_cassette_is_readable_json_sorted_but_for_what_the_provider_sent(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The file's own keys and the request sorted; the response's headers and body as received."""
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        sdk_calls.openai_chat(provider.base_url, "readable?")
    (path,) = cassette_dir.glob("*.json")
    text = path.read_text()
    data = orjson.loads(text)
    assert data["version"] == 2
    assert data["request"]["body"]["json"]["messages"][0]["content"] == "readable?"
    (response,) = data["responses"]
    sorted_but_response = {**data, "responses": [{**response, "body": {}, "headers": {}}]}
    assert text.startswith("{\n  ")
    assert _all_sorted(sorted_but_response)
    # The simulator writes Python's json.dumps of a dict in its own, unsorted order.
    assert list(response["body"]["json"]) == [
        "id", "created", "model", "system_fingerprint", "object", "choices", "usage"
    ]  # fmt: skip
    assert response["body"]["format"].startswith("python")  # ASCII only: either spelling
    # In the order and spelling sent (http.server writes Server and Date first).
    assert list(response["headers"])[:4] == ["Server", "Date", "content-type", "x-request-id"]
    assert path.stem == data["key"] and len(path.stem) == 32


def _all_sorted(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(map(_all_sorted, value.values()))
    if isinstance(value, list):
        return all(map(_all_sorted, value))
    return True


def test_repeated_request_replays_each_response_in_order_then_repeats_the_last(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    replies = iter(["first", "second", "third"])
    provider.reply = lambda _body: next(replies)
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = [sdk_calls.openai_chat(provider.base_url, "again") for _ in range(2)]
    assert live == ["first", "second"]
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        again = [sdk_calls.openai_chat(provider.base_url, "again") for _ in range(3)]
    assert again == ["first", "second", "second"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        assert sdk_calls.openai_chat(provider.base_url, "again") == "first"  # counting restarts


def test_auto_mode_records_past_the_last_response(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    replies = iter(["one", "two"])
    provider.reply = lambda _body: next(replies)
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert sdk_calls.openai_chat(provider.base_url, "x") == "one"
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as s:
        got = [sdk_calls.openai_chat(provider.base_url, "x") for _ in range(2)]
    assert got == ["one", "two"] and (s.replayed, s.recorded) == (1, 1)
    (stored,) = cassettes(cassette_dir)
    assert len(stored["responses"]) == 2


def test_record_mode_always_sends_and_rerecords(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    replies = iter(["old", "new"])
    provider.reply = lambda _body: next(replies)
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        sdk_calls.openai_chat(provider.base_url, "x")
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="record") as s:
        assert sdk_calls.openai_chat(provider.base_url, "x") == "new"
    assert s.recorded == 1 and provider.served == 2
    (stored,) = cassettes(cassette_dir)
    assert [r["body"]["json"]["choices"][0]["message"]["content"] for r in stored["responses"]] == [
        "new"
    ]


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_transient_failures_retried_past_are_not_written(
    provider: ProviderSimulator, cassette_dir: Path, status: int
) -> None:
    provider.fail_next(status, count=2)
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = sdk_calls.openai_chat(provider.base_url, "flaky")
    assert provider.served == 3
    (stored,) = cassettes(cassette_dir)
    assert [r["status"] for r in stored["responses"]] == [200]
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        assert sdk_calls.openai_chat(provider.base_url, "flaky") == live


def test_a_final_failure_is_kept_and_replayed(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.fail_next(500, count=5)
    with (
        ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK),
        pytest.raises(Exception, match="500"),
    ):
        sdk_calls.openai_chat(provider.base_url, "down", max_retries=0)
    provider.stop()
    with (
        ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"),
        pytest.raises(Exception, match="500"),
    ):
        sdk_calls.openai_chat(provider.base_url, "down", max_retries=0)


def test_broken_stream_is_stored_with_its_break_and_replays_the_same_way(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c d e"}]}
    url = provider.url("/v1/chat/completions")

    def read() -> tuple[list[bytes], str]:
        received: list[bytes] = []
        with httpx2.Client() as client, client.stream("POST", url, json=body) as response:
            try:
                for chunk in response.iter_raw():
                    received.append(chunk)
            except httpx2.TransportError as exc:
                return received, type(exc).__name__
        return received, "complete"

    provider.break_stream_after(2)
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = read()
    assert live[1] != "complete" and live[0]
    (stored,) = cassettes(cassette_dir)
    assert stored["responses"][0]["stream_error"]["type"] == live[1]
    provider.stop()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        assert read() == live


def test_other_hosts_pass_through_untouched(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir) as s:  # loopback is not a provider
        response = httpx.get(provider.url("/plain"))
    assert response.status_code == 200 and "ghostrun" not in response.extensions
    assert s.passed_through == 1 and s.recorded == 0
    assert not cassette_dir.exists()


def test_response_extension_says_what_happened(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")
    body = {"model": "m", "messages": [{"role": "user", "content": "ext"}]}
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert httpx.post(url, json=body).extensions["ghostrun"] == "recorded"
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert httpx.post(url, json=body).extensions["ghostrun"] == "replayed"


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_form_body_is_keyed_by_its_content_type(
    provider: ProviderSimulator, cassette_dir: Path, lib: Any
) -> None:
    """Only a body that is not JSON needs its content type for the key: a form's
    fields are sorted and its credential fields dropped."""
    url = provider.url("/v1/oauth/token")
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        lib.post(url, data={"grant_type": "x", "client_secret": "one", "scope": "a b"})
    provider.stop()
    form = {"content-type": "application/x-www-form-urlencoded"}
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as replay:
        lib.post(url, content=b"scope=a+b&client_secret=two&grant_type=x", headers=form)
    assert replay.replayed == 1


def test_key_ignores_json_key_order_whitespace_and_ignored_fields(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")
    first = b'{"model": "m", "metadata": {"trace_id": "a1"}, "messages": []}'
    second = b'{"messages":[],"metadata":{"trace_id":"zz"},"model":"m"}'
    headers = {"content-type": "application/json"}
    session = ghostrun.session(
        cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=["metadata.trace_id"]
    )
    with session:
        httpx.post(url, content=first, headers=headers)
    provider.stop()
    with ghostrun.session(
        cassette_dir=cassette_dir,
        hosts=LOOPBACK,
        ignore_fields=["metadata.trace_id"],
        mode="replay",
    ) as replay:
        assert httpx.post(url, content=second, headers=headers).status_code == 200
    assert replay.replayed == 1
