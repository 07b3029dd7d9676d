"""One test, one name (DESIGN §3): unittest's mixin under ``python -m unittest`` and pytest.

A project as a user lays it out (``pyproject.toml``, ``tests/`` without an
``__init__.py``) runs its unittest suite with ``python -m unittest
tests.test_agent_unittest`` and with ``pytest``: both must name the test
``tests/test_agent_unittest.py::AgentTests::test_refund``, so each cassette
keeps one run and the test one trajectory, whichever runner recorded it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from agents_under_test import PLAN
from helpers import ROOT
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

TESTS_DIR = ROOT / "tests"
NAME = "tests/test_agent_unittest.py::AgentTests::test_refund"
MODULE = """\
import os
import unittest

import ghostrun
from agents_under_test import tool_loop


class AgentTests(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = {"hosts": ["127.0.0.1"]}

    def test_refund(self):
        steps = int(os.environ.get("AGENT_STEPS", "5"))
        tool_loop(os.environ["SIMULATOR_URL"], max_steps=steps)
        self.assertToolOrder(["lookup_order"])
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "shop"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent_unittest.py").write_text(textwrap.dedent(MODULE))
    return tmp_path


def run(project: Path, url: str, runner: str, mode: str, **env: str) -> str:
    command = {
        "unittest": ["-m", "unittest", "-v", "tests.test_agent_unittest"],
        "pytest": ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "tests"],
    }[runner]
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    path = os.pathsep.join([str(TESTS_DIR), environ.get("PYTHONPATH", "")])
    environ.update(
        PYTHONPATH=path,
        SIMULATOR_URL=url,
        GHOSTRUN_CASSETTE_DIR=str(project / "cassettes"),
        GHOSTRUN_MODE=mode,
        **env,
    )
    environ.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, *command],
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def run_names(project: Path) -> set[str]:
    """Every run label the cassettes hold."""
    names = set()
    for path in (project / "cassettes").glob("*.json"):
        for response in orjson.loads(path.read_bytes())["responses"]:
            names.add(response.get("session"))
    return names


def test_both_runners_name_a_mixin_test_alike_and_share_its_one_run(
    provider: ProviderSimulator, project: Path
) -> None:
    first, then = "unittest", "pytest"  # then the other way round: replay under unittest
    provider.tool_plan = list(PLAN)
    out = run(project, provider.base_url, first, "record")
    assert out.startswith("exit 0"), out
    assert provider.served == 3
    assert run_names(project) == {NAME}
    (trajectory,) = (project / "cassettes" / "trajectories").glob("*.json")
    written = trajectory.read_bytes()
    assert orjson.loads(written)["test"] == NAME

    out = run(project, provider.base_url, then, "replay")
    assert out.startswith("exit 0"), out  # its own name: every step replays
    assert provider.served == 3
    assert trajectory.read_bytes() == written
    out = run(project, provider.base_url, then, "record")
    assert out.startswith("exit 0"), out
    assert provider.served == 6
    assert run_names(project) == {NAME}  # re-recorded in place: still one run per cassette
    assert len(list((project / "cassettes" / "trajectories").glob("*.json"))) == 1

    out = run(project, provider.base_url, first, "replay", AGENT_STEPS="2")
    assert out.startswith("exit 1"), out
    assert f"{NAME} used 2 of the 3 steps" in out


PYTEST_MODULE = """
import os
import pytest
from agents_under_test import tool_loop


@pytest.mark.ghostrun(hosts=["127.0.0.1"])
@pytest.mark.parametrize("n", [1, 2])
def test_refund(n):
    tool_loop(os.environ["SIM_URL"], max_steps=int(os.environ.get("AGENT_STEPS", "5")))
"""


def test_under_pytest_and_xdist_unplayed_steps_fail_and_the_ini_option_relaxes_it(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider.tool_plan = list(PLAN)
    path = os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    pytester.makepyfile(test_agent=PYTEST_MODULE)
    pytester.makeini("[pytest]\n")
    recorded = pytester.runpytest_subprocess("--ghostrun-record", "-p", "xdist", "-n", "2")
    recorded.assert_outcomes(passed=2)
    tests = sorted(
        orjson.loads(p.read_bytes())["test"]
        for p in (pytester.path / ".ghostrun_cache" / "trajectories").glob("*.json")
    )
    assert tests == ["test_agent.py::test_refund[1]", "test_agent.py::test_refund[2]"]

    monkeypatch.setenv("AGENT_STEPS", "2")
    failed = pytester.runpytest_subprocess("--ghostrun-replay")
    # The marker's session closes after the test's last fixture: pytest reports its
    # failure there, as an error at teardown, as it does a swallowed CacheMiss.
    failed.assert_outcomes(passed=2, errors=2)
    assert failed.ret == 1
    failed.stdout.fnmatch_lines(
        ["*UnplayedSteps: ghostrun: test_agent.py::test_refund[[]1[]] used 2 of the 3 steps*"]
    )
    pytester.makeini("[pytest]\nghostrun_on_unplayed = warn\n")
    warned = pytester.runpytest_subprocess("--ghostrun-replay")
    warned.assert_outcomes(passed=2, warnings=2)
    pytester.makeini("[pytest]\nghostrun_on_unplayed = loudly\n")
    wrong = pytester.runpytest_subprocess("--ghostrun-replay")
    wrong.stderr.fnmatch_lines(["*invalid ghostrun_on_unplayed 'loudly'*"])


ONE_STORY = """
import os
import pytest
from agents_under_test import tool_loop


@pytest.mark.ghostrun(hosts=["127.0.0.1"])
def test_stops_early():
    tool_loop(os.environ["SIM_URL"], max_steps=int(os.environ.get("AGENT_STEPS", "5")))


@pytest.mark.ghostrun(hosts=["127.0.0.1"])
def test_tool_api_down():
    steps = int(os.environ.get("AGENT_STEPS", "5"))
    tool_loop(os.environ["SIM_URL"], max_steps=steps)
    if steps < 5:
        raise ConnectionError("the tool API is down")
"""


def test_under_pytest_a_teardown_failure_shows_ghostruns_message_first_and_no_frames(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider.tool_plan = list(PLAN)
    path = os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    pytester.makepyfile(test_agent=ONE_STORY)
    pytester.runpytest_subprocess("--ghostrun-record").assert_outcomes(passed=2)

    monkeypatch.setenv("AGENT_STEPS", "2")
    result = pytester.runpytest_subprocess("--ghostrun-replay")
    result.assert_outcomes(passed=1, failed=1, errors=1)  # one failure per test
    out = result.stdout.str()
    section = out.split("ERROR at teardown of test_stops_early")[1].split("\n", 1)[1]
    first = section.splitlines()[0]
    assert first.startswith("ghostrun.UnplayedSteps: ghostrun: test_agent.py::test_stops_early"), (
        out
    )
    for internal in ("_close", "Deck.exit", "_deck.py", "_trajectory", "pytest_plugin.py"):
        assert internal not in out, out
    assert "Unplayed" not in out.split("test_tool_api_down")[1].split("short test summary")[0]
