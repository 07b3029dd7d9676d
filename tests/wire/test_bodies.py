"""How bodies are stored (`ghostrun._wire._bodies`): exact bytes back, readable files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._wire._bodies import (
    JSON_FORMATS,
    STREAM_KINDS,
    decode_body,
    encode_chunks,
    encode_response_body,
)

LOOPBACK = ("127.0.0.1",)
JSON_TYPE = "application/json"


def stored(body: dict[str, Any]) -> dict[str, Any]:
    """The body as it comes back from a cassette file."""
    return orjson.loads(orjson.dumps(body))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"b":1,"a":[true,null]}', None),
        (b'{\n  "b": 1,\n  "a": []\n}', "indent2"),
        (b'{\n  "b": 1\n}\n', "indent2+newline"),
        (b'{"b": 1, "a": "caf\\u00e9"}', "python"),
        ('{"b": 1, "a": "café"}'.encode(), "python-utf8"),
        (b'{"x":6.1e-05}', "python-compact-utf8"),
        (b'{"x":0.000061}', None),
        (b'{\n  "x": 6.1e-05\n}', "python-indent2-utf8"),
        (b'{\n  "x": "\\u00e9"\n}\n', "python-indent2+newline"),
        (b"[1.0, 2]", "python-utf8"),
    ],
)
def test_a_json_body_keeps_the_format_that_gives_its_bytes_back(
    data: bytes, expected: str | None
) -> None:
    body = encode_response_body(data, JSON_TYPE)
    assert body.get("format") == expected and "json" in body
    assert decode_body(stored(body)) == data


@pytest.mark.parametrize(
    "data",
    [
        b'{"n":18446744073709551616}',  # past 2**64: orjson reads a float
        b'{"a":1,"a":2}',
        b'{"u":"https:\\/\\/x"}',
        b'{"a" : 1}',
        b'{\n    "four": 4\n}',  # indented by four
        b'{"e":1E5}',
        b'{"a":"\\u00e9","b":"\xc3\xa9"}',
    ],
)
def test_json_that_no_format_reproduces_is_stored_as_text(data: bytes) -> None:
    assert encode_response_body(data, JSON_TYPE) == {"text": data.decode()}


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, name=st.sampled_from(sorted(JSON_FORMATS)))
def test_whatever_a_format_writes_replays_byte_for_byte(value: Any, name: str) -> None:
    data = JSON_FORMATS[name](value)
    body = encode_response_body(data, JSON_TYPE)
    assert "json" in body or "text" in body
    assert decode_body(stored(body)) == data


@pytest.mark.parametrize("text", ["a€b", "😀", "é\nü", "ascii only", "日本語 🎉 ok"])
def test_a_stream_split_anywhere_stays_text_and_replays_its_chunks(text: str) -> None:
    data = text.encode()
    for cuts in itertools.chain(
        itertools.combinations(range(1, len(data)), 1),
        itertools.combinations(range(1, len(data)), 2),
        itertools.combinations(range(1, len(data)), 3),
    ):
        chunks = [data[a:b] for a, b in zip((0, *cuts), (*cuts, len(data)), strict=True)]
        body = encode_chunks(chunks, "text/event-stream")
        assert "".join(body["sse"]) == text, cuts
        assert decode_body(stored(body)) == chunks, cuts


def test_only_a_stream_that_is_not_utf8_goes_base64() -> None:
    assert "chunks_base64" in encode_chunks([b"data: \xff\n\n"], "text/event-stream")
    assert "chunks_base64" in encode_chunks([b"ok \xe2\x82"], "text/event-stream")  # ends inside


def test_a_readable_stream_says_where_it_moved_a_split_character() -> None:
    body = encode_chunks([b"data: \xe2", b"\x82\xac\n\n"], "text/event-stream")
    assert body == {"sse": ["data: ", "€\n\n"], "carry": [[0, 1]]}


# -- files -------------------------------------------------------------------------


def record_raw(provider: ProviderSimulator, cassette_dir: Path, reply: RawReply) -> Path:
    provider.raw_replies["r"] = reply
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.get(provider.url("/raw/r")).raise_for_status()
    (path,) = cassette_dir.glob("*.json")
    return path


def replay_raw(provider: ProviderSimulator, cassette_dir: Path) -> httpx.Response:
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        return httpx.get(provider.url("/raw/r"))


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ({"json": {}, "format": "indent7"}, r"body\.format: unknown JSON format"),
        ({"sse": ["a", "b"], "carry": [[1, 1]]}, 'bad "carry" entry'),
        ({"sse": ["a", "b"], "carry": [[0, 9]]}, r"body\.carry\[0\]: expected \[chunk index"),
        ({"sse": ["a", "b"], "carry": [[0, 2]]}, "runs past"),
        ({"text": "x", "format": "compact"}, "body.format: not a modifier of a .text. body"),
    ],
)
def test_a_bad_modifier_is_a_corrupt_cassette_naming_its_file(
    provider: ProviderSimulator, cassette_dir: Path, body: dict[str, Any], complaint: str
) -> None:
    path = record_raw(provider, cassette_dir, RawReply(200, [("content-type", JSON_TYPE)], b"{}"))
    data = orjson.loads(path.read_bytes())
    data["responses"][0]["body"] = body
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(ghostrun.DamagedCassette, match=f"corrupt cassette {path}.*{complaint}"):
        replay_raw(provider, cassette_dir)


def test_a_version_1_cassette_replays_as_it_always_did_and_is_kept_on_append(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Version 1 wrote every key sorted and replayed JSON compact; so it still does."""
    path = record_raw(provider, cassette_dir, RawReply(200, [("content-type", JSON_TYPE)], b"{}"))
    v1 = orjson.loads(path.read_bytes())
    v1["version"] = 1
    v1["responses"] = [
        {
            "body": {"json": {"a": 1, "b": [1.5]}},
            "headers": {"content-type": JSON_TYPE},
            "status": 200,
        }
    ]
    path.write_bytes(json.dumps(v1, indent=2, sort_keys=True).encode())
    assert replay_raw(provider, cassette_dir).content == b'{"a":1,"b":[1.5]}'

    provider.raw_replies["r"] = RawReply(200, [("content-type", JSON_TYPE)], b'{"z": 1}')
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        first, second = httpx.get(provider.url("/raw/r")), httpx.get(provider.url("/raw/r"))
    assert (first.content, second.content) == (b'{"a":1,"b":[1.5]}', b'{"z": 1}')
    upgraded = orjson.loads(path.read_bytes())
    assert upgraded["version"] == 2
    assert [r["body"] for r in upgraded["responses"]] == [
        {"json": {"a": 1, "b": [1.5]}},
        {"format": "python-utf8", "json": {"z": 1}},
    ]


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(STREAM_KINDS),
    chunks=st.lists(st.text(max_size=6) | st.integers() | st.none(), max_size=5),
)
def test_a_stream_without_carries_decodes_to_its_chunks_whatever_they_hold(
    kind: str, chunks: list[Any]
) -> None:
    """The everyday stream takes a shorter road (its chunks encoded at once) to the same
    chunks the general reading gives: each value as text, UTF-8."""
    assert decode_body({kind: chunks}) == [str(chunk).encode() for chunk in chunks]
