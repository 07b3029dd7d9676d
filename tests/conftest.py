"""Fixtures shared by the whole suite: the loopback provider, a clean environment, and the
set-ups several test modules share. A layer's own fixtures are in its folder's conftest.py;
helpers that are not fixtures are in helpers.py."""

from __future__ import annotations

import gc
import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simulator import ProviderSimulator

# ghostrun wires its layers to sessions at the first session, not at import
# (ghostrun/_recording/_wiring.py); pytester's in-process runs drop the modules a run
# imported, so the suite imports the wired ones first, for every run to share them.
import ghostrun._intercept._guard
import ghostrun._recording._runlog  # noqa: F401

# Variables that would change ghostrun's mode, paths or hosts behind a test's back
# (CI=true on hosted CI flips the default mode to replay).
_ISOLATED_ENV = (
    "GHOSTRUN_MODE",
    "GHOSTRUN_CASSETTE_DIR",
    "GHOSTRUN_HOSTS",
    "GHOSTRUN_TOOL_HOSTS",
    "GHOSTRUN_BLOCK_NETWORK",
    "GHOSTRUN_ON_UNPLAYED",
    "GHOSTRUN_REPLAY_PARENT",
    "GHOSTRUN_REPLAY_HOSTS",
    "CI",
    "OLLAMA_HOST",
)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """CI=true (as .ci/run sets it) would make ghostrun's plugin guard this whole run, as it
    should a user's suite; here every test sets the environment it is about (_clean_env)."""
    os.environ.pop("CI", None)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every test the same environment, and keep loopback traffic off any proxy."""
    for name in _ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(filter(None, [current, "127.0.0.1", "localhost"])))


@pytest.fixture(autouse=True)
def _earlier_garbage_collected(request: pytest.FixtureRequest) -> None:
    """Before an async test's event loop runs, collect what earlier tests left.

    An SDK's async client left unclosed closes itself when collected, from whatever loop
    is running then (openai's and others' ``__del__``): inside a later async test, its
    connections' loop long closed, that fails the later test ("Event loop is closed").
    Collected here, with no loop running, it closes nothing and fails nobody.
    """
    if inspect.iscoroutinefunction(getattr(request.node, "obj", None)):
        gc.collect()


@pytest.fixture
def provider() -> Iterator[ProviderSimulator]:
    """A started simulator, fresh for each test and stopped after it."""
    with ProviderSimulator() as simulator:
        yield simulator


@pytest.fixture
def cassette_dir(tmp_path: Path) -> Path:
    return tmp_path / "cassettes"


@pytest.fixture
def pytester_env(provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a pytester project's tests read: the simulator at ``SIM_URL``, as a provider."""
    monkeypatch.setenv("SIM_URL", provider.base_url)
    monkeypatch.setenv("GHOSTRUN_HOSTS", "127.0.0.1")  # the simulator is a provider here
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


@pytest.fixture
def aiohttp_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the requests aiohttp is asked to make (installed below ghostrun's own wrapper)."""
    import aiohttp

    calls: list[str] = []
    original = aiohttp.ClientSession._request

    async def counting(self: Any, method: str, url: Any, **kwargs: Any) -> Any:
        calls.append(str(url))
        return await original(self, method, url, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", counting)
    return calls


@pytest.fixture
def urlopen_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts urllib3's attempts: ``urlopen`` calls itself again for each retry and redirect."""
    import urllib3

    calls: list[str] = []
    original = urllib3.connectionpool.HTTPConnectionPool.urlopen

    def counting(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(url)
        return original(self, method, url, *args, **kwargs)

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "urlopen", counting)
    return calls


@pytest.fixture
def forget_new_secrets() -> Iterator[None]:
    """The process remembers every secret it saw, to scrub run logs: a test's random
    ones (hypothesis tries words like "text/event-stream") must not scrub later tests."""
    from ghostrun._secrets._memory import MEMORY

    before = MEMORY.remembered()
    yield
    MEMORY.reset(before)  # what the test remembered, or left held, is forgotten


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every ``@pytest.mark.anyio`` test under both event loops ghostrun supports."""
    return str(request.param)
