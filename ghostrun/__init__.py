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

from ._core._version import __version__
from ._recording import _wiring

if TYPE_CHECKING:
    from ._assertions._expect import Expectation, ExpectationFailed, expect, expect_tool_calls
    from ._assertions._tool_calls import ToolCall, ToolCallExpectation
    from ._assertions._trajectory import TrajectoryExpectation, expect_trajectory
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
    from ._integrations._unittest import TestCaseMixin
    from ._judging._judges import (
        CallableJudge,
        Judge,
        OllamaJudge,
        OpenAICompatibleJudge,
        RawVerdict,
    )
    from ._judging._verdicts import Verdict
    from ._recording._session import Session, session
    from ._recording._settings import Redactor

# Every public name is loaded on first use: ``import ghostrun`` is on the path of every
# pytest run (the plugin is a module of this package), of every replaying child process
# (the start-up hook) and of every cold start, and most of them never open a session.
_EXCEPTIONS = "._core._exceptions"
_LAZY = {
    "AuthFailureWarning": _EXCEPTIONS,
    "CacheMiss": _EXCEPTIONS,
    "CallableJudge": "._judging._judges",
    "CassetteError": _EXCEPTIONS,
    "DamagedCassette": _EXCEPTIONS,
    "Expectation": "._assertions._expect",
    "ExpectationFailed": "._assertions._expect",
    "GhostrunError": _EXCEPTIONS,
    "Judge": "._judging._judges",
    "JudgeUnavailable": _EXCEPTIONS,
    "Mode": "._core._modes",
    "OllamaJudge": "._judging._judges",
    "OpenAICompatibleJudge": "._judging._judges",
    "PROVIDER_HOSTS": "._core._hosts",
    "RawVerdict": "._judging._judges",
    "Redactor": "._recording._settings",
    "ReplayRefused": _EXCEPTIONS,
    "Session": "._recording._session",
    "StaleCassette": _EXCEPTIONS,
    "StaleCassetteWarning": _EXCEPTIONS,
    "TestCaseMixin": "._integrations._unittest",
    "ToolCall": "._assertions._tool_calls",
    "ToolCallExpectation": "._assertions._tool_calls",
    "TrajectoryExpectation": "._assertions._trajectory",
    "UnlistedHostWarning": _EXCEPTIONS,
    "UnplayedSteps": _EXCEPTIONS,
    "UnplayedStepsWarning": _EXCEPTIONS,
    "UnsupportedHttpx": _EXCEPTIONS,
    "UnsupportedLibrary": _EXCEPTIONS,
    "Verdict": "._judging._verdicts",
    "configure": "._core._config",
    "expect": "._assertions._expect",
    "expect_tool_calls": "._assertions._expect",
    "expect_trajectory": "._assertions._trajectory",
    "session": "._recording._session",
}


def _wire() -> None:
    """Have the layers above sessions hear of them (DESIGN §2): interception installs its
    hooks while any holder holds them (a session, a runner's lease), the guard while a
    session replays, and the run log saves each session's use. Run before the first
    session enters (`_wiring`), so neither ``import ghostrun`` nor the pytest plugin's
    start-up imports them."""
    from ._intercept import _at_exit, _guard, _patch
    from ._recording import _deck, _runlog

    _deck.subscribe(entering=_guard.session_entered, exiting=_guard.session_exited)  # + roads
    _patch.on_unhooked(_guard.acquire, _guard.release)  # an unhooked road refuses, in every mode
    _deck.subscribe(closed=_runlog.session_closed)
    _deck.subscribe(closed=_at_exit.session_closed)  # telemetry flushed at exit, after a replay


_wiring.before_first_session(_wire)

# A suite-wide replay, or a replay run that started this process, guards it whole (_guard).
if _os.environ.get("GHOSTRUN_MODE") or _os.environ.get("GHOSTRUN_REPLAY_PARENT"):
    importlib.import_module("._intercept._guard", __name__).install_for_suite()


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
