"""The grpc road (DESIGN §1, §3): grpcio's sync channels and grpc.aio, and Google's
``google-ai-generativelanguage`` client (GenerativeService.GenerateContent and
StreamGenerateContent, the calls Vertex's PredictionService has by the same names).

Each test records against the loopback gRPC provider (`grpc_simulator`), then
replays with the server stopped: the proxy in front of it counts every
connection, and replay must open none.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.ai import generativelanguage_v1 as glm
from google.ai.generativelanguage_v1.services.generative_service.transports import (
    GenerativeServiceGrpcAsyncIOTransport,
    GenerativeServiceGrpcTransport,
)
from grpc_simulator import GrpcSimulator
from helpers import cassettes

import ghostrun

API_KEY = "AIza" + "SyD-grpcSECRET0123456789abcdefghijk"  # assembled: no key shape is committed
BEARER = "sk-" + "grpcSECRETbearer0123456789abcdef"
METADATA = [("x-goog-api-key", API_KEY)]
ECHO = "/ghostrun.test.Echo/"


@pytest.fixture
def server() -> Iterator[GrpcSimulator]:
    with GrpcSimulator() as simulator:
        yield simulator


def _session(server: GrpcSimulator, cassette_dir: Path, mode: str) -> ghostrun.Session:
    return ghostrun.session(cassette_dir=cassette_dir, hosts=[server.target], mode=mode)


def _record_then_replay(server: GrpcSimulator, cassette_dir: Path, run: Any) -> tuple[Any, Any]:
    """``run()`` recorded, then replayed with the server stopped; both results."""
    with _session(server, cassette_dir, "record") as recording:
        live = run()
    assert recording.recorded > 0
    server.stop_server()
    connections = server.connections
    with _session(server, cassette_dir, "replay") as replaying:
        replayed = run()
    assert replaying.replayed == recording.recorded
    assert server.connections == connections, "replay opened a connection"
    return live, replayed


# -- grpc's own channels, every kind of call ----------------------------------------------


def _four_kinds(target: str) -> list[Any]:
    channel = grpc.insecure_channel(target)
    seen: list[Any] = []
    response, call = channel.unary_unary(ECHO + "Unary").with_call(
        b"ping", metadata=[("authorization", f"Bearer {BEARER}")]
    )
    seen += [response, call.code(), dict(call.initial_metadata())]
    stream = channel.unary_stream(ECHO + "Split")(b"one two three")
    seen += [list(stream), stream.code()]
    seen.append(channel.stream_unary(ECHO + "Join")(iter([b"a", b"b", b"c"])))
    seen.append(list(channel.stream_stream(ECHO + "Each")(iter([b"x", b"y"]))))
    with pytest.raises(grpc.RpcError) as failed:
        channel.unary_unary(ECHO + "Fail")(b"grok-0")
    seen += [failed.value.code(), failed.value.details()]
    channel.close()
    return seen


def test_sync_channel_records_and_replays_every_kind_of_call(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    live, replayed = _record_then_replay(server, cassette_dir, lambda: _four_kinds(server.target))
    assert live[0] == b"echo:ping"
    assert live[3] == [b"one", b"two", b"three"]
    assert live[-2:] == [grpc.StatusCode.INVALID_ARGUMENT, "no such model: grok-0"]
    assert replayed == live
    assert len(cassettes(cassette_dir)) == 5


def _four_kinds_aio(target: str) -> list[Any]:
    async def run() -> list[Any]:
        async with grpc.aio.insecure_channel(target) as channel:
            seen: list[Any] = []
            call = channel.unary_unary(ECHO + "Unary")(b"ping")
            seen += [await call, await call.code(), dict(await call.initial_metadata())]
            stream = channel.unary_stream(ECHO + "Split")(b"one two three")
            seen.append([message async for message in stream])
            seen.append(await channel.stream_unary(ECHO + "Join")(iter([b"a", b"b"])))
            each = channel.stream_stream(ECHO + "Each")(iter([b"x", b"y"]))
            seen.append([await each.read(), await each.read(), await each.read()])
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await channel.unary_unary(ECHO + "Fail")(b"grok-0")
            seen += [failed.value.code(), failed.value.details()]
            return seen

    return asyncio.run(run())


def test_aio_channel_records_and_replays_every_kind_of_call(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    live, replayed = _record_then_replay(
        server, cassette_dir, lambda: _four_kinds_aio(server.target)
    )
    assert live[0] == b"echo:ping"
    assert live[3] == [b"one", b"two", b"three"]
    assert live[5] == [b"X", b"Y", grpc.aio.EOF]
    assert live[-2:] == [grpc.StatusCode.INVALID_ARGUMENT, "no such model: grok-0"]
    assert replayed == live


def test_repeated_calls_replay_in_the_order_recorded(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    def run() -> list[str]:
        echo = grpc.insecure_channel(server.target).unary_unary(ECHO + "Unary")
        return [dict(echo.with_call(b"same")[1].initial_metadata())["x-request-id"] for _ in "abc"]

    live, replayed = _record_then_replay(server, cassette_dir, run)
    assert live == ["req-1", "req-2", "req-3"]
    assert replayed == live
    assert len(cassettes(cassette_dir)) == 1


def test_a_channel_made_before_the_session_is_intercepted(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    channel = grpc.insecure_channel(server.target)  # made outside any session
    with _session(server, cassette_dir, "record"):
        assert channel.unary_unary(ECHO + "Unary")(b"early") == b"echo:early"
    server.stop_server()
    with _session(server, cassette_dir, "replay"):
        assert channel.unary_unary(ECHO + "Unary")(b"early") == b"echo:early"
    assert server.calls == ["Unary"]


def test_auto_replays_a_hit_without_connecting(server: GrpcSimulator, cassette_dir: Path) -> None:
    with _session(server, cassette_dir, "auto"):
        assert grpc.insecure_channel(server.target).unary_unary(ECHO + "Unary")(b"a") == b"echo:a"
    connections = server.connections
    with _session(server, cassette_dir, "auto") as again:
        assert grpc.insecure_channel(server.target).unary_unary(ECHO + "Unary")(b"a") == b"echo:a"
    assert (again.replayed, again.recorded, server.connections) == (1, 0, connections)


def test_a_host_no_session_lists_passes_through(server: GrpcSimulator, cassette_dir: Path) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, mode="replay") as session:
        assert grpc.insecure_channel(server.target).unary_unary(ECHO + "Unary")(b"a") == b"echo:a"
    assert session.passed_through == 1
    assert list(cassette_dir.glob("*.json")) == []


def test_metadata_credentials_never_reach_the_disk(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    _record_then_replay(server, cassette_dir, lambda: _four_kinds(server.target))
    assert any(m.get("authorization") == f"Bearer {BEARER}" for m in server.metadata)
    for path in cassette_dir.rglob("*"):
        if path.is_file():
            assert BEARER not in path.read_text(errors="replace"), path
    unary = next(c for c in cassettes(cassette_dir) if c["request"]["url"].endswith("/Unary"))
    assert "authorization" not in unary["request"]["headers"]
    assert unary["responses"][0]["headers"]["x-request-id"] == "req-1"  # safe-listed


def test_a_miss_diffs_the_request_message(server: GrpcSimulator, cassette_dir: Path) -> None:
    def ask(prompt: str) -> Any:
        client = _google_client(server.target)
        return client.generate_content(_request(prompt), metadata=METADATA)

    with _session(server, cassette_dir, "record"):
        ask("Where is my refund?")
    server.stop_server()
    session = _session(server, cassette_dir, "replay")
    with pytest.raises(ghostrun.CacheMiss) as missed, session:
        ask("Where is my parcel?")
    message = str(missed.value)
    assert '-contents[0].parts[0].text: "Where is my refund?"' in message
    assert '+contents[0].parts[0].text: "Where is my parcel?"' in message
    assert "GenerativeService/GenerateContent" in message
    assert API_KEY not in message
    assert session.misses == [missed.value]


def test_a_damaged_grpc_outcome_is_a_damaged_cassette_naming_the_field(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    echo = lambda: grpc.insecure_channel(server.target).unary_unary(ECHO + "Unary")(b"a")  # noqa: E731
    with _session(server, cassette_dir, "record"):
        echo()
    (path,) = cassette_dir.glob("*.json")
    document = json.loads(path.read_text())
    document["responses"][0]["body"]["json"]["code"] = "SORT_OF_OK"
    path.write_text(json.dumps(document))
    damaged_session = _session(server, cassette_dir, "replay")
    with pytest.raises(ghostrun.DamagedCassette, match=r"body\.code") as damaged, damaged_session:
        echo()
    assert str(path) in str(damaged.value)


# -- Google's generativelanguage client (gRPC by default) -----------------------------------


def _request(prompt: str) -> Any:
    return glm.GenerateContentRequest(
        model="models/gemini-2.5-flash",
        contents=[glm.Content(role="user", parts=[glm.Part(text=prompt)])],
    )


def _google_client(target: str) -> Any:
    transport = GenerativeServiceGrpcTransport(channel=grpc.insecure_channel(target))
    return glm.GenerativeServiceClient(transport=transport)


def _google_sync(target: str) -> list[Any]:
    client = _google_client(target)
    reply = client.generate_content(_request("Where is my refund?"), metadata=METADATA)
    stream = client.stream_generate_content(_request("Tell me a story"), metadata=METADATA)
    return [type(reply).to_dict(reply), [type(chunk).to_dict(chunk) for chunk in stream]]


def _google_async(target: str) -> list[Any]:
    async def run() -> list[Any]:
        channel = grpc.aio.insecure_channel(target)
        transport = GenerativeServiceGrpcAsyncIOTransport(channel=channel)
        client = glm.GenerativeServiceAsyncClient(transport=transport)
        reply = await client.generate_content(_request("Where is my refund?"), metadata=METADATA)
        stream = await client.stream_generate_content(_request("A story"), metadata=METADATA)
        chunks = [type(chunk).to_dict(chunk) async for chunk in stream]
        await channel.close()
        return [type(reply).to_dict(reply), chunks]

    return asyncio.run(run())


@pytest.mark.parametrize("run", [_google_sync, _google_async], ids=["sync", "async"])
def test_google_client_records_and_replays(
    server: GrpcSimulator, cassette_dir: Path, run: Any
) -> None:
    live, replayed = _record_then_replay(server, cassette_dir, lambda: run(server.target))
    assert live[0]["candidates"][0]["content"]["parts"][0]["text"].startswith("You said: Where")
    texts = [chunk["candidates"][0]["content"]["parts"][0]["text"] for chunk in live[1]]
    assert texts[:2] == ["You ", "said: "]
    assert replayed == live
    assert server.metadata[0]["x-goog-api-key"] == API_KEY  # the key was sent live...
    for path in cassette_dir.rglob("*"):
        if path.is_file():
            assert API_KEY not in path.read_text(errors="replace"), path  # ...and never stored


def test_google_cassettes_are_readable_json(server: GrpcSimulator, cassette_dir: Path) -> None:
    with _session(server, cassette_dir, "record"):
        _google_sync(server.target)
    by_method = {c["request"]["url"].rsplit("/", 1)[1]: c for c in cassettes(cassette_dir)}
    unary, stream = by_method["GenerateContent"], by_method["StreamGenerateContent"]
    request = unary["request"]
    assert request["method"] == "POST"
    assert request["url"] == (
        f"grpc://{server.target}/google.ai.generativelanguage.v1.GenerativeService/GenerateContent"
    )
    assert request["headers"]["grpc-message-type"] == (
        "google.ai.generativelanguage.v1.GenerateContentRequest"
    )
    assert request["body"]["json"]["contents"][0]["parts"][0]["text"] == "Where is my refund?"
    outcome = unary["responses"][0]["body"]["json"]
    assert outcome["code"] == "OK"
    (message,) = outcome["messages"]
    assert message["type"] == "google.ai.generativelanguage.v1.GenerateContentResponse"
    assert "base64" not in message  # its JSON gives back its bytes exactly
    assert message["json"]["candidates"][0]["finish_reason"] == "STOP"
    assert message["json"]["usage_metadata"]["total_token_count"] == 7  # proto field names
    words = [m["json"]["candidates"][0]["content"]["parts"][0]["text"] for m in
             stream["responses"][0]["body"]["json"]["messages"]]  # fmt: skip
    assert words == ["You ", "said: ", "Tell ", "me ", "a ", "story "]


def test_an_aio_channel_made_before_the_session_is_intercepted(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    async def run(channel: Any) -> Any:
        return await channel.unary_unary(ECHO + "Unary")(b"early")

    async def main() -> list[Any]:
        channel = grpc.aio.insecure_channel(server.target)  # made before the roads exist
        with _session(server, cassette_dir, "record"):
            live = await run(channel)
        server.stop_server()
        with _session(server, cassette_dir, "replay"):
            replayed = await run(channel)
        return [live, replayed]

    assert asyncio.run(main()) == [b"echo:early", b"echo:early"]
    assert server.calls == ["Unary"]


def test_credential_fields_inside_a_request_message_are_masked(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    from google.protobuf import struct_pb2

    request = struct_pb2.Struct()
    request.update({"api_key": BEARER, "prompt": "Where is my refund?"})

    def run() -> Any:
        length = grpc.insecure_channel(server.target).unary_unary(
            ECHO + "Length", request_serializer=struct_pb2.Struct.SerializeToString
        )
        return length(request)

    live, replayed = _record_then_replay(server, cassette_dir, run)
    assert replayed == live
    (cassette,) = cassettes(cassette_dir)
    body = cassette["request"]["body"]["json"]
    assert body["prompt"] == "Where is my refund?"
    assert body["api_key"] != BEARER
    assert cassette["request"]["headers"]["grpc-message-type"] == "google.protobuf.Struct"
    for path in cassette_dir.rglob("*"):
        if path.is_file():
            assert BEARER not in path.read_text(errors="replace"), path


def test_ignore_fields_apply_to_request_messages(server: GrpcSimulator, cassette_dir: Path) -> None:
    def ask(prompt: str) -> Any:
        reply = _google_client(server.target).generate_content(_request(prompt))
        return reply.candidates[0].content.parts[0].text

    ignore = ["contents[*].parts[*].text"]
    with ghostrun.session(
        cassette_dir=cassette_dir, hosts=[server.target], mode="record", ignore_fields=ignore
    ):
        recorded = ask("Where is my refund?")
    server.stop_server()
    with ghostrun.session(
        cassette_dir=cassette_dir, hosts=[server.target], mode="replay", ignore_fields=ignore
    ) as session:
        assert ask("Where is my parcel?") == recorded
    assert session.replayed == 1


def test_the_default_port_is_left_out_of_the_stored_url() -> None:
    from ghostrun._store._keys import canonical_url

    assert canonical_url("grpc", "api.x.ai", 443, "/xai_api.Chat/GetCompletion", "") == (
        "grpc://api.x.ai/xai_api.Chat/GetCompletion"
    )


def test_a_stub_built_before_any_session_is_refused_in_replay(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    channel = grpc.insecure_channel(server.target)
    early = channel.unary_unary(ECHO + "Unary")  # the road is not installed: grpc's own
    session = _session(server, cassette_dir, "replay")
    with pytest.raises(ghostrun.CacheMiss, match="stub built before any session") as refused:
        with session:
            early(b"ping")
    assert server.target in str(refused.value)
    assert server.connections == 0
    assert session.misses == [refused.value]


def test_a_stream_is_handed_on_as_it_arrives_while_recording(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    def run(release: Any) -> list[bytes]:
        stream = grpc.insecure_channel(server.target).unary_stream(ECHO + "Held")(b"go")
        first = next(stream)  # the server holds the rest until released
        release()
        return [first, *stream]

    with _session(server, cassette_dir, "record"):
        live = run(server.release.set)
    assert live == [b"first", b"after release"]
    server.stop_server()
    with _session(server, cassette_dir, "replay"):
        assert run(lambda: None) == live


def test_a_stream_left_unread_is_recorded_as_far_as_it_was_read(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    def run() -> Any:
        stream = grpc.insecure_channel(server.target).unary_stream(ECHO + "Held")(b"go")
        return next(stream)  # and never more: the session closes with the stream open

    with _session(server, cassette_dir, "record"):
        assert run() == b"first"
    (cassette,) = cassettes(cassette_dir)
    outcome = cassette["responses"][0]["body"]["json"]
    assert outcome["code"] == "CANCELLED"
    assert [m["base64"] for m in outcome["messages"]] == ["Zmlyc3Q="]  # b"first"
    server.stop_server()
    with _session(server, cassette_dir, "replay"):
        assert run() == b"first"


def test_an_aio_stream_is_handed_on_as_it_arrives_while_recording(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    async def run(release: Any) -> list[Any]:
        async with grpc.aio.insecure_channel(server.target) as channel:
            stream = channel.unary_stream(ECHO + "Held")(b"go")
            first = await stream.read()  # the server holds the rest until released
            release()
            return [first, *[message async for message in stream], await stream.code()]

    with _session(server, cassette_dir, "record"):
        live = asyncio.run(run(server.release.set))
    assert live == [b"first", b"after release", grpc.StatusCode.OK]
    server.stop_server()
    with _session(server, cassette_dir, "replay"):
        assert asyncio.run(run(lambda: None)) == live


def test_an_aio_stream_left_unread_is_recorded_as_far_as_it_was_read(
    server: GrpcSimulator, cassette_dir: Path
) -> None:
    async def run() -> Any:
        channel = grpc.aio.insecure_channel(server.target)
        return await channel.unary_stream(ECHO + "Held")(b"go").read()  # and never more

    with _session(server, cassette_dir, "record"):
        assert asyncio.run(run()) == b"first"
    (cassette,) = cassettes(cassette_dir)
    assert cassette["responses"][0]["body"]["json"]["code"] == "CANCELLED"
    server.stop_server()
    with _session(server, cassette_dir, "replay"):
        assert asyncio.run(run()) == b"first"
