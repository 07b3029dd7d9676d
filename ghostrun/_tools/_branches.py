"""Branches of a recording: where ``fork`` and ``compare`` record, and the run that fills one.

    <cassette_dir>/branches/<NAME>/      cassettes, trajectories/, judge/, runs/ of its own

A branch is made afresh for each run (`fresh_branch`: a name used again
replaces the branch it named), seeded with the recorded cassettes of the steps
that replay (`seed`), then filled by pytest run in a subprocess under a fork
plan (`run_pytest`, `_recording._fork`). Nothing here writes outside the branch:
the recording stays byte for byte as it was.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._recording._fork import ENV, ForkPlan
from .._store._trajectory import TRAJECTORIES, load_trajectory, trajectory_path

__all__ = [
    "BRANCHES",
    "BranchError",
    "branch_dir",
    "fresh_branch",
    "model_steps",
    "run_pytest",
    "run_replay",
    "seed",
]

BRANCHES = "branches"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class BranchError(Exception):
    """A branch that cannot be made or read: a bad name, no recording to fork."""


def branch_dir(directory: Path, name: str) -> Path:
    """Where the branch ``name`` of ``directory`` lives; a BranchError for a bad name."""
    if not _NAME.fullmatch(name):
        raise BranchError(
            f"invalid branch name {name!r}: letters, digits, '.', '_' and '-', starting with a "
            "letter or digit (at most 100)"
        )
    return Path(directory) / BRANCHES / name


def fresh_branch(directory: Path, name: str) -> Path:
    """An empty branch directory (an earlier branch of that name is removed first)."""
    branch = branch_dir(directory, name)
    for path in (branch.parent, branch):
        if path.is_symlink():
            raise BranchError(f"{path} is a symbolic link: ghostrun never writes through one")
    if branch.exists():
        shutil.rmtree(branch)
    branch.mkdir(parents=True)
    return branch


def model_steps(trajectory: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A trajectory's model calls, in order (tool steps and answers left out)."""
    steps = (trajectory or {}).get("steps") or []
    return [s for s in steps if isinstance(s, dict) and s.get("kind", "model") == "model"]


def seed(directory: Path, branch: Path, test: str, at: int) -> int:
    """Copy into ``branch`` the test's trajectory and the cassettes of its steps before ``at``.

    Returns how many model steps the recording holds; a BranchError when it holds
    none for ``test`` or fewer than ``at``.
    """
    source = trajectory_path(directory, test)
    steps = model_steps(dict(load_trajectory(source) or {}))
    if not steps:
        raise BranchError(
            f"no recorded trajectory for {test!r} in {directory} (looked for {source}): record "
            "the test first, and name it as pytest does (tests/test_agent.py::test_refund)"
        )
    if at > len(steps):
        raise BranchError(f"{test} recorded {len(steps)} steps: --at takes 1 to {len(steps)}")
    for step in steps[: at - 1]:
        cassette = Path(directory) / f"{step['key']}.json"
        if cassette.is_file() and not cassette.is_symlink():
            shutil.copyfile(cassette, branch / cassette.name)
    (branch / TRAJECTORIES).mkdir(exist_ok=True)
    shutil.copyfile(source, trajectory_path(branch, test))
    return len(steps)


def run_pytest(pytest_args: Sequence[str], plan: ForkPlan, timeout: float | None = None) -> int:
    """Run pytest on ``pytest_args`` in a subprocess governed by ``plan``; its exit status."""
    env = {**os.environ, ENV: plan.to_env(), "GHOSTRUN_CASSETTE_DIR": str(plan.branch)}
    env.pop("GHOSTRUN_SNAPSHOT", None)  # a snapshot name meant for the recording's runs
    env.pop("GHOSTRUN_MODE", None)  # the plan says what replays and what is sent
    return _pytest(pytest_args, env, timeout)


def run_replay(pytest_args: Sequence[str], directory: Path, timeout: float | None = None) -> int:
    """Replay the recording in ``directory`` with pytest (its run log: ``runs/_last.json``)."""
    env = {**os.environ, "GHOSTRUN_CASSETTE_DIR": str(Path(directory).absolute())}
    env.pop(ENV, None)
    return _pytest(["--ghostrun-replay", *pytest_args], env, timeout)


def _pytest(pytest_args: Sequence[str], env: dict[str, str], timeout: float | None) -> int:
    env.pop("PYTEST_CURRENT_TEST", None)  # a calling test's id would name the child's sessions
    command = [sys.executable, "-m", "pytest", *pytest_args]
    try:
        return subprocess.run(command, env=env, timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired as exc:
        raise BranchError(f"pytest did not finish within {timeout} s: {command}") from exc
