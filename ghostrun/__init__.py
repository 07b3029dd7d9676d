"""ghostrun: deterministic, free, offline tests for LLM applications.

Record provider HTTP traffic once, replay it from readable cassettes after,
and assert on meaning with a local judge. README.md is the guide: sessions,
modes, the judge, the pytest plugin and the CLI.
"""

from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

from ._core._config import configure
from ._core._exceptions import (
    CacheMiss,
    CassetteError,
    GhostrunError,
    JudgeUnavailable,
    UnlistedHostWarning,
    UnsupportedHttpx,
)
from ._core._hosts import PROVIDER_HOSTS
from ._core._modes import Mode
from ._recording._session import Session, session

if TYPE_CHECKING:
    from ._assertions._expect import Expectation, ExpectationFailed, expect, expect_tool_calls
    from ._assertions._tool_calls import ExpectToolCalls, ToolCall
    from ._integrations._unittest import TestCaseMixin
    from ._judging._judges import CallableJudge, Judge, OllamaJudge, OpenAICompatibleJudge
    from ._judging._verdicts import Verdict

# Loaded on first use: a test that only replays never pays for the assertions,
# the judges or unittest, and ``import ghostrun`` is on every cold start's path.
_LAZY = {
    "CallableJudge": "._judging._judges",
    "ExpectToolCalls": "._assertions._tool_calls",
    "Expectation": "._assertions._expect",
    "ExpectationFailed": "._assertions._expect",
    "Judge": "._judging._judges",
    "OllamaJudge": "._judging._judges",
    "OpenAICompatibleJudge": "._judging._judges",
    "TestCaseMixin": "._integrations._unittest",
    "ToolCall": "._assertions._tool_calls",
    "Verdict": "._judging._verdicts",
    "expect": "._assertions._expect",
    "expect_tool_calls": "._assertions._expect",
}


if _os.environ.get("GHOSTRUN_MODE"):  # replay guards the whole process (see _guard)
    importlib.import_module("._intercept._guard", __name__).install_for_suite()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ghostrun' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "PROVIDER_HOSTS",
    "CacheMiss",
    "CallableJudge",
    "CassetteError",
    "ExpectToolCalls",
    "Expectation",
    "ExpectationFailed",
    "GhostrunError",
    "Judge",
    "JudgeUnavailable",
    "Mode",
    "OllamaJudge",
    "OpenAICompatibleJudge",
    "Session",
    "TestCaseMixin",
    "ToolCall",
    "UnlistedHostWarning",
    "UnsupportedHttpx",
    "Verdict",
    "__version__",
    "configure",
    "expect",
    "expect_tool_calls",
    "session",
]
