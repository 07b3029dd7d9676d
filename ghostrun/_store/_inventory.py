"""What a cassette directory holds, sorted out for ``ghostrun check`` and ``prune``.

Cassettes and verdicts are named by their key (32 hex digits); every such
file is validated (`ghostrun._store._validate`), so a malformed one raises
`CassetteError` naming it rather than being listed or deleted. Any other
JSON file (a ``user_config.json``) is foreign: listed as skipped, never
deleted. Leftovers are ghostrun's own temporary files whose writer is gone
(killed mid-write: its process no longer runs, or the file is older than
`TEMP_MAX_AGE`) and lock files nobody holds; ``prune`` removes them.
A symbolic link (a file, or the ``judge`` or ``runs`` folder) is listed in
`Inventory.links` and never read, followed or deleted: a cassette directory
may come from anyone's pull request.

Trajectories (``trajectories/<test>.json``) are validated too, and every
cassette key one of them names counts as used (`Inventory.trajectory_keys`):
a test's committed trajectory keeps its cassettes, even from a run that
skipped it.

`partial_run` says why the last run looks partial (it was narrowed with
``-k``, ``--lf`` or test paths, or ran fewer tests than the run before), since
then the cassettes of the tests it skipped look unused.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._core._files import is_lock, is_temp, temp_owner
from .._core._lock import is_held, try_remove_stale_lock
from .._core._words import plural
from . import _validate
from ._formats import RunLogFile
from ._trajectory import TRAJECTORIES, cassette_keys

__all__ = ["TEMP_MAX_AGE", "Inventory", "partial_run", "remove", "take"]

TEMP_MAX_AGE = 15 * 60.0
"""Seconds after which a temporary file is a leftover even if its process id is in use."""

_KEY_NAME = re.compile(r"[0-9a-f]{32}\.json")


@dataclass
class Inventory:
    """The files of one cassette directory, by what ghostrun may do with them."""

    cassettes: list[Path] = field(default_factory=list)
    verdicts: list[Path] = field(default_factory=list)
    foreign: list[Path] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)
    links: list[Path] = field(default_factory=list)  # symbolic links: never followed
    trajectories: list[Path] = field(default_factory=list)
    trajectory_keys: set[str] = field(default_factory=set)  # the cassettes they name


def take(directory: Path) -> Inventory:
    """Sort the directory's files; a malformed cassette or verdict raises CassetteError."""
    found = Inventory()
    kinds: list[tuple[Path, _validate.Kind, list[Path]]] = [
        (directory, "cassette", found.cassettes),
        (directory / "judge", "verdict", found.verdicts),
    ]
    for folder, kind, into in kinds:
        for path in _files(folder, found.links):
            if path.suffix == ".json" and not path.name.startswith("."):
                _sort(path, kind, into, found.foreign)
    for path in _files(directory / TRAJECTORIES):
        if path.suffix == ".json" and not path.name.startswith("."):
            _trajectory(path, found)
    for folder in (directory, directory / "judge", directory / "runs", directory / TRAJECTORIES):
        found.leftovers += [path for path in _files(folder) if _is_leftover(path)]
    found.links = sorted(set(found.links))
    return found


def _trajectory(path: Path, found: Inventory) -> None:
    """A trajectory, validated (a malformed one raises), and the cassette keys it names."""
    document = _validate.load(path, "trajectory")
    if document is None:
        return
    found.trajectories.append(path)
    found.trajectory_keys.update(cassette_keys(document["steps"]))


def _sort(path: Path, kind: _validate.Kind, into: list[Path], foreign: list[Path]) -> None:
    if not _KEY_NAME.fullmatch(path.name):
        foreign.append(path)
        return
    _validate.load(path, kind)  # raises for a malformed file: never listed, never deleted
    into.append(path)


def _files(folder: Path, links: list[Path] | None = None) -> list[Path]:
    """The regular files of ``folder``; its symbolic links go to ``links`` (a linked folder
    too): never read, followed or deleted."""
    if folder.is_symlink():
        if links is not None:
            links.append(folder)
        return []
    if not folder.is_dir():
        return []
    files = []
    for path in sorted(folder.iterdir()):
        if path.is_symlink():
            if links is not None:
                links.append(path)
        elif path.is_file():
            files.append(path)
    return files


def _is_leftover(path: Path) -> bool:
    if is_temp(path.name):
        return _writer_gone(path)
    return is_lock(path.name) and not is_held(str(path))


def _writer_gone(path: Path) -> bool:
    try:
        age = time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return False  # its write just finished
    if age > TEMP_MAX_AGE:
        return True
    pid = temp_owner(path.name)
    return pid is not None and not _running(pid)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        return True  # no safe probe there (signal 0 is CTRL_C_EVENT): the age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def remove(path: Path) -> bool:
    """Delete one leftover; False if it turned out to be in use (a lock someone took)."""
    if is_lock(path.name):
        return try_remove_stale_lock(str(path))
    path.unlink(missing_ok=True)
    return True


def partial_run(run: RunLogFile) -> list[str]:
    """Why the run looks partial (empty if it does not), naming what each reason is based on."""
    reasons = [
        f"it was narrowed: {limit}"
        for limit in (run.get("selection") or {}).get("limited_by") or []
    ]
    previous = run.get("previous")
    ran = len(run["tests"])
    if previous is not None and ran < previous["tests"]:
        reasons.append(
            f"it ran {plural(ran, 'test')}, the run before it "
            f"(finished {previous.get('finished', '?')}) {previous['tests']}"
        )
    return reasons
