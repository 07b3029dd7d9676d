"""The match key as pure functions: canonical URL, canonical body, ignored fields.

Tables of ``(input, expected)``: what two requests must share to replay each
other, and what must never enter the key (credentials above all).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ghostrun._secrets._walk import has_credential_field, without_credential_fields
from ghostrun._store._keys import (
    canonical_body,
    canonical_url,
    is_credential_field,
    is_credential_param,
    match_key,
    split_field_paths,
)

JSON_TYPE = "application/json"
# Fake credentials, assembled at run time so no credential-shaped literal sits in git.
FAKE_GOOGLE_KEY = "AIza" + "SyA-secret-secret-secret-secret00"
FAKE_AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
FORM_TYPE = "application/x-www-form-urlencoded"


# -- canonical URL ---------------------------------------------------------------

URLS = [
    pytest.param(
        ("https", "API.OpenAI.com", 443, "/v1/chat/completions", ""),
        "https://api.openai.com/v1/chat/completions",
        id="host lower-cased, default https port dropped",
    ),
    pytest.param(
        ("HTTP", "localhost", 80, "/api/chat", ""),
        "http://localhost/api/chat",
        id="default http port dropped",
    ),
    pytest.param(
        ("http", "127.0.0.1", 11434, "/api/chat", ""),
        "http://127.0.0.1:11434/api/chat",
        id="other port kept",
    ),
    pytest.param(("https", "example.com", None, "", ""), "https://example.com/", id="empty path"),
    pytest.param(("http", "::1", 8080, "/v1", ""), "http://[::1]:8080/v1", id="ipv6 bracketed"),
    pytest.param(
        ("https", "h", None, "/p", "b=2&a=1&a=0"),
        "https://h/p?a=0&a=1&b=2",
        id="query sorted",
    ),
    pytest.param(("https", "h", None, "/p", "a=&b=1"), "https://h/p?a=&b=1", id="blank kept"),
    pytest.param(
        ("https", "h", None, "/p", "q=hello%20world"),
        "https://h/p?q=hello+world",
        id="percent-encoding normalised (%20)",
    ),
    pytest.param(
        ("https", "h", None, "/p", "q=hello+world"),
        "https://h/p?q=hello+world",
        id="percent-encoding normalised (+)",
    ),
    pytest.param(
        (
            "https",
            "generativelanguage.googleapis.com",
            443,
            "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
            f"key={FAKE_GOOGLE_KEY}&alt=sse",
        ),
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.0-flash:streamGenerateContent?alt=sse",
        id="gemini key= dropped",
    ),
    pytest.param(
        ("https", "h", None, "/p", "key=only-a-key-here"),
        "https://h/p",
        id="no query left, no question mark",
    ),
    pytest.param(
        (
            "https",
            "bucket.s3.amazonaws.com",
            None,
            "/o",
            f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={FAKE_AWS_KEY_ID}%2F20240101"
            "&X-Amz-Signature=abcdef0123&X-Amz-Security-Token=FwoGZX%2F%2F&X-Amz-Date=20240101T0",
        ),
        "https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20240101T0",
        id="sigv4 presigned credential params dropped",
    ),
    pytest.param(
        ("https", "acct.blob.core.windows.net", None, "/c", "sv=2024&sig=abc%2Bdef&se=2030"),
        "https://acct.blob.core.windows.net/c?se=2030&sv=2024",
        id="azure sas sig dropped",
    ),
    pytest.param(
        (
            "https",
            "h",
            None,
            "/p",
            "api_key=a1&API-KEY=a2&apiKey=a3&access_token=a4&token=a5&password=a6&q=1",
        ),
        "https://h/p?q=1",
        id="credential names in any spelling dropped",
    ),
    pytest.param(
        ("https", "h", None, "/p", "max_tokens=5&tokens=3&keys=1&key_id=3"),
        "https://h/p?key_id=3&keys=1&max_tokens=5&tokens=3",
        id="names merely containing key or token kept",
    ),
]


@pytest.mark.parametrize(("parts", "expected"), URLS)
def test_canonical_url(parts: tuple[str, str, int | None, str, str], expected: str) -> None:
    assert canonical_url(*parts) == expected


# -- canonical body ------------------------------------------------------------------


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


BODIES = [
    pytest.param(b"", JSON_TYPE, b"", id="empty"),
    pytest.param(
        b'{"b": 1,\n "a": {"d": 2, "c": 3}}',
        JSON_TYPE,
        b'{"a":{"c":3,"d":2},"b":1}',
        id="json sorted and compact",
    ),
    pytest.param(b'{"b":1,"a":2}', "", b'{"a":2,"b":1}', id="json sniffed without content-type"),
    pytest.param(b"[3, 1]", "application/vnd.api+json", b"[3,1]", id="list order kept"),
    pytest.param(b'{"a": nope', JSON_TYPE, b'{"a": nope', id="invalid json kept as sent"),
    pytest.param(b"plain words", "text/plain", b"plain words", id="text kept as sent"),
    pytest.param(b"\x00\xffbinary", "application/octet-stream", b"\x00\xffbinary", id="binary"),
    pytest.param(
        _json({"model": "m", "api_key": "sk-a", "apiKey": "x", "password": "p", "secret": "s"}),
        JSON_TYPE,
        b'{"model":"m"}',
        id="json credential fields dropped",
    ),
    pytest.param(
        _json(
            {"tools": [{"type": "mcp", "authorization": "t", "headers": {"Authorization": "B"}}]}
        ),
        JSON_TYPE,
        b'{"tools":[{"headers":{},"type":"mcp"}]}',
        id="nested credential fields dropped (remote MCP tool)",
    ),
    pytest.param(
        _json(
            {
                "max_tokens": 5,
                "max_completion_tokens": 6,
                "total_tokens": 7,
                "token_count": 8,
                "tokens": [1, 2],
                "key": "k",
                "messages": [{"content": "what is an access token?"}],
            }
        ),
        JSON_TYPE,
        b'{"key":"k","max_completion_tokens":6,"max_tokens":5,'
        b'"messages":[{"content":"what is an access token?"}],"token_count":8,'
        b'"tokens":[1,2],"total_tokens":7}',
        id="token counts and prose about tokens kept",
    ),
    pytest.param(
        b'{"model": "m", "api\\u005fkey": "sk-a", "Pass-Word": "p"}',
        JSON_TYPE,
        b'{"model":"m"}',
        id="credential field names spelled with escapes or dashes dropped",
    ),
    pytest.param(
        b"b=2&api_key=sk-x&a=1&client_secret=s",
        FORM_TYPE,
        b"a=1&b=2",
        id="form sorted, credential fields dropped",
    ),
]


@pytest.mark.parametrize(("body", "content_type", "expected"), BODIES)
def test_canonical_body(body: bytes, content_type: str, expected: bytes) -> None:
    assert canonical_body(body, content_type) == expected


def _multipart(boundary: str, parts: list[tuple[str, str]]) -> tuple[bytes, str]:
    lines = []
    for name, value in parts:
        lines += [f"--{boundary}", f'Content-Disposition: form-data; name="{name}"', "", value]
    body = "\r\n".join([*lines, f"--{boundary}--", ""]).encode()
    return body, f'multipart/form-data; boundary="{boundary}"'


MULTIPART = [
    pytest.param(
        [("model", "whisper-1"), ("file", "RIFF")],
        [("model", "whisper-1"), ("file", "RIFF")],
        True,
        id="same parts, other boundary: same key",
    ),
    pytest.param([("model", "whisper-1")], [("model", "whisper-2")], False, id="other value"),
    pytest.param([("a", "1"), ("b", "2")], [("b", "2"), ("a", "1")], False, id="part order counts"),
    pytest.param(
        [("model", "m"), ("api_key", "first-key-0123")],
        [("model", "m"), ("api_key", "other-key-9876")],
        True,
        id="credential parts dropped",
    ),
    pytest.param(
        [("model", "m"), ("api_key", "first-key-0123")],
        [("model", "m")],
        True,
        id="with or without a credential part",
    ),
]


@pytest.mark.parametrize(("first", "second", "same"), MULTIPART)
def test_canonical_multipart(
    first: list[tuple[str, str]], second: list[tuple[str, str]], same: bool
) -> None:
    one = canonical_body(*_multipart("boundary-one-123", first))
    two = canonical_body(*_multipart("other-boundary-987", second))
    assert b"boundary" not in one + two
    assert (one == two) is same


def test_multipart_without_boundary_is_kept_as_sent() -> None:
    body = b"--x\r\nraw\r\n--x--\r\n"
    assert canonical_body(body, "multipart/form-data") == body


# -- ignored fields --------------------------------------------------------------------

BASE = {
    "model": "m",
    "metadata": {"trace_id": "t-1", "user": "u"},
    "messages": [{"id": "a", "content": "hi"}, {"id": "b", "content": "yo"}],
    "seed": 7,
}

IGNORES = [
    pytest.param(["metadata.trace_id"], {**BASE, "metadata": {"user": "u"}}, id="nested field"),
    pytest.param(
        ["seed", "model"],
        {k: v for k, v in BASE.items() if k not in ("seed", "model")},
        id="top-level fields",
    ),
    pytest.param(
        ["messages.*.id"],
        {**BASE, "messages": [{"content": "hi"}, {"content": "yo"}]},
        id="wildcard over a list",
    ),
    pytest.param(["messages.0"], {**BASE, "messages": [BASE["messages"][1]]}, id="list index"),
    pytest.param(["*.user"], {**BASE, "metadata": {"trace_id": "t-1"}}, id="wildcard over keys"),
    pytest.param(["messages.9", "nope.deeper", "seed.x", "messages.x"], BASE, id="absent: no-op"),
    pytest.param(
        ["messages[*].id"],
        {**BASE, "messages": [{"content": "hi"}, {"content": "yo"}]},
        id="the diff's wildcard",
    ),
    pytest.param(
        ["messages[0]"], {**BASE, "messages": [BASE["messages"][1]]}, id="the diff's index"
    ),
    pytest.param(
        ["messages[1].id"],
        {**BASE, "messages": [BASE["messages"][0], {"content": "yo"}]},
        id="the diff's notation",
    ),
]


@pytest.mark.parametrize(("ignore", "expected"), IGNORES)
def test_ignore_fields(ignore: list[str], expected: Any) -> None:
    paths = split_field_paths(ignore)
    assert canonical_body(_json(BASE), JSON_TYPE, paths) == orjson.dumps(
        expected, option=orjson.OPT_SORT_KEYS
    )


def test_ignored_fields_make_requests_share_a_key() -> None:
    paths = split_field_paths(["metadata.trace_id"])
    other = {**BASE, "metadata": {"trace_id": "t-2", "user": "u"}}
    assert canonical_body(_json(BASE), JSON_TYPE, paths) == canonical_body(
        _json(other), JSON_TYPE, paths
    )
    assert canonical_body(_json(BASE), JSON_TYPE) != canonical_body(_json(other), JSON_TYPE)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (["a"], (("a",),)),
        (["a.b.c", "*.d"], (("a", "b", "c"), ("*", "d"))),
        (["x.0"], (("x", "0"),)),
        (
            ["messages[0].name", "messages[*].name"],
            (("messages", "0", "name"), ("messages", "*", "name")),
        ),
        (["[0].a", "a[1][2]"], (("0", "a"), ("a", "1", "2"))),
        ((), ()),
    ],
)
def test_split_field_paths(fields: list[str], expected: tuple[tuple[str, ...], ...]) -> None:
    assert split_field_paths(fields) == expected


@pytest.mark.parametrize(
    "field", ["", "a..b", ".a", "a.", "a[0", "a[x]", "a]", "a[-1]", "a[0]b", "a[]"]
)
def test_a_path_that_can_never_match_is_an_error_naming_it(field: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid ignore_fields path {field!r}")):
        split_field_paths([field])


# -- names that carry credentials ------------------------------------------------------

CREDENTIAL_NAMES = [
    ("api_key", True, True),
    ("apiKey", True, True),
    ("X-API-KEY", True, True),
    ("password", True, True),
    ("client_secret", True, True),
    ("access_token", True, True),
    ("refresh-token", True, True),
    ("authorization", True, True),
    ("aws_secret_access_key", True, True),
    ("token", True, True),
    ("key", True, False),  # Gemini's ?key=, but a JSON "key" is ordinary data
    ("sig", True, False),
    ("signature", True, False),  # Anthropic thinking blocks carry a "signature"
    ("X-Amz-Credential", True, True),
    ("max_tokens", False, False),
    ("max_completion_tokens", False, False),
    ("total_tokens", False, False),
    ("token_count", False, False),
    ("tokens", False, False),
    ("keys", False, False),
    ("monkey", False, False),  # words, not suffixes: "monkey" is not "key"
    ("author_email", False, False),  # nor prefixes: "author" is not "auth"
    ("model", False, False),
]


@pytest.mark.parametrize(("name", "param", "field"), CREDENTIAL_NAMES)
def test_credential_names(name: str, param: bool, field: bool) -> None:
    assert is_credential_param(name) is param
    assert is_credential_field(name) is field


# -- the key ------------------------------------------------------------------------


def test_match_key_is_32_hex_digits_and_stable() -> None:
    key = match_key("post", "https://h/p", b"{}")
    assert len(key) == 32
    assert int(key, 16) >= 0
    assert key == match_key("POST", "https://h/p", b"{}")


def test_match_key_is_the_sha256_cassettes_are_named_by() -> None:
    """Committed cassettes are found by this name: its recipe never changes."""
    expected = hashlib.sha256(b"POST\nhttps://h/p\n{}").hexdigest()[:32]
    assert match_key("post", "https://h/p", b"{}") == expected


def _spellings(name: str) -> list[str]:
    """Ways one credential field name can be written that all name it."""
    return [
        name,
        name.upper(),
        "_".join(name),  # a_p_i_k_e_y
        "-".join(name.upper()),
        name.replace("k", "\u212a"),  # KELVIN SIGN: lower-cases to "k" (non-ASCII)
        "\\u00" + format(ord(name[0]), "02x") + name[1:],  # the first letter as a JSON escape
    ]


CREDENTIAL_FIELDS = ["apikey", "password", "passwd", "secret", "accesstoken", "authorization"]


@pytest.mark.parametrize("name", CREDENTIAL_FIELDS)
def test_every_spelling_of_a_credential_field_is_dropped_from_the_key(name: str) -> None:
    for spelling in _spellings(name):
        body = b'{"model": "m", "nested": [{"' + spelling.encode() + b'": "sk-1"}]}'
        assert canonical_body(body, JSON_TYPE) == b'{"model":"m","nested":[{}]}', spelling


@pytest.mark.parametrize(
    "other",
    [("GET", "https://h/p", b"{}"), ("POST", "https://h/q", b"{}"), ("POST", "https://h/p", b"[]")],
)
def test_match_key_changes_with_method_url_and_body(other: tuple[str, str, bytes]) -> None:
    assert match_key(*other) != match_key("POST", "https://h/p", b"{}")


def test_key_ignores_credentials_wherever_they_travel() -> None:
    def key(query: str, body: dict[str, Any]) -> str:
        url = canonical_url("https", "h", None, "/v1/x", query)
        return match_key("POST", url, canonical_body(_json(body), JSON_TYPE))

    with_a = key("key=AIza-A-000000&alt=sse", {"m": 1, "api_key": "A", "auth": {"password": "A"}})
    with_b = key("alt=sse&key=AIza-B-111111", {"m": 1, "api_key": "B", "auth": {"password": "B"}})
    without = key("alt=sse", {"m": 1, "auth": {}})
    assert with_a == with_b == without


_FIELD_NAMES = st.sampled_from(
    ["model", "api_key", "max_tokens", "password", "type", "properties", "auth", "content"]
)
_BODIES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.just({"type": "string"}),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_FIELD_NAMES, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None)
@given(value=_BODIES)
def test_the_keys_credential_look_agrees_with_the_walk_that_drops_credential_fields(
    value: Any,
) -> None:
    """`has_credential_field` (read on every request's key, calling itself for objects and
    lists only) finds a field exactly when the key's dropping walk changes the body."""
    assert has_credential_field(value) == (without_credential_fields(value) is not value)
