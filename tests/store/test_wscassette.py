"""The WebSocket cassette's I/O-free core: frames, the id leniency, the key, the script, reading."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import ghostrun
from ghostrun._intercept._wslink import read_conversations
from ghostrun._store._wscassette import (
    Close,
    Conversation,
    Script,
    canonical_frame,
    conversation_key,
    decode_frame,
    encode_frame,
    url_prefix,
)


@pytest.mark.parametrize(
    ("data", "stored"),
    [
        ('{"type": "session.update"}', {"json": {"type": "session.update"}}),
        ("[1, 2]", {"json": [1, 2]}),
        ("123", {"text": "123"}),  # JSON, but not an object or an array: text
        ("{not json", {"text": "{not json"}),
        ("plain", {"text": "plain"}),
        (b"\x00\xff", {"base64": "AP8="}),
        (b'{"setupComplete": {}}', {"binary_json": {"setupComplete": {}}}),
    ],
)
def test_frames_are_stored_readably(data: str | bytes, stored: dict[str, Any]) -> None:
    assert encode_frame(data) == stored
    decoded = decode_frame(stored)
    assert type(decoded) is type(data)
    assert decode_frame(encode_frame(decoded)) == decoded


@pytest.mark.parametrize(
    ("recorded", "sent", "same"),
    [
        ({"event_id": "a"}, {"event_id": "b"}, True),  # event_id: any value, at any depth
        ({"x": {"event_id": "client-1"}}, {"x": {"event_id": "client-2"}}, True),
        ({"id": "evt_Ab3dE5gH7jK9mN1p"}, {"id": "evt_Zy8xW6vU4tS2rQ0o"}, True),
        ({"id": "3f1b2c4d-0a9e-4b7c-8d6e-5f4a3b2c1d0e"}, {"id": str(uuid.uuid4())}, True),
        ({"item": "item_0a1b2c3d4e5f"}, {"item": "item_9z8y7x6w5v4u"}, True),
        ({"model": "gpt-realtime"}, {"model": "gpt-4o-realtime"}, False),
        ({"name": "get_weather_forecast"}, {"name": "get_weather_forecasts"}, False),  # no digit
        ({"id": "evt_short1"}, {"id": "evt_short2"}, False),  # too short to be generated
        ({"text": "Hello there"}, {"text": "Hello world"}, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order
    ],
)
def test_client_generated_ids_match_leniently(
    recorded: dict[str, Any], sent: dict[str, Any], same: bool
) -> None:
    matched = canonical_frame({"json": recorded}) == canonical_frame({"json": sent})
    assert matched is same


def test_the_key_is_the_url_prefix_then_url_and_first_frame() -> None:
    url = "wss://api.openai.com/v1/realtime?model=gpt-realtime"
    one = conversation_key(url, {"json": {"type": "session.update", "event_id": "x"}}, ())
    two = conversation_key(url, {"json": {"event_id": "y", "type": "session.update"}}, ())
    other = conversation_key(url, {"json": {"type": "response.create"}}, ())
    assert one == two != other
    assert len(one) == 32 and one[:16] == other[:16] == url_prefix(url)
    assert url_prefix("wss://api.openai.com/v1/responses") != url_prefix(url)


def test_the_script_hands_out_server_frames_after_the_client_frames_before_them() -> None:
    conversation = Conversation(
        "ws://h/",
        events=[
            {"server": {"text": "hello"}},
            {"client": {"text": "q1"}},
            {"server": {"text": "a1"}},
            {"server": {"base64": "AQ=="}},
            {"client": {"text": "q2"}},
            {"close": {"by": "server", "code": 1000, "reason": "done"}},
        ],
    )
    script = Script(conversation, ())
    assert script.match({"text": "q1"}) is True  # sent before the greeting was read: still due
    assert script.next_server() == "hello"
    assert script.next_server() == "a1"
    assert script.next_server() == b"\x01"
    assert script.next_server() is None  # waits for q2
    assert script.match({"text": "other"}) == {"text": "q2"}
    assert script.match({"text": "q2"}) is True
    assert script.next_server() == Close("server", 1000, "done")
    with pytest.raises(EOFError):
        script.next_server()


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"kind": "websocket", "version": 1, "key": "c"}, '"conversations" missing'),
        (
            {"kind": "websocket", "version": 1, "key": "c", "conversations": [{}]},
            "conversations[0]",
        ),
        (
            {
                "kind": "websocket",
                "version": 1,
                "key": "c",
                "conversations": [{"handshake": {"url": "ws://h/"}, "frames": [{"server": {}}]}],
            },
            "conversations[0]: frames[0].server",
        ),
        ({"kind": "websocket", "version": 9, "key": "c", "conversations": []}, "format version 9"),
    ],
)
def test_a_malformed_websocket_cassette_names_the_file_and_the_field(
    tmp_path: Path, document: dict[str, Any], field: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ghostrun.CassetteError) as error:
        read_conversations(path)
    assert str(path) in str(error.value) and field in str(error.value)
