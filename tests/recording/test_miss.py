"""A replay miss: fast through every SDK, explicit about what changed, never swallowed."""

from __future__ import annotations

import re
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


# -- ignore_fields speaks the diff's notation -------------------------------------------


def _chat_with(base_url: str, prompt: str, name: str, trace_id: str) -> str | None:
    reply = sdk_calls.openai_client(base_url).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt, "name": name}],
        extra_body={"metadata": {"trace_id": trace_id}},
    )
    return reply.choices[0].message.content


@pytest.mark.parametrize("name_path", ["messages[0].name", "messages[*].name", "messages.0.name"])
def test_ignore_fields_in_the_diffs_notation_ignores_them(
    provider: ProviderSimulator, cassette_dir: Path, name_path: str
) -> None:
    ignore = [name_path, "metadata.trace_id"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore):
        _chat_with(provider.base_url, PROMPT, "alice", "t-1")
    provider.stop()
    with ghostrun.session(
        cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore, mode="replay"
    ) as replay:
        _chat_with(provider.base_url, PROMPT, "bob", "t-2")
    assert (replay.replayed, replay.misses) == (1, [])


def test_ignored_fields_are_left_out_of_the_miss_diff(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    ignore = ["metadata.trace_id"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore):
        _chat_with(provider.base_url, PROMPT, "alice", "t-1")
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(
            cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore, mode="replay"
        ):
            _chat_with(provider.base_url, CHANGED, "alice", "t-2")
    message = str(caught.value)
    assert "returned on Tuesday." in message
    assert "trace_id" not in message, message


@pytest.mark.parametrize("bad", ["messages[0", "messages[x].name", "metadata..trace_id", ""])
def test_an_ignore_path_that_can_never_match_fails_at_session_creation(
    cassette_dir: Path, bad: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid ignore_fields path {bad!r}")):
        ghostrun.session(cassette_dir=cassette_dir, ignore_fields=["metadata.trace_id", bad])


def test_a_miss_shows_the_absolute_directory_and_says_when_it_does_not_exist(
    provider: ProviderSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(cassette_dir="tests/cassettes", hosts=LOOPBACK, mode="replay"):
            sdk_calls.openai_chat(provider.base_url, "hi")
    message = str(caught.value)
    assert f"cassette dir: {tmp_path / 'tests' / 'cassettes'}\n" in message
    assert "The cassette directory does not exist." in message
    assert not (tmp_path / "tests").exists()
