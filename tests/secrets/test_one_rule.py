"""One credential-name rule for every road: a WebSocket frame is read as an HTTP body is.

The WebSocket copy of the rule had drifted from the HTTP one: no JSON-schema
exemption, and strings only where HTTP also takes numbers. Both now walk JSON
with `_secrets._walk`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ghostrun._secrets._collect import field_secrets
from ghostrun._secrets._mask import MASK
from ghostrun._secrets._mask_entry import redact_entry
from ghostrun._store._wscassette import Conversation, decode_frame
from ghostrun._store._wsredact import redact_conversation, secrets_of

pytestmark = pytest.mark.usefixtures("forget_new_secrets")

PASSWORD = {"type": "string", "description": "the account password"}
SCHEMA = {"type": "object", "properties": {"password": PASSWORD}}


def _stored_frames(*frames: tuple[str, Any]) -> list[dict[str, Any]]:
    conversation = Conversation("wss://api.example.test/v1/realtime")
    for side, value in frames:
        getattr(conversation, side)(json.dumps(value))
    return list(redact_conversation(conversation, [], []).to_json()["frames"])


def test_a_websocket_frame_reads_credential_fields_as_an_http_body_does() -> None:
    """A schema under a credential field is structure, a number under one a credential."""
    greeting = {"type": "session.created", "session": {"api_key": 98765432101}}
    update = {"type": "session.update", "tools": [{"parameters": SCHEMA}]}
    events = [{"server": {"json": greeting}}, {"client": {"json": update}}]

    found = secrets_of([], [], events)

    assert "98765432101" in found  # a number, as an HTTP body's is read
    assert not {"string", "the account password"} & found  # they describe one, not carry it
    assert found >= {v for v in field_secrets(greeting) | field_secrets(update) if len(v) >= 6}
    frames = _stored_frames(
        ("server", greeting),
        ("client", update),
        ("server", {"type": "text", "text": "a string; your key is 98765432101"}),
    )
    assert frames[1]["client"]["json"] == update  # the schema kept whole
    assert frames[2]["server"]["json"]["text"] == f"a string; your key is {MASK}"


NAMES = st.sampled_from(
    [
        *("api_key", "apiKey", "password", "token", "client_secret", "auth", "signature"),
        *("key", "model", "messages", "metadata", "note", "properties", "items", "tools"),
    ]
)
SCHEMAS = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "object", "boolean"])},
    optional={"description": st.sampled_from(["the account password", "what the user types"])},
)
# Strings too short to be masked as exact values anywhere (no digits, five letters at the
# most), beside the schemas' words: what differs between the roads is then only how they
# read credential fields.
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # wider ones are no JSON value: kept as text (below)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text("abcdefghij", max_size=5)
)
JSON_VALUES = st.recursive(
    LEAVES | SCHEMAS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(NAMES, JSON_VALUES, min_size=1, max_size=4))
def test_property_http_and_websocket_redaction_mask_the_same_json_alike(
    value: dict[str, Any],
) -> None:
    entry = {"request": {"body": {"json": value}}, "response": {}}
    as_body = redact_entry(entry, frozenset())["request"]["body"]["json"]

    (frame,) = _stored_frames(("client", value))

    assert frame["client"]["json"] == as_body


def test_a_server_frame_whose_integer_a_float_would_change_replays_as_it_came() -> None:
    """An integer past 64 bits parses as a float: stored as JSON it would replay another number."""
    text = json.dumps({"type": "seed", "n": -9223372036854775809, "big": 2**70})

    (frame,) = _stored_frames(("server", json.loads(text)))

    assert frame == {"server": {"text": text}}
    assert decode_frame(frame["server"]) == text
