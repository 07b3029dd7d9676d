"""The pytest plugin, end to end: pytest runs generated test files against the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""

CONFTEST = """
import pytest

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

# Every test checks that it runs in the session it should, in the mode the run
# was started with (EXPECTED_MODE), and asks the simulator something of its own.
TESTS = """
import os

import httpx
import pytest

import ghostrun
from ghostrun._recording._session import current_session

SIM = os.environ["SIM_URL"]


def body(prompt):
    return {"model": "m", "messages": [{"role": "user", "content": prompt}]}


def ask(prompt):
    return httpx.post(SIM + "/v1/chat/completions", json=body(prompt)).json()


async def aask(prompt):
    async with httpx.AsyncClient() as client:
        return (await client.post(SIM + "/v1/chat/completions", json=body(prompt))).json()


def check_session(request):
    session = current_session()
    assert session is not None and session.name == request.node.nodeid
    assert session.mode.value == os.environ["EXPECTED_MODE"]
    return session


@pytest.mark.ghostrun()
def test_marked(request):
    check_session(request)
    ghostrun.expect(ask("marked")).contains("marked")


@pytest.mark.ghostrun(mode="auto", cassette_dir="elsewhere")
def test_marker_arguments_are_the_sessions(request):
    session = check_session(request)  # the flag beats mode="auto" written in code
    assert session.cassette_dir.name == "elsewhere"
    ghostrun.expect(ask("elsewhere")).contains("elsewhere")


def test_fixture_without_marker(request, ghostrun_session):
    assert check_session(request) is ghostrun_session
    ghostrun.expect(ask("fixture")).contains("fixture")


@pytest.mark.ghostrun()
def test_fixture_with_marker_is_the_markers_session(request, ghostrun_session):
    assert check_session(request) is ghostrun_session
    ask("marker and fixture")
    assert ghostrun_session.recorded + ghostrun_session.replayed == 1


@pytest.mark.anyio
@pytest.mark.ghostrun()
async def test_async_under_anyio(request, anyio_backend):
    check_session(request)
    ghostrun.expect(await aask("anyio " + anyio_backend)).contains(anyio_backend)


@pytest.mark.asyncio
@pytest.mark.ghostrun()
async def test_async_under_pytest_asyncio(request):
    check_session(request)
    ghostrun.expect(await aask("pytest-asyncio")).contains("pytest-asyncio")


def test_without_ghostrun():
    assert current_session() is None
"""

NEW_TEST = """
import os
import httpx
import pytest

@pytest.mark.ghostrun()
def test_never_recorded():
    body = {"model": "m", "messages": [{"role": "user", "content": "new prompt"}]}
    httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body)
"""

XDIST_TESTS = """
import os
import httpx
import pytest
import ghostrun

@pytest.mark.ghostrun()
@pytest.mark.parametrize("n", range(6))
def test_each(n):
    body = {"model": "m", "messages": [{"role": "user", "content": f"question {n}"}]}
    reply = httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body).json()
    ghostrun.expect(reply).contains(f"question {n}")
    ghostrun.expect(os.environ["PYTEST_XDIST_WORKER"]).contains("gw")
"""


@pytest.fixture
def project(pytester: pytest.Pytester, pytester_env: None) -> pytest.Pytester:
    pytester.makeini(INI)
    return pytester


def last_run(root: Path, cassette_dir: str = ".ghostrun_cache") -> dict[str, Any]:
    return dict(json.loads((root / cassette_dir / "runs" / "_last.json").read_text()))


def test_record_then_replay_with_marker_fixture_and_async_tests(
    project: pytest.Pytester, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeconftest(CONFTEST)
    project.makepyfile(test_app=TESTS)

    monkeypatch.setenv("EXPECTED_MODE", "record")
    recorded = project.runpytest_subprocess("--ghostrun-record", "--strict-markers", "-p", "anyio")
    recorded.assert_outcomes(passed=8)
    served = provider.served
    assert served == 7
    assert len(list((project.path / "elsewhere").glob("*.json"))) == 1

    # The flag beats GHOSTRUN_MODE, and replay never reaches the provider.
    monkeypatch.setenv("GHOSTRUN_MODE", "record")
    monkeypatch.setenv("EXPECTED_MODE", "replay")
    project.makepyfile(test_new=NEW_TEST)
    replayed = project.runpytest_subprocess("--ghostrun-replay", "--strict-markers", "-p", "anyio")
    replayed.assert_outcomes(passed=8, failed=1)
    replayed.stdout.fnmatch_lines(["*CacheMiss: ghostrun: no recording for POST*"])
    assert provider.served == served

    run = last_run(project.path)
    outcomes = {name.split("::")[1]: test["outcome"] for name, test in run["tests"].items()}
    assert outcomes == {
        "test_marked": "passed",
        "test_fixture_without_marker": "passed",
        "test_fixture_with_marker_is_the_markers_session": "passed",
        "test_async_under_anyio[asyncio]": "passed",
        "test_async_under_anyio[trio]": "passed",
        "test_async_under_pytest_asyncio": "passed",
        "test_never_recorded": "failed",
    }
    assert run["tests"]["test_app.py::test_marked"]["assertions"][0]["verdict"] == "PASS"
    assert [miss["test"] for miss in run["misses"]] == ["test_new.py::test_never_recorded"]
    assert (
        "test_app.py::test_marker_arguments_are_the_sessions"
        in last_run(project.path, "elsewhere")["tests"]
    )


def test_record_and_replay_together_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_a(): pass")
    result = pytester.runpytest("--ghostrun-record", "--ghostrun-replay")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--ghostrun-record and --ghostrun-replay are mutually exclusive*"]
    )
    result = pytester.runpytest("--ghostrun-snapshot", "../escape")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid snapshot name '../escape'*"])


def test_a_suite_that_does_not_use_ghostrun_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_a(): pass")
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)
    assert not (pytester.path / ".ghostrun_cache").exists()


def test_xdist_record_then_replay_keeps_every_test_in_one_run_log(
    project: pytest.Pytester, provider: ProviderSimulator
) -> None:
    project.makepyfile(test_many=XDIST_TESTS)
    unused = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:hypothesispytest")  # start faster
    project.runpytest_subprocess("-n", "2", "--ghostrun-record", *unused).assert_outcomes(passed=6)
    served = provider.served
    assert served == 6

    replay = project.runpytest_subprocess(
        "-n", "2", "--ghostrun-replay", "--ghostrun-snapshot", "ci", *unused
    )
    replay.assert_outcomes(passed=6)
    assert provider.served == served

    runs = project.path / ".ghostrun_cache" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["_last.json", "ci.json"]
    run = last_run(project.path)
    assert sorted(run["tests"]) == [f"test_many.py::test_each[{n}]" for n in range(6)]
    assert {test["outcome"] for test in run["tests"].values()} == {"passed"}
    assert len(run["cassettes_used"]) == 6
    workers = {test["outputs"][1] for test in run["tests"].values()}
    assert workers == {"gw0", "gw1"}  # both workers' parts made it into the one run
