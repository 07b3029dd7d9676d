"""Saying that a replay used stale recordings: once per session, or once per run.

A session that replayed recordings older than its ``max_age`` ends with one
`StaleCassetteWarning` listing their cassettes (or `StaleCassette`, with
``on_stale="fail"``). The pytest plugin defers the warnings (`defer`) and says
them once at the end of the run, all cassettes in one list (`take`).
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

from .._core._exceptions import StaleCassette, StaleCassetteWarning
from .._core._words import plural

__all__ = ["add", "defer", "message", "report", "take"]

_lock = threading.Lock()
_deferred = False
_found: dict[str, str] = {}  # cassette path -> the oldest day replayed from it


def defer(enabled: bool) -> bool:
    """Collect the stale cassettes of every session for `take`, instead of warning each;
    returns the previous setting (a pytest run inside a pytest run puts it back)."""
    global _deferred
    previous, _deferred = _deferred, enabled
    return previous


def report(stale: dict[str, str], days: int, on_stale: str) -> None:
    """A session closed having replayed ``stale`` recordings (path -> day)."""
    if not stale:
        return
    if on_stale == "fail":
        raise StaleCassette(message(stale, days))
    with _lock:
        deferred = _deferred
    if deferred:
        add(stale)
        return
    warnings.warn(message(stale, days), StaleCassetteWarning, stacklevel=4)


def add(stale: dict[str, str]) -> None:
    """Stale cassettes another process collected (a pytest-xdist worker's)."""
    with _lock:
        for path, day in stale.items():
            _found[path] = min(day, _found.get(path, day))


def take() -> dict[str, str]:
    """The stale cassettes collected since the last call (deferred mode)."""
    with _lock:
        found = dict(_found)
        _found.clear()
    return found


def message(stale: dict[str, str], days: int | None) -> str:
    limit = f"older than max_age ({days} days)" if days is not None else "older than max_age"
    lines = [f"ghostrun: replayed {plural(len(stale), 'cassette')} recorded {limit}:"]
    lines += [f"  {Path(path)}  (recorded {day})" for path, day in sorted(stale.items())]
    lines.append(
        "  Re-record them: run once with GHOSTRUN_MODE=auto (stale ones are re-recorded) "
        "or GHOSTRUN_MODE=record, with the provider reachable; `ghostrun check "
        "--older-than AGE` lists them."
    )
    return "\n".join(lines)
