"""The response-header safe-list decides by family first (issue 29, item 6; DESIGN §4).

A standard family (``access-control-*``, ``cross-origin-*``) fixes what its
values are, so its names are kept whatever words they hold:
``access-control-allow-credentials`` is a boolean. In a provider's family a
name is kept unless it names an account or holds a credential; anything else
goes.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
import requests
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._secrets._headers import (
    _RESPONSE_HEADERS,
    _identifying_response_header,
    keep_response_header,
)

LOOPBACK = ("127.0.0.1",)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        # standard families: kept by family, whatever the words
        ("access-control-allow-credentials", True),
        ("Access-Control-Allow-Credentials", True),
        ("access-control-allow-headers", True),
        ("access-control-expose-headers", True),
        ("access-control-allow-origin", True),
        ("cross-origin-resource-policy", True),
        # standard names
        ("content-type", True),
        ("retry-after", True),
        ("x-request-id", True),
        # providers' families: kept unless a credential or an identifier
        ("x-ratelimit-remaining-tokens", True),
        ("anthropic-ratelimit-input-tokens-limit", True),
        ("openai-processing-ms", True),
        ("x-amzn-bedrock-input-token-count", True),
        ("openai-organization", False),
        ("openai-project", False),
        ("anthropic-organization-id", False),
        ("x-goog-upload-url", True),  # the URL a resumable upload goes on to
        ("x-amzn-remapped-authorization", False),
        ("x-amzn-session-token", False),
        ("x-ms-client-secret", False),
        ("x-goog-api-key", False),
        ("openai-credentials", False),
        # no family at all: dropped, credential or not
        ("authorization", False),
        ("set-cookie", False),
        ("x-api-key", False),
        ("api-key", False),
        ("x-credentials", False),
        ("proxy-authenticate", False),
        ("x-custom-thing", False),
    ],
)
def test_kept_by_family_first(name: str, kept: bool) -> None:
    assert keep_response_header(name) is kept


def test_no_name_kept_by_the_exact_list_looks_like_a_credential() -> None:
    """The exact names skip the identifier check: none of them may need it."""
    assert [name for name in _RESPONSE_HEADERS if _identifying_response_header(name)] == []


@pytest.mark.parametrize("road", ["httpx2", "requests"])
def test_access_control_allow_credentials_replays(
    provider: ProviderSimulator, cassette_dir: Path, road: str
) -> None:
    provider.raw_replies["cors"] = RawReply(
        200,
        [
            ("content-type", "application/json"),
            ("access-control-allow-origin", "https://app.example"),
            ("access-control-allow-credentials", "true"),
            ("openai-organization", "org-abc123"),
        ],
        b"{}",
    )
    url = provider.url("/raw/cors")

    def headers() -> dict[str, str]:
        response = httpx2.get(url) if road == "httpx2" else requests.get(url)
        return {k.lower(): v for k, v in response.headers.items()}

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = headers()
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        again = headers()
    assert live["access-control-allow-credentials"] == "true"
    assert again["access-control-allow-credentials"] == "true"
    assert "openai-organization" in live and "openai-organization" not in again
