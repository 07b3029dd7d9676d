"""The distribution's own name, and the other project that shares the import name."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import ROOT

from ghostrun._core._distribution import DISTRIBUTION, SUMMARY


def test_the_distribution_is_not_named_like_the_other_project() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "ghostrun"
    assert project["description"] == SUMMARY
    assert project["scripts"]["ghostrun"].startswith("ghostrun.")  # the command keeps its name


@pytest.fixture
def foreign_site(tmp_path: Path) -> Path:
    """A path entry holding the other project's metadata, as pip leaves it."""
    info = tmp_path / "site" / "ghostrun-2.0.5.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ghostrun\nVersion: 2.0.5\nSummary: pytest for LLMs\n"
    )
    return tmp_path / "site"


def _run(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(site)]))
    return subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": path},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_and_pytest_say_when_the_other_project_is_installed(
    foreign_site: Path, tmp_path: Path
) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    cli = _run(["-m", "ghostrun", "--version"], foreign_site, tmp_path)
    assert "another project's package 'ghostrun' 2.0.5" in cli.stderr
    assert f"pip install --force-reinstall {DISTRIBUTION}" in cli.stderr
    run = _run(
        ["-m", "pytest", "test_nothing.py", "-p", "no:cacheprovider"], foreign_site, tmp_path
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ghostrun: WARNING: another project's package 'ghostrun' 2.0.5" in run.stdout


def test_nothing_is_said_without_it(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    run = _run(["-m", "pytest", "test_nothing.py", "-p", "no:cacheprovider"], tmp_path, tmp_path)
    assert run.returncode == 0 and "another project" not in run.stdout + run.stderr
