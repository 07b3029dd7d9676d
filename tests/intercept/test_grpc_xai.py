"""xai-sdk through the grpc road: its sync and async clients, unary and streamed chats.

xai-sdk talks only gRPC. Its client is pointed at the loopback provider
(``GrpcSimulator(xai=True)``, serving ``xai_api.Chat`` from the SDK's own
protos) over an insecure channel, records, then replays with the server
stopped: the same parsed responses and stream chunks, no connection, and the
API key (sent as ``authorization`` metadata) nowhere on disk.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grpc_simulator import GrpcSimulator
from xai_sdk import AsyncClient, Client
from xai_sdk.chat import system, user

import ghostrun

API_KEY = "xai-" + "grpcSECRETkey0123456789abcdefghijklmnop"  # assembled: no key shape committed


@pytest.fixture
def server() -> Iterator[GrpcSimulator]:
    with GrpcSimulator(xai=True) as simulator:
        yield simulator


def _session(server: GrpcSimulator, cassette_dir: Path, mode: str) -> ghostrun.Session:
    return ghostrun.session(cassette_dir=cassette_dir, hosts=[server.target], mode=mode)


def _client(server: GrpcSimulator) -> Client:
    return Client(api_key=API_KEY, api_host=server.target, use_insecure_channel=True)


def _sync(server: GrpcSimulator, prompt: str = "Where is my refund?") -> list[Any]:
    client = _client(server)
    chat = client.chat.create(model="grok-4", temperature=0)
    chat.append(system("You are a support agent."))
    chat.append(user(prompt))
    response = chat.sample()
    story = client.chat.create(model="grok-4")
    story.append(user("Tell me a story"))
    chunks = [(chunk.content, streamed.content) for streamed, chunk in story.stream()]
    client.close()
    return [response.content, response.finish_reason, response.usage.total_tokens, chunks]


def _async(server: GrpcSimulator) -> list[Any]:
    async def run() -> list[Any]:
        client = AsyncClient(api_key=API_KEY, api_host=server.target, use_insecure_channel=True)
        chat = client.chat.create(model="grok-4")
        chat.append(user("Where is my refund?"))
        response = await chat.sample()
        story = client.chat.create(model="grok-4")
        story.append(user("Tell me a story"))
        chunks = [(chunk.content, streamed.content) async for streamed, chunk in story.stream()]
        return [response.content, response.finish_reason, response.usage.total_tokens, chunks]

    return asyncio.run(run())


@pytest.mark.parametrize("run", [_sync, _async], ids=["sync", "async"])
def test_xai_chat_records_and_replays(server: GrpcSimulator, cassette_dir: Path, run: Any) -> None:
    with _session(server, cassette_dir, "record") as recording:
        live = run(server)
    assert recording.recorded == 2
    assert server.calls == ["GetCompletion", "GetCompletionChunk"]
    server.stop_server()
    connections = server.connections
    with _session(server, cassette_dir, "replay") as replaying:
        replayed = run(server)
    assert replaying.replayed == 2
    assert server.connections == connections
    assert live[0].startswith("You said:") and live[2] == 12
    assert [piece for piece, _ in live[3]] == ["You ", "said: ", "Tell ", "me ", "a ", "story "]
    assert live[3][-1][1] == "You said: Tell me a story "  # the SDK's accumulated response
    assert replayed == live


def test_xai_key_is_sent_but_never_stored(server: GrpcSimulator, cassette_dir: Path) -> None:
    with _session(server, cassette_dir, "record"):
        _sync(server)
    assert server.metadata[0]["authorization"] == f"Bearer {API_KEY}"
    files = [path for path in cassette_dir.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert API_KEY not in path.read_text(errors="replace"), path
    for path in cassette_dir.glob("*.json"):
        request = json.loads(path.read_text())["request"]
        assert request["headers"] == {
            "content-type": "application/grpc",
            "grpc-message-type": "xai_api.GetCompletionsRequest",
        }


def test_xai_changed_prompt_is_a_miss_with_a_field_diff(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    with _session(server, cassette_dir, "record"):
        _sync(server)
    server.stop_server()
    session = _session(server, cassette_dir, "replay")
    with pytest.raises(ghostrun.CacheMiss) as missed, session:
        _sync(server, "Where is my parcel?")
    message = str(missed.value)
    assert "xai_api.Chat/GetCompletion" in message
    assert '-messages[1].content[0].text: "Where is my refund?"' in message
    assert '+messages[1].content[0].text: "Where is my parcel?"' in message
    assert API_KEY not in message


def test_xai_cassette_is_readable_json(server: GrpcSimulator, cassette_dir: Path) -> None:
    with _session(server, cassette_dir, "record"):
        _sync(server)
    by_method = {
        c["request"]["url"].rsplit("/", 1)[1]: c
        for c in (json.loads(p.read_text()) for p in cassette_dir.glob("*.json"))
    }
    request = by_method["GetCompletion"]["request"]["body"]["json"]
    assert request["model"] == "grok-4"
    assert request["messages"][1] == {
        "content": [{"text": "Where is my refund?"}],
        "role": "ROLE_USER",
    }
    (message,) = by_method["GetCompletion"]["responses"][0]["body"]["json"]["messages"]
    assert message["type"] == "xai_api.GetChatCompletionResponse"
    assert message["json"]["outputs"][0]["message"]["content"].startswith("You said:")
    assert message["json"]["usage"]["total_tokens"] == 12
    chunks = by_method["GetCompletionChunk"]["responses"][0]["body"]["json"]["messages"]
    assert [m["json"]["outputs"][0]["delta"]["content"] for m in chunks][:2] == ["You ", "said: "]
