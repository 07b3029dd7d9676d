"""The ``ghostrun`` command (also ``python -m ghostrun``): the parser and the dispatch.

    ghostrun diff [BASE] [CANDIDATE]   what regressed, got fixed or drifted between two runs
    ghostrun check                      cassettes and verdicts the last run did not use; misses
    ghostrun prune                      delete what ``check`` reports as unused
    ghostrun show KEY|PATH              one cassette or verdict, readable
    ghostrun calibrate LABELS           how often the judge agrees with your labels
    ghostrun review [BEFORE] [AFTER]    what a prompt change did to requests, answers, verdicts
    ghostrun report [RUN]               a self-contained HTML page of a run
    ghostrun doctor                     each road's library: its version, hooked or why not
    ghostrun import PATH...             vcrpy and cassetter cassettes in, as if recorded here
    ghostrun fork TEST --at N           one test from step N on, live and changed, in a branch
    ghostrun compare --model M          the suite on a candidate model: pass rates, cost, verdict

Each command is a module of `_commands` with ``add_parser(subparsers)`` and
``run(args) -> int``. Every command takes ``--cassette-dir`` (default:
``GHOSTRUN_CASSETTE_DIR``, then ``.ghostrun_cache``). Exit status: 0 fine, 1 the
finding the command gates on (a regression; something stale or missed), 2 a
usage error.

Output survives any console encoding (a Windows terminal's cp1252, ``ascii``):
JSON is ASCII-escaped there, so it stays valid JSON; text shows ASCII stand-ins
for ghostrun's own arrows and dots, and ``\\xe9``-style escapes for what else
the console cannot show (`_commands._console`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._core._distribution import foreign_install
from .._core._exceptions import CassetteError
from .._core._project import ProjectConfigError
from .._core._version import __version__
from ._commands import (
    _calibrate,
    _check,
    _compare,
    _diff,
    _doctor,
    _fork,
    _import,
    _prune,
    _report,
    _review,
    _show,
)
from ._commands._args import EPILOG, UsageError
from ._commands._console import never_crash_on_encoding

__all__ = ["main"]

# In the order ``ghostrun --help`` lists them.
_COMMANDS = (
    _diff,
    _check,
    _prune,
    _show,
    _calibrate,
    _review,
    _report,
    _doctor,
    _import,
    _fork,
    _compare,
)


def main(argv: Sequence[str] | None = None) -> int:
    never_crash_on_encoding()
    warning = foreign_install()
    if warning:
        print(f"ghostrun: WARNING: {warning}", file=sys.stderr)
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except (UsageError, CassetteError, ProjectConfigError) as exc:
        print(f"ghostrun {args.command}: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ghostrun",
        description="Inspect ghostrun cassettes and compare test runs.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"ghostrun {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(subparsers)
    return parser
