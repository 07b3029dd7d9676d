"""The engine's rules for every road: no billed retries, and the unlisted-host warning."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import sdk_calls
from simulator import ProviderSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def unwritable(tmp_path: Path) -> Path:
    """A cassette directory that cannot be created (tests may run as root, so no chmod)."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cassette directory should be")
    return blocker / "cassettes"


# -- no billed retries ---------------------------------------------------------------


SDK_CALLS: dict[str, Callable[[str], Any]] = {
    "anthropic": lambda url: sdk_calls.anthropic_chat(url, max_retries=2),
    "anthropic-stream": sdk_calls.anthropic_stream,
    "groq": lambda url: sdk_calls.groq_chat(url, max_retries=2),
}


@pytest.mark.parametrize("call", SDK_CALLS.values(), ids=SDK_CALLS.keys())
def test_a_cassette_that_cannot_be_written_costs_one_request_and_reaches_the_test(
    provider: ProviderSimulator, tmp_path: Path, call: Callable[[str], Any]
) -> None:
    """anthropic and groq retry any Exception from the transport: the write error is not one."""
    handed_on: list[Any] = []
    with pytest.raises(ghostrun.CassetteError, match=r"cannot (write|create)") as raised:
        with ghostrun.session(mode="record", cassette_dir=unwritable(tmp_path), hosts=LOOPBACK):
            handed_on.append(call(provider.base_url))
    assert provider.served == 1  # one real (billed) request, no retry
    assert "Echo:" in "".join(handed_on[0])  # the code under test got its answer
    assert any("when the session closed" in note for note in raised.value.__notes__)


def test_the_write_error_is_raised_once_even_when_every_write_fails(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    with pytest.raises(ghostrun.CassetteError) as raised:
        with ghostrun.session(mode="record", cassette_dir=unwritable(tmp_path), hosts=LOOPBACK):
            for prompt in ("one", "two", "three"):
                httpx2.post(provider.url("/v1/chat/completions"), json={"p": prompt})
    assert provider.served == 3
    assert not isinstance(raised.value.__context__, ghostrun.CassetteError)


def test_a_miss_in_the_same_session_is_raised_first(
    provider: ProviderSimulator, tmp_path: Path, cassette_dir: Path
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx2.post(provider.url("/v1/chat/completions"), json=BODY)
    with pytest.raises(ghostrun.CacheMiss):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as s:
            with contextlib.suppress(BaseException):  # an app's catch-all swallows the miss
                httpx2.post(provider.url("/v1/chat/completions"), json={"other": 1})
            s._deck.write_failed(ghostrun.CassetteError("a write failed too"))


# -- the unlisted-host warning -------------------------------------------------------------


def test_an_llm_call_to_an_unlisted_host_is_warned_about_once_per_session(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with pytest.warns(ghostrun.UnlistedHostWarning) as caught:
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir) as s:
            for _ in range(3):
                httpx2.post(provider.url("/v1/chat/completions"), json=BODY)
            httpx.post(provider.url("/v1/messages"), json=BODY)
    assert s.passed_through == 4 and s.recorded == 0 and not cassette_dir.exists()
    (warning,) = [w for w in caught if w.category is ghostrun.UnlistedHostWarning]
    message = str(warning.message)
    listed = f"127.0.0.1:{provider.port}"
    assert "/v1/chat/completions looks like an LLM API call" in message
    assert f'hosts=["{listed}"]' in message and f"GHOSTRUN_HOSTS={listed}" in message

    with pytest.warns(ghostrun.UnlistedHostWarning):  # a new session says it again
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
            httpx2.post(provider.url("/v1/chat/completions"), json=BODY)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path", ["/api/chat", "/v1beta/models/gemini-2.0-flash:generateContent", "/v1/responses"]
)
async def test_the_warning_covers_each_provider_shape_and_aiohttp(
    provider: ProviderSimulator, cassette_dir: Path, path: str
) -> None:
    import aiohttp

    with pytest.warns(ghostrun.UnlistedHostWarning, match="looks like an LLM API call"):
        async with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
            async with aiohttp.ClientSession() as http, http.post(provider.url(path), json={}):
                pass


def test_no_warning_for_other_traffic_or_listed_hosts(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ghostrun.UnlistedHostWarning)
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir) as s:
            httpx2.get(provider.url("/plain"))
            httpx2.get(provider.url("/api/tags"))
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK) as listed:
            httpx2.post(provider.url("/v1/chat/completions"), json=BODY)
    assert s.passed_through == 2 and listed.recorded == 1


# -- the layout ----------------------------------------------------------------------


def test_import_ghostrun_imports_no_road_and_not_the_engine() -> None:
    """The roads and their engine load when the first session opens, not before.

    Only the registry of roads and the guard are imported: sessions tell them when
    they open and close (``ghostrun/__init__`` subscribes them), and neither
    imports an HTTP library.
    """
    subscribers = (
        "ghostrun._intercept",
        "ghostrun._intercept._patch",
        "ghostrun._intercept._guard",
        "ghostrun._intercept._live",  # the guard's: the hosts it said went live
        "ghostrun._intercept._at_exit",  # telemetry flushed at exit, after a replay
    )
    code = (
        "import sys, ghostrun\n"
        "print(sorted(m for m in sys.modules if m.startswith('ghostrun._intercept')"
        f" and m not in {subscribers!r}))\n"
        "with ghostrun.session(mode='replay'):\n"
        "    print('ghostrun._intercept._engine' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOSTRUN_", "PYTEST_"))}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stdout
