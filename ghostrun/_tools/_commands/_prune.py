"""``ghostrun prune``: delete what ``check`` reports as unused, after asking.

A partial last run (narrowed, or fewer tests than before) deletes nothing
without ``--force``: its skipped tests' files only look unused.
"""

from __future__ import annotations

import argparse

from ..._core._words import plural
from ..._store import _check
from ._args import Subparsers, add_command, cassette_dir, last_run
from ._check import list_unused, warn_partial
from ._console import confirm, out

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "prune",
        run,
        "delete the cassettes and verdicts that `ghostrun check` reports as unused",
        "Shows the files, then asks before deleting them.",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="delete without asking")
    parser.add_argument(
        "--force",
        action="store_true",
        help="prune even when the last run looks partial (narrowed, or fewer tests than before)",
    )


def run(args: argparse.Namespace) -> int:
    directory = cassette_dir(args)
    found = _check.check(directory, last_run(directory))
    warn_partial(found)
    list_unused(found, directory)
    if found.partial and found.files and not args.force:
        out(
            "\nNothing deleted: the last run looks partial, so these files may belong to tests "
            "it did not run. Run the whole suite, then prune (or pass --force)."
        )
        return 1
    if not found.files:
        out("ghostrun prune: nothing to delete: the last run used every cassette and verdict")
        return 0
    if not args.yes and not confirm(f"\nDelete these {len(found.files)} files? [y/N] "):
        out("Nothing deleted (pass --yes to delete without asking).")
        return 1
    out(f"Deleted {plural(_check.prune(found), 'file')}.")
    return 0
