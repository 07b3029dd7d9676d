"""The static checks CI holds the code to: ruff (lint and format) and strict mypy.

Run here, so ``.ci/run`` (the README's test command) is the whole of CI: a
lint error, an unformatted file or a type error fails the suite like a bug.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("check", [("check", "."), ("format", "--check", ".")], ids=str)
def test_ruff(check: tuple[str, ...]) -> None:
    done = run("ruff", *check, "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict(tmp_path: Path) -> None:
    """``[tool.mypy]`` in pyproject.toml: strict, over the package."""
    done = run("mypy", "--cache-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
