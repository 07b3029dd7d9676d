"""A replay miss: fast through every SDK, explicit about what changed, never swallowed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sdk_calls
from simulator import ProviderSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)
PROMPT = "Where is my refund?\nOrder A123 was returned on Monday.\nPlease help."
CHANGED = "Where is my refund?\nOrder A123 was returned on Tuesday.\nPlease help."

# Each SDK with its default retry settings: anthropic and groq retry any
# Exception from the transport with backoff, so a miss must not be one.
SDKS: dict[str, Callable[[str, str], Any]] = {
    "openai": sdk_calls.openai_chat,
    "anthropic": sdk_calls.anthropic_chat,
    "groq": sdk_calls.groq_chat,
    "ollama": sdk_calls.ollama_chat,
}


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_a_one_word_change_misses_at_once_and_shows_the_changed_line(
    provider: ProviderSimulator, cassette_dir: Path, sdk: str
) -> None:
    call = SDKS[sdk]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        call(provider.base_url, PROMPT)
    provider.stop()

    started = time.perf_counter()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
            call(provider.base_url, CHANGED)
    elapsed = time.perf_counter() - started

    assert elapsed < 2.0, f"the miss took {elapsed:.2f}s to reach the test"
    message = str(caught.value)
    assert "POST http://127.0.0.1" in message
    assert str(cassette_dir) in message
    assert "GHOSTRUN_MODE=record" in message
    removed = [line for line in message.splitlines() if line.strip().startswith("-")]
    added = [line for line in message.splitlines() if line.strip().startswith("+")]
    assert any("returned on Monday." in line for line in removed), message
    assert any("returned on Tuesday." in line for line in added), message
    assert s.misses == [caught.value]


def test_a_miss_is_not_an_exception_so_catch_alls_cannot_hide_it() -> None:
    assert not issubclass(ghostrun.CacheMiss, Exception)
    assert issubclass(ghostrun.CacheMiss, BaseException)


def test_a_swallowed_miss_is_raised_when_the_session_exits(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    def app_with_fallback(prompt: str) -> str:
        try:
            return sdk_calls.openai_chat(provider.base_url, prompt) or ""
        except BaseException:  # an app's catch-all around its LLM call
            return "Sorry, something went wrong."

    with pytest.raises(ghostrun.CacheMiss, match="no recording for POST"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            assert app_with_fallback("hi") == "Sorry, something went wrong."


def test_miss_without_any_recording_to_that_endpoint(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with pytest.raises(ghostrun.CacheMiss, match="No recorded request to POST"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            sdk_calls.openai_chat(provider.base_url, "never recorded")
    assert provider.served == 0


def test_ci_default_is_replay_and_a_miss_says_so(
    monkeypatch: pytest.MonkeyPatch, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(ghostrun.CacheMiss, match=r"mode:\s+replay"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
            sdk_calls.openai_chat(provider.base_url, "on CI")
    assert provider.served == 0


@pytest.mark.anyio
async def test_async_miss_reaches_the_test(provider: ProviderSimulator, cassette_dir: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(ghostrun.CacheMiss):
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            await sdk_calls.anthropic_async(provider.base_url, "nothing recorded")
    assert time.perf_counter() - started < 1.0
