"""A damaged cassette fails the test like a miss (issue 28, DESIGN §3 "Safe").

Tried as a new user would: a truncated cassette, replayed on CI (``CI=true``,
no mode written) through each SDK with its default retries. The error must be
ghostrun's `DamagedCassette` (a `CacheMiss`, its `CassetteError` the cause),
raised by the first attempt, not the SDK's connection error after retries; and
an app's ``except Exception`` fallback must not turn it into a green test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import groq
import openai
import pytest
from google import genai
from google.genai import types
from simulator import ProviderSimulator

import ghostrun

PROMPT = "Where is my refund?"
FALLBACK = "Sorry, our assistant is unavailable."


def with_openai(base_url: str) -> str:
    client = openai.OpenAI(api_key="sk-proj-" + "a" * 40, base_url=base_url + "/v1")
    reply = client.chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": PROMPT}]
    )
    return reply.choices[0].message.content or ""


def with_anthropic(base_url: str) -> str:
    client = anthropic.Anthropic(api_key="sk-ant-api03-" + "b" * 40, base_url=base_url)
    reply = client.messages.create(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
    )
    block = reply.content[0]
    return block.text if isinstance(block, anthropic.types.TextBlock) else ""


def with_groq(base_url: str) -> str:
    client = groq.Groq(api_key="gsk_" + "c" * 48, base_url=base_url)
    reply = client.chat.completions.create(
        model="llama-x", messages=[{"role": "user", "content": PROMPT}]
    )
    return reply.choices[0].message.content or ""


def with_gemini(base_url: str) -> str:
    client = genai.Client(
        api_key="AIza" + "d" * 35, http_options=types.HttpOptions(base_url=base_url)
    )
    return client.models.generate_content(model="gemini-x", contents=PROMPT).text or ""


SDKS: dict[str, Callable[[str], str]] = {
    "openai": with_openai,
    "anthropic": with_anthropic,
    "groq": with_groq,
    "google-genai": with_gemini,
}


def app(call: Callable[[str], str], base_url: str) -> str:
    """An app's own catch-all around its LLM call, as many have."""
    try:
        return call(base_url)
    except Exception:
        return FALLBACK


@pytest.fixture(params=list(SDKS))
def damaged(
    request: pytest.FixtureRequest,
    provider: ProviderSimulator,
    cassette_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Callable[[str], str], str]:
    """One SDK call recorded, its cassette truncated, and the job on CI."""
    call = SDKS[request.param]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        assert call(provider.base_url)
    (path,) = cassette_dir.glob("*.json")
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    provider.stop()
    monkeypatch.setenv("CI", "true")  # no mode written anywhere: replay
    return call, provider.base_url


def test_the_damaged_cassette_reaches_the_test_from_the_first_attempt(
    damaged: tuple[Callable[[str], str], str], cassette_dir: Path
) -> None:
    call, base_url = damaged
    with pytest.raises(ghostrun.DamagedCassette, match="corrupt file") as raised:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=[base_url]) as session:
            call(base_url)
    assert isinstance(raised.value.__cause__, ghostrun.CassetteError)
    assert session.mode == "replay"
    assert len(session.misses) == 1  # one attempt: the SDK retried nothing


def test_an_apps_fallback_cannot_turn_a_damaged_cassette_green(
    damaged: tuple[Callable[[str], str], str], cassette_dir: Path
) -> None:
    call, base_url = damaged
    answers: list[str] = []
    with pytest.raises(ghostrun.DamagedCassette):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=[base_url]):
            answers.append(app(call, base_url))
    assert answers == []  # except Exception never saw it


def test_a_swallowed_damaged_cassette_is_raised_at_session_exit(
    damaged: tuple[Callable[[str], str], str], cassette_dir: Path
) -> None:
    call, base_url = damaged
    swallowed: list[Any] = []
    with pytest.raises(ghostrun.DamagedCassette):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=[base_url]):
            with contextlib.suppress(BaseException):
                swallowed.append(call(base_url))
    assert swallowed == []


def test_a_damaged_websocket_cassette_fails_the_connect_like_a_miss(cassette_dir: Path) -> None:
    """websockets' own ``except Exception`` handling never sees it either."""
    import websockets.sync.client as sync_client
    from ws_simulator import WebSocketSimulator

    with WebSocketSimulator() as ws_provider:
        url = ws_provider.url("/echo")
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
            with sync_client.connect(url) as ws:
                ws.send("hello")
                ws.recv()
    (path,) = cassette_dir.glob("*.json")
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ghostrun.DamagedCassette, match="corrupt file"):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
            with contextlib.suppress(Exception), sync_client.connect(url) as ws:
                ws.send("hello")
