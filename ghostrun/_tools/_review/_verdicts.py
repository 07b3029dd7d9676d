"""The judged assertions whose verdict changed: by the two run logs, else the verdict files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..._secrets._scrub import scrub_text
from ._states import State

__all__ = ["VerdictChange", "verdict_changes", "verdicts_by_criterion"]


@dataclass(frozen=True)
class VerdictChange:
    """An assertion whose verdict is not what it was."""

    kind: str
    criterion: str
    before: str | None  # "PASS", "FAIL", or None for a new assertion
    after: str | None  # None: the assertion is gone
    reason: str
    judge: str | None
    flip_rate: float | None

    @property
    def regressed(self) -> bool:
        return self.before == "PASS" and self.after == "FAIL"


def verdict_changes(
    old_test: Mapping[str, Any], test: Mapping[str, Any], after: State | None = None
) -> list[VerdictChange]:
    """The judged assertions of a test whose verdict changed between two runs."""
    old = _assertions(old_test)
    new = _assertions(test)
    flips = _flip_rates(test, after) if after is not None else {}
    changes = []
    for key in dict.fromkeys([*old, *new]):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was["verdict"] == now["verdict"]:
            continue
        latest = now or was or {}
        changes.append(
            VerdictChange(
                kind=key[0],
                criterion=key[1],
                before=was["verdict"] if was else None,
                after=now["verdict"] if now else None,
                reason=scrub_text(str(latest.get("reason", ""))),
                judge=latest.get("judge"),
                flip_rate=flips.get(key[1]) if now else None,
            )
        )
    return changes


def verdicts_by_criterion(test: dict[str, Any], before: State, after: State) -> list[VerdictChange]:
    """The test's judged assertions against the old verdict files on the same criterion.

    With no run log from before (it is often not committed), an old verdict is
    a verdict file of the state before, by the same judge on the same criterion,
    that the run after no longer used: the grading of the text it replaced.
    """
    used = set((after.run or {}).get("verdicts_used") or ())
    changes = []
    for (kind, criterion, _n), item in _assertions(test).items():
        same = (criterion, item.get("judge"))
        mine = [
            k for k, v in before.verdicts.items() if (v.get("criterion"), v.get("judge")) == same
        ]
        if not mine or any(k in used for k in mine):
            continue  # never graded before, or graded on the same text: unchanged
        was = before.verdicts[sorted(mine)[0]].get("verdict")
        if was == item.get("verdict"):
            continue
        now = [
            v for k, v in after.verdicts.items() if k in used and v.get("criterion") == criterion
        ]
        changes.append(
            VerdictChange(
                kind=kind,
                criterion=criterion,
                before=str(was),
                after=str(item.get("verdict")),
                reason=scrub_text(str(item.get("reason", ""))),
                judge=item.get("judge"),
                flip_rate=now[0].get("flip_rate") if now else None,
            )
        )
    return changes


def _assertions(test: Mapping[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """A test's judged assertions by (kind, criterion, n-th of that pair)."""
    found: dict[tuple[str, str, int], dict[str, Any]] = {}
    seen: dict[tuple[str, str], int] = {}
    for item in test.get("assertions") or ():
        if not isinstance(item, dict) or not item.get("judge"):
            continue
        pair = (str(item.get("kind")), str(item.get("criterion")))
        seen[pair] = seen.get(pair, 0) + 1
        found[(*pair, seen[pair])] = item
    return found


def _flip_rates(test: Mapping[str, Any], state: State) -> dict[str, float]:
    rates = {}
    for entry in test.get("verdicts") or ():
        verdict = state.verdicts.get(str(entry.get("key"))) if isinstance(entry, dict) else None
        if isinstance(verdict, dict) and isinstance(verdict.get("flip_rate"), int | float):
            rates[str(verdict.get("criterion"))] = float(verdict["flip_rate"])
    return rates
