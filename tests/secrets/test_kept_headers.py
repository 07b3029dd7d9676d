"""Headers a cassette keeps: a safe-list each way (DESIGN §3, exact; §4)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from carriers import HOSTS, MESSAGES, anthropic_x_api_key, openai_chat
from leaks import assert_not_on_disk, only_cassette, token
from simulator import ProviderSimulator

import ghostrun

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


def test_response_headers_by_safe_list(provider: ProviderSimulator, cassette_dir: Path) -> None:
    account = {
        "set-cookie": "__cf_bm=cookie-value-0123456789; path=/; HttpOnly",
        "openai-organization": "org-sim0123456789",
        "openai-project": "proj_sim0123456789",
        "anthropic-organization-id": "9b2f5c1e-0000-4000-8000-0123456789ab",
        "x-groq-account": "acct-sim0123456789",
    }
    provider.extra_response_headers = {**account, "anthropic-ratelimit-requests-limit": "50"}
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        openai_chat(provider, token("sk-proj-"))

    headers = only_cassette(cassette_dir)["responses"][0]["headers"]
    assert not set(account) & set(headers)
    assert_not_on_disk(
        cassette_dir, [v.split(";")[0].partition("=")[2] or v for v in account.values()]
    )
    for kept in (
        "content-type",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-tokens",
        "anthropic-ratelimit-requests-limit",
    ):
        assert kept in headers

    with (
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        replayed = client.post(
            provider.url("/v1/chat/completions"),
            json={"model": "gpt-4o-mini", "messages": MESSAGES},
        )
    assert replayed.headers["x-request-id"] == "req_sim0001"
    assert "set-cookie" not in replayed.headers


def test_request_headers_by_safe_list(provider: ProviderSimulator, cassette_dir: Path) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        anthropic_x_api_key(provider, token("sk-ant-api03-"))
    headers = only_cassette(cassette_dir)["request"]["headers"]
    assert headers["anthropic-version"]
    assert headers["content-type"] == "application/json"
    assert set(headers) <= {"accept", "content-type", "anthropic-version", "anthropic-beta"}
