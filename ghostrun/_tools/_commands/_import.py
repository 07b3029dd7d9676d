"""``ghostrun import PATH...``: vcrpy and cassetter cassettes in (`_tools._import`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..._core._config import settings
from .. import _import
from ._args import Subparsers, add_command

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "import",
        run,
        "import vcrpy and cassetter cassettes, scrubbed, as if recorded here",
        f"PATH is a cassette file or a directory searched for them "
        f"({', '.join(_import.SUFFIXES)}). An existing ghostrun cassette is never replaced "
        "without --force. Exit status 1 when a file could not be read or nothing "
        "was imported.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="report, write nothing")
    parser.add_argument("--force", action="store_true", help="replace existing cassettes")


def run(args: argparse.Namespace) -> int:
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"ghostrun import: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    report = _import.import_paths(args.paths, directory, dry_run=args.dry_run, force=args.force)
    sys.stdout.write(_import.render(report) + "\n")
    unread = any(f.error is not None for f in report.files)
    return 1 if unread or not report.imported else 0
