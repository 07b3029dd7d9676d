"""Every auth style, through a real SDK where one exists, never reaches disk (DESIGN §4).

The simulator echoes the credential back in the response (``echo_auth``, and a reply that
repeats each bare secret), so a leak would land in the response body too; cassettes
recorded with one key replay with any other, or none.
"""

from __future__ import annotations

import base64
import html
import json
import secrets as random_secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import groq
import httpx
import httpx2
import ollama
import pytest
from carriers import (
    GEMINI_BODY,
    GEMINI_PATH,
    HOSTS,
    MESSAGES,
    PROMPT,
    anthropic_x_api_key,
    echo,
    openai_chat,
    raw_chat,
)
from google import genai
from google.genai import types as genai_types
from leaks import assert_not_on_disk, only_cassette, token
from simulator import ProviderSimulator

import ghostrun
from ghostrun._secrets._mask import MASK

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


@dataclass(frozen=True)
class AuthStyle:
    """One way a provider request carries a credential.

    ``new()`` makes a fresh credential; ``leaks(cred)`` lists every value in it
    that must never reach disk; ``call(provider, cred)`` sends one chat with it
    (``None``: no credential at all) and returns the reply text.
    """

    name: str
    new: Callable[[], Any]
    leaks: Callable[[Any], list[str]]
    call: Callable[[ProviderSimulator, Any], str]


def _anthropic_bearer(provider: ProviderSimulator, key: str | None) -> str:
    # anthropic 2.x sends ``api_key`` as ``Authorization: Bearer``.
    client = anthropic.Anthropic(base_url=provider.base_url, api_key=key, max_retries=0)
    message = client.messages.create(
        model="claude-opus-4-7",
        max_tokens=64,
        messages=MESSAGES,
        extra_headers=None if key else {"Authorization": anthropic.omit},
    )
    return "".join(block.text for block in message.content if block.type == "text")


def _groq(provider: ProviderSimulator, key: str | None) -> str:
    client = groq.Groq(base_url=provider.base_url, api_key=key or "unused", max_retries=0)
    reply = client.chat.completions.create(
        model="llama-3.3-70b-versatile",
        messages=MESSAGES,
        extra_headers=None if key else {"Authorization": groq.omit},
    )
    return reply.choices[0].message.content or ""


def _ollama(provider: ProviderSimulator, key: str | None) -> str:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    client = ollama.Client(host=provider.base_url, headers=headers)
    return client.chat(model="llama3.2", messages=MESSAGES).message.content or ""


def _gemini_header(provider: ProviderSimulator, key: str | None) -> str:
    options = genai_types.HttpOptions(
        base_url=provider.base_url, headers=None if key else {"x-goog-api-key": ""}
    )
    client = genai.Client(api_key=key or "unused", http_options=options)
    reply = client.models.generate_content(model="gemini-2.0-flash", contents=PROMPT)
    return reply.text or ""


def _gemini_query(provider: ProviderSimulator, key: str | None) -> str:
    with httpx2.Client() as client:
        response = client.post(
            provider.url(GEMINI_PATH), params={"key": key} if key else {}, json=GEMINI_BODY
        )
    return str(response.json()["candidates"][0]["content"]["parts"][0]["text"])


def _azure(provider: ProviderSimulator, key: str | None) -> str:
    return raw_chat(
        provider,
        {"api-key": key} if key else {},
        path="/openai/v1/chat/completions",
        params={"api-version": "2024-10-21"},
    )


@dataclass(frozen=True)
class SigV4:
    key_id: str
    signature: str
    session_token: str

    @classmethod
    def new(cls) -> SigV4:
        key_id = "AKIA" + "".join(
            random_secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)
        )
        session = base64.b64encode(random_secrets.token_bytes(48)).decode() + "//+/="
        return cls(key_id, random_secrets.token_hex(32), session)

    def headers(self) -> dict[str, str]:
        scope = f"{self.key_id}/20250101/us-east-1/bedrock/aws4_request"
        return {
            "authorization": (
                f"AWS4-HMAC-SHA256 Credential={scope}, "
                f"SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, "
                f"Signature={self.signature}"
            ),
            "x-amz-security-token": self.session_token,
            "x-amz-date": "20250101T000000Z",
        }


def _sigv4(provider: ProviderSimulator, cred: SigV4 | None) -> str:
    return raw_chat(provider, cred.headers() if cred else {"x-amz-date": "20250101T000000Z"})


def _sigv4_presigned(provider: ProviderSimulator, cred: SigV4 | None) -> str:
    params = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Date": "20250101T000000Z"}
    if cred:
        params |= {
            "X-Amz-Credential": f"{cred.key_id}/20250101/us-east-1/bedrock/aws4_request",
            "X-Amz-Signature": cred.signature,
            "X-Amz-Security-Token": cred.session_token,
        }
    return raw_chat(provider, {}, params=params)


def _basic(provider: ProviderSimulator, cred: tuple[str, str] | None) -> str:
    return raw_chat(provider, {}, auth=cred)


def _basic_leaks(cred: tuple[str, str]) -> list[str]:
    user, password = cred
    return [password, base64.b64encode(f"{user}:{password}".encode()).decode()]


def _cookie(provider: ProviderSimulator, value: str | None) -> str:
    return raw_chat(provider, {"cookie": f"theme=dark; session={value}"} if value else {})


def _multipart_field(provider: ProviderSimulator, key: str | None) -> str:
    """A key sent as a form field of a multipart upload, beside a binary file."""
    with httpx.Client() as client:
        response = client.post(
            provider.url("/v1/audio/transcriptions"),
            data={"model": "whisper-1", **({"api_key": key} if key else {})},
            files={"file": ("clip.wav", b"RIFF\x00\xff" + bytes(range(256)), "audio/wav")},
        )
    return str(response.json()["text"])


def _one(value: str) -> list[str]:
    return [value]


STYLES = [
    AuthStyle("openai-bearer", lambda: token("sk-proj-"), _one, openai_chat),
    AuthStyle("anthropic-bearer", lambda: token("sk-ant-api03-"), _one, _anthropic_bearer),
    AuthStyle("anthropic-x-api-key", lambda: token("sk-ant-api03-"), _one, anthropic_x_api_key),
    AuthStyle("groq-bearer", lambda: token("gsk_"), _one, _groq),
    AuthStyle("ollama-bearer", lambda: token("olm-", 16), _one, _ollama),
    AuthStyle("gemini-x-goog-api-key", lambda: token("AIzaSy", 17), _one, _gemini_header),
    AuthStyle("gemini-query-key", lambda: token("AIzaSy", 17), _one, _gemini_query),
    AuthStyle("azure-api-key", lambda: random_secrets.token_hex(16), _one, _azure),
    AuthStyle(
        "aws-sigv4",
        SigV4.new,
        lambda c: [c.key_id, c.signature, c.session_token],
        _sigv4,
    ),
    AuthStyle(
        "aws-sigv4-presigned-url",
        SigV4.new,
        lambda c: [c.key_id, c.signature, c.session_token],
        _sigv4_presigned,
    ),
    AuthStyle(
        "basic",
        lambda: ("svc-user", 'p@ss/w"rd+' + random_secrets.token_hex(6)),
        _basic_leaks,
        _basic,
    ),
    AuthStyle("cookie", lambda: "s%3A" + token("", 16) + "/+=", _one, _cookie),
    AuthStyle("multipart-form-field", lambda: token("mp-", 16), _one, _multipart_field),
]


def _record(provider: ProviderSimulator, cassette_dir: Path, style: AuthStyle, cred: Any) -> str:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        text = style.call(provider, cred)
    assert session.recorded == 1
    return text


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.name)
def test_no_credential_reaches_disk(
    style: AuthStyle, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    cred = style.new()
    leaks = style.leaks(cred)
    provider.echo_auth = True
    provider.reply = echo(leaks)

    text = _record(provider, cassette_dir, style, cred)

    for secret in leaks:  # the provider really did send each secret back
        assert secret in text
    assert_not_on_disk(cassette_dir, leaks)
    (response,) = only_cassette(cassette_dir)["responses"]
    assert MASK in json.dumps(response["body"])
    assert "I saw" in json.dumps(response["body"])  # the rest of the body is kept


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.name)
def test_recorded_with_one_key_replays_with_another_or_none(
    style: AuthStyle, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    _record(provider, cassette_dir, style, style.new())

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        style.call(provider, style.new())
        style.call(provider, None)

    assert (session.replayed, session.recorded, provider.served) == (2, 0, 1)


@pytest.mark.parametrize("road", ["requests", "httpx"])
def test_a_basic_auth_password_past_ascii_is_masked_in_the_answer(
    road: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """requests encodes a Basic token's user and password as Latin-1, httpx as UTF-8:
    either way the password alone is a secret, masked where the server repeats it."""
    import requests

    password = "pässwörd-" + random_secrets.token_hex(4)
    provider.reply = lambda body: f"wrong password {password}"
    body = {"model": "m", "messages": MESSAGES}
    url = provider.url("/v1/chat/completions")
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        post = requests.post if road == "requests" else httpx.post
        reply = post(url, json=body, auth=("svc", password))
    assert password in reply.json()["choices"][0]["message"]["content"]
    assert_not_on_disk(cassette_dir, [password], pieces=True)


def test_gemini_query_key_is_neither_in_the_key_nor_the_stored_url(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("AIzaSy", 17)
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS) as session,
        httpx2.Client() as client,
    ):
        client.post(provider.url(GEMINI_PATH), params={"key": key, "alt": "sse"}, json=GEMINI_BODY)
    cassette = only_cassette(cassette_dir)
    url = cassette["request"]["url"]
    assert url == provider.url(GEMINI_PATH) + "?alt=sse"

    keyless = session._deck.describe(
        "POST",
        ("http", provider.host, provider.port, GEMINI_PATH, "alt=sse"),
        [("content-type", "application/json")],
        json.dumps(GEMINI_BODY).encode(),
    )
    assert cassette["key"] == keyless.key


def test_secret_echoed_in_a_kept_response_header_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.extra_response_headers = {"x-request-id": f"req_for_{key}"}
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        openai_chat(provider, key)

    assert_not_on_disk(cassette_dir, [key])
    headers = only_cassette(cassette_dir)["responses"][0]["headers"]
    assert headers["x-request-id"] == f"req_for_{MASK}"


def test_secret_in_a_binary_response_body_is_masked(cassette_dir: Path) -> None:
    key = random_secrets.token_hex(16)
    audio = b"\xff\xfe\x00ID3" + key.encode() + b"\x00\x81"

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "audio/mpeg"}, content=audio)

    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client(transport=httpx.MockTransport(upstream)) as client,
    ):
        assert (
            client.post("http://127.0.0.1:9/v1/audio/speech", headers={"api-key": key}).content
            == audio
        )

    assert "base64" in only_cassette(cassette_dir)["responses"][0]["body"]
    assert_not_on_disk(cassette_dir, [key])
    with (
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client(transport=httpx.MockTransport(upstream)) as client,
    ):
        replayed = client.post("http://127.0.0.1:9/v1/audio/speech").content
    assert replayed == audio.replace(key.encode(), MASK.encode())


UNICODE_K = "\\u006b"  # "k" spelled as a JSON unicode escape


def test_secret_echoed_in_other_encodings_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = 'k3y/with+"odd"&chars=' + random_secrets.token_hex(8)
    echoes = [
        f"url=https://h/v1?key={quote(key, safe='')}",  # as an error message quotes the URL
        f"form={quote_plus(key)}",
        f"json={json.dumps({'api_key': key})}",  # JSON text inside the reply string
        "unicode=" + json.dumps(key).replace("k", UNICODE_K),
        f"html={html.escape(key)}",
    ]
    provider.reply = lambda body: " | ".join(echoes)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        text = raw_chat(provider, {"x-api-key": key})

    assert all(echo in text for echo in echoes)
    assert_not_on_disk(cassette_dir, [key])
    content = only_cassette(cassette_dir)["responses"][0]["body"]["json"]["choices"][0]
    assert content["message"]["content"].count(MASK) == len(echoes)


def test_a_base64_echo_of_the_key_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    echoes = [
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(f"user:{key}".encode()).decode(),  # inside a longer base64 text
        base64.urlsafe_b64encode(f"ab{key}".encode()).decode(),
    ]
    provider.reply = lambda request: " ".join(echoes)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        assert openai_chat(provider, key).split() == echoes
    assert_not_on_disk(cassette_dir, [key], pieces=True)
