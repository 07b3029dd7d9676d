"""Credential names by rule, values worth masking, and fast paths that agree with slow ones.

Tables of ``(input, expected)`` for the rule of DESIGN §4, and hypothesis
properties for every fast path that skips a walk: whatever it skips, the
walk would have found nothing.
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ghostrun._secrets._credentials import (
    CREDENTIAL_ENDINGS,
    CREDENTIAL_STARTS,
    HARMLESS_FIELDS,
    HARMLESS_NAMES,
    SECRET_SHAPES,
    SHAPE_START,
    could_be_credential,
    is_credential_field,
    is_credential_header,
    is_credential_param,
    squash,
)
from ghostrun._secrets._headers import keep_response_header
from ghostrun._secrets._mask import candidates, mask_text, patterns
from ghostrun._secrets._mask_entry import redact_entry
from ghostrun._secrets._mask_exact import may_hold
from ghostrun._secrets._walk import without_credential_fields
from ghostrun._store._keys import canonical_body

JSON_TYPE = "application/json"

pytestmark = pytest.mark.usefixtures("forget_new_secrets")


# name, as a JSON field, as a query/form parameter, as a request header
NAMES = [
    ("openai_api_key", True, True, True),
    ("apiSecret", True, True, True),
    ("credentials", True, True, True),
    ("serviceAccountKey", True, True, True),
    ("auth", True, True, True),
    ("authorization_token", True, True, True),
    ("access_key", True, True, True),
    ("private_token", True, True, True),
    ("x_api_key", True, True, True),
    ("X-Amz-Signature", True, True, True),
    ("passwd", True, True, True),
    ("code", False, True, False),  # an OAuth code in a URL; code in a body is code
    ("sig", False, True, False),  # the signature of an Azure SAS URL
    ("key", False, True, True),  # Gemini's ?key=; a JSON "key" is structure
    ("signature", False, True, True),  # Anthropic thinking blocks carry one
    ("thoughtSignature", False, True, True),
    ("helicone-auth", False, False, True),  # a header: each word by the rule
    ("cookie", False, False, True),
    ("max_tokens", False, False, False),
    ("max_completion_tokens", False, False, False),
    ("maxOutputTokens", False, False, False),
    ("total_tokens", False, False, False),
    ("prompt_tokens", False, False, False),
    ("input_tokens", False, False, False),
    ("token_count", False, False, False),
    ("tokens", False, False, False),
    ("idempotency_key", False, False, False),
    ("Idempotency-Key", False, False, False),
    ("cache_key", False, False, False),
    ("prompt_cache_key", False, False, False),
    ("pageToken", False, False, False),
    ("author", False, False, False),
    ("authors", False, False, False),
    ("keys", False, False, False),
    ("model", False, False, False),
    ("x-stainless-retry-count", False, False, False),
    ("x-goog-api-client", False, False, False),
]


@pytest.mark.parametrize(("name", "field", "param", "header"), NAMES)
def test_credential_names_by_rule(name: str, field: bool, param: bool, header: bool) -> None:
    assert (is_credential_field(name), is_credential_param(name), is_credential_header(name)) == (
        field,
        param,
        header,
    )


@pytest.mark.parametrize("name", sorted({*HARMLESS_NAMES, *HARMLESS_FIELDS}))
def test_every_harmless_name_is_one_the_rule_would_match(name: str) -> None:
    """A safe-list entry the rule never matches would be dead weight, or a typo."""
    assert name == squash(name)
    assert name.endswith(CREDENTIAL_ENDINGS) or name.startswith(CREDENTIAL_STARTS)


VALUES = [
    ("ollama", False),
    ("lm-studio", False),
    ("EMPTY", False),
    ("none", False),
    ("sk-no-key-required", False),
    ("dummy", False),
    ("placeholder", False),
    ("x", False),
    ("sk-1234", False),
    ("pa55word!", False),  # too short to tell from a word
    ("sk-" + "x" * 20, False),  # a placeholder in the shape of a key
    ("YOUR_API_KEY_HERE", False),  # no digit, no mixed case, no symbol
    ("hunter2-hunter2", True),
    ("tok-0123456789", True),
    ("AKIA" + "ABCDEFGHIJKLMNOP", True),  # a known shape
    ("sk-proj-" + "A1b2C3d4" * 4, True),
    ("correcthorsebatterystaple", True),  # long enough without digits
    ("gëheim-Schlüssel-42", True),
]


@pytest.mark.parametrize(("value", "expected"), VALUES)
def test_could_be_credential(value: str, expected: bool) -> None:
    assert could_be_credential(value) is expected


# -- the schema of a tool is structure (issue 22) --------------------------------------

TOOL_BODY = {
    "model": "m",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "login",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "password": {"type": "string", "description": "the user's password"},
                        "api_key": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                    "required": ["password"],
                },
            },
        }
    ],
    "password": "hunter2-hunter2",
}


def test_a_schema_under_a_credential_name_is_kept_in_the_key_and_the_stored_request() -> None:
    canonical = orjson.loads(canonical_body(json.dumps(TOOL_BODY).encode(), JSON_TYPE))
    assert canonical["tools"] == TOOL_BODY["tools"]
    assert "password" not in canonical
    entry = {"request": {"body": {"json": TOOL_BODY}}, "response": {"body": {"text": "string"}}}
    stored = redact_entry(entry, frozenset())
    assert stored["request"]["body"]["json"]["tools"] == TOOL_BODY["tools"]
    assert stored["request"]["body"]["json"]["password"] == "[REDACTED]"
    assert stored["response"]["body"]["text"] == "string"


# -- fast paths agree with the slow ones --------------------------------------------------

NAME_PARTS = st.sampled_from(
    [
        *CREDENTIAL_ENDINGS,
        *CREDENTIAL_STARTS,
        *HARMLESS_NAMES,
        *HARMLESS_FIELDS,
        "api",
        "max",
        "_",
        "-",
        "K",
        "\u212a",  # KELVIN SIGN: lower-cases to "k"
        "\u0130",  # I WITH DOT: lower-cases to two characters
        "é",
        "model",
        "Token",
        "KEY",
        "s",
    ]
)
NAMES_GENERATED = st.lists(NAME_PARTS, min_size=1, max_size=4).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | NAMES_GENERATED,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES_GENERATED, inner, max_size=3),
    max_leaves=12,
)


def _spelled(value: Any, escape: bool, ascii_only: bool) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_only)
    if escape:  # a JSON escape for every "k": the same document, spelled differently
        text = text.replace("k", "\\u006b")
    return text.encode()


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES, escape=st.booleans(), ascii_only=st.booleans())
def test_property_the_key_drops_the_credential_fields_however_the_body_is_spelled(
    value: Any, escape: bool, ascii_only: bool
) -> None:
    body = _spelled(value, escape, ascii_only)
    slow = orjson.dumps(without_credential_fields(orjson.loads(body)), option=orjson.OPT_SORT_KEYS)
    assert canonical_body(body, JSON_TYPE) == slow


SHAPE_TEXT = st.lists(
    st.sampled_from(
        ["sk-", "AKIA", "eyJ", "Bearer ", "-----BEGIN", "gsk_", "ghp_", "xoxb-", "ya29."]
    )
    | st.text(min_size=1, max_size=30)
    | st.text(st.sampled_from('aZ09_-.\n"\\é\u2028'), min_size=16, max_size=40),
    max_size=5,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(strings=st.lists(SHAPE_TEXT, min_size=1, max_size=3))
def test_property_the_shape_fast_path_skips_only_texts_without_shapes(strings: list[str]) -> None:
    request = {"body": {"json": {"messages": [{"content": s} for s in strings]}}}
    if not SHAPE_START.search(orjson.dumps(request).decode()):
        assert not any(SECRET_SHAPES.search(s) for s in strings)


SECRET_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0x2FF) | st.sampled_from(
    list('"\\/&<>+% é€😀')
)
SECRETS = st.text(SECRET_CHARS, min_size=12, max_size=24).filter(could_be_credential)


@settings(max_examples=300, deadline=None)
@given(
    secret=SECRETS,
    around=st.text(SECRET_CHARS, max_size=10),
    form=st.sampled_from(
        ["plain", "json", "json twice", "ascii json twice", "percent", "html", "base64"]
    ),
)
def test_property_the_exact_fast_check_skips_only_entries_without_the_secret(
    secret: str, around: str, form: str
) -> None:
    from urllib.parse import quote

    shown = {
        "plain": secret,
        "json": json.dumps(secret, ensure_ascii=False)[1:-1],
        "json twice": json.dumps(json.dumps({"k": secret}, ensure_ascii=False)),
        "ascii json twice": json.dumps(json.dumps({"k": secret})),
        "percent": quote(secret, safe=""),
        "html": html.escape(secret),
        "base64": base64.b64encode(f"user:{secret}".encode()).decode(),
    }[form]
    assert secret in candidates(around + shown + around, [secret])  # the scrub's prefilter
    entry = {"request": {}, "response": {"body": {"json": {"t": around + shown + around}}}}
    secrets = frozenset({secret})
    assert may_hold(entry, secrets)  # the fast check never skips an entry holding it
    masked = redact_entry(entry, secrets)["response"]["body"]["json"]["t"]
    assert shown not in masked
    assert masked == mask_text(around + shown + around, patterns(secrets))


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("x-amzn-bedrock-input-token-count", True),  # a count, not a token
        ("x-ratelimit-limit-tokens", True),
        ("openai-processing-ms", True),
        ("mcp-session-id", True),  # MCP over HTTP: without it replay makes other requests
        ("x-amzn-passwd", False),  # the rule's table, not a copy of it
        ("x-amzn-session-token", False),
        ("x-goog-api-key", False),
        ("x-ms-client-secret", False),
        ("openai-authorization", False),
        ("x-amzn-remapped-authorization", False),
    ],
)
def test_kept_response_headers_drop_credentials_by_the_names_rule(name: str, kept: bool) -> None:
    assert keep_response_header(name) is kept
