"""Key-shaped secrets inside binary bodies are masked (issue 41, item 8; DESIGN §4).

A key that no header carried, sent inside an ``application/octet-stream`` body
or a raw-bytes gRPC message, is stored as base64, where a text search never
sees it. The decoded bytes are searched for the same shapes as text (the one
table in `_credentials`), and the key is masked in the bytes, which are
encoded again: every other byte stays as it was. Each test records through the
real client against loopback and reads the cassette files' bytes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_simulator import GrpcSimulator
from simulator import ProviderSimulator

import ghostrun
from ghostrun._secrets._mask import MASK, base64_forms

KEY = "sk-" + "proj-binaryBODY0123456789abcdefghijklmnop"  # assembled: no key shape is committed
BLOB = b"\x89PNG\r\n\x1a\n\x00\xff header " + KEY.encode() + b" \x00\x01\x02 tail \xfe"
MASKED = BLOB.replace(KEY.encode(), MASK.encode())


def _stored(cassette_dir: Path) -> tuple[bytes, list[dict[str, object]]]:
    """Every file written (run log and trajectory too), and the cassettes read."""
    written = b"".join(p.read_bytes() for p in sorted(cassette_dir.rglob("*")) if p.is_file())
    return written, [json.loads(p.read_text()) for p in sorted(cassette_dir.glob("*.json"))]


def _no_key(written: bytes) -> None:
    assert KEY.encode() not in written
    assert not any(form.encode() in written for form in base64_forms(KEY))


def test_an_octet_stream_request_body(provider: ProviderSimulator, cassette_dir: Path) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        with httpx.Client() as client:
            client.post(
                provider.url("/v1/uploads/blob"),
                content=BLOB,
                headers={"content-type": "application/octet-stream"},
            )
    written, (cassette, *_rest) = _stored(cassette_dir)
    _no_key(written)
    body = cassette["request"]["body"]  # type: ignore[index]
    assert base64.b64decode(body["base64"]) == MASKED  # only the key changed


@pytest.fixture
def server() -> Iterator[GrpcSimulator]:
    with GrpcSimulator() as simulator:
        yield simulator


def test_a_raw_bytes_grpc_message(server: GrpcSimulator, cassette_dir: Path) -> None:
    """The key in a request message, and echoed in the answer's: masked in both, as bytes,
    and the cassette still replays (its base64 is whole)."""
    echo = lambda: grpc.insecure_channel(server.target).unary_unary("/ghostrun.test.Echo/Unary")  # noqa: E731
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[server.target]):
        assert echo()(BLOB) == b"echo:" + BLOB
    written, (cassette,) = _stored(cassette_dir)
    _no_key(written)
    request = cassette["request"]["body"]["json"]  # type: ignore[index]
    assert base64.b64decode(request["base64"]) == MASKED
    (message,) = cassette["responses"][0]["body"]["json"]["messages"]  # type: ignore[index]
    assert base64.b64decode(message["base64"]) == b"echo:" + MASKED
    server.stop_server()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[server.target]):
        assert echo()(BLOB) == b"echo:" + MASKED
