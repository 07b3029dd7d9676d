"""``ghostrun check``: what the last run left unused, what it missed; or what is too old.

The finding is the store's (`_store._check`); this module renders it. `list_unused`
is ``prune``'s list too.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._core._age import MAX_AGE_ENV, today
from ..._core._config import settings
from ..._core._words import plural
from ..._store import _check, _validate
from ._args import Subparsers, UsageError, add_command, cassette_dir, last_run
from ._console import out

__all__ = ["add_parser", "list_unused", "run", "warn_partial"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "check",
        run,
        "list cassettes and verdicts the last run did not use, and requests that missed",
        "Reads runs/_last.json, so run the whole suite first (a partial run leaves the "
        "cassettes of the tests it skipped unused). Exit status 1 when anything is stale "
        "or missed.",
    )
    parser.add_argument(
        "--older-than",
        metavar="AGE",
        nargs="?",
        const="",
        help="instead, list the cassettes recorded more than AGE ago (90d, 12w, 6m; exit 1 if "
        "any); without AGE, the suite's max_age (GHOSTRUN_MAX_AGE, [tool.ghostrun])",
    )


def run(args: argparse.Namespace) -> int:
    directory = cassette_dir(args)
    if args.older_than is not None:
        return _run_older_than(directory, args.older_than or _suite_max_age())
    found = _check.check(directory, last_run(directory))
    tests = len(found.run["tests"])
    finished = found.run.get("finished", "?")
    out(f"ghostrun check: {directory} (last run {finished}, {plural(tests, 'test')})")
    warn_partial(found)
    list_unused(found, directory)
    misses = found.misses
    if misses:
        out(f"\n{plural(len(misses), 'miss', 'misses')} (requests or verdicts not recorded):")
        for miss in misses:
            out(f"  {miss['test']}: {_first_line(miss['message'])}")
    if not found.verdicts_checked:
        out("\nverdicts not checked: the last run did not report which judge verdicts it used")
    if found.files or misses:
        stale = f"{len(found.files)} stale"
        hint = "; `ghostrun prune` deletes the stale files" if found.files else ""
        out(f"\nFAILED: {stale}, {len(misses)} missed{hint}")
        return 1
    out("\nOK: every cassette and verdict was used, and nothing missed")
    return 0


def warn_partial(found: _check.Unused) -> None:
    if found.partial:
        out(
            "\nwarning: the last run looks partial, so the cassettes and verdicts of the tests "
            "it did not run are listed as unused. Run the whole suite before pruning. Based on:"
        )
        for reason in found.partial:
            out(f"  {reason}")


def list_unused(found: _check.Unused, directory: Path) -> None:
    if found.cassettes:
        out(f"\n{plural(len(found.cassettes), 'stale cassette')} (the last run did not use):")
        for path in found.cassettes:
            out(f"  {path.relative_to(directory)}  {_describe_cassette(path)}")
    if found.verdicts:
        out(f"\n{plural(len(found.verdicts), 'stale verdict')} (the last run did not use):")
        for path in found.verdicts:
            out(f"  {path.relative_to(directory)}  {_describe_verdict(path)}")
    inventory = found.inventory
    _paths(
        directory,
        inventory.leftovers,
        "leftover file",
        "(temporary or lock files of writes that were interrupted):",
    )
    _paths(
        directory,
        inventory.foreign,
        "file",
        "skipped (not named like a ghostrun cassette or verdict; never deleted):",
    )
    _paths(
        directory,
        inventory.links,
        "symbolic link",
        "skipped (ghostrun never follows or deletes a link inside a cassette directory; "
        "remove them yourself):",
    )


def _paths(directory: Path, paths: list[Path], noun: str, title: str) -> None:
    if paths:
        out(f"\n{plural(len(paths), noun)} {title}")
        for path in paths:
            out(f"  {path.relative_to(directory)}")


def _describe_cassette(path: Path) -> str:
    document: Mapping[str, Any] = _validate.load(path, "cassette") or {}
    if document.get("kind") == "websocket":  # a WebSocket cassette: its handshake URL
        conversations = document.get("conversations") or [{"handshake": {}}]
        return f"WEBSOCKET {conversations[0]['handshake'].get('url', '?')}"
    request = document.get("request") or {}
    return f"{request.get('method', '?')} {request.get('url', '?')}"


def _describe_verdict(path: Path) -> str:
    verdict: Mapping[str, Any] = _validate.load(path, "verdict") or {}
    criterion = str(verdict.get("criterion", "?"))
    return repr(_first_line(criterion)[:80])


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _suite_max_age() -> str:
    """The ``max_age`` the suite replays with, as ``--older-than`` takes it."""
    age = os.environ.get(MAX_AGE_ENV, "").strip() or settings.resolve_max_age()
    if age is None or age == "":
        raise UsageError(
            "--older-than without AGE uses the suite's max_age, and none is set: give an age "
            '(--older-than 90d), or set max_age = "90d" in [tool.ghostrun] or GHOSTRUN_MAX_AGE'
        )
    return f"{age}d" if isinstance(age, int) else str(age)


def _run_older_than(directory: Path, age: str) -> int:
    try:
        old, undated = _check.older_than(directory, age)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out(_render_older(directory, age, old, undated))
    return 1 if old else 0


def _render_older(directory: Path, age: str, stale: list[tuple[Path, str]], undated: int) -> str:
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
