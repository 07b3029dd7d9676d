"""Every status the provider sent is recorded and replayed in order (issue 29, item 1).

But for the transient failures an SDK retried past (408, 429, 5xx), what the
provider answered is what replay answers: an authentication failure too, so a
test of the app's error handling can be recorded, and a request whose only
answer was a 401 replays the 401 rather than a `CacheMiss`. Such a recording
is said once, at the session's exit, so that a bad key is noticed.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import httpx
import openai
import orjson
import pytest
import requests
from helpers import cassettes
from simulator import ProviderSimulator, RawReply

import ghostrun

LOOPBACK = ("127.0.0.1",)
KEY = "azure-" + "0123456789abcdef0123456789abcdef"  # fake, assembled at run time
JSON = [("content-type", "application/json")]
EMBEDDING = orjson.dumps(
    {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    }
)
DENIED = orjson.dumps(
    {"error": {"code": "401", "message": "Access denied due to invalid subscription key."}}
)
AUTH_WARNING = "recorded an authentication failure from 127.0.0.1: check the key"


def azure_embeddings(provider: ProviderSimulator, calls: int) -> list[str]:
    """Embed the same text ``calls`` times through AzureOpenAI: each outcome, in order."""
    client = openai.AzureOpenAI(
        azure_endpoint=provider.url("/raw/azure"),
        api_key=KEY,
        api_version="2024-10-21",
        max_retries=0,
    )
    outcomes = []
    for _ in range(calls):
        try:
            reply = client.embeddings.create(model="embed", input="refund policy")
            outcomes.append(f"ok {reply.data[0].embedding}")
        except openai.APIStatusError as exc:
            outcomes.append(f"{type(exc).__name__} {exc.status_code}")
    return outcomes


def test_azure_embeddings_replay_200_200_401_401_in_order_and_warn_once(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    ok, denied = RawReply(200, JSON, EMBEDDING), RawReply(401, JSON, DENIED, reason="Unauthorized")
    provider.raw_replies["azure"] = [ok, ok, denied, denied]
    with pytest.warns(ghostrun.AuthFailureWarning, match=AUTH_WARNING) as said:
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as rec:
            live = azure_embeddings(provider, 4)
    assert len(said) == 1  # once per session, however many it recorded
    assert live == ["ok [0.25, -0.5]"] * 2 + ["AuthenticationError 401"] * 2
    assert rec.recorded == 4
    (stored,) = cassettes(cassette_dir)
    assert [r["status"] for r in stored["responses"]] == [200, 200, 401, 401]
    assert KEY not in orjson.dumps(stored).decode()

    provider.stop()
    with warnings.catch_warnings():
        # replaying it records nothing, so says nothing (others' warnings, a ResourceWarning
        # a collected socket of an earlier test raises here, are not this test's)
        warnings.simplefilter("error", ghostrun.AuthFailureWarning)
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
            assert azure_embeddings(provider, 4) == live
    assert rep.replayed == 4 and rep.misses == []


def test_a_request_whose_only_answer_was_a_401_replays_the_401(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.raw_replies["azure"] = RawReply(401, JSON, DENIED)
    with pytest.warns(ghostrun.AuthFailureWarning, match=AUTH_WARNING):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
            live = azure_embeddings(provider, 1)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        assert azure_embeddings(provider, 1) == live == ["AuthenticationError 401"]
    assert rep.misses == []


@pytest.mark.parametrize("road", ["httpx", "requests"])
def test_an_image_download_replays_200_then_403(
    provider: ProviderSimulator, cassette_dir: Path, road: str
) -> None:
    """A 403 that is no auth failure at all ("set a user-agent") is still what happened."""
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    provider.raw_replies["image.png"] = [
        RawReply(200, [("content-type", "image/png")], image),
        RawReply(403, [("content-type", "text/plain")], b"Please set a user-agent."),
    ]
    url = provider.url("/raw/image.png")

    def download() -> list[tuple[int, bytes]]:
        if road == "httpx":
            return [(r.status_code, r.content) for r in (httpx.get(url), httpx.get(url))]
        return [(r.status_code, r.content) for r in (requests.get(url), requests.get(url))]

    with pytest.warns(ghostrun.AuthFailureWarning, match=AUTH_WARNING):
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            live = download()
    assert live == [(200, image), (403, b"Please set a user-agent.")]
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert download() == live


def test_a_recorded_401_that_echoes_the_key_holds_no_key(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Auth failures are written now: a body quoting the bad key is masked like any other."""
    echoed = orjson.dumps({"error": {"message": f"Incorrect API key provided: {KEY}."}})
    provider.raw_replies["azure"] = RawReply(401, JSON, echoed, reason="PermissionDenied")
    with pytest.warns(ghostrun.AuthFailureWarning):
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            azure_embeddings(provider, 1)
    files = [p.read_bytes() for p in cassette_dir.rglob("*.json")]
    assert files and not any(KEY.encode() in data for data in files)
    (stored,) = cassettes(cassette_dir)
    message = stored["responses"][0]["body"]["json"]["error"]["message"]
    assert message.startswith("Incorrect API key provided: ") and KEY not in message
