"""A damaged gRPC cassette is a `DamagedCassette`, as a damaged HTTP one is (issue 41, item 2).

A cassette may come from a pull request. Whatever is wrong with a recorded gRPC
outcome (a status code gRPC has not, details that are no string, a message
that is no object, of a type no module defines, bad base64, base64 that is not
its type's wire format, a ``Struct`` nested past protobuf's depth limit,
trailing metadata no HTTP response could carry), the call that reads it raises
`DamagedCassette`: a ``CacheMiss``, so an app's ``except Exception`` fallback
around the real grpc call cannot turn the test green, and the session raises
it again at exit.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import struct_pb2
from grpc_simulator import GrpcSimulator

import ghostrun

ECHO = "/ghostrun.test.Echo/Unary"


@pytest.fixture
def server() -> Iterator[GrpcSimulator]:
    with GrpcSimulator() as simulator:
        yield simulator


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"x": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


def _struct(raw: bytes) -> dict[str, Any]:
    return {"type": "google.protobuf.Struct", "base64": base64.b64encode(raw).decode()}


# (field of the stored outcome, value planted there, the field the error names)
DAMAGES = {
    "unknown status code": ("code", "SORT_OF_OK", r"body\.code"),
    "details not a string": ("details", 42, r"body\.details"),
    "message not an object": ("messages", ["hello"], r"body\.messages\[0\]"),
    "unknown message type": ("messages", [{"type": "no.such.Type", "json": {}}], r"\.type"),
    "bad base64": ("messages", [{"base64": "!!not base64!!"}], r"\.base64"),
    "base64 not the wire format": ("messages", [_struct(b"\xff\xff\xff")], r"wire format"),
    "Struct nested 45 deep": (
        "messages",
        [{"type": "google.protobuf.Struct", "json": _nested(45)}],
        r"wire format",
    ),
    "set-cookie trailer": ("trailing_metadata", {"set-cookie": "session=stolen"}, "set-cookie"),
    "CR/LF in a trailer": ("trailing_metadata", {"x-note": "a\r\nx-admin: 1"}, "line break"),
    "invalid trailer name": ("trailing_metadata", {"bad name": "v"}, "header name"),
}


def _app_sync(target: str) -> Any:
    """The code under test: a real grpc call with a catch-all fallback."""
    channel = grpc.insecure_channel(target)
    call = channel.unary_unary(ECHO, response_deserializer=struct_pb2.Struct.FromString)
    try:
        response, outcome = call.with_call(b"a")
        return response, outcome.trailing_metadata()
    except Exception:  # the fallback a damaged cassette must not reach
        return "fallback"


def _app_aio(target: str) -> Any:
    async def run() -> Any:
        async with grpc.aio.insecure_channel(target) as channel:
            call = channel.unary_unary(ECHO, response_deserializer=struct_pb2.Struct.FromString)
            try:
                reply = call(b"a")
                return await reply, await reply.trailing_metadata()
            except Exception:
                return "fallback"

    return asyncio.run(run())


APPS: dict[str, Callable[[str], Any]] = {"sync": _app_sync, "aio": _app_aio}


def _recorded(server: GrpcSimulator, cassette_dir: Path) -> Path:
    """One Echo call recorded whose answer is a valid (empty) Struct's bytes."""
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[server.target]):
        grpc.insecure_channel(server.target).unary_unary(ECHO)(b"a")  # b"echo:a"
    (path,) = cassette_dir.glob("*.json")
    return path


def _plant(path: Path, field: str, value: Any) -> None:
    document = json.loads(path.read_text())
    outcome = document["responses"][0]["body"]["json"]
    outcome["messages"] = [_struct(b"")]  # a valid Struct: only the damage planted is wrong
    outcome[field] = value
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("client", APPS)
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_outcome_fails_the_session_through_a_fallback(
    server: GrpcSimulator, cassette_dir: Path, damage: str, client: str
) -> None:
    path = _recorded(server, cassette_dir)
    field, value, named = DAMAGES[damage]
    _plant(path, field, value)
    session = ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[server.target])
    with pytest.raises(ghostrun.DamagedCassette, match=named) as damaged, session:
        APPS[client](server.target)
    assert str(path) in str(damaged.value)
    assert isinstance(damaged.value, ghostrun.CacheMiss)


def test_an_undamaged_outcome_still_replays(server: GrpcSimulator, cassette_dir: Path) -> None:
    """The same planting with nothing wrong: the reply and its trailers reach the code."""
    path = _recorded(server, cassette_dir)
    _plant(path, "trailing_metadata", {"x-served-by": "grpc-simulator"})
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[server.target]):
        response, trailers = _app_sync(server.target)
    assert response == struct_pb2.Struct()
    assert ("x-served-by", "grpc-simulator") in tuple(trailers)


def test_a_struct_within_the_depth_limit_replays(server: GrpcSimulator, cassette_dir: Path) -> None:
    path = _recorded(server, cassette_dir)
    _plant(path, "messages", [{"type": "google.protobuf.Struct", "json": _nested(30)}])
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[server.target]):
        response, _trailers = _app_sync(server.target)
    assert "a" in response
