"""How old a recording is: its day, ``max_age`` and the clock (DESIGN §3, staleness).

Every response ghostrun writes carries the day it was recorded
(``"recorded_on": "2026-12-02"``): a day, not a timestamp, so a cassette re-read
or re-written the same day does not change, and a diff shows a re-recording as
one changed line. ``max_age`` says how many days a recording stays fresh:
``"90d"`` (days), ``"12w"`` (weeks), ``"6m"`` (months of 30 days), ``"1y"``
(365 days), or a plain number of days.

The clock is the module-level ``_clock`` (a function returning today's
`date`), so a test can move time without patching `datetime`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import UTC, date, datetime

__all__ = ["MAX_AGE_ENV", "is_stale", "max_age_days", "parse_max_age", "today"]

MAX_AGE_ENV = "GHOSTRUN_MAX_AGE"
_UNITS = {"d": 1, "w": 7, "m": 30, "y": 365}
_AGE = re.compile(r"\s*(\d+)\s*([dwmy]?)\s*", re.IGNORECASE)


def _utc_today() -> date:
    return datetime.now(UTC).date()


_clock: Callable[[], date] = _utc_today


def today() -> str:
    """Today as the day a recording carries: ``YYYY-MM-DD`` (UTC)."""
    return _clock().isoformat()


def parse_max_age(value: str | int) -> int:
    """A ``max_age`` in days: ``"90d"``, ``"12w"``, ``"6m"`` (30 days), ``"1y"``, or days."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    found = _AGE.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise ValueError(
            f"invalid max_age {value!r}: expected a number of days with a unit, like "
            "'90d', '12w', '6m' (30 days each) or '1y'"
        )
    return int(found.group(1)) * _UNITS[(found.group(2) or "d").lower()]


def max_age_days(explicit: str | int | None, configured: str | int | None) -> int | None:
    """The ``max_age`` in force: the session's, else ``GHOSTRUN_MAX_AGE``, else configured."""
    if explicit is not None:
        return parse_max_age(explicit)
    env = os.environ.get(MAX_AGE_ENV, "").strip()
    if env:
        return parse_max_age(env)
    return None if configured is None else parse_max_age(configured)


def is_stale(recorded_on: str | None, days: int | None, now: str | None = None) -> bool:
    """Whether a recording made on ``recorded_on`` is older than ``days``.

    A recording without a day (written before days were kept, or imported from a
    source that kept none) is never stale: its age is unknown.
    """
    if days is None or not recorded_on:
        return False
    try:
        made = date.fromisoformat(recorded_on)
    except ValueError:
        return False
    return (date.fromisoformat(now or today()) - made).days > days
