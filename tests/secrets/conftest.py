"""Fixtures of the secrets tests: no key from the environment, a fresh run log."""

from __future__ import annotations

from typing import Any

import pytest

from ghostrun._secrets._memory import MEMORY


@pytest.fixture
def no_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """SDKs read keys from the environment; here every key is the test's own."""
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "GROQ_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OLLAMA_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def run_log() -> Any:
    """A fresh run log, and a process that has remembered no secret yet."""
    from ghostrun._recording import _runlog

    fresh = _runlog.RunLog()
    MEMORY.reset()
    with _runlog.PROCESS.collecting(fresh):
        yield fresh
