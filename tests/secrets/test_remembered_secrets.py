"""What ghostrun writes besides cassettes (run logs, verdicts) is scrubbed of every
credential the process remembers, in every mode.
"""

from __future__ import annotations

import secrets as random_secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from carriers import HOSTS, PROMPT, openai_chat, raw_chat, run_log_text
from google import genai
from google.genai import types as genai_types
from leaks import assert_not_on_disk, token
from simulator import ProviderSimulator

import ghostrun
from ghostrun._secrets._mask import MASK
from ghostrun._secrets._memory import MEMORY

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


def test_an_echoed_key_reaches_neither_the_run_log_nor_the_verdicts(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """A model that repeats the key: its text is kept in runs/ and judge/ too, scrubbed."""
    from ghostrun._recording import _runlog

    key = token("sk-proj-")
    provider.echo_auth = True
    judge = ghostrun.CallableJudge(lambda text, criterion: (True, f"it says {text}"))
    with ghostrun.session(cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
        reply = openai_chat(provider, key)
        assert key in reply  # the model really did echo it
        ghostrun.expect(reply, judge=judge).contains("Echo").satisfies("mentions auth")
    _runlog.write_run()
    assert (cassette_dir / "runs" / "_last.json").exists()
    assert list((cassette_dir / "judge").glob("*.json"))
    assert_not_on_disk(cassette_dir, [key])


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
    assert_not_on_disk(cassette_dir, [minted], pieces=True)
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
    key = random_secrets.token_hex(16)  # no known shape: only remembering can mask it
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        raw_chat(provider, {"api-key": key})
    MEMORY.reset()  # a fresh process replays
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        reply = raw_chat(provider, {"api-key": key})
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
    keys = _keys()  # no known shape: only the request's own secrets can mask them
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, keys, PROMPT)
    MEMORY.reset()  # a fresh process replays
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        reply = _chat_carrying(provider, keys, PROMPT)
        assert not set(keys) & set(MEMORY.remembered())  # held, not collected yet
        ghostrun.expect(f"{reply} (sent with {' and '.join(keys)})").contains("Echo")
    text = run_log_text(run_log)
    assert "Echo" in text
    for key in keys:
        assert key not in text
    assert not MEMORY.held_requests


def test_replayed_requests_past_the_byte_bound_are_collected_at_once(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held requests are bounded by their bytes: past the bound, collected and let go."""
    prompt = "a long prompt " * 200  # 2,800 bytes: two such requests pass the bound below
    first, second = _keys(), _keys()
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, first, prompt)
        _chat_carrying(provider, second, prompt)
    MEMORY.reset()
    monkeypatch.setattr(MEMORY, "max_held_bytes", 6000)
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS):
        _chat_carrying(provider, first, prompt)
        assert MEMORY.held_requests == 1
        assert not set(first) & set(MEMORY.remembered())  # under the bound: only held
        _chat_carrying(provider, second, prompt)
        assert not MEMORY.held_requests and MEMORY.held_bytes == 0
        assert set(first) | set(second) <= set(MEMORY.remembered())  # no scrub needed


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
    from ghostrun._secrets._memory import thawed

    headers = lib.Headers(raw)
    assert thawed(_HeaderPairs(headers).frozen()) == headers.multi_items()
    built = _HeaderPairs(headers)
    list(built)  # read once (a non-JSON body's content type): held as read
    assert thawed(built.frozen()) == headers.multi_items()


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
