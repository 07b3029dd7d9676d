"""ghostrun: deterministic, free, offline tests for LLM applications.

Record provider HTTP traffic once, replay it from readable cassettes after,
and assert on meaning with a local judge. See DESIGN in the README.
"""

from __future__ import annotations

from ._config import configure
from ._exceptions import CacheMiss, CassetteError, GhostrunError, JudgeUnavailable, UnsupportedHttpx
from ._expect import Expectation, ExpectationFailed, expect, expect_tool_calls
from ._hosts import PROVIDER_HOSTS
from ._judges import CallableJudge, Judge, OllamaJudge, OpenAICompatibleJudge
from ._modes import Mode
from ._session import Session, session
from ._tool_calls import ExpectToolCalls, ToolCall
from ._unittest import TestCaseMixin
from ._verdicts import Verdict

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
    "UnsupportedHttpx",
    "Verdict",
    "__version__",
    "configure",
    "expect",
    "expect_tool_calls",
    "session",
]
