"""The last clear-text stores (issue 28), each through the real client against loopback.

A key offered as a WebSocket subprotocol (browser-style Realtime auth);
credentials a provider mints in an answer (OAuth tokens, a created admin key);
what the user's ``redact=`` hook removed, in verdict files and WebSocket
frames; a criterion quoting a key, in a judge miss. Each test fails on a
ghostrun that stores or prints them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import google.auth.transport.requests
import google.oauth2.credentials
import httpx
import openai
import pytest
import websockets.asyncio.client as aio_client
import websockets.sync.client as sync_client
from simulator import ProviderSimulator, RawReply
from ws_simulator import WebSocketSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)
KEY = "sk-" + "proj-offeredAsSubproto0123456789"  # assembled: no key shape is committed
PLAIN_KEY = "rtKEY" + "0123456789abcdefQ"  # no known shape: only the rule finds it


def _files(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*.json")))


# -- a key offered as a subprotocol ----------------------------------------------------------


def _talk(url: str, offered: list[str], how: str, say: str) -> tuple[str | None, Any]:
    """Connect offering ``offered``, send ``say``, and return (chosen subprotocol, the reply)."""
    if how == "sync":
        with sync_client.connect(url, subprotocols=offered) as ws:  # type: ignore[arg-type]
            ws.send(say)
            return ws.subprotocol, json.loads(ws.recv())

    async def talk() -> tuple[str | None, Any]:
        if how == "asyncio":
            async with aio_client.connect(url, subprotocols=offered) as ws:  # type: ignore[arg-type]
                await ws.send(say)
                return ws.subprotocol, json.loads(await ws.recv())
        async with aiohttp.ClientSession() as http, http.ws_connect(url, protocols=offered) as ws:
            await ws.send_str(say)
            return ws.protocol, await ws.receive_json()

    return asyncio.run(talk())


HOWS = ["sync", "asyncio", "aiohttp"]


@pytest.mark.parametrize("how", HOWS)
def test_a_key_offered_as_the_chosen_subprotocol_is_masked_and_replays(
    how: str, cassette_dir: Path
) -> None:
    """The simulator chooses the first subprotocol offered: here the one holding the key."""
    offered = [f"openai-insecure-api-key.{KEY}", "realtime"]
    with WebSocketSimulator() as ws:
        url = ws.url("/echo")
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            chosen, reply = _talk(url, offered, how, "hello")
    assert chosen == offered[0] and reply == {"echo": "hello"}
    stored = _files(cassette_dir)
    assert KEY.encode() not in stored
    assert b'"openai-insecure-api-key.[REDACTED]"' in stored
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        replayed = _talk(url, offered, how, "hello")
    assert replayed == ("openai-insecure-api-key.[REDACTED]", {"echo": "hello"})
    assert ws.connections == 1  # replay never connected


@pytest.mark.parametrize("how", HOWS)
def test_a_key_offered_but_not_chosen_is_masked_wherever_it_appears(
    how: str, cassette_dir: Path
) -> None:
    """The server chooses ``realtime``; the key, which has no known shape, is echoed back."""
    offered = ["realtime", f"openai-insecure-api-key.{PLAIN_KEY}"]
    with WebSocketSimulator() as ws:
        url = ws.url("/echo")
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            chosen, reply = _talk(url, offered, how, f"my key {PLAIN_KEY}")
    assert chosen == "realtime" and reply == {"echo": f"my key {PLAIN_KEY}"}
    stored = _files(cassette_dir)
    assert PLAIN_KEY.encode() not in stored and b"my key [REDACTED]" in stored
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert _talk(url, offered, how, f"my key {PLAIN_KEY}") == (
            "realtime",
            {"echo": "my key [REDACTED]"},
        )


# -- credentials a provider mints ------------------------------------------------------------

ACCESS = "ya29." + "a0AfB_byMintedAccess0123456789"
REFRESH_NEW = "1//" + "0gMintedRefreshToken0123456789"
ID_TOKEN = "eyJ" + "hbGciOiJSUzI1NiJ9.eyJzdWIiOiJtaW50ZWQifQ.c2lnbmVkMDEyMzQ1Njc4OQ"
ADMIN_KEY = "sk-" + "admin-MintedAdminKey0123456789abcdef"


def _token_reply() -> RawReply:
    body = {
        "access_token": ACCESS,
        "expires_in": 3599,
        "refresh_token": REFRESH_NEW,
        "id_token": ID_TOKEN,
        "scope": "openid",
        "token_type": "Bearer",
    }
    return RawReply(200, [("content-type", "application/json")], json.dumps(body).encode())


def test_an_oauth_token_response_is_stored_without_its_tokens(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """google-auth refreshes its credentials at the token endpoint (through requests)."""
    provider.raw_replies["token"] = _token_reply()

    def refresh(mode: str) -> google.oauth2.credentials.Credentials:
        credentials = google.oauth2.credentials.Credentials(
            token=None,
            refresh_token="1//" + "0gOldRefresh0123456789abcdef",
            token_uri=provider.url("/raw/token"),
            client_id="client-id.apps.example",
            client_secret="GOCSPX-" + "clientSecret0123456789",
        )
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK):
            credentials.refresh(google.auth.transport.requests.Request())
        return credentials

    live = refresh("record")
    assert live.token == ACCESS and live.id_token == ID_TOKEN
    stored = _files(cassette_dir)
    for secret in (ACCESS, REFRESH_NEW, ID_TOKEN, "clientSecret0123456789", "0gOldRefresh"):
        assert secret.encode() not in stored, secret
    (cassette,) = cassette_dir.glob("*.json")  # beside it: the run log and the trajectory
    assert json.loads(cassette.read_bytes())["responses"][0]["body"]["json"]["expires_in"] == 3599
    assert refresh("replay").token == "[REDACTED]"


def test_an_admin_key_openai_creates_is_masked_in_the_answer(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    created = {
        "object": "organization.admin_api_key",
        "id": "key_abc",
        "name": "ci",
        "redacted_value": "sk-admin...cdef",
        "value": ADMIN_KEY,
    }
    provider.raw_replies["admin_api_keys"] = RawReply(
        200, [("content-type", "application/json")], json.dumps(created).encode()
    )
    client = openai.OpenAI(
        base_url=provider.url("/raw"), api_key="sk-" + "admin-caller0123456789ab"
    )
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        answer = client.post("/admin_api_keys", body={"name": "ci"}, cast_to=object)
    assert answer["value"] == ADMIN_KEY  # type: ignore[index]
    stored = _files(cassette_dir)
    assert ADMIN_KEY.encode() not in stored and b"sk-admin...cdef" in stored


def test_a_logprobs_token_is_content_and_stays(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The name rule holds in answers minus the names answers use for content."""
    body = {"logprobs": {"content": [{"token": "Supercalifragilistic1", "logprob": -0.1}]}}
    provider.raw_replies["logprobs"] = RawReply(
        200, [("content-type", "application/json")], json.dumps(body).encode()
    )
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.get(provider.url("/raw/logprobs"))
    assert b"Supercalifragilistic1" in _files(cassette_dir)


# -- the redact= hook, in verdicts and frames ------------------------------------------------

NAME = "Alice Quartermaine"


def _hook(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(json.dumps(entry).replace(NAME, "<customer>")))


def test_what_the_hook_removed_is_not_in_verdict_files(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    def judge(text: str, criterion: str) -> tuple[bool, str]:
        return True, f"the reply greets {NAME} by name"

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, redact=_hook):
        client = openai.OpenAI(
            base_url=provider.url("/v1"), api_key="sk-" + "proj-hook0123456789ab"
        )
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"I am {NAME}"}]
        )
        text = reply.choices[0].message.content or ""
        assert NAME in text  # live, the code sees it
        ghostrun.expect(text, judge=judge).contains_intent("greets the customer")
    verdicts = list((cassette_dir / "judge").glob("*.json"))
    assert len(verdicts) == 1
    stored = verdicts[0].read_text()
    assert NAME not in stored and "<customer>" in stored, stored


def test_what_the_hook_removed_is_not_in_websocket_frames_and_replay_matches(
    cassette_dir: Path,
) -> None:
    with WebSocketSimulator() as ws:
        url = ws.url("/echo")
        for mode in ("record", "replay"):
            with ghostrun.session(
                mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK, redact=_hook
            ):
                with sync_client.connect(url) as raw:
                    raw.send(json.dumps({"user": NAME}))
                    echoed = json.loads(raw.recv())
            expected = NAME if mode == "record" else "<customer>"
            assert echoed == {"echo": json.dumps({"user": expected})}, mode
            stored = _files(cassette_dir)
            assert NAME.encode() not in stored and b"<customer>" in stored
        assert ws.connections == 1


def test_a_judge_miss_does_not_quote_a_key_the_session_saw(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = "sk-" + "proj-criterionKEY0123456789ab"
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ghostrun.CacheMiss) as miss:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
            ghostrun.expect("a reply").contains_intent(f"does not reveal {key}")
    assert "no cached verdict for criterion" in str(miss.value)
    assert key not in str(miss.value) and "does not reveal [REDACTED]" in str(miss.value)


@pytest.fixture(autouse=True)
def _forget(forget_new_secrets: None) -> Iterator[None]:
    yield
