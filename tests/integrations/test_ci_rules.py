"""On CI (``CI`` set, no suite-wide mode): what ghostrun refuses, and what a miss tells.

Generated projects run in subprocesses against the simulator, as a user's CI job would:
``CI=true`` in the environment and nothing else.
"""

from __future__ import annotations

import subprocess

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

UNUSED = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:hypothesispytest", "-p", "no:xdist")

FORGOT_THE_MARKER = """
import os

import httpx
import pytest


def test_forgot_the_marker():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body)
"""

WITH_MARKER = """
import os

import httpx
import pytest


@pytest.mark.ghostrun(cassette_dir="cassettes")
def test_with_marker():
    body = {"model": "m", "messages": [{"role": "user", "content": "never recorded"}]}
    httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body)
"""


def test_on_ci_a_test_outside_any_session_cannot_call_a_provider(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(test_app=FORGOT_THE_MARKER)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_subprocess(*UNUSED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CacheMiss*", "*outside any session, where the mode is replay*"])
    result.stdout.fnmatch_lines(["*chosen by CI='true'*", "*needs a session (the ghostrun marker*"])
    assert provider.served == 0

    monkeypatch.setenv("GHOSTRUN_MODE", "auto")  # the suite says what it wants: live
    pytester.runpytest_subprocess(*UNUSED).assert_outcomes(passed=1)
    assert provider.served == 1


def test_off_ci_the_same_test_is_not_refused(
    pytester: pytest.Pytester, pytester_env: None, provider: ProviderSimulator
) -> None:
    pytester.makepyfile(test_app=FORGOT_THE_MARKER)
    pytester.runpytest_subprocess(*UNUSED).assert_outcomes(passed=1)
    assert provider.served == 1


def test_a_miss_on_ci_says_ci_chose_replay_and_that_the_cassette_was_never_committed(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(test_app=WITH_MARKER)
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    pytester.runpytest_subprocess("--ghostrun-record", *UNUSED).assert_outcomes(passed=1)
    (cassette,) = (pytester.path / "cassettes").glob("*.json")
    cassette.unlink()  # as on a CI checkout: recorded, its trajectory says so, never committed
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_subprocess(*UNUSED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*mode:*replay*",
            "*chosen by CI='true': on CI the default is replay*",
            "*It was recorded (trajectories/*names it), but git does not track the file*"
            f"never committed. Commit it: git add {cassette}",
        ]
    )
    assert provider.served == 1  # the recording only


def test_a_miss_off_git_says_nothing_of_commits(
    pytester: pytest.Pytester, pytester_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_app=WITH_MARKER)
    (pytester.path / "cassettes").mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    result = pytester.runpytest_subprocess("--ghostrun-replay", *UNUSED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*chosen by pytest's --ghostrun-record/--ghostrun-replay*"])
    assert "git does not track it" not in result.stdout.str()
