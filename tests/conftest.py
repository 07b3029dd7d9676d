"""Fixtures shared by the whole suite: the loopback provider and a clean environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from simulator import ProviderSimulator

# Variables that would change ghostrun's mode, paths or hosts behind a test's back
# (CI=true on hosted CI flips the default mode to replay).
_ISOLATED_ENV = (
    "GHOSTRUN_MODE",
    "GHOSTRUN_CASSETTE_DIR",
    "GHOSTRUN_HOSTS",
    "GHOSTRUN_BLOCK_NETWORK",
    "CI",
    "OLLAMA_HOST",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every test the same environment, and keep loopback traffic off any proxy."""
    for name in _ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(filter(None, [current, "127.0.0.1", "localhost"])))


@pytest.fixture
def provider() -> Iterator[ProviderSimulator]:
    """A started simulator, fresh for each test and stopped after it."""
    with ProviderSimulator() as simulator:
        yield simulator


@pytest.fixture
def cassette_dir(tmp_path: Path) -> Path:
    return tmp_path / "cassettes"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every ``@pytest.mark.anyio`` test under both event loops ghostrun supports."""
    return str(request.param)
