"""Collecting the credentials a request carried in its headers and query."""

from __future__ import annotations

import base64

import pytest

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
