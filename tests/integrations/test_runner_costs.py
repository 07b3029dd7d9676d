"""What a runner costs and holds (DESIGN §2, §3): counted, never timed.

- The pytest plugin imports almost nothing of ghostrun until a test uses it.
- A runner holds the roads (a lease): the plugin from the first test using its
  marker or fixture to the end of the run, the unittest mixin per test class, so a
  session per test installs nothing, and the exact originals are back at the end.
- A test a runner runs again is a re-run of its trajectory, not its next session;
  the sessions one test opens in sequence are its sessions 0, 1, ...
"""

from __future__ import annotations

import io
import json
import textwrap
import unittest
from collections.abc import Iterator
from pathlib import Path

import httpx2
import orjson
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._intercept import _patch

pytest_plugins = ["pytester"]

# -- the plugin, unused --------------------------------------------------------------------

# What the plugin may import before a test uses ghostrun: its options need the modes.
UNUSED_ALLOWED = {
    "ghostrun",
    "ghostrun.pytest_plugin",
    "ghostrun._core",
    "ghostrun._core._distribution",
    "ghostrun._core._modes",
    "ghostrun._core._public",
    "ghostrun._core._version",
    "ghostrun._integrations",
    "ghostrun._integrations._vcr",  # pytest-recording's marker and fixture: pytest only
    "ghostrun._recording",
    "ghostrun._recording._wiring",
}

LISTING_CONFTEST = """\
import atexit, json, sys

def _list():
    with open("imported.json", "w") as out:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] == "ghostrun"), out)

atexit.register(_list)
"""


def test_a_run_whose_tests_never_use_ghostrun_imports_only_the_plugins_options(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(LISTING_CONFTEST)
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "ghostrun")
    result.assert_outcomes(passed=1)
    imported = set(json.loads((pytester.path / "imported.json").read_text()))
    assert "ghostrun.pytest_plugin" in imported  # the plugin was loaded
    assert imported <= UNUSED_ALLOWED, sorted(imported - UNUSED_ALLOWED)
    assert not (pytester.path / ".ghostrun_cache").exists()


# -- the runners' lease --------------------------------------------------------------------


@pytest.fixture
def installs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each install ("install") and restore ("restore") of the roads while inside."""
    calls: list[str] = []
    roads = _patch._roads
    install, restore = roads._install, roads._restore

    def counted_install() -> None:
        calls.append("install")
        install()

    def counted_restore() -> None:
        calls.append("restore")
        restore()

    monkeypatch.setattr(roads, "_install", counted_install)
    monkeypatch.setattr(roads, "_restore", counted_restore)
    yield calls


def originals() -> dict[str, object]:
    """The roads' hooked attributes of httpx2 as they are now (identity compared)."""
    return {name: httpx2.Client.__dict__[name] for name in ("_transport_for_url",)} | {
        "async": httpx2.AsyncClient.__dict__["_transport_for_url"]
    }


MARKED_TESTS = """\
import os

import httpx2
import pytest

URL = os.environ["SIM_URL"]


@pytest.mark.ghostrun
@pytest.mark.parametrize("n", range(5))
def test_marked(n):
    body = {"model": "m", "messages": [{"role": "user", "content": f"question {n}"}]}
    httpx2.post(URL + "/v1/chat/completions", json=body).raise_for_status()


def test_fixture(ghostrun_session):
    body = {"model": "m", "messages": [{"role": "user", "content": "question"}]}
    httpx2.post(URL + "/v1/chat/completions", json=body).raise_for_status()
    assert ghostrun_session.replayed + ghostrun_session.recorded == 1
"""


def test_the_plugin_installs_the_roads_once_per_run_not_once_per_test(
    pytester: pytest.Pytester, pytester_env: None, installs: list[str]
) -> None:
    before = originals()
    pytester.makepyfile(test_app=MARKED_TESTS)
    pytester.runpytest().assert_outcomes(passed=6)  # records
    assert installs == ["install", "restore"]
    assert originals() == before  # the exact originals, at the end of the run
    installs.clear()
    pytester.runpytest("--ghostrun-replay").assert_outcomes(passed=6)
    assert installs == ["install", "restore"]
    assert originals() == before


def test_the_unittest_mixin_installs_the_roads_once_per_test_class(
    provider: ProviderSimulator, tmp_path: Path, installs: list[str]
) -> None:
    before = originals()

    class ThreeTests(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": str(tmp_path), "hosts": ["127.0.0.1"]}

        def ask(self, n: int) -> None:
            body = {"model": "m", "messages": [{"role": "user", "content": f"unittest {n}"}]}
            httpx2.post(provider.url("/v1/chat/completions"), json=body).raise_for_status()

        def test_one(self) -> None:
            self.ask(1)

        def test_two(self) -> None:
            self.ask(2)

        def test_three(self) -> None:
            self.ask(3)

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(ThreeTests)
    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    assert result.wasSuccessful(), result.errors + result.failures
    assert installs == ["install", "restore"]
    assert originals() == before
    assert provider.served == 3


# -- a test run again ----------------------------------------------------------------------

RERUN_CONFTEST = """\
from _pytest.runner import runtestprotocol


def pytest_runtest_protocol(item, nextitem):
    # What pytest-rerunfailures does for a flaky test: the whole protocol again.
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for _ in range(2):
        runtestprotocol(item, nextitem=nextitem, log=True)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""

RERUN_TESTS = """\
import os

import httpx2
import pytest

import ghostrun

URL = os.environ["SIM_URL"]


def ask(text):
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    httpx2.post(URL + "/v1/chat/completions", json=body).raise_for_status()


@pytest.mark.ghostrun
def test_marked():
    ask("marked")


def test_own_sessions():
    for n in range(2):  # two sessions in sequence inside one test: its sessions 0 and 1
        with ghostrun.session():
            ask(f"own {n}")
"""


def trajectories(folder: Path) -> dict[str, list[int]]:
    documents = [orjson.loads(p.read_bytes()) for p in folder.glob("*.json")]
    return {
        d["test"]: [s["session"] for s in d["steps"] if s.get("kind") != "answer"]
        for d in documents
    }


def test_a_test_pytest_runs_again_is_a_rerun_and_its_sessions_in_sequence_are_its_own(
    pytester: pytest.Pytester, pytester_env: None, provider: ProviderSimulator
) -> None:
    pytester.makeconftest(RERUN_CONFTEST)
    pytester.makepyfile(test_agent=textwrap.dedent(RERUN_TESTS))
    pytester.runpytest_subprocess().assert_outcomes(passed=4)  # each test twice
    folder = pytester.path / ".ghostrun_cache" / "trajectories"
    assert trajectories(folder) == {
        "test_agent.py::test_marked": [0],
        "test_agent.py::test_own_sessions": [0, 1],
    }
    served = provider.served
    before = {p: p.read_bytes() for p in folder.glob("*.json")}
    pytester.runpytest_subprocess("--ghostrun-replay").assert_outcomes(passed=4)
    assert provider.served == served
    assert {p: p.read_bytes() for p in folder.glob("*.json")} == before
