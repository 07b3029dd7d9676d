"""Credential fields by rule: masked whatever their value, a JSON schema kept, a
placeholder never masked (DESIGN §4; issues 15 and 22).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from carriers import HOSTS, MESSAGES
from leaks import assert_not_on_disk, blobs, only_cassette, token, written_files
from simulator import ProviderSimulator

import ghostrun
from ghostrun._secrets._mask import MASK

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


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
    assert_not_on_disk(cassette_dir, leaks, pieces=True)
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
    assert_not_on_disk(cassette_dir, [password], pieces=True)
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


def test_a_credential_field_whose_type_is_no_schema_type_is_recorded_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """``{"type": [[]]}`` under a credential name is no schema; reading it must not crash."""
    client = httpx.Client(base_url=provider.base_url)
    body = {"model": "m", "api_key": {"type": [[]], "value": "nested-key-0123456789"}}

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        client.post("/v1/chat/completions", json=body)

    assert_not_on_disk(cassette_dir, ["nested-key-0123456789"])
