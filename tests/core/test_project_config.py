"""One project config: ``[tool.ghostrun]`` in pyproject.toml, read by sessions, the pytest
plugin, unittest and every CLI command, from the project root or any subdirectory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _project

PYPROJECT = """\
[project]
name = "my-app"
version = "0"

[tool.ghostrun]
cassette_dir = "tests/cassettes"
hosts = ["127.0.0.1"]
"""

APP = """\
import os

import openai


def ask(prompt):
    client = openai.OpenAI(base_url=os.environ["SIM_URL"] + "/v1", api_key="sk-placeholder")
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content
"""

PYTEST_TEST = """\
import pytest

from app import ask


@pytest.mark.ghostrun
def test_asks():
    assert ask("from pytest")
"""

UNITTEST_TEST = """\
import unittest

import ghostrun
from app import ask


class Asks(ghostrun.TestCaseMixin, unittest.TestCase):
    def test_asks(self):
        self.assertTrue(ask("from unittest"))
"""


@pytest.fixture(autouse=True)
def _fresh_project_cache() -> Iterator[None]:
    _project.forget()
    yield
    _project.forget()


@pytest.fixture
def app(tmp_path: Path, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's new project: its pyproject names the cassette dir, its tests live in tests/."""
    root = tmp_path / "my-app"
    (root / "tests").mkdir(parents=True)
    _git(root, "init", "-q")  # the project's root, where the search for a config stops
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tests" / "app.py").write_text(APP)
    (root / "tests" / "test_pytest_style.py").write_text(PYTEST_TEST)
    (root / "tests" / "test_unittest_style.py").write_text(UNITTEST_TEST)
    monkeypatch.setenv("SIM_URL", provider.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    return root


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _cassettes(root: Path) -> set[str]:
    return {p.name for p in (root / "tests" / "cassettes").glob("*.json")}


def test_a_session_uses_the_projects_cassette_dir_from_any_subdirectory(
    app: Path, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(app / "tests")
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-placeholder")
    with ghostrun.session(mode="record") as s:  # 127.0.0.1 is a provider: the table says so
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert s.recorded == 1
    assert s.cassette_dir == app / "tests" / "cassettes"
    assert len(_cassettes(app)) == 1
    assert not (app / "tests" / ".ghostrun_cache").exists()


def test_pytest_unittest_and_every_cli_command_use_the_table(
    app: Path, provider: ProviderSimulator
) -> None:
    unit = _run(["-m", "unittest", "test_unittest_style"], app / "tests", GHOSTRUN_MODE="record")
    assert unit.returncode == 0, unit.stdout + unit.stderr
    assert len(_cassettes(app)) == 1
    recorded = _run(
        ["-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"], app, GHOSTRUN_MODE="auto"
    )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len(_cassettes(app)) == 2  # the pytest-style test's; the unittest one replayed
    served = provider.served

    replayed = _run(
        ["-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"], app, GHOSTRUN_MODE="replay"
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    unit = _run(["-m", "unittest", "test_unittest_style"], app / "tests", GHOSTRUN_MODE="replay")
    assert unit.returncode == 0, unit.stdout + unit.stderr
    assert provider.served == served
    _git(app, "add", "-A")
    _git(app, "commit", "-q", "-m", "cassettes")

    key = sorted(_cassettes(app))[0].removesuffix(".json")
    for where in (app, app / "tests"):
        for command in (["check"], ["show", key], ["review"], ["report", "-o", "r.html"]):
            done = _run(["-m", "ghostrun", *command], where)
            assert "no cassette directory" not in done.stderr, (command, where, done.stderr)
            assert done.returncode in (0, 1), (command, where, done.stdout, done.stderr)


def test_the_environment_beats_the_table_and_a_session_argument_beats_both(
    app: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(app)
    assert ghostrun.session().cassette_dir == app / "tests" / "cassettes"
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(tmp_path / "from-env"))
    assert ghostrun.session().cassette_dir == tmp_path / "from-env"
    assert ghostrun.session(cassette_dir=tmp_path / "arg").cassette_dir == tmp_path / "arg"


def test_the_tables_mode_applies_off_ci_never_beats_the_ci_default_and_loses_to_the_switch(
    app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (app / "pyproject.toml").write_text(PYPROJECT + 'mode = "record"\n')
    monkeypatch.chdir(app)
    monkeypatch.delenv("CI", raising=False)
    assert ghostrun.session().mode is ghostrun.Mode.RECORD
    monkeypatch.setenv("CI", "true")
    with pytest.warns(UserWarning, match=r"mode = 'record' .* is ignored on CI"):
        assert ghostrun.session().mode is ghostrun.Mode.REPLAY
    assert ghostrun.session(mode="auto").mode is ghostrun.Mode.AUTO
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    assert ghostrun.session(mode="auto").mode is ghostrun.Mode.REPLAY


def test_a_pytest_ini_option_beats_the_table_and_the_environment_beats_it(
    app: Path, tmp_path: Path
) -> None:
    (app / "pytest.ini").write_text("[pytest]\nghostrun_cassette_dir = from-ini\n")
    done = _run(
        ["-m", "pytest", "tests/test_pytest_style.py", "-q", "-p", "no:cacheprovider"],
        app,
        GHOSTRUN_MODE="record",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((app / "from-ini").glob("*.json"))) == 1
    assert not _cassettes(app)

    env_dir = tmp_path / "from-env"
    done = _run(
        ["-m", "pytest", "tests/test_pytest_style.py", "-q", "-p", "no:cacheprovider"],
        app,
        GHOSTRUN_MODE="record",
        GHOSTRUN_CASSETTE_DIR=str(env_dir),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list(env_dir.glob("*.json"))) == 1


def test_the_cli_finds_a_pytest_ini_cassette_dir_when_there_is_no_table(tmp_path: Path) -> None:
    root = tmp_path / "legacy"
    (root / "tests" / "cassettes").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "pytest.ini").write_text("[pytest]\nghostrun_cassette_dir = tests/cassettes\n")
    done = _run(["-m", "ghostrun", "check"], root / "tests")
    assert "no cassette directory" not in done.stderr, done.stderr


def test_a_misspelt_key_is_an_error_that_lists_the_settings(
    app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (app / "pyproject.toml").write_text(PYPROJECT + 'casette_dir = "typo"\n')
    monkeypatch.chdir(app)
    with pytest.raises(ValueError, match=r"(?s)no setting 'casette_dir'.*cassette_dir:"):
        ghostrun.session()
    done = _run(["-m", "ghostrun", "check"], app)
    assert done.returncode == 2 and "casette_dir" in done.stderr


def test_a_missing_directory_names_the_project_setting(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    for command in (["check"], ["review"]):
        done = _run(["-m", "ghostrun", *command], tmp_path)
        assert done.returncode == 2
        assert "[tool.ghostrun]" in done.stderr and "--cassette-dir" in done.stderr, done.stderr


def test_hosts_and_block_network_come_from_the_table(
    app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (app / "pyproject.toml").write_text(
        PYPROJECT.replace('hosts = ["127.0.0.1"]', 'hosts = ["llm.internal"]')
        + "block_network = true\n"
    )
    monkeypatch.chdir(app)
    session = ghostrun.session()
    assert session.block_network
    assert session._deck.matcher("llm.internal", 443)
