"""Collecting the credentials a request carried: in its headers and query, and in what
its stored form shows itself."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ghostrun
from ghostrun._secrets._memory import collect_secrets

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


# Fake credentials, assembled at run time so no credential-shaped literal sits in git.
FAKE_AWS_KEY_ID = "AKIA" + "ABCDEFGHIJKLMNOP"


SIGV4 = (
    f"AWS4-HMAC-SHA256 Credential={FAKE_AWS_KEY_ID}/20250101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0123456789abcdef0123456789abcdef"
)


COLLECTED = [
    pytest.param([("authorization", "Bearer tok-0123456789")], [], {"tok-0123456789"}, id="bearer"),
    pytest.param(
        [("authorization", "Basic " + base64.b64encode(b"svc-user:pa55word!-2026").decode())],
        [],
        {"pa55word!-2026", "svc-user:pa55word!-2026"},
        id="basic",
    ),
    pytest.param(
        [("authorization", SIGV4)],
        [],
        {FAKE_AWS_KEY_ID, "0123456789abcdef0123456789abcdef"},
        id="sigv4",
    ),
    pytest.param(
        [("cookie", "theme=dark; session=abc;def=ghi123456789")],
        [],
        {"abc;def=ghi123456789", "ghi123456789"},
        id="cookie",
    ),
    pytest.param(
        [("X-Goog-Api-Key", "AIza-0123456789"), ("x-vendor-token", "vendor-0123456")],
        [],
        {"AIza-0123456789", "vendor-0123456"},
        id="by header name words",
    ),
    pytest.param(
        [],
        [("key", "AIza-query-key"), ("X-Amz-Credential", "AKIAQUERY0000/2025/x"), ("q", "plain-q")],
        {"AIza-query-key", "AKIAQUERY0000"},
        id="query",
    ),
]


@pytest.mark.parametrize(("headers", "query", "expected"), COLLECTED)
def test_collect_secrets(
    headers: list[tuple[str, str]], query: list[tuple[str, str]], expected: set[str]
) -> None:
    found = collect_secrets(headers, query)
    assert expected <= found
    assert not {"dark", "theme=dark", "plain-q", "Bearer", "Basic", "svc-user"} & found


def test_harmless_headers_are_not_credentials() -> None:
    headers = [
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
        ("x-stainless-retry-count", "0"),
        ("openai-organization", "org-0123456789"),
        ("x-amz-date", "20250101T000000Z"),
        ("x-goog-api-client", "google-genai-sdk/3.6.1"),
    ]
    assert collect_secrets(headers) == frozenset()


# -- what a stored request shows itself (`entry_secrets`) ------------------------------


def test_a_recorded_request_with_no_json_in_its_strings_is_not_walked_string_by_string(
    provider: Any, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's strings are walked for JSON inside them (a gateway's config) and secret
    shapes; its text says when it has neither, and then they are not walked: a recorded
    request walked them all for nothing. Counted: the walks of a chat request's strings,
    then of one whose message holds a JSON object carrying a credential field."""
    from ghostrun._secrets import _collect

    walked: list[Any] = []
    real = _collect.strings

    def spy(value: Any, **kwargs: Any) -> Any:
        walked.append(value)
        return real(value, **kwargs)

    monkeypatch.setattr(_collect, "strings", spy)
    url = provider.url("/v1/chat/completions")
    secret = "cfg-" + "0123456789abcdef"
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=("127.0.0.1",)):
        plain = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
        httpx2.post(url, json=plain).raise_for_status()
        assert walked == []
        inner = json.dumps({"api_key": secret})
        nested = {"model": "m", "messages": [{"role": "user", "content": inner}]}
        httpx2.post(url, json=nested).raise_for_status()
        assert len(walked) == 1  # JSON inside a string: walked, as before
    written = "".join(p.read_text() for p in cassette_dir.rglob("*.json"))
    assert secret not in written


_JSON_LEAVES = (
    st.text(max_size=6)
    | st.sampled_from(["{", "[", '{"a": 1}', "[1]", '"{', "\\{", "x{", "{}"])
    | st.integers()
    | st.booleans()
    | st.none()
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.sampled_from(["{k", "[k"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=400, deadline=None)
@given(value=_JSON)
def test_property_a_text_that_shows_no_json_start_has_no_string_starting_one(value: Any) -> None:
    """`entry_secrets` skips the walk of the strings only when it would find nothing."""
    from ghostrun._secrets._collect import _may_hold_json
    from ghostrun._secrets._stored import text_of
    from ghostrun._secrets._walk import strings

    if not _may_hold_json(text_of(value)):
        assert not any(s[:1] in ("{", "[") for s in strings(value))
