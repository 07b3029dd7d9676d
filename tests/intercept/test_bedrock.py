"""boto3 ``bedrock-runtime`` over urllib3: converse, converse_stream (AWS event-stream), invoke."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.eventstream
import orjson
import pytest
import urllib3
from helpers import cassettes, record_then_replay
from simulator import ProviderSimulator

import ghostrun
from ghostrun import PROVIDER_HOSTS, CacheMiss, CassetteError
from ghostrun._core._hosts import HostMatcher

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
# Fake credentials, assembled at run time so no scanner mistakes them for real ones.
ACCESS_KEY = "AKIA" + "GHOSTRUNTEST0001"
SECRET_KEY = "ghostrun/" + "SecretAccessKeyForTests0123456789abcd"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjE" + "GhostrunSessionTokenForTests0123456789"
MESSAGES = [{"role": "user", "content": [{"text": "Where is my refund?"}]}]


@pytest.fixture(autouse=True)
def _no_aws_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user's AWS profile, keys or instance metadata reach these tests."""
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def bedrock(endpoint: str | None, *, placeholder: bool = False, **config: Any) -> Any:
    """A bedrock-runtime client: real-looking credentials, or the placeholders CI would use."""
    key, secret, token = (
        ("testing", "testing", "testing")
        if placeholder
        else (
            ACCESS_KEY,
            SECRET_KEY,
            SESSION_TOKEN,
        )
    )
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        aws_session_token=token,
        config=botocore.config.Config(**config),
    )


def keys_then_placeholders(
    provider: ProviderSimulator, cassette_dir: Path, fn: Callable[[Any], Any]
) -> tuple[Any, Any]:
    """Record with real-looking keys, stop the simulator, replay with placeholder keys."""
    url = provider.base_url
    return record_then_replay(
        provider, cassette_dir, lambda: fn(bedrock(url)), lambda: fn(bedrock(url, placeholder=True))
    )


def converse(client: Any) -> Any:
    reply = client.converse(modelId=MODEL, messages=MESSAGES)
    return reply["output"], reply["stopReason"], reply["usage"]


def converse_stream(client: Any) -> Any:
    return list(client.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])


@pytest.fixture
def eventstream_chunks(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The chunks botocore's event-stream parser is fed, as it reads them."""
    fed: list[bytes] = []
    original = botocore.eventstream.EventStreamBuffer.add_data

    def add_data(self: Any, data: bytes) -> None:
        fed.append(bytes(data))
        original(self, data)

    monkeypatch.setattr(botocore.eventstream.EventStreamBuffer, "add_data", add_data)
    return fed


def test_converse_replays_with_placeholder_credentials_and_the_simulator_stopped(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    live, again = keys_then_placeholders(provider, cassette_dir, converse)
    assert again == live
    assert live[0]["message"]["content"] == [{"text": "Echo: Where is my refund?"}]
    assert live[1] == "end_turn" and live[2]["totalTokens"] > 0
    (cassette,) = cassettes(cassette_dir)
    assert cassette["request"]["url"].endswith(f"/model/{MODEL}/converse")
    assert cassette["responses"][0]["body"]["json"]["stopReason"] == "end_turn"


def test_converse_stream_replays_frame_for_frame_and_byte_for_byte(
    provider: ProviderSimulator, cassette_dir: Path, eventstream_chunks: list[bytes]
) -> None:
    live, again = keys_then_placeholders(
        provider, cassette_dir, lambda client: (converse_stream(client), len(eventstream_chunks))
    )
    assert again[0] == live[0]
    live_chunks, replayed_chunks = eventstream_chunks[: live[1]], eventstream_chunks[live[1] :]
    assert replayed_chunks == live_chunks  # the same bytes, in the same chunks
    events = live[0]
    assert [next(iter(e)) for e in events[:2]] == ["messageStart", "contentBlockDelta"]
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    assert text == "Echo: Where is my refund?"
    assert len(live_chunks) == len(events)  # the simulator sends one frame per chunk


def test_converse_stream_is_stored_as_readable_frames(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    keys_then_placeholders(provider, cassette_dir, converse_stream)
    (cassette,) = cassettes(cassette_dir)
    response = cassette["responses"][0]
    assert response["headers"]["content-type"] == "application/vnd.amazon.eventstream"
    chunks = response["body"]["eventstream"]
    first, delta = chunks[0][0], chunks[1][0]
    assert first == {
        "headers": [
            ":event-type: messageStart",
            ":content-type: application/json",
            ":message-type: event",
        ],
        "json": {"role": "assistant"},
    }
    assert delta["json"] == {"contentBlockIndex": 0, "delta": {"text": "Echo:"}}


def test_a_tool_call_streamed_by_converse_stream_replays(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    tools = {
        "tools": [
            {
                "toolSpec": {
                    "name": "lookup_order",
                    "inputSchema": {"json": {"type": "object", "properties": {}}},
                }
            }
        ]
    }
    messages = [{"role": "user", "content": [{"text": "Where is order A-1234?"}]}]

    def call(client: Any) -> Any:
        reply = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=tools)
        return list(reply["stream"])

    live, again = keys_then_placeholders(provider, cassette_dir, call)
    assert again == live
    start = next(e["contentBlockStart"] for e in live if "contentBlockStart" in e)
    assert start["start"]["toolUse"]["name"] == "lookup_order"
    pieces = [
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in live
        if "contentBlockDelta" in e
    ]
    assert orjson.loads("".join(pieces)) == {"order_id": "A-1234"}


def test_invoke_model_replays(provider: ProviderSimulator, cassette_dir: Path) -> None:
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello invoke"}],
    }

    def call(client: Any) -> Any:
        reply = client.invoke_model(modelId=MODEL, body=orjson.dumps(body))
        return reply["contentType"], orjson.loads(reply["body"].read())["content"]

    live, again = keys_then_placeholders(provider, cassette_dir, call)
    assert again == live and live[1] == [{"type": "text", "text": "Echo: hello invoke"}]


def test_invoke_model_with_response_stream_replays_chunk_for_chunk(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "stream it"}],
    }

    def call(client: Any) -> Any:
        reply = client.invoke_model_with_response_stream(modelId=MODEL, body=orjson.dumps(body))
        return [orjson.loads(event["chunk"]["bytes"]) for event in reply["body"]]

    live, again = keys_then_placeholders(provider, cassette_dir, call)
    assert again == live and live[-1]["type"] == "message_stop"
    (cassette,) = cassettes(cassette_dir)
    frames = [chunk[0] for chunk in cassette["responses"][0]["body"]["eventstream"]]
    assert frames[0]["headers"][0] == ":event-type: chunk" and "bytes" in frames[0]["json"]


def test_no_aws_credential_lands_in_the_cassette(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        client = bedrock(provider.base_url)
        converse(client)
        signed = provider.last_request.headers
        converse_stream(client)
    signature = signed["authorization"].rsplit("Signature=", 1)[1]
    assert signed["x-amz-security-token"] == SESSION_TOKEN  # what was sent, signed
    files = sorted(cassette_dir.glob("*.json"))
    assert len(files) == 2
    for path in files:
        text = path.read_text()
        for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, signature, "AWS4-HMAC-SHA256"):
            assert secret not in text, (path.name, secret)
        assert "x-amz-security-token" not in text and "x-amz-date" not in text


def _converse_stream_text(client: Any) -> list[str]:
    return [
        e["contentBlockDelta"]["delta"]["text"]
        for e in converse_stream(client)
        if "contentBlockDelta" in e
    ]


def _invoke_stream_text(client: Any) -> list[str]:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": MESSAGES}
    reply = client.invoke_model_with_response_stream(modelId=MODEL, body=orjson.dumps(body))
    events = [orjson.loads(event["chunk"]["bytes"]) for event in reply["body"]]
    return [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]


@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
@pytest.mark.parametrize("cut", [20, 75], ids=["inside-the-token", "after-it"])
@pytest.mark.parametrize("call", [_converse_stream_text, _invoke_stream_text])
def test_a_token_the_model_spells_over_two_delta_events_is_masked(
    call: Callable[[Any], list[str]],
    cut: int,
    padded: bool,
    provider: ProviderSimulator,
    cassette_dir: Path,
) -> None:
    """An event-stream's JSON payloads, and the events their base64 ``bytes`` carry, are
    masked together, as a stream's SSE events are, and the masked stream still decodes.
    Real Bedrock pads each payload with a ``"p"`` field beside the ``bytes``."""
    provider.aws_padding = padded
    provider.reply = f"your token is {SESSION_TOKEN}, keep it"
    provider.delta_pieces = lambda text: [text[:cut], text[cut:]]

    live, again = keys_then_placeholders(provider, cassette_dir, call)

    assert len(live) == 2 and (SESSION_TOKEN in live[0]) == (cut == 75)
    assert "".join(live) == f"your token is {SESSION_TOKEN}, keep it"
    (path,) = cassette_dir.glob("*.json")
    stored = path.read_text()
    stored += "".join(str(base64.b64decode(b)) for b in re.findall(r'"bytes": "([^"]+)"', stored))
    for piece in (SESSION_TOKEN[:6], SESSION_TOKEN[6:]):
        assert piece not in stored, piece
    assert "".join(again) == "your token is [REDACTED], keep it"


def test_a_bedrock_miss_reaches_the_test_once_past_botocores_retries(
    provider: ProviderSimulator, cassette_dir: Path, urlopen_calls: list[str]
) -> None:
    client = bedrock(
        provider.base_url, placeholder=True, retries={"max_attempts": 5, "mode": "standard"}
    )
    started = time.monotonic()
    with pytest.raises(CacheMiss, match="converse"):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[provider.base_url]):
            converse(client)
    assert time.monotonic() - started < 2
    assert len(urlopen_calls) == 1 and provider.served == 0


def test_the_real_bedrock_host_is_intercepted_with_no_endpoint_given(cassette_dir: Path) -> None:
    assert HostMatcher(PROVIDER_HOSTS)("bedrock-runtime.us-east-1.amazonaws.com", 443)
    client = bedrock(None, placeholder=True, retries={"total_max_attempts": 1})
    with pytest.raises(CacheMiss, match=r"bedrock-runtime\.us-east-1\.amazonaws\.com"):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):  # no hosts= needed
            converse(client)


def test_a_cassette_that_cannot_be_written_is_never_retried_by_botocore(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file-not-a-directory"
    blocked.write_text("")  # writing a cassette "inside" it fails, even as root
    client = bedrock(provider.base_url, retries={"max_attempts": 5, "mode": "standard"})
    with pytest.raises(CassetteError, match="a-file-not-a-directory"):
        with ghostrun.session(mode="auto", cassette_dir=blocked, hosts=[provider.base_url]):
            reply = converse(client)
            assert reply[1] == "end_turn"  # handed on: the error waits for the session's exit
    assert provider.served == 1


def test_a_converse_stream_cut_mid_way_replays_its_events_then_the_break(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    def call(client: Any) -> Any:
        provider.break_stream_after(3)
        events: list[Any] = []
        with pytest.raises(Exception) as broke:  # whatever botocore raises live
            events.extend(client.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])
        return events, type(broke.value)

    live, again = keys_then_placeholders(provider, cassette_dir, call)
    assert again == live and len(live[0]) == 3
    assert issubclass(live[1], urllib3.exceptions.ProtocolError)  # botocore hands it on
    (cassette,) = cassettes(cassette_dir)
    assert len(cassette["responses"][0]["body"]["eventstream"]) == 3
    assert "stream_error" in cassette["responses"][0]
