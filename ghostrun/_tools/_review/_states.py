"""The two states a review compares: a cassette directory on disk, or as committed.

A state holds the directory's cassettes and verdicts by key, its run log
(``runs/_last.json``, or a snapshot) and its trajectories by test. Read from
git, every blob comes from one ``git cat-file --batch``. A file that is not
JSON, or not of its folder's shape, is passed over: a review shows what it can.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._core._files import parse_json

__all__ = ["ReviewError", "State", "state_from_dir", "state_from_git"]


class ReviewError(Exception):
    """A state that cannot be read: a bad revision, no git, no such directory."""


@dataclass(frozen=True)
class State:
    """A cassette directory as it was: cassettes and verdicts by key, and its run log."""

    label: str
    cassettes: dict[str, dict[str, Any]]
    verdicts: dict[str, dict[str, Any]]
    run: dict[str, Any] | None
    trajectories: dict[str, dict[str, Any]] = field(default_factory=dict)  # by test

    def tests(self) -> dict[str, dict[str, Any]]:
        tests = (self.run or {}).get("tests")
        found = dict(tests) if isinstance(tests, dict) else {}
        for name in self.trajectories:
            found.setdefault(name, {})
        return found

    def trail(self, name: str, test: dict[str, Any]) -> list[str]:
        """A test's distinct cassettes in order: as its run used them when the state has
        its run log (two runs of one directory differ there), else as its trajectory says."""
        found = _trail(test)
        trajectory = self.trajectories.get(name)
        if found or trajectory is None:
            return found
        return list(dict.fromkeys(step["key"] for step in _steps(trajectory)))

    def steps(self, name: str) -> list[dict[str, Any]]:
        """The steps of a test's trajectory (none without one)."""
        return _steps(self.trajectories.get(name) or {})

    def used(self) -> set[str]:
        """The cassettes this state's run used (every cassette when there is no run)."""
        if self.run is None and not self.trajectories:
            return set(self.cassettes)
        return {key for name, test in self.tests().items() for key in self.trail(name, test)}


def state_from_dir(directory: Path, run: str = "_last", label: str | None = None) -> State:
    """The state of a directory on disk."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReviewError(
            f"no cassette directory at {directory.absolute()}: pass --cassette-dir DIR, set "
            "GHOSTRUN_CASSETTE_DIR, or set cassette_dir under [tool.ghostrun] in pyproject.toml"
        )
    files = {
        str(path.relative_to(directory)): path.read_bytes()
        for pattern in ("*.json", "judge/*.json", "trajectories/*.json", f"runs/{run}.json")
        for path in directory.glob(pattern)
    }
    return _state(label or str(directory), files, run)


def state_from_git(revision: str, directory: Path, run: str = "_last") -> State:
    """The state of ``directory`` as committed at ``revision``."""
    directory = Path(directory).absolute()
    top = Path(
        _git(
            directory.parent if not directory.exists() else directory,
            "rev-parse",
            "--show-toplevel",
        ).strip()
    )
    prefix = os.path.relpath(directory, top).replace(os.sep, "/")
    names = _git(top, "ls-tree", "-r", "--name-only", revision, "--", prefix).splitlines()
    wanted = [n for n in names if _wanted(n[len(prefix) + 1 :], run)]
    blobs = _cat(top, [f"{revision}:{name}" for name in wanted])
    files = {name[len(prefix) + 1 :]: blob for name, blob in zip(wanted, blobs, strict=True)}
    return _state(f"{revision} ({prefix})", files, run)


def _wanted(relative: str, run: str) -> bool:
    parts = relative.split("/")
    if not relative.endswith(".json"):
        return False
    return (
        len(parts) == 1
        or (len(parts) == 2 and parts[0] in ("judge", "trajectories"))
        or relative == f"runs/{run}.json"
    )


def _git(where: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as exc:
        raise ReviewError("git is not installed: compare two directories instead") from exc
    if done.returncode:
        raise ReviewError(f"git {args[0]} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _cat(top: Path, objects: list[str]) -> list[bytes]:
    """The contents of many blobs in one ``git cat-file --batch``."""
    if not objects:
        return []
    done = subprocess.run(
        ["git", "-C", str(top), "cat-file", "--batch"],
        input="".join(f"{o}\n" for o in objects).encode(),
        capture_output=True,
        check=True,
    )
    out, blobs, at = done.stdout, [], 0
    for _ in objects:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return blobs


def _state(label: str, files: dict[str, bytes], run: str) -> State:
    cassettes, verdicts, run_log, trajectories = {}, {}, None, {}
    for name, data in sorted(files.items()):
        document = parse_json(data)
        if not isinstance(document, dict):
            continue
        if name == f"runs/{run}.json":
            run_log = document
        elif name.startswith("trajectories/"):
            if isinstance(document.get("test"), str) and isinstance(document.get("steps"), list):
                trajectories[document["test"]] = document
        elif name.startswith("judge/"):
            verdicts[Path(name).stem] = document
        elif isinstance(document.get("request"), dict) and isinstance(
            document.get("responses"), list
        ):
            cassettes[Path(name).stem] = document
    return State(label, cassettes, verdicts, run_log, trajectories)


def _steps(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    steps = trajectory.get("steps")
    if not isinstance(steps, list):
        return []
    return [s for s in steps if isinstance(s, dict) and isinstance(s.get("key"), str)]


def _trail(test: dict[str, Any]) -> list[str]:
    """A test's distinct cassette keys in the order of first use (old run logs: none)."""
    keys = [entry.get("key") for entry in test.get("cassettes") or () if isinstance(entry, dict)]
    return list(dict.fromkeys(k for k in keys if isinstance(k, str)))
