"""The AWS event-stream codec: readable frames in the cassette, the same bytes back."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from typing import Any

import botocore.eventstream
import orjson
import pytest

from ghostrun import CassetteError
from ghostrun._core._files import dump_json
from ghostrun._store._cassette import decode_body, encode_chunks, read_run
from ghostrun._wire._eventstream import decode_chunks, encode_frame, read_frames

EVENTSTREAM = "application/vnd.amazon.eventstream"
EVERY_TYPE: list[tuple[str, Any]] = [
    (":event-type", "contentBlockDelta"),
    ("yes", {"bool": True}),
    ("no", {"bool": False}),
    ("byte", {"byte": -7}),
    ("short", {"short": -300}),
    ("int", {"int": 70000}),
    ("long", {"long": 2**40}),
    ("blob", {"bytes": base64.b64encode(b"\x00\xff").decode()}),
    ("when", {"timestamp": 1_700_000_000_000}),
    ("id", {"uuid": "0123456789abcdef0123456789abcdef"}),
]


def through_a_cassette(value: Any) -> Any:
    """What comes back of ``value`` once written to a cassette file and read again."""
    return orjson.loads(dump_json(value))


def frame(payload: bytes = b'{"contentBlockIndex":0,"delta":{"text":"Hi"}}') -> bytes:
    return encode_frame([(":event-type", "contentBlockDelta"), (":message-type", "event")], payload)


def test_every_header_type_is_read_as_botocore_reads_it_and_written_back_the_same() -> None:
    data = encode_frame(EVERY_TYPE, b'{"a":1}')
    buffer = botocore.eventstream.EventStreamBuffer()
    buffer.add_data(data)
    (message,) = list(buffer)  # botocore checks both CRCs
    assert message.headers[":event-type"] == "contentBlockDelta"
    assert message.headers["int"] == 70000 and message.headers["yes"] is True
    assert message.payload == b'{"a":1}'
    frames = read_frames(data)
    assert frames is not None and frames[0]["headers"][1:3] == [
        ["yes", {"bool": True}],
        ["no", {"bool": False}],
    ]
    assert decode_chunks(through_a_cassette([frames])) == [data]


def test_a_stream_is_stored_one_chunk_per_list_of_frames() -> None:
    chunks = [frame(), frame(b'{"stopReason":"end_turn"}') + frame(b"{}")]
    body = encode_chunks(chunks, EVENTSTREAM)
    stored = body["eventstream"]
    assert [len(chunk) for chunk in stored] == [1, 2]
    assert stored[0][0] == {
        "headers": [":event-type: contentBlockDelta", ":message-type: event"],
        "json": {"contentBlockIndex": 0, "delta": {"text": "Hi"}},
    }
    assert decode_body(through_a_cassette(body)) == chunks


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (b'{"b": 1, "a": 2}', "text"),  # spaces and key order a JSON value would not keep
        (b"plain words", "text"),
        (b"\xff\xfe\x00", "base64"),
        (b"", "text"),
    ],
)
def test_a_payload_that_json_would_change_is_kept_as_text_or_base64(
    payload: bytes, kind: str
) -> None:
    data = frame(payload)
    stored = encode_chunks([data], EVENTSTREAM)["eventstream"][0][0]
    assert kind in stored
    assert decode_body(through_a_cassette({"eventstream": [[stored]]})) == [data]


def test_a_frame_split_by_a_chunk_boundary_leaves_the_others_readable() -> None:
    first, split, last = frame(b'{"n":1}'), frame(b'{"n":2}'), frame(b'{"n":3}')
    chunks = [first + split[:20], split[20:] + last, b""]
    stored = encode_chunks(chunks, EVENTSTREAM)["eventstream"]
    assert [[next(iter(item)) for item in chunk] for chunk in stored] == [
        ["headers", "base64"],
        ["base64", "headers"],
        [],
    ]
    assert stored[0][0]["json"] == {"n": 1} and stored[1][1]["json"] == {"n": 3}
    assert decode_body(through_a_cassette({"eventstream": stored})) == chunks


def test_a_stream_cut_mid_frame_keeps_its_whole_frames_readable() -> None:
    chunks = [frame(), frame()[:30]]
    stored = encode_chunks(chunks, EVENTSTREAM)["eventstream"]
    assert "headers" in stored[0][0] and list(stored[1][0]) == ["base64"]
    assert decode_body(through_a_cassette({"eventstream": stored})) == chunks


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([frame()[:-1] + b"\x00"], id="a bad message CRC"),
        pytest.param([b"\x00" * 8 + frame()[8:]], id="a bad prelude"),
        pytest.param([b"\xff not an event stream"], id="no frame at all"),
    ],
)
def test_bytes_with_no_valid_frame_are_kept_as_base64_chunks(chunks: list[bytes]) -> None:
    body = encode_chunks(chunks, EVENTSTREAM)
    assert list(body) == ["chunks_base64"]
    assert decode_body(body) == chunks


def test_a_header_value_that_is_no_string_keeps_its_type_readably() -> None:
    data = encode_frame([("n: odd name", "x"), ("count", {"int": 3})], b"{}")
    (stored,) = read_frames(data) or []
    assert stored["headers"] == [["n: odd name", "x"], ["count", {"int": 3}]]
    assert decode_chunks([[stored]]) == [data]


@pytest.mark.parametrize(
    "bad",
    [
        "not a list",
        [{"headers": []}],
        [[{"headers": ["no separator"], "json": {}}]],
        [[{"headers": [["n", {"float": 1.5}]], "json": {}}]],
        [[{"headers": [["n", {"int": 2**40}]], "json": {}}]],
        [[{"headers": [], "json": {}, "text": ""}]],
    ],
)
def test_a_malformed_eventstream_body_is_a_cassette_error_naming_the_file(
    tmp_path: Path, bad: Any
) -> None:
    path = tmp_path / "broken.json"
    response = {"status": 200, "headers": {}, "body": {"eventstream": bad}}
    request = {"method": "POST", "url": "http://h/model/m/converse-stream", "headers": {}}
    document = {"version": 1, "key": "broken", "request": request, "responses": [response]}
    path.write_bytes(dump_json(document))
    with pytest.raises(CassetteError, match=r"broken\.json.*responses\[0\]\.body\.eventstream"):
        read_run(str(path), None)


def test_frames_carry_the_crc32_of_prelude_and_message() -> None:
    data = frame()
    assert int.from_bytes(data[8:12], "big") == zlib.crc32(data[:8])
    assert int.from_bytes(data[-4:], "big") == zlib.crc32(data[:-4])
    assert int.from_bytes(data[:4], "big") == len(data)
