"""``ghostrun check`` and ``prune`` as library functions: what a run left unused, deleted.

`check` compares a cassette directory's files (`_inventory.take`) with the run
log of the last run (read by the caller: ``runs/_last.json`` through
`_recording._runlog.load_run`) and returns what that run did not use, as data:
the CLI only renders it. A malformed cassette or verdict raises `CassetteError`
naming it, never listed. `prune` deletes what `check` found, each file once
more accepted by the loader (`_validate.load`) first. `older_than` lists the
cassettes holding a recording older than an age (``check --older-than``).

Trajectories keep their cassettes: a key one of them names counts as used even
when the run skipped its test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core._age import is_stale, parse_max_age
from . import _inventory, _validate
from ._formats import MissRecord, RunLogFile

__all__ = ["Unused", "check", "older_than", "prune"]


@dataclass
class Unused:
    """What a run left untouched in a cassette directory, and what it missed."""

    run: RunLogFile
    inventory: _inventory.Inventory
    cassettes: list[Path] = field(default_factory=list)
    verdicts: list[Path] = field(default_factory=list)
    verdicts_checked: bool = True  # False: the run did not say which verdicts it used

    @property
    def files(self) -> list[Path]:
        """Everything `prune` would delete: stale cassettes and verdicts, and leftovers."""
        return self.cassettes + self.verdicts + self.inventory.leftovers

    @property
    def misses(self) -> list[MissRecord]:
        """The requests and verdicts the run could not replay (``{test, message}``)."""
        return list(self.run.get("misses") or [])

    @property
    def partial(self) -> list[str]:
        """Why the run looks partial (then its skipped tests' files look unused); empty if not."""
        return _inventory.partial_run(self.run)


def check(directory: Path, run: RunLogFile) -> Unused:
    """The files of ``directory`` that ``run`` (a checked run log) did not use."""
    found = Unused(run, _inventory.take(directory))
    used = set(run.get("cassettes_used") or ()) | found.inventory.trajectory_keys
    found.cassettes = [p for p in found.inventory.cassettes if p.stem not in used]
    verdicts_used = run.get("verdicts_used")
    if verdicts_used is None:
        found.verdicts_checked = False
    else:
        found.verdicts = [p for p in found.inventory.verdicts if p.stem not in verdicts_used]
    return found


def prune(found: Unused) -> int:
    """Delete ``found.files``; how many went (a lock someone took meanwhile stays)."""
    deleted = 0
    for path in found.files:
        if path in found.inventory.leftovers:
            deleted += _inventory.remove(path)
        else:
            _validate.load(path, "verdict" if path in found.verdicts else "cassette")
            path.unlink(missing_ok=True)
            deleted += 1
    return deleted


def older_than(directory: Path, age: str) -> tuple[list[tuple[Path, str]], int]:
    """(cassette, its oldest stale day) sorted by path, and how many cassettes have no day.

    A cassette is listed when any of its responses was recorded more than ``age``
    (``90d``, ``12w``, ``6m``: `_core._age`) ago; a ValueError for another age.
    Responses without a day (written before days were kept) are never listed.
    """
    days = parse_max_age(age)
    stale, undated = [], 0
    for path in _inventory.take(directory).cassettes:
        recorded = [r.get("recorded_on") for r in _responses(path)]
        dated = [day for day in recorded if isinstance(day, str) and day]
        if len(dated) < len(recorded):
            undated += not dated
        old = [day for day in dated if is_stale(day, days)]
        if old:
            stale.append((path, min(old)))
    return sorted(stale), undated


def _responses(path: Path) -> list[dict[str, Any]]:
    document: Mapping[str, Any] = _validate.load(path, "cassette") or {}
    responses = document.get("responses")
    return [r for r in responses if isinstance(r, dict)] if isinstance(responses, list) else []
