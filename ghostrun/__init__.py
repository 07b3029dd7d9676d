"""ghostrun: deterministic, free, offline tests for LLM applications.

Record provider HTTP traffic once, replay it from readable cassettes after,
and assert on meaning with a local judge. README.md is the guide: sessions,
modes, the judge, the pytest plugin and the CLI.

PYTEST_DONT_REWRITE: under ``GHOSTRUN_MODE=replay`` the start-up hook imports
this package before pytest could rewrite it (it holds no ``assert`` to rewrite).
"""

from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

from ._core._config import configure
from ._core._exceptions import (
    AuthFailureWarning,
    CacheMiss,
    CassetteError,
    DamagedCassette,
    GhostrunError,
    JudgeUnavailable,
    ReplayRefused,
    StaleCassette,
    StaleCassetteWarning,
    UnlistedHostWarning,
    UnplayedSteps,
    UnplayedStepsWarning,
    UnsupportedHttpx,
    UnsupportedLibrary,
)
from ._core._hosts import PROVIDER_HOSTS
from ._core._modes import Mode
from ._core._version import __version__
from ._intercept import _at_exit, _guard, _patch
from ._recording import _deck, _runlog
from ._recording._session import Session, session
from ._recording._settings import Redactor

if TYPE_CHECKING:
    from ._assertions._expect import Expectation, ExpectationFailed, expect, expect_tool_calls
    from ._assertions._tool_calls import ToolCall, ToolCallExpectation
    from ._assertions._trajectory import TrajectoryExpectation, expect_trajectory
    from ._integrations._unittest import TestCaseMixin
    from ._judging._judges import (
        CallableJudge,
        Judge,
        OllamaJudge,
        OpenAICompatibleJudge,
        RawVerdict,
    )
    from ._judging._verdicts import Verdict

# Loaded on first use: a test that only replays never pays for the assertions,
# the judges or unittest, and ``import ghostrun`` is on every cold start's path.
_LAZY = {
    "CallableJudge": "._judging._judges",
    "ToolCallExpectation": "._assertions._tool_calls",
    "Expectation": "._assertions._expect",
    "ExpectationFailed": "._assertions._expect",
    "Judge": "._judging._judges",
    "OllamaJudge": "._judging._judges",
    "OpenAICompatibleJudge": "._judging._judges",
    "RawVerdict": "._judging._judges",
    "TestCaseMixin": "._integrations._unittest",
    "ToolCall": "._assertions._tool_calls",
    "TrajectoryExpectation": "._assertions._trajectory",
    "Verdict": "._judging._verdicts",
    "expect": "._assertions._expect",
    "expect_tool_calls": "._assertions._expect",
    "expect_trajectory": "._assertions._trajectory",
}


# The layers above sessions hear of them: interception installs its hooks while any
# session is open (and the guard while one replays); the run log saves each one's use.
_deck.subscribe(entering=_patch.session_entered, exiting=_patch.session_exited)
_deck.subscribe(entering=_guard.session_entered, exiting=_guard.session_exited)
_patch.on_unhooked(_guard.acquire, _guard.release)  # an unhooked road refuses, in every mode
_deck.subscribe(closed=_runlog.session_closed)
_deck.subscribe(closed=_at_exit.session_closed)  # telemetry flushed at exit, after a replay

# A suite-wide replay, or a replay run that started this process, guards it whole (_guard).
if _os.environ.get("GHOSTRUN_MODE") or _os.environ.get("GHOSTRUN_REPLAY_PARENT"):
    _guard.install_for_suite()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ghostrun' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only: what ``dir(ghostrun)`` and completion show a user."""
    return sorted(__all__)


__all__ = [
    "PROVIDER_HOSTS",
    "AuthFailureWarning",
    "CacheMiss",
    "CallableJudge",
    "CassetteError",
    "DamagedCassette",
    "Expectation",
    "ExpectationFailed",
    "GhostrunError",
    "Judge",
    "JudgeUnavailable",
    "Mode",
    "OllamaJudge",
    "OpenAICompatibleJudge",
    "RawVerdict",
    "Redactor",
    "ReplayRefused",
    "Session",
    "StaleCassette",
    "StaleCassetteWarning",
    "TestCaseMixin",
    "ToolCall",
    "ToolCallExpectation",
    "TrajectoryExpectation",
    "UnlistedHostWarning",
    "UnplayedSteps",
    "UnplayedStepsWarning",
    "UnsupportedHttpx",
    "UnsupportedLibrary",
    "Verdict",
    "__version__",
    "configure",
    "expect",
    "expect_tool_calls",
    "expect_trajectory",
    "session",
]
