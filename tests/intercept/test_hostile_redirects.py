"""A cassette is data, never an instruction: the redirects it holds (issue 28, DESIGN §1).

A forged cassette holds a ``307`` whose ``location`` is another host. Replayed
through the real SDKs, the hop they follow must be answered from the cassette
or be a `CacheMiss`, never sent; and in any mode, a hop to another host goes
without the first host's credentials. "The provider" and "the catcher" are
two loopback servers; a tripwire refuses (and notes) any off-loopback address.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest
import requests
from google import genai
from google.genai import types
from simulator import ProviderSimulator, RawReply

import ghostrun

GEMINI_KEY = "AIzaSyD" + "q7Lw3xN9pR2sT5vY8bK1mC4eF6hJ0aZ"
ANTHROPIC_KEY = "sk-ant-api03-" + "Qm7xLp2Rv9Tz4Nw8Ks3Hd6Jf1Gb5Yc0A"
AZURE_KEY = "9f3c2a7be14d4c58a0d6e2b71f8c3d95"
SECRET_PROMPT = "the quarterly numbers nobody may see"
METADATA = "http://169.254.169.254/latest/meta-data/iam/collect"
REMOTE = "https://collector.attacker.example/collect"


@pytest.fixture
def catcher() -> Iterator[ProviderSimulator]:
    """The host a forged redirect points at: it counts what reaches it."""
    with ProviderSimulator() as simulator:
        yield simulator


# -- the clients, as an app would call them ---------------------------------------------------


def _gemini(base_url: str) -> genai.Client:
    return genai.Client(api_key=GEMINI_KEY, http_options=types.HttpOptions(base_url=base_url))


def gemini_sync(base_url: str) -> Any:
    """google-genai's sync road: httpx2."""
    client = _gemini(base_url)  # held: a client collected mid-call closes its connection
    return client.models.generate_content(model="gemini-x", contents=SECRET_PROMPT)


def gemini_aiohttp(base_url: str) -> Any:
    """google-genai's async road: aiohttp."""

    async def call() -> Any:
        client = _gemini(base_url)
        return await client.aio.models.generate_content(model="gemini-x", contents=SECRET_PROMPT)

    return asyncio.run(call())


def azure_openai(base_url: str) -> Any:
    client = openai.AzureOpenAI(
        api_key=AZURE_KEY, azure_endpoint=base_url, api_version="2024-10-21", max_retries=0
    )
    message = {"role": "user", "content": SECRET_PROMPT}
    return client.chat.completions.create(model="gpt-4o", messages=[message])  # type: ignore[list-item]


def claude(base_url: str) -> Any:
    client = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=base_url, max_retries=0)
    message = {"role": "user", "content": SECRET_PROMPT}
    return client.messages.create(model="claude-x", max_tokens=8, messages=[message])  # type: ignore[list-item]


def with_requests(base_url: str) -> Any:
    """requests (urllib3): follows a 307 keeping every header but Authorization."""
    headers = {"x-api-key": ANTHROPIC_KEY, "cookie": f"session={AZURE_KEY}"}
    return requests.post(base_url + "/v1/messages", json={"prompt": SECRET_PROMPT}, headers=headers)


SDKS: dict[str, Callable[[str], Any]] = {
    "google-genai-httpx2": gemini_sync,
    "google-genai-aiohttp": gemini_aiohttp,
    "openai-azure": azure_openai,
    "anthropic": claude,
    "requests": with_requests,
}
KEYS = (GEMINI_KEY, ANTHROPIC_KEY, AZURE_KEY)


# -- a forged cassette --------------------------------------------------------------------


def forge_redirect(
    provider: ProviderSimulator, cassette_dir: Path, call: Callable[[str], Any], target: str
) -> str:
    """Record one call, then rewrite its answer into a 307 to ``target``, as a stranger's PR
    could. Returns the base URL the client uses."""
    provider.raw_replies["api"] = RawReply(200, [("content-type", "application/json")], b"{}")
    base_url = provider.url("/raw/api")
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        with contextlib.suppress(Exception):  # the SDK may not like "{}": only the key matters
            call(base_url)
    for path in cassette_dir.glob("*.json"):
        cassette = orjson.loads(path.read_bytes())
        for response in cassette["responses"]:
            response.update(status=307, headers={"location": target}, body={"text": ""})
        path.write_bytes(orjson.dumps(cassette, option=orjson.OPT_INDENT_2))
    provider.reset()
    return base_url


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("where", ["catcher", "metadata", "remote"])
def test_a_replayed_redirect_is_never_followed_live(
    provider: ProviderSimulator,
    catcher: ProviderSimulator,
    cassette_dir: Path,
    tripwire: list[str],
    sdk: str,
    where: str,
) -> None:
    target = {"catcher": catcher.url("/collect"), "metadata": METADATA, "remote": REMOTE}[where]
    base_url = forge_redirect(provider, cassette_dir, SDKS[sdk], target)
    catcher.reset()
    tripwire.clear()

    hosts = [provider.base_url]  # the provider alone: the catcher's port is not listed
    with pytest.raises(ghostrun.CacheMiss):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts):
            SDKS[sdk](base_url)

    assert catcher.served == 0 and provider.served == 0
    assert tripwire == []


def test_a_hop_a_replay_caused_stays_replay_only_for_the_session(
    provider: ProviderSimulator, catcher: ProviderSimulator, cassette_dir: Path
) -> None:
    """Swallowed, the hop's miss is raised at exit; the catcher's host stays off limits."""
    base_url = forge_redirect(provider, cassette_dir, gemini_sync, catcher.url("/collect"))
    catcher.reset()
    with pytest.raises(ghostrun.CacheMiss):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[provider.base_url]):
            with contextlib.suppress(BaseException):  # an app's catch-all fallback
                gemini_sync(base_url)
            with contextlib.suppress(BaseException):
                requests.post(catcher.url("/collect"), data=SECRET_PROMPT)
    assert catcher.served == 0


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("mode", ["record", "auto"])
def test_a_redirect_to_another_host_gets_no_credentials(
    provider: ProviderSimulator, catcher: ProviderSimulator, cassette_dir: Path, sdk: str, mode: str
) -> None:
    """Recording live, a 307 to another host (here: another port) is followed without keys."""
    provider.raw_replies["moved"] = RawReply(307, [("location", catcher.url("/collect"))])
    with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=[provider.base_url]):
        with contextlib.suppress(Exception):  # the catcher answers 404
            SDKS[sdk](provider.url("/raw/moved"))

    assert catcher.served == 1, "the hop is sent, recorded"
    hop = catcher.last_request
    assert not [name for name, value in hop.headers.items() if any(k in value for k in KEYS)]
    assert provider.served == 1
    assert any(key in str(provider.last_request.headers) for key in KEYS)


def test_a_redirect_to_the_same_host_keeps_its_credentials(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.raw_replies["moved"] = RawReply(307, [("location", provider.url("/raw/landing"))])
    provider.raw_replies["landing"] = RawReply(200, [("content-type", "application/json")], b"{}")
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        with contextlib.suppress(Exception):
            with_requests(provider.url("/raw/moved"))
    assert provider.served == 2
    assert provider.last_request.headers["x-api-key"] == ANTHROPIC_KEY
