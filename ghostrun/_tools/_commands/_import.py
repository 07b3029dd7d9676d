"""``ghostrun import PATH...``: vcrpy and cassetter cassettes in (`_tools._import`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..._core._config import settings
from ..._core._normalize import normalizer
from ..._store._keys import split_field_paths
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
    parser.add_argument(
        "--normalize",
        action="append",
        metavar="SHAPE",
        help="a value shape left out of the keys, as the sessions' normalize= (repeat it; "
        "default: the project's normalize setting)",
    )
    parser.add_argument(
        "--ignore-fields",
        action="append",
        default=[],
        metavar="PATH",
        help="a JSON path left out of the keys, as the sessions' ignore_fields= (repeat it)",
    )
    parser.add_argument(
        "--test-from-path",
        default=_import.PYTEST_RECORDING_LAYOUT,
        metavar="LAYOUT",
        help="where a cassette's path names its test, with {dir}, {module} and {test} "
        f"(default: pytest-recording's {_import.PYTEST_RECORDING_LAYOUT!r}; a suite whose "
        "vcr_cassette_dir is tests/_vcr/<module> passes '{dir}/_vcr/{module}/{test}')",
    )


def run(args: argparse.Namespace) -> int:
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"ghostrun import: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    refused = _import.refusal(args.paths, directory)
    if refused is None:
        refused = _usage(args)
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    keying = _import.Keying(
        None if args.normalize is None else tuple(args.normalize), tuple(args.ignore_fields)
    )
    report = _import.import_paths(
        args.paths,
        directory,
        dry_run=args.dry_run,
        force=args.force,
        keying=keying,
        layout=args.test_from_path,
    )
    sys.stdout.write(_import.render(report) + "\n")
    unread = any(f.error is not None for f in report.files)
    return 1 if unread or not report.imported else 0


def _usage(args: argparse.Namespace) -> str | None:
    """A bad --normalize, --ignore-fields or --test-from-path, said before anything is read."""
    try:
        _import.layout_pattern(args.test_from_path)
        normalizer(args.normalize)
        split_field_paths(tuple(args.ignore_fields))
    except ValueError as exc:
        return f"ghostrun import: {exc}"
    return None
