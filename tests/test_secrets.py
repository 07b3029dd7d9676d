"""Secrets never reach a cassette, and cassettes replay with any key (DESIGN §4).

Every auth style goes through a real SDK where one exists. The simulator
echoes the credential back in the response (``echo_auth``, and a reply that
repeats each bare secret), so a leak would land in the response body too;
then every byte of every file under the cassette directory is searched for
each secret, plain, URL-encoded, JSON-escaped and HTML-escaped (and inside
base64 bodies).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import html
import itertools
import json
import re
import secrets as random_secrets
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import groq
import httpx
import httpx2
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._secrets._mask import patterns
from ghostrun._secrets._redact import MASK, collect_secrets, redact_entry
from ghostrun._secrets._streams import mask_chunks
from ghostrun._store._wscassette import Conversation, redact_conversation

PROMPT = "Summarise my account, please."
MESSAGES: Any = [{"role": "user", "content": PROMPT}]
GEMINI_PATH = "/v1beta/models/gemini-2.0-flash:generateContent"
GEMINI_BODY = {"contents": [{"parts": [{"text": PROMPT}], "role": "user"}]}
HOSTS = ("127.0.0.1",)

pytestmark = pytest.mark.usefixtures("forget_new_secrets")


@pytest.fixture(autouse=True)
def _no_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """SDKs read keys from the environment; here every key is the test's own."""
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "GROQ_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OLLAMA_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


# -- searching the disk --------------------------------------------------------------


def encoded_forms(secret: str) -> set[str]:
    """The ways a secret can be spelled in a file."""
    escaped = json.dumps(secret)[1:-1]
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        escaped,
        escaped.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
    }


def written_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def blobs(path: Path) -> Iterable[bytes]:
    """The file's bytes, and the decoded bytes of every base64 body in it."""
    data = path.read_bytes()
    yield data

    def walk(value: Any) -> Iterable[bytes]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "base64" and isinstance(item, str):
                    yield base64.b64decode(item)
                elif key == "chunks_base64" and isinstance(item, list):
                    yield from (base64.b64decode(chunk) for chunk in item)
                else:
                    yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    with contextlib.suppress(ValueError):  # not JSON: the bytes alone
        yield from walk(json.loads(data))


def assert_not_on_disk(directory: Path, leaks: Iterable[str]) -> None:
    files = written_files(directory)
    assert files, f"nothing was written under {directory}"
    for path in files:
        for blob in blobs(path):
            for secret in leaks:
                for form in encoded_forms(secret):
                    assert form.encode() not in blob, f"{secret!r} as {form!r} in {path}"


def stored(directory: Path) -> list[dict[str, Any]]:
    """The cassettes written, parsed (not the .gitignore ghostrun writes beside them, nor the
    trajectories: `assert_not_on_disk` reads those too)."""
    return [
        json.loads(p.read_text())
        for p in written_files(directory)
        if p.suffix == ".json" and p.parent.name != "trajectories"
    ]


def only_cassette(directory: Path) -> dict[str, Any]:
    (cassette,) = stored(directory)
    return cassette


def token(prefix: str = "", size: int = 20) -> str:
    return prefix + random_secrets.token_hex(size)


# -- the auth styles ---------------------------------------------------------------


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


def _openai(provider: ProviderSimulator, key: str | None) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key or "unused", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=MESSAGES,
        extra_headers=None if key else {"Authorization": openai.omit},
    )
    return reply.choices[0].message.content or ""


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


def _anthropic_x_api_key(provider: ProviderSimulator, key: str | None) -> str:
    headers: Any = {"x-api-key": key} if key else {"Authorization": anthropic.omit}
    client = anthropic.Anthropic(base_url=provider.base_url, default_headers=headers, max_retries=0)
    message = client.messages.create(model="claude-opus-4-7", max_tokens=64, messages=MESSAGES)
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


def _raw_chat(
    provider: ProviderSimulator,
    headers: dict[str, str],
    path: str = "/v1/chat/completions",
    params: dict[str, str] | None = None,
    auth: Any = None,
) -> str:
    with httpx.Client() as client:
        response = client.post(
            provider.url(path),
            params=params,
            headers=headers,
            auth=auth,
            json={"model": "gpt-4o-mini", "messages": MESSAGES},
        )
    return str(response.json()["choices"][0]["message"]["content"])


def _azure(provider: ProviderSimulator, key: str | None) -> str:
    return _raw_chat(
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
    return _raw_chat(provider, cred.headers() if cred else {"x-amz-date": "20250101T000000Z"})


def _sigv4_presigned(provider: ProviderSimulator, cred: SigV4 | None) -> str:
    params = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Date": "20250101T000000Z"}
    if cred:
        params |= {
            "X-Amz-Credential": f"{cred.key_id}/20250101/us-east-1/bedrock/aws4_request",
            "X-Amz-Signature": cred.signature,
            "X-Amz-Security-Token": cred.session_token,
        }
    return _raw_chat(provider, {}, params=params)


def _basic(provider: ProviderSimulator, cred: tuple[str, str] | None) -> str:
    return _raw_chat(provider, {}, auth=cred)


def _basic_leaks(cred: tuple[str, str]) -> list[str]:
    user, password = cred
    return [password, base64.b64encode(f"{user}:{password}".encode()).decode()]


def _cookie(provider: ProviderSimulator, value: str | None) -> str:
    return _raw_chat(provider, {"cookie": f"theme=dark; session={value}"} if value else {})


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
    AuthStyle("openai-bearer", lambda: token("sk-proj-"), _one, _openai),
    AuthStyle("anthropic-bearer", lambda: token("sk-ant-api03-"), _one, _anthropic_bearer),
    AuthStyle("anthropic-x-api-key", lambda: token("sk-ant-api03-"), _one, _anthropic_x_api_key),
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


def _echo(leaks: list[str]) -> Callable[[Any], str]:
    """A reply repeating each bare secret, as a careless upstream (or model) might."""
    return lambda body: "I saw " + " and ".join(leaks)


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
    provider.reply = _echo(leaks)

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
    assert_nothing_of(cassette_dir, [password])


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


def test_streamed_echo_is_masked_in_every_chunk(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.echo_auth = True
    provider.reply = _echo([key])
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert key in text
    assert_not_on_disk(cassette_dir, [key])
    chunks = only_cassette(cassette_dir)["responses"][0]["body"]["sse"]
    assert sum(MASK in chunk for chunk in chunks) == 2  # the bare key, and "Bearer <key>"


def test_a_key_split_after_an_event_whose_echo_ends_in_a_backslash_is_masked() -> None:
    """The events are read as the provider sent them. Masking first the echo ending in a
    backslash (JSON inside JSON) took the next escape too: its event stopped parsing,
    and the key split between it and the next event was written in two pieces."""
    key, other = token("sk-proj-"), "Ժ}YÄ%⬄ĳἎ9¦Ì\\"
    events = [
        {
            "choices": [{"index": 0, "delta": {"content": key[:12]}}],
            "echo": json.dumps({"s": other}),
        },
        {"choices": [{"index": 0, "delta": {"content": key[12:]}}]},
    ]
    chunks = [f"data: {json.dumps(event)}\n\n" for event in events]

    masked, _ = mask_chunks(chunks, patterns(frozenset({key, other})))

    assert key[:12] not in "".join(masked) and key[12:] not in "".join(masked)
    first, second = (json.loads(chunk.removeprefix("data: ")) for chunk in masked)
    assert json.loads(first["echo"]) == {"s": MASK}  # the escape after the mask is whole
    content = first["choices"][0]["delta"]["content"] + second["choices"][0]["delta"]["content"]
    assert content == MASK  # the first piece holds the mask, the next is emptied


def test_secret_echoed_in_a_kept_response_header_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.extra_response_headers = {"x-request-id": f"req_for_{key}"}
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _openai(provider, key)

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
        text = _raw_chat(provider, {"x-api-key": key})

    assert all(echo in text for echo in echoes)
    assert_not_on_disk(cassette_dir, [key])
    content = only_cassette(cassette_dir)["responses"][0]["body"]["json"]["choices"][0]
    assert content["message"]["content"].count(MASK) == len(echoes)


# -- what is stored, and what is not ----------------------------------------------------


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
        _openai(provider, token("sk-proj-"))

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
        _anthropic_x_api_key(provider, token("sk-ant-api03-"))
    headers = only_cassette(cassette_dir)["request"]["headers"]
    assert headers["anthropic-version"]
    assert headers["content-type"] == "application/json"
    assert set(headers) <= {"accept", "content-type", "anthropic-version", "anthropic-beta"}


def test_token_counts_and_prose_survive_credential_fields_do_not(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    prompt = "How many tokens is a token? Explain access tokens, API keys and passwords."
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 64,
        "max_completion_tokens": 128,
        "metadata": {"total_tokens": 7, "token_count": 3, "tokens": [1, 2], "key": "label"},
        "api_key": "body-key-0123456789",
        "auth": {"password": "hunter2-hunter2", "apiKey": "camel-key-0123456789"},
        "tools": [{"type": "mcp", "headers": {"Authorization": "Bearer mcp-token-0123456789"}}],
        "client_secret": "client-secret-0123456789",
        "access_token": "access-token-0123456789",
        "note": "copy of body-key-0123456789",
    }
    provider.reply = lambda request: "You sent camel-key-0123456789 and hunter2-hunter2"
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        client.post(provider.url("/v1/chat/completions"), json=body)

    leaks = [
        "body-key-0123456789",
        "hunter2-hunter2",
        "camel-key-0123456789",
        "mcp-token-0123456789",
        "client-secret-0123456789",
        "access-token-0123456789",
    ]
    assert_not_on_disk(cassette_dir, leaks)
    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]
    assert stored_body["messages"][0]["content"] == prompt
    assert (stored_body["max_tokens"], stored_body["max_completion_tokens"]) == (64, 128)
    assert stored_body["metadata"] == body["metadata"]
    assert stored_body["api_key"] == stored_body["auth"]["password"] == MASK
    assert stored_body["note"] == f"copy of {MASK}"
    usage = only_cassette(cassette_dir)["responses"][0]["body"]["json"]["usage"]
    assert usage["total_tokens"] > 0

    other = {**body, "api_key": "another-key", "auth": {"password": "x", "apiKey": "y"}}
    with (
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session,
        httpx.Client() as client,
    ):
        client.post(provider.url("/v1/chat/completions"), json=other)
    assert session.replayed == 1


def test_secret_shapes_in_the_prompt_are_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    shapes = [
        "sk-proj-" + "A1b2C3d4" * 4,
        "sk-ant-api03-" + "x9" * 20,
        "gsk_" + "Q1w2E3r4T5" * 4,
        "AIzaSy" + "D" * 33,
        "AKIA" + "IOSFODNN7EXAMPLE",
        "ghp_" + "z9Y8x7W6v5" * 4,
        "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIxMjMifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
    ]
    prompt = "Why does this fail? " + " ".join(shapes) + " Bearer abcdef0123456789"
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        client.post(
            provider.url("/v1/chat/completions"),
            json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        )

    stored_prompt = only_cassette(cassette_dir)["request"]["body"]["json"]["messages"][0]["content"]
    assert (
        stored_prompt == "Why does this fail? " + " ".join([MASK] * len(shapes)) + f" Bearer {MASK}"
    )
    # A shape the prompt carried is a credential the request carried: the echo goes too.
    reply = only_cassette(cassette_dir)["responses"][0]["body"]["json"]["choices"][0]["message"]
    assert reply["content"] == "Echo: " + stored_prompt
    assert_not_on_disk(cassette_dir, [*shapes, "abcdef0123456789"])


# -- the masking rules as pure functions ---------------------------------------------

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


def _masked(text: Any, *secrets: str) -> Any:
    entry = {"request": {"body": {"text": "-"}}, "response": {"body": {"json": text}}}
    return redact_entry(entry, frozenset(secrets))["response"]["body"]["json"]


MASKED = [
    pytest.param({"k": "x secret-one y"}, ["secret-one"], {"k": f"x {MASK} y"}, id="plain"),
    pytest.param({"secret-one": 1}, ["secret-one"], {MASK: 1}, id="as a JSON key"),
    pytest.param("a%2fb%2Bc-0123", ["a/b+c-0123"], MASK, id="percent, either hex case"),
    pytest.param(
        '{\\"k\\": \\"q\\\\\\"uote-0123\\"}',
        ['q"uote-0123'],
        '{\\"k\\": \\"' + MASK + '\\"}',
        id="JSON escaped twice",
    ),
    pytest.param("abcdefgh12345678", ["abcdefgh12", "gh12345678"], MASK, id="overlapping"),
    pytest.param("S3cret-pw &amp; more", ["S3cret-pw & more"], MASK, id="html"),
    pytest.param(["ok", 7, None, True], ["secret-one"], ["ok", 7, None, True], id="untouched"),
]


@pytest.mark.parametrize(("value", "secrets", "expected"), MASKED)
def test_exact_values_are_masked_in_any_encoding(
    value: Any, secrets: list[str], expected: Any
) -> None:
    assert _masked(value, *secrets) == expected


def test_redact_entry_does_not_mutate_its_input() -> None:
    entry = {"request": {"body": {"json": {"api_key": "k-0123456"}}}, "response": {}}
    before = json.dumps(entry)
    redact_entry(entry, frozenset({"k-0123456"}))
    assert json.dumps(entry) == before


# -- the user's redact hook --------------------------------------------------------------


def test_redact_hook_scrubs_pii_and_replay_still_hits(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    seen: list[dict[str, Any]] = []
    ssn = "123-45-6789"
    key = token("sk-proj-")

    def scrub(entry: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(entry)))
        body = entry["request"]["body"]["json"]
        del body["user"]
        body["messages"][0]["content"] = body["messages"][0]["content"].replace(ssn, "<ssn>")
        message = entry["response"]["body"]["json"]["choices"][0]["message"]
        message["content"] = message["content"].replace(ssn, "<ssn>")
        return entry

    def ask(api_key: str) -> str:
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=api_key, max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"My SSN is {ssn}."}],
            user="jane.doe@example.com",
        )
        return reply.choices[0].message.content or ""

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
        assert ssn in ask(key)

    assert len(seen) == 1
    assert key not in json.dumps(seen[0])  # the hook sees the entry already masked
    assert_not_on_disk(cassette_dir, [ssn, "jane.doe@example.com", key])
    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]
    assert "user" not in stored_body
    assert stored_body["messages"][0]["content"] == "My SSN is <ssn>."

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        assert ask(token("sk-proj-")) == "Echo: My SSN is <ssn>."
    assert session.replayed == 1


def test_redact_hook_may_edit_in_place(provider: ProviderSimulator, cassette_dir: Path) -> None:
    def scrub(entry: dict[str, Any]) -> None:
        entry["request"]["body"]["json"]["messages"][0]["content"] = "<removed>"

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
        _openai(provider, token("sk-proj-"))

    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]
    assert stored_body["messages"][0]["content"] == "<removed>"


def test_redact_hook_cannot_reintroduce_a_secret(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")

    def careless(entry: dict[str, Any]) -> dict[str, Any]:
        entry["request"]["headers"]["authorization"] = f"Bearer {key}"
        entry["response"]["headers"]["x-debug"] = quote(key, safe="")
        return entry

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=careless):
        _openai(provider, key)

    assert_not_on_disk(cassette_dir, [key])


# -- the property: no random secret, wherever it travels, reaches disk -------------------

from ghostrun._secrets._credentials import could_be_credential  # noqa: E402

# Secrets that could be credentials (shorter ones are never masked in a response, by
# design): ASCII for headers, any text for query and body carriers.
ASCII_SECRET = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="[]"),
    min_size=12,
    max_size=40,
).filter(could_be_credential)
ANY_SECRET = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="[]")
    | st.characters(min_codepoint=0xA1, max_codepoint=0x2FFF, categories=["L", "N", "S", "P"])
    | st.sampled_from(["😀", "€", "é", "ß", "\u00e9"]),
    min_size=12,
    max_size=40,
).filter(could_be_credential)
# Where a secret travels: a credential header, a credential query parameter, or
# a credential field of the JSON body.
CARRIERS = [
    "header:authorization-bearer",
    "header:authorization-basic",
    "header:x-api-key",
    "header:api-key",
    "header:x-goog-api-key",
    "header:x-amz-security-token",
    "header:cookie",
    "query:key",
    "query:api_key",
    "query:access_token",
    "query:X-Amz-Signature",
    "body:api_key",
    "body:apiKey",
    "body:password",
    "body:client_secret",
    "body:access_token",
    "body:secret",
]
PATH = st.lists(st.sampled_from(["metadata", "extra", "deep", 0]), max_size=4)


@dataclass(frozen=True)
class Placed:
    secret: str
    carrier: str
    path: list[str | int]  # where in the body (a body carrier, or the copy)
    copy_in_body: bool  # the secret also appears under an ordinary field
    copy_in_query: bool  # ... and as an ordinary query parameter


PLACED = st.builds(
    Placed,
    ASCII_SECRET,
    st.sampled_from([c for c in CARRIERS if c.startswith("header:")]),
    PATH,
    st.booleans(),
    st.booleans(),
) | st.builds(
    Placed,
    ANY_SECRET,
    st.sampled_from([c for c in CARRIERS if not c.startswith("header:")]),
    PATH,
    st.booleans(),
    st.booleans(),
)


@dataclass(frozen=True)
class Cuts:
    """Where a stream is cut: TCP chunk boundaries, and delta events of the reply."""

    chunks: list[float]  # fractions of the stream's bytes
    deltas: list[float]  # fractions of the reply text

    def rechunk(self, events: list[bytes]) -> list[bytes]:
        data = b"".join(events)
        at = sorted({0, *(int(f * len(data)) for f in self.chunks), len(data)})
        return [data[a:b] for a, b in itertools.pairwise(at) if b > a]

    def pieces(self, text: str) -> list[str]:
        at = sorted({0, *(int(f * len(text)) for f in self.deltas), len(text)})
        return [text[a:b] for a, b in itertools.pairwise(at) if b > a]


FRACTIONS = st.lists(st.floats(min_value=0, max_value=1), max_size=6)
CUTS = st.builds(Cuts, FRACTIONS, FRACTIONS)


def _nest(path: list[str | int], leaf: Any) -> Any:
    for step in reversed(path):
        leaf = {step: leaf} if isinstance(step, str) else [leaf]
    return leaf


def _build_request(
    placed: list[Placed], stream: bool, *, with_credentials: bool = True
) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    headers: dict[str, str] = {}
    params: dict[str, str] = {}
    body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": stream}
    for index, p in enumerate(placed):
        kind, _, name = p.carrier.partition(":")
        value = p.secret if with_credentials else f"other-credential-{index}"
        if kind == "header" and with_credentials:
            if name == "authorization-bearer":
                headers["authorization"] = f"Bearer {value}"
            elif name == "authorization-basic":
                headers["authorization"] = (
                    "Basic " + base64.b64encode(f"svc:{value}".encode()).decode()
                )
            elif name == "cookie":
                headers["cookie"] = f"sid={value}"
            else:
                headers[name] = value
        elif kind == "query" and with_credentials:
            params[name] = value
        elif kind == "body":
            body[f"carrier{index}"] = _nest(p.path, {name: value})
        if p.copy_in_body:
            body[f"copy{index}"] = _nest(p.path, {"note": p.secret})
        if p.copy_in_query:
            params[f"q{index}"] = p.secret
    return headers, params, body


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure prints its example
)
@given(
    placed=st.lists(PLACED, min_size=1, max_size=4, unique_by=lambda p: p.carrier.split("-")[0]),
    stream=st.booleans(),
    cuts=CUTS,
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
)
@example(  # a key split after an event whose echo ends in a backslash
    placed=[
        Placed(
            '¿༩Æ⩷®{Ẹ|ᩐ¶ࢎāć१Dáwå௹êᝉ/I⪿"¸ເ0&⍍ĘⲂ³łĒ¿❽/×Ø',  # noqa: RUF001
            "body:access_token",
            ["metadata", "deep", "deep", "extra"],
            True,
            False,
        ),
        Placed(
            "pÇµ⦟öൖ{Ϡᨽd-püĸÌඨÕĤᾷÑ@ĨĊᦹtÐ1§",
            "query:X-Amz-Signature",
            ["deep", "metadata", "metadata", "deep"],
            True,
            False,
        ),
        Placed("Ժ}YÄ%⬄ĳἎ9¦Ì\\", "body:secret", [], True, True),
        Placed(
            "MW4K3`m(p7_RlQ6UMY&)vDb58*", "header:x-goog-api-key", ["metadata", "deep"], True, False
        ),
    ],
    stream=True,
    cuts=Cuts(
        chunks=[
            0.6216487631323838,
            0.22505868199049167,
            0.11768538121825703,
            8.812190110088606e-141,
            0.30785603775190823,
            1.0,
        ],
        deltas=[0.39701345176333847, 0.05290582045614546, 0.9700527627707956, 0.8623113560562978],
    ),
    line_end="\n",
)
def test_property_no_random_secret_reaches_disk(
    provider: ProviderSimulator,
    tmp_path_factory: pytest.TempPathFactory,
    placed: list[Placed],
    stream: bool,
    cuts: Cuts,
    line_end: str,
) -> None:
    leaks = [p.secret for p in placed]
    provider.rechunk, provider.delta_pieces = cuts.rechunk, cuts.pieces
    provider.sse_line_end = line_end  # SSE lines may end in LF, CRLF or a lone CR
    # Hypothesis also tries words from the source ("response", "content-type"):
    # a "secret" the cassette format spells anyway proves nothing, so skip it.
    shadow = [dataclasses.replace(p, secret=uuid.uuid4().hex) for p in placed]
    shadow_dir, _ = _record_placed(provider, tmp_path_factory, shadow, stream)
    written = b"".join(blob for path in written_files(shadow_dir) for blob in blobs(path))
    assume(not any(form.encode() in written for s in leaks for form in _all_forms(s)))

    directory, sent = _record_placed(provider, tmp_path_factory, placed, stream)
    said = _said(sent) if stream else json.loads(sent)["choices"][0]["message"]["content"]
    for secret in leaks:
        assert secret in said  # the provider really did echo each secret
    assert_nothing_of(directory, leaks)

    headers, params, body = _build_request(placed, stream, with_credentials=False)
    with (
        ghostrun.session(mode="replay", cassette_dir=directory, hosts=HOSTS) as session,
        httpx.Client() as client,
    ):
        client.post(provider.url("/v1/chat/completions"), params=params, headers=headers, json=body)
    assert session.replayed == 1


@settings(max_examples=150, deadline=None)
@given(secret=ANY_SECRET, cuts=FRACTIONS, binary=st.booleans())
def test_property_a_secret_spelled_over_websocket_frames_is_masked(
    secret: str, cuts: list[float], binary: bool
) -> None:
    def written(secret: str) -> str:
        conversation = Conversation("wss://api.example.test/v1/realtime")
        conversation.client(json.dumps({"type": "session.update", "api_key": secret}))
        for piece in Cuts([], cuts).pieces(f"you said {secret}, noted"):
            delta = {"type": "response.output_text.delta", "content_index": 0, "delta": piece}
            frame = json.dumps(delta)
            conversation.server(frame.encode() if binary else frame)
        return json.dumps(redact_conversation(conversation, [], []).to_json())

    _assert_no_fragment(secret, written)


@settings(max_examples=150, deadline=None)
@given(secret=ANY_SECRET, cuts=FRACTIONS, carried=st.booleans(), padded=st.booleans())
def test_property_a_secret_spelled_over_event_stream_events_is_masked(
    secret: str, cuts: list[float], carried: bool, padded: bool
) -> None:
    def written(secret: str) -> str:
        chunks = []
        for piece in Cuts([], cuts).pieces(f"you said {secret}, noted"):
            event: Any = {"contentBlockIndex": 0, "delta": {"text": piece}}
            if carried:  # InvokeModelWithResponseStream: the event as base64 bytes
                event = {"bytes": base64.b64encode(json.dumps(event).encode()).decode()}
            if padded:  # real Bedrock pads every payload
                event["p"] = "abcdefghijklmnopqrstuvwxyz"[: 1 + len(piece) % 26]
            chunks.append([{"headers": [":event-type: chunk"], "json": event}])
        entry = {
            "request": {"method": "POST", "url": "https://bedrock.example.test/invoke"},
            "response": {"status": 200, "headers": {}, "body": {"eventstream": chunks}},
        }
        text = json.dumps(redact_entry(entry, frozenset({secret})))
        carried_events = re.findall(r'"bytes": "([^"]+)"', text)
        return text + "".join(base64.b64decode(b).decode() for b in carried_events)

    _assert_no_fragment(secret, written)


SPELLINGS = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 1]),  # an event's JSON over several data lines
        "ensure_ascii": st.booleans(),
        "compact": st.booleans(),
        "line_end": st.sampled_from(["\n", "\r\n", "\r"]),
        "space": st.booleans(),  # "data: " or "data:"
        "event_line": st.booleans(),
        "logprobs": st.booleans(),  # the tokens again, and their bytes
    }
)


def _spelled_event(value: Any, how: dict[str, Any]) -> str:
    text = json.dumps(
        value,
        indent=how["indent"],
        ensure_ascii=how["ensure_ascii"],
        separators=(",", ":") if how["compact"] else None,
    )
    end, prefix = how["line_end"], "data: " if how["space"] else "data:"
    head = f"event: delta{end}" if how["event_line"] else ""
    return head + "".join(f"{prefix}{line}{end}" for line in text.split("\n")) + end


def _read_events(stream: str) -> list[Any]:
    events = []
    for block in stream.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line[:5] == "data:"]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


@settings(max_examples=60, deadline=None)
@given(secret=ANY_SECRET, deltas=FRACTIONS, chunks=FRACTIONS, how=SPELLINGS)
def test_property_a_secret_spelled_over_sse_events_is_masked_however_they_are_written(
    secret: str, deltas: list[float], chunks: list[float], how: dict[str, Any]
) -> None:
    """Any spelling SSE and JSON allow, cut anywhere into chunks: no piece of the secret
    is written, every event still parses, and the deltas (and the logprobs' tokens and
    bytes) spell the text with the secret masked."""
    said = "you said {}, noted"

    def masked(secret: str) -> str:
        events = []
        for piece in Cuts([], deltas).pieces(said.format(secret)):
            choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}}
            if how["logprobs"]:
                tokens = [piece[i : i + 3] for i in range(0, len(piece), 3)]
                content = [
                    {"token": t, "bytes": list(t.encode()), "top_logprobs": []} for t in tokens
                ]
                choice["logprobs"] = {"content": content}
            events.append(_spelled_event({"id": "c1", "choices": [choice]}, how))
        stream = "".join(events)
        at = sorted({0, *(int(f * len(stream)) for f in chunks), len(stream)})
        cut = [stream[a:b] for a, b in itertools.pairwise(at) if b > a]
        return "".join(mask_chunks(cut, patterns(frozenset({secret})))[0])

    _assert_no_fragment(secret, masked)
    choices = [event["choices"][0] for event in _read_events(masked(secret))]
    assert "".join(c["delta"]["content"] for c in choices) == said.format(MASK)
    if how["logprobs"]:
        logprobs = [lp for c in choices for lp in c["logprobs"]["content"]]
        assert "".join(lp["token"] for lp in logprobs) == said.format(MASK)
        assert bytes(b for lp in logprobs for b in lp["bytes"]).decode() == said.format(MASK)


def _assert_no_fragment(secret: str, written: Callable[[str], str]) -> None:
    """No piece of ``secret`` in what is written, unless the same text with a random
    secret in its place spells that piece anyway."""
    forms = {form for piece in fragments(secret) for form in encoded_forms(piece)}
    assume(not any(form in written(uuid.uuid4().hex) for form in forms))
    text = written(secret)
    for form in forms:
        assert form not in text, form


def _said(stream: str) -> str:
    """The text a chat stream's delta events spell."""
    events = [line[6:] for line in stream.splitlines() if line.startswith("data: {")]
    return "".join(
        choice["delta"].get("content") or ""
        for event in events
        for choice in json.loads(event)["choices"]
    )


def _hostile_echo(leaks: list[str]) -> Callable[[Any], str]:
    """A reply repeating each secret plain, in JSON inside JSON, and base64-encoded."""

    def reply(body: Any) -> str:
        forms = []
        for secret in leaks:
            twice = json.dumps(json.dumps({"api_key": secret}))  # \\u escapes, doubled
            forms += [secret, twice, base64.b64encode(f"u:{secret}".encode()).decode()]
        return "I saw " + " and ".join(forms)

    return reply


def _all_forms(secret: str) -> set[str]:
    forms = set(encoded_forms(secret)) | base64_cores(secret)
    for piece in fragments(secret):
        forms |= encoded_forms(piece)
    return forms


def _record_placed(
    provider: ProviderSimulator,
    tmp_path_factory: pytest.TempPathFactory,
    placed: list[Placed],
    stream: bool,
) -> tuple[Path, str]:
    """Record one request carrying (and echoing) the placed secrets: the directory and reply."""
    leaks = [p.secret for p in placed]
    provider.echo_auth = True
    provider.reply = _hostile_echo(leaks)
    header_safe = [leak for leak in leaks if leak.isascii()] or ["none"]
    provider.extra_response_headers = {"x-request-id": f"req_{header_safe[0]}"}
    headers, params, body = _build_request(placed, stream)
    directory = tmp_path_factory.mktemp("property")
    with (
        ghostrun.session(mode="record", cassette_dir=directory, hosts=HOSTS),
        httpx.Client() as client,
    ):
        sent = client.post(
            provider.url("/v1/chat/completions"), params=params, headers=headers, json=body
        )
    return directory, sent.text


# -- what ghostrun writes besides cassettes ----------------------------------------


def test_an_echoed_key_reaches_neither_the_run_log_nor_the_verdicts(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """A model that repeats the key: its text is kept in runs/ and judge/ too, scrubbed."""
    from ghostrun._recording import _runlog

    key = token("sk-proj-")
    provider.echo_auth = True
    judge = ghostrun.CallableJudge(lambda text, criterion: (True, f"it says {text}"))
    with ghostrun.session(cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
        reply = _openai(provider, key)
        assert key in reply  # the model really did echo it
        ghostrun.expect(reply, judge=judge).contains("Echo").satisfies("mentions auth")
    _runlog.write_run()
    assert (cassette_dir / "runs" / "_last.json").exists()
    assert list((cassette_dir / "judge").glob("*.json"))
    assert_not_on_disk(cassette_dir, [key])


@pytest.mark.parametrize(
    ("secret", "text"),
    [
        ('quote"and\\slash/', 'before quote"and\\slash/ after'),
        ("tab\tinside-secret", "x tab\tinside-secret y"),
        ("plain-secret-value", "line one\nplain-secret-value\nline three"),
        ("plain-secret-value", "plain%2Dsecret%2dvalue"),
        ("plain-secret-value", "plain\\u002dsecret\\U002Dvalue"),
        ("with space-0123", "say with+space-0123 twice"),
        ("amp&secret-0123", "x amp&amp;secret-0123 y"),
        ("slash/secret-0123", "x slash\\/secret-0123 y"),
        ("quote'secret-0123", "x quote&#39;secret-0123 y"),
    ],
)
def test_the_fast_check_never_lets_a_secret_through(secret: str, text: str) -> None:
    """redact_entry searches the entry's JSON text first; escapes must not hide a secret."""
    entry = {"request": {"body": {"text": text}}, "response": {"body": {"json": {"t": [text]}}}}
    masked = json.dumps(redact_entry(entry, frozenset({secret})))
    for form in encoded_forms(secret):
        assert form not in json.loads(masked)["request"]["body"]["text"]
    assert MASK in masked


def test_a_secret_shape_after_an_escaped_newline_is_masked() -> None:
    prompt = "my key is:\nsk-proj-" + "a" * 24 + "\nplease keep it"
    entry = {"request": {"body": {"json": {"messages": [{"content": prompt}]}}}, "response": {}}
    masked = redact_entry(entry, frozenset())
    assert "sk-proj-" not in json.dumps(masked)
    assert masked["request"]["body"]["json"]["messages"][0]["content"].startswith("my key is:\n")


# -- every request field the rule names, read as the key reads it (issue 15) ------------


def fragments(secret: str, size: int = 12) -> list[str]:
    """Every ``size``-character piece of a secret: half a key is a leak too."""
    return [secret[i : i + size] for i in range(max(1, len(secret) - size + 1))]


def base64_cores(secret: str) -> set[str]:
    """Text that any base64 encoding of a longer text holding ``secret`` contains."""
    cores = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret.encode()).decode()[4:-4]
        cores |= {encoded, encoded.replace("+", "-").replace("/", "_")}
    return cores


def assert_nothing_of(directory: Path, leaks: Iterable[str]) -> None:
    """No secret on disk: whole, in pieces, or base64-encoded (any alignment)."""
    forms = set()
    for secret in leaks:
        forms |= {secret, *fragments(secret), *base64_cores(secret)}
    assert_not_on_disk(directory, sorted(forms))


def test_credential_fields_by_rule_in_a_json_body_sent_as_text(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    secret = {name: token(f"{name}-", 12) for name in ("oai", "sec", "cred", "sa", "auth")}
    params = {"access_key": token("ak-"), "private_token": token("pt-"), "code": token("oc-")}
    config_key = token("pk-")
    body = {
        "model": "gpt-4o-mini",
        "messages": MESSAGES,
        "openai_api_key": secret["oai"],
        "apiSecret": secret["sec"],
        "credentials": [secret["cred"]],
        "serviceAccountKey": {"client_email": "svc@example.com", "blob": secret["sa"]},
        "auth": {"key": secret["auth"]},
    }
    leaks = [*secret.values(), *params.values(), config_key]
    provider.reply = lambda request: "You sent " + " ".join(leaks)
    headers = {
        "content-type": "text/plain",
        "x_api_key": secret["oai"],
        "x-portkey-config": json.dumps({"provider": "openai", "api_key": config_key}),
    }
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        sent = client.post(
            provider.url("/v1/chat/completions"),
            params=params,
            headers=headers,
            content=json.dumps(body),
        )
    assert all(leak in sent.text for leak in leaks)
    assert_nothing_of(cassette_dir, leaks)
    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]  # read as JSON
    assert stored_body["auth"] == {"key": MASK}
    assert stored_body["messages"] == MESSAGES

    other = {**body, "openai_api_key": "x", "auth": {"key": "y"}, "apiSecret": "z"}
    with (
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session,
        httpx.Client() as client,
    ):
        client.post(provider.url("/v1/chat/completions"), content=json.dumps(other))
    assert session.replayed == 1


def _send_form(how: str, url: str, fields: dict[str, str]) -> None:
    """A form POST as each road sends one: urlencoded, or multipart beside a binary file."""
    import asyncio

    import aiohttp
    import requests

    upload = {"file": ("clip.wav", b"RIFF\x00\xff" + bytes(range(256)), "audio/wav")}
    if how == "httpx-form":
        httpx.post(url, data=fields)
    elif how == "requests-form":
        requests.post(url, data=fields, timeout=10)
    elif how == "requests-multipart":
        requests.post(url, data=fields, files=upload, timeout=10)
    elif how == "httpx-multipart":
        httpx.post(url, data=fields, files=upload)
    else:

        async def post() -> None:
            async with aiohttp.ClientSession() as http, http.post(url, data=fields) as response:
                await response.read()

        asyncio.run(post())


@pytest.mark.parametrize(
    "how",
    ["httpx-form", "requests-form", "aiohttp-form", "httpx-multipart", "requests-multipart"],
)
def test_a_form_credential_field_is_masked_whatever_its_value(
    how: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """An OAuth password grant's password may be a plain word: too plain to be masked as an
    exact value, it is still masked in the stored form by its field's name, as a JSON body's
    credential field is, and the request replays with another password."""
    password, secret = "correcthorsebattery", "staple"
    fields = {
        "grant_type": "password",
        "username": "bob",
        "password": password,
        "client_secret": secret,
    }
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _send_form(how, provider.url("/v1/audio/transcriptions"), fields)
    assert_nothing_of(cassette_dir, [password])
    assert_not_on_disk(cassette_dir, [f"={secret}", f"\r\n\r\n{secret}"])
    (path,) = cassette_dir.glob("*.json")
    written = b"".join(blobs(path))
    assert b"grant_type" in written and b"bob" in written and MASK.encode() in written

    provider.stop()
    other = {**fields, "password": "another-password", "client_secret": "other"}
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        _send_form(how, provider.url("/v1/audio/transcriptions"), other)
    assert session.replayed == 1


def test_a_password_property_of_a_tool_schema_is_structure(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    tool: Any = {
        "type": "function",
        "function": {
            "name": "login",
            "parameters": {
                "type": "object",
                "properties": {
                    "password": {"type": "string", "description": "the account password"}
                },
                "required": ["password"],
            },
        },
    }
    provider.reply = "a string of type string"
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
        live = client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, tools=[tool], tool_choice="none"
        )
    cassette = only_cassette(cassette_dir)
    assert cassette["request"]["body"]["json"]["tools"] == [tool]
    assert MASK not in json.dumps(cassette)
    assert live.choices[0].message.content == "a string of type string"


# -- never mask what is not a secret -------------------------------------------------------


@pytest.mark.parametrize("placeholder", ["ollama", "lm-studio", "sk-no-key-required"])
def test_a_placeholder_key_is_never_masked_and_its_verdict_replays(
    placeholder: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    from ghostrun._recording import _runlog

    prompt = f"is {placeholder} free?"
    graded: list[str] = []
    judge = ghostrun.CallableJudge(lambda text, criterion: (graded.append(text) or True, "ok"))

    def ask(mode: str) -> tuple[str, bytes]:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=placeholder)
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            text = raw.parse().choices[0].message.content or ""
            ghostrun.expect(text, judge=judge).satisfies("answers the question")
        return text, raw.http_response.read()

    live_text, live_body = ask("record")
    provider.stop()
    replayed_text, replayed_body = ask("replay")

    assert live_text == replayed_text == f"Echo: {prompt}"
    assert orjson_loads(live_body) == orjson_loads(replayed_body)
    assert graded == [live_text]  # the replay found the cached verdict
    _runlog.write_run()
    assert MASK not in "".join(p.read_text() for p in written_files(cassette_dir))


def orjson_loads(data: bytes) -> Any:
    return json.loads(data)


# -- streams: a secret across chunks and across events --------------------------------------


def _cut_inside(secret: str) -> Callable[[list[bytes]], list[bytes]]:
    """Re-cut a stream so that a chunk boundary falls in the middle of ``secret``."""

    def rechunk(events: list[bytes]) -> list[bytes]:
        out = []
        for event in events:
            at = event.find(secret.encode())
            if at < 0:
                out.append(event)
            else:
                middle = at + len(secret) // 2
                out += [event[:middle], event[middle:]]
        return out

    return rechunk


def _halves(secret: str) -> Callable[[str], list[str]]:
    """Delta pieces that put each half of ``secret`` in an event of its own."""

    def pieces(text: str) -> list[str]:
        before, _, after = text.partition(secret)
        half = len(secret) // 2
        return [p for p in (before, secret[:half], secret[half:], after) if p]

    return pieces


def _stream_openai(provider: ProviderSimulator, key: str) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _stream_anthropic(provider: ProviderSimulator, key: str) -> str:
    client = anthropic.Anthropic(base_url=provider.base_url, api_key=key, max_retries=0)
    with client.messages.stream(model="claude-opus-4-7", max_tokens=64, messages=MESSAGES) as s:
        return "".join(s.text_stream)


async def _stream_aiohttp(provider: ProviderSimulator, key: str) -> str:
    import aiohttp

    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            provider.url("/v1/chat/completions"),
            json=body,
            headers={"authorization": f"Bearer {key}"},
        ) as response,
    ):
        raw = (await response.read()).decode()
    return "".join(
        (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in raw.splitlines()
        if line.startswith("data: {")
    )


STREAMERS = {
    "openai": _stream_openai,
    "anthropic": _stream_anthropic,
    "aiohttp": lambda provider, key: __import__("asyncio").run(_stream_aiohttp(provider, key)),
}


@pytest.mark.parametrize("how", ["cut inside an event", "two delta events"])
@pytest.mark.parametrize("sdk", sorted(STREAMERS))
def test_a_secret_split_across_a_stream_is_masked(
    sdk: str, how: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.reply = f"your key is {key}, keep it safe"
    if how == "two delta events":
        provider.delta_pieces = _halves(key)
    else:
        provider.rechunk = _cut_inside(key)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        live = STREAMERS[sdk](provider, key)
    assert key in live
    assert_nothing_of(cassette_dir, [key])

    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        replayed = STREAMERS[sdk](provider, token("sk-proj-"))
    assert session.replayed == 1
    assert replayed == live.replace(key, MASK)


def _chat_chunk(content: str) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}


def _sse_spelled(value: dict[str, Any], form: str) -> bytes:
    """One chat chunk as an SSE event, written in one of the ways SSE and JSON allow."""
    text = json.dumps(value)
    if form == "lone CR line ends":
        return f"data: {text}\r\r".encode()
    if form == "CRLF line ends":
        return f"data: {text}\r\n\r\n".encode()
    if form == "JSON over several data lines":
        lines = json.dumps(value, indent=1).split("\n")
        return ("".join(f"data: {line}\n" for line in lines) + "\n").encode()
    if form == "a duplicate key":
        return f'data: {{"id": "first", {text[1:]}\n\n'.encode()
    if form == "a lone surrogate escape":
        return f'data: {{"system_fingerprint": "fp\\ud83d", {text[1:]}\n\n'.encode()
    raise AssertionError(form)


@pytest.mark.parametrize(
    "form",
    [
        "CRLF line ends",
        "lone CR line ends",
        "JSON over several data lines",
        "a duplicate key",
        "a lone surrogate escape",
    ],
)
def test_a_key_split_across_events_is_masked_however_the_stream_is_spelled(
    form: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The openai SDK reads each of these streams (SSE lines may end in a lone CR, an
    event's data may span lines; its json keeps a duplicate key's last value and takes a
    lone surrogate): each event is read as the SDK reads it, so a key the model spells
    over two of them is found, and the masked stream replays."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    half = text.index(key) + len(key) // 2
    events = [_sse_spelled(_chat_chunk(piece), form) for piece in (text[:half], text[half:])]
    events.append(b"data: [DONE]" + (b"\r\r" if "CR" in form else b"\n\n"))
    provider.raw_replies["spelled"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=events
    )

    _record_then_replay_masked(provider, cassette_dir, "/raw/spelled", key, text)


def _record_then_replay_masked(
    provider: ProviderSimulator, cassette_dir: Path, route: str, key: str, text: str
) -> None:
    """A chat stream of ``route`` spells ``text`` live; none of ``key`` is written; the
    simulator stopped, it replays with the key masked."""

    def chat(mode: str) -> str:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS):
            client = openai.OpenAI(base_url=provider.url(route), api_key=key)
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert chat("record") == text
    assert_nothing_of(cassette_dir, [key])
    provider.stop()
    assert chat("replay") == text.replace(key, MASK)


def _gemini_array(road: str, url: str, key: str) -> str:
    """Gemini's stream without ``alt=sse``: one JSON array of chunks; the text they spell."""
    import asyncio

    import aiohttp
    import requests

    headers = {"x-goog-api-key": key}
    if road == "httpx":
        raw = httpx.post(url, json=GEMINI_BODY, headers=headers).content
    elif road == "requests":
        raw = requests.post(url, json=GEMINI_BODY, headers=headers, timeout=10).content
    else:

        async def post() -> bytes:
            async with (
                aiohttp.ClientSession() as http,
                http.post(url, json=GEMINI_BODY, headers=headers) as response,
            ):
                return await response.read()

        raw = asyncio.run(post())
    return "".join(
        part["text"]
        for chunk in json.loads(raw)
        for part in chunk["candidates"][0]["content"]["parts"]
    )


@pytest.mark.parametrize("spelled", ["compact", "as Gemini pretty-prints it"])
@pytest.mark.parametrize("road", ["httpx", "requests", "aiohttp"])
def test_a_key_split_across_the_chunks_of_a_json_array_stream_is_masked(
    road: str, spelled: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Gemini's streamGenerateContent without alt=sse answers application/json: a body
    read whole, not a stream, whose array elements are the stream's chunks."""
    key = token("AIzaSy", 17)
    text = f"your key is {key}, keep it"
    provider.reply = text
    provider.delta_pieces = _halves(key)
    path = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    if spelled != "compact":  # pretty chunks, each separated by ",\r\n"
        pieces = _halves(key)(text)
        chunks = [
            json.dumps(
                {"candidates": [{"content": {"parts": [{"text": p}]}, "index": 0}]}, indent=2
            )
            for p in pieces
        ]
        body = ("[" + "\n,\r\n".join(chunks) + "]").encode()
        provider.raw_replies["gemini"] = RawReply(200, [("content-type", "application/json")], body)
        path = "/raw/gemini" + path

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        assert _gemini_array(road, provider.url(path), key) == text
    assert_nothing_of(cassette_dir, [key])
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        assert _gemini_array(road, provider.url(path), token("AIzaSy", 17)) == text.replace(
            key, MASK
        )
    assert session.replayed == 1


def test_a_key_split_across_sse_events_served_as_plain_text_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The openai SDK reads a stream as SSE whatever its content type; a proxy may send
    one as text/plain, which is recorded as a body read whole."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in _halves(key)(text)]
    provider.raw_replies["plain"] = RawReply(
        200, [("content-type", "text/plain")], chunks=[*events, b"data: [DONE]\n\n"]
    )

    _record_then_replay_masked(provider, cassette_dir, "/raw/plain", key, text)


def test_a_key_split_across_the_events_of_a_plain_text_sse_stream_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Some servers stream an answer as SSE whose data is the text itself, not JSON
    (``event: output`` then ``data: <piece>``, as Replicate's streams do)."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"event: output\ndata: {piece}\n\n".encode() for piece in _halves(key)(text)]
    provider.raw_replies["text"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=[*events, b"event: done\ndata: {}\n\n"]
    )

    def said(mode: str) -> str:
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client() as client,
            client.stream("GET", provider.url("/raw/text"), headers={"api-key": key}) as reply,
        ):
            lines = list(reply.iter_lines())
        outputs = [i + 1 for i, line in enumerate(lines) if line == "event: output"]
        return "".join(lines[i].removeprefix("data: ") for i in outputs)

    assert said("record") == text
    assert_nothing_of(cassette_dir, [key])
    provider.stop()
    assert said("replay") == text.replace(key, MASK)


@pytest.mark.parametrize("where", ["in a comment line", "inside the first event"])
def test_a_key_split_across_the_events_of_a_stream_that_is_not_all_utf8_is_masked(
    where: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """One stray Latin-1 byte makes a stream binary (stored as base64); httpx still reads
    its lines (decoding with replacement), and its events are searched all the same."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in _halves(key)(text)]
    if where == "in a comment line":
        events.insert(0, b": caf\xe9\n\n")
    else:
        events[1] = events[1].replace(b'"object"', b'"note": "caf\xe9", "object"')
    provider.raw_replies["latin"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=[*events, b"data: [DONE]\n\n"]
    )

    def chat(mode: str) -> tuple[str, bytes]:
        url = provider.url("/raw/latin/chat/completions")
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client() as client,
            client.stream("POST", url, json={"stream": True}, headers={"api-key": key}) as reply,
        ):
            lines = list(reply.iter_lines())
            deltas = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
            said = "".join(d["choices"][0]["delta"]["content"] for d in deltas)
            return said, "\n".join(lines).encode()

    live, _ = chat("record")
    assert live == text
    assert "chunks_base64" in stored(cassette_dir)[0]["responses"][0]["body"]
    assert_nothing_of(cassette_dir, [key])
    provider.stop()
    replayed, raw = chat("replay")
    assert replayed == text.replace(key, MASK)
    assert "caf\N{REPLACEMENT CHARACTER}".encode() in raw  # the stray byte replays as it came


def _logprobs_spell(value: Any) -> tuple[str, str]:
    """What the logprobs in a stored or replayed value spell: their tokens, their bytes."""
    tokens: list[str] = []
    data: list[int] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            if isinstance(item.get("token"), str) and isinstance(item.get("bytes"), list):
                tokens.append(item["token"])
                data.extend(item["bytes"])
            for inner in item.values():
                walk(inner)
        elif isinstance(item, list):
            for inner in item:
                walk(inner)
        elif isinstance(item, str) and "data: {" in item:
            for line in item.splitlines():
                if line.startswith("data: {"):
                    walk(json.loads(line[6:]))

    walk(value)
    return "".join(tokens), bytes(data).decode("utf-8", "replace")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_key_spelled_by_logprobs_tokens_and_their_bytes_is_masked(
    stream: bool, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """With logprobs on, an answer spells its text once more over a list of tokens, and
    again as each token's UTF-8 bytes (lists of numbers): no piece holds a whole key, and
    in a whole answer no two pieces are two events; both are searched, and replay."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    provider.reply = text
    messages: Any = [{"role": "user", "content": f"repeat my key {key}"}]

    def ask(mode: str) -> tuple[str, tuple[str, str]]:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
            if not stream:
                reply = client.chat.completions.create(model="m", messages=messages, logprobs=True)
                return reply.choices[0].message.content or "", _logprobs_spell(reply.to_dict())
            chunks = [
                c.to_dict()
                for c in client.chat.completions.create(
                    model="m", messages=messages, logprobs=True, stream=True
                )
            ]
            said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            return said, _logprobs_spell(chunks)

    assert ask("record") == (text, (text, text))
    assert_nothing_of(cassette_dir, [key])
    assert key[4:16] not in "".join(_logprobs_spell(stored(cassette_dir)))
    provider.stop()
    masked = text.replace(key, MASK)
    assert ask("replay") == (masked, (masked, masked))


def test_a_key_spelled_over_the_parts_of_one_answer_is_masked() -> None:
    """google-genai's ``.text`` joins an answer's text parts: a key over two is found."""
    key = token("AIzaSy", 17)
    parts = [{"text": f"your key is {key[:10]}"}, {"text": f"{key[10:]}, keep it"}]
    answer = {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}]}
    entry = {"request": {}, "response": {"status": 200, "body": {"json": answer}}}

    masked = redact_entry(entry, frozenset({key}))["response"]["body"]["json"]

    said = "".join(p["text"] for p in masked["candidates"][0]["content"]["parts"])
    assert said == f"your key is {MASK}, keep it"


def test_chunk_boundaries_are_kept_and_a_moved_one_is_said(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.reply = f"your key is {key}, keep it safe"
    provider.rechunk = _cut_inside(key)
    provider.stream_delay = 0.01  # each cut piece arrives as a chunk of its own
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _stream_openai(provider, key)
    (response,) = only_cassette(cassette_dir)["responses"]
    chunks = response["body"]["sse"]
    (moved,) = response["masked_across_chunks"]
    assert chunks[moved - 1].endswith(MASK)  # the mask whole in the chunk it began in
    assert chunks[moved].startswith(",")  # the next chunk starts right after the secret
    assert all(chunk.endswith("\n\n") for i, chunk in enumerate(chunks) if i != moved - 1)


# -- run logs and verdicts, in every mode ----------------------------------------------------


@pytest.fixture
def run_log() -> Any:
    """A fresh run log, and a process that has remembered no secret yet."""
    from ghostrun._recording import _runlog
    from ghostrun._secrets import _redact

    fresh = _runlog.RunLog()
    _redact._remembered.clear()
    with _runlog.PROCESS.collecting(fresh):
        yield fresh


def run_log_text(log: Any) -> str:
    return json.dumps(list(log.documents().values()), ensure_ascii=False)


def _chat_with_body_key(provider: ProviderSimulator, key: str, prompt: str = PROMPT) -> str:
    with httpx.Client() as client:
        response = client.post(
            provider.url("/v1/chat/completions"),
            json={"model": "m", "messages": [{"role": "user", "content": prompt}], "api_key": key},
        )
    return str(response.json()["choices"][0]["message"]["content"])


def _openai_client_secret(provider: ProviderSimulator) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
    return client.realtime.client_secrets.create(session={"type": "realtime"}).value


def _gemini_auth_token(provider: ProviderSimulator) -> str:
    options = genai_types.HttpOptions(base_url=provider.base_url, api_version="v1alpha")
    client = genai.Client(api_key=token("AIzaSy", 17), http_options=options)
    return str(client.auth_tokens.create(config={"uses": 1}).name)


@pytest.mark.parametrize("mint", [_openai_client_secret, _gemini_auth_token])
def test_a_key_the_provider_mints_is_masked_in_the_cassette_and_the_run_log(
    mint: Callable[[ProviderSimulator], str],
    run_log: Any,
    provider: ProviderSimulator,
    cassette_dir: Path,
) -> None:
    """An ephemeral key minted for a browser (OpenAI's Realtime client secret ``ek_…``,
    Gemini Live's ``auth_tokens/…``): a credential the request never carried, found by
    its shape."""
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        minted = mint(provider)
        ghostrun.expect(f"connect with {minted}").contains("connect")
    assert minted.startswith(("ek_", "auth_tokens/"))
    assert_nothing_of(cassette_dir, [minted])
    assert minted not in run_log_text(run_log) and "connect with" in run_log_text(run_log)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        assert mint(provider) == MASK
    assert session.replayed == 1


def test_a_body_field_secret_is_scrubbed_from_the_run_log(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("body-key-")
    provider.reply = lambda request: f"your key {key} works"
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=HOSTS):
        reply = _chat_with_body_key(provider, key)
        assert key in reply
        ghostrun.expect(reply).contains("works")
    text = run_log_text(run_log)
    assert "works" in text
    assert key not in text


def test_in_replay_the_requests_secrets_are_remembered_too(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    from ghostrun._secrets import _redact

    key = random_secrets.token_hex(16)  # no known shape: only remembering can mask it
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _raw_chat(provider, {"api-key": key})
    _redact._remembered.clear()  # a fresh process replays
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        reply = _raw_chat(provider, {"api-key": key})
        ghostrun.expect(f"{reply} (sent with {key})").contains("Echo")
    assert key not in run_log_text(run_log)


def _chat_carrying(provider: ProviderSimulator, keys: tuple[str, str, str], prompt: str) -> str:
    """A chat request carrying a key in a header, a query parameter and a body field."""
    header_key, param_key, body_key = keys
    with httpx.Client() as client:
        response = client.post(
            provider.url("/v1/chat/completions"),
            params={"key": param_key},
            headers={"x-api-key": header_key},
            json={
                "model": "m",
                "messages": [{"role": "user", "content": prompt}],
                "token": body_key,
            },
        )
    return str(response.json()["choices"][0]["message"]["content"])


def _keys() -> tuple[str, str, str]:
    return tuple(random_secrets.token_hex(16) for _ in range(3))  # type: ignore[return-value]


def test_a_replayed_requests_secrets_are_collected_at_the_first_scrub(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Replay only holds a request; the run log's scrub collects its secrets, wherever they were."""
    from ghostrun._secrets import _redact

    keys = _keys()  # no known shape: only the request's own secrets can mask them
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, keys, PROMPT)
    _redact._held.collect()
    _redact._remembered.clear()  # a fresh process replays
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        reply = _chat_carrying(provider, keys, PROMPT)
        assert not set(keys) & set(_redact._remembered)  # held, not collected yet
        ghostrun.expect(f"{reply} (sent with {' and '.join(keys)})").contains("Echo")
    text = run_log_text(run_log)
    assert "Echo" in text
    for key in keys:
        assert key not in text
    assert not _redact._held.requests


def test_replayed_requests_past_the_byte_bound_are_collected_at_once(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held requests are bounded by their bytes: past the bound, collected and let go."""
    from ghostrun._secrets import _redact

    prompt = "a long prompt " * 200  # 2,800 bytes: two such requests pass the bound below
    first, second = _keys(), _keys()
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, first, prompt)
        _chat_carrying(provider, second, prompt)
    _redact._held.collect()
    _redact._remembered.clear()
    monkeypatch.setattr(_redact, "_MAX_HELD_BYTES", 6000)
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, first, prompt)
        assert len(_redact._held.requests) == 1
        assert not set(first) & set(_redact._remembered)  # under the bound: only held
        _chat_carrying(provider, second, prompt)
        assert not _redact._held.requests and _redact._held.size == 0
        assert set(first) | set(second) <= set(_redact._remembered)  # no scrub needed


@pytest.mark.parametrize("lib", [httpx, httpx2])
@pytest.mark.parametrize(
    "raw",
    [
        [(b"Authorization", b"Bearer sk-abc"), (b"X-Api-Key", b"k1"), (b"x-api-key", b"k2")],
        [(b"Cookie", b"a=b; c=d"), (b"X-Name", "caf\u00e9".encode())],  # UTF-8, not ASCII
        [(b"X-Name", "caf\u00e9".encode("latin-1")), (b"api-key", b"\xff\xfe")],  # neither
        [],
    ],
)
def test_held_headers_read_back_as_the_request_gave_them(
    lib: Any, raw: list[tuple[bytes, bytes]]
) -> None:
    """A replayed request's headers, held flat (raw while ASCII), thaw to its own pairs."""
    from ghostrun._intercept._httpx import _HeaderPairs
    from ghostrun._secrets._redact import _thawed

    headers = lib.Headers(raw)
    assert _thawed(_HeaderPairs(headers).frozen()) == headers.multi_items()
    built = _HeaderPairs(headers)
    list(built)  # read once (a non-JSON body's content type): held as read
    assert _thawed(built.frozen()) == headers.multi_items()


def test_a_miss_message_in_the_run_log_is_scrubbed(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    shaped = "sk-proj-" + random_secrets.token_hex(16)
    cassette_dir.mkdir(parents=True)
    with (
        pytest.raises(ghostrun.CacheMiss) as raised,
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        client.post(provider.url("/v1/chat/completions"), params={"q": shaped}, json={"m": 1})
    assert shaped not in str(raised.value)
    text = run_log_text(run_log)
    assert "no recording" in text
    assert shaped not in text


def test_the_redact_hook_applies_to_the_run_log(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    ssn = "123-45-6789"

    def scrub(entry: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(entry).replace(ssn, "<ssn>")
        return dict(json.loads(text))

    def ask(mode: str, prompt: str) -> str:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            text = reply.choices[0].message.content or ""
            ghostrun.expect(text).contains("SSN")
            return text

    assert ssn in ask("record", f"My SSN is {ssn}.")
    with pytest.raises(ghostrun.CacheMiss):
        ask("replay", f"My SSN is still {ssn}.")
    text = run_log_text(run_log)
    assert "Echo: My SSN is <ssn>." in text  # the output, as the cassette holds it
    assert "still <ssn>" in text  # the miss diff, hooked too
    assert ssn not in text


# -- redirects to server-signed URLs ------------------------------------------------------


def test_a_redirect_to_a_signed_url_is_stored_without_its_signature(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    signature, key = random_secrets.token_hex(32), token("AIzaSy", 17)
    provider.signed_params = {
        "X-Amz-Date": "20250101T000000Z",
        "X-Amz-Signature": signature,
        "key": key,
    }
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS) as session,
        httpx.Client(follow_redirects=True) as client,
    ):
        live = client.get(provider.url("/hostile/redirect"))
    assert live.status_code == 200 and live.history[0].status_code == 302
    assert session.recorded == 2
    assert_nothing_of(cassette_dir, [signature, key])
    (redirect,) = [c for c in stored(cassette_dir) if c["responses"][0]["status"] == 302]
    body = redirect["responses"][0]["body"]["text"]
    assert f"X-Amz-Signature={MASK}" in body and "X-Amz-Date=20250101T000000Z" in body


def test_a_signed_redirect_replays_as_it_ran_live_with_its_signature_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    signature, key = random_secrets.token_hex(32), token("AIzaSy", 17)
    provider.signed_params = {
        "X-Amz-Date": "20250101T000000Z",
        "X-Amz-Signature": signature,
        "key": key,
    }

    def follow(mode: str) -> httpx.Response:
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client(follow_redirects=True) as client,
        ):
            return client.get(provider.url("/hostile/redirect"))

    live = follow("record")
    provider.stop()
    replayed = follow("replay")

    assert (
        [r.status_code for r in replayed.history] == [302] == [r.status_code for r in live.history]
    )
    assert replayed.status_code == live.status_code == 200
    assert (
        replayed.json()
        == live.json()
        == {"downloaded": True, "params": ["X-Amz-Date", "X-Amz-Signature", "key"]}
    )
    location = replayed.history[0].headers["location"]
    assert f"X-Amz-Signature={MASK}" in location and f"key={MASK}" in location
    assert "X-Amz-Date=20250101T000000Z" in location
    assert_nothing_of(cassette_dir, [signature, key])


def test_credentials_in_a_kept_location_are_masked() -> None:
    location = "https://cdn.example.com/f?X-Amz-Signature=abc123def456&sig=s1g2&code=oauth-9&x=1"
    entry = {
        "request": {"body": {"text": ""}},
        "response": {"status": 302, "headers": {"location": location}, "body": {"text": ""}},
    }
    stored_location = redact_entry(entry, frozenset())["response"]["headers"]["location"]
    assert stored_location == (
        f"https://cdn.example.com/f?X-Amz-Signature={MASK}&sig={MASK}&code={MASK}&x=1"
    )


# -- echoes in other encodings ----------------------------------------------------------------


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
        assert _openai(provider, key).split() == echoes
    assert_nothing_of(cassette_dir, [key])
