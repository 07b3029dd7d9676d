"""``ghostrun check --older-than AGE``: the cassettes holding a recording older than AGE.

A cassette is listed when any of its responses was recorded more than AGE days
ago (``recorded_on``, `_core._age`): the ones a replay with that ``max_age``
warns about, and that ``auto`` re-records. Responses without a day (written
before days were kept) have no known age and are counted apart, never listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core._age import is_stale, parse_max_age, today
from .._core._words import plural
from .._store import _inventory, _validate

__all__ = ["older_than", "render"]


def older_than(directory: Path, age: str) -> tuple[list[tuple[Path, str]], int]:
    """(stale cassette, its oldest day) sorted by path, and how many cassettes have no day."""
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


def render(directory: Path, age: str, stale: list[tuple[Path, str]], undated: int) -> str:
    lines = [f"ghostrun check --older-than {age}: {directory} (today {today()})"]
    if stale:
        lines.append(f"\n{plural(len(stale), 'cassette')} recorded more than {age} ago:")
        lines += [f"  {path.relative_to(directory)}  (recorded {day})" for path, day in stale]
    if undated:
        lines.append(
            f"\n{plural(undated, 'cassette')} without a recording day (written before "
            "ghostrun kept one): age unknown, not listed"
        )
    if stale:
        lines.append(
            f"\nFAILED: {len(stale)} older than {age}; re-record them (GHOSTRUN_MODE=auto "
            f"with max_age={age!r} re-records only those)"
        )
    else:
        lines.append(f"\nOK: no cassette is older than {age}")
    return "\n".join(lines)
