"""Bad files and bad directories: clear errors that name the file and the fix."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._wire._bodies import decode_body, encode_body, encode_chunks

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def record_one(provider: ProviderSimulator, cassette_dir: Path) -> Path:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    (path,) = cassette_dir.glob("*.json")
    return path


def replay(provider: ProviderSimulator, cassette_dir: Path) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)


def test_truncated_cassette_names_its_file(provider: ProviderSimulator, cassette_dir: Path) -> None:
    path = record_one(provider, cassette_dir)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ghostrun.DamagedCassette, match=f"corrupt file {path}"):
        replay(provider, cassette_dir)


def test_unknown_format_version_names_its_file(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    path = record_one(provider, cassette_dir)
    data = orjson.loads(path.read_bytes())
    data["version"] = 99
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(ghostrun.DamagedCassette, match=f"{path} has format version 99"):
        replay(provider, cassette_dir)


def test_bad_response_entry_names_its_file(provider: ProviderSimulator, cassette_dir: Path) -> None:
    path = record_one(provider, cassette_dir)
    data = orjson.loads(path.read_bytes())
    data["responses"][0]["body"] = {"base64": "not base64!"}
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(ghostrun.DamagedCassette, match=f"corrupt cassette {path}"):
        replay(provider, cassette_dir)


def test_cassette_dir_that_cannot_be_created(provider: ProviderSimulator, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(ghostrun.CassetteError, match="not-a-dir is a file, not a directory"):
        with ghostrun.session(cassette_dir=blocker / "cassettes", hosts=LOOPBACK):
            httpx.post(provider.url("/v1/chat/completions"), json=BODY)


def test_no_temporary_files_are_left_behind(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    record_one(provider, cassette_dir)
    assert [p.name for p in cassette_dir.iterdir() if p.name.startswith(".")] == [".gitignore"]


@pytest.mark.parametrize(
    ("data", "content_type", "kind"),
    [
        (b'{"a": 1}', "application/json", "json"),
        (b"plain words", "text/plain", "text"),
        (b"not json after all", "application/json", "text"),
        (bytes(range(256)), "audio/mpeg", "base64"),
        (b"", "application/json", "text"),
    ],
)
def test_body_encodings_round_trip(data: bytes, content_type: str, kind: str) -> None:
    encoded = encode_body(data, content_type)
    assert list(encoded) == [kind]
    decoded = decode_body(orjson.loads(orjson.dumps(encoded)))
    assert decoded == (orjson.dumps(orjson.loads(data)) if kind == "json" else data)


@pytest.mark.parametrize(
    ("chunks", "content_type", "kind"),
    [
        ([b"data: 1\n\n", b"data: 2\n\n"], "text/event-stream; charset=utf-8", "sse"),
        ([b'{"a":1}\n', b'{"b":2}\n'], "application/x-ndjson", "ndjson"),
        ([b"\xe2\x82", b"\xac"], "text/event-stream", "sse"),  # a split euro sign: see _bodies
        ([b"\xff\xfe", b"\x00"], "text/event-stream", "chunks_base64"),  # not UTF-8
    ],
)
def test_stream_encodings_round_trip(chunks: list[bytes], content_type: str, kind: str) -> None:
    encoded = encode_chunks(chunks, content_type)
    assert kind in encoded
    assert decode_body(orjson.loads(orjson.dumps(encoded))) == chunks


@pytest.mark.parametrize("size", [0, 10, (1 << 16) - 27, (1 << 16) - 26, (1 << 16) - 25, 300_000])
def test_files_of_any_size_read_back_whole(tmp_path: Path, size: int) -> None:
    """Files are read 64 KiB at a time (the middle size fills one read exactly)."""
    from ghostrun._core._files import read_json, write_atomic

    small = {"text": "s" * 5}
    big = {"text": "x" * size, "tail": [1, 2, 3]}
    write_atomic(tmp_path / "big.json", orjson.dumps(big))
    write_atomic(tmp_path / "small.json", orjson.dumps(small))
    assert read_json(tmp_path / "big.json") == big
    assert read_json(tmp_path / "small.json") == small
    assert read_json(tmp_path / "big.json") == big  # the buffer held the small file meanwhile
    assert read_json(tmp_path / "missing.json") is None
