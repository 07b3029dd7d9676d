"""What every command shares: its parser, the cassette directory, usage errors, run names.

Every command takes ``--cassette-dir`` (default: ``GHOSTRUN_CASSETTE_DIR``, then
``cassette_dir`` under ``[tool.ghostrun]`` in the nearest pyproject.toml, then
``.ghostrun_cache``). A `UsageError` is a mistake on the command line or a
missing file: ``main`` prints it and exits with status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from ..._core._config import settings
from ..._recording import _runlog
from ..._store._formats import RunLogFile
from .. import _tokens

__all__ = [
    "EPILOG",
    "PRICES_HELP",
    "Subparsers",
    "UsageError",
    "add_command",
    "cassette_dir",
    "last_run",
    "no_cassette_dir",
    "prices",
    "run_files",
    "run_path",
]

EPILOG = "Exit status: 0 fine, 1 a finding (see each command), 2 a usage error."
PRICES_HELP = (
    'your price table, a JSON file: {"MODEL": {"in": USD, "out": USD}, "*": {...}} in US '
    "dollars per million tokens; costs are shown beside the tokens (nothing is fetched)"
)

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """A mistake on the command line or a missing file: exit status 2."""


def add_command(
    subparsers: Subparsers,
    name: str,
    run: Callable[[argparse.Namespace], int],
    summary: str,
    details: str,
) -> argparse.ArgumentParser:
    """A command with ``--cassette-dir``, its help, and ``run`` to call."""
    parser = subparsers.add_parser(
        name, parents=[_common()], help=summary, description=f"{summary}. {details}", epilog=EPILOG
    )
    parser.set_defaults(run=run)
    return parser


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--cassette-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="the cassette directory (default: GHOSTRUN_CASSETTE_DIR, then cassette_dir under "
        "[tool.ghostrun] in the nearest pyproject.toml, then .ghostrun_cache)",
    )
    return common


def cassette_dir(args: argparse.Namespace) -> Path:
    """The cassette directory the command reads; a UsageError if there is none."""
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    if not directory.is_dir():
        raise UsageError(no_cassette_dir(directory))
    return directory


def no_cassette_dir(directory: Path) -> str:
    """Where ghostrun looked, and the three ways to point it at the project's cassettes."""
    return (
        f"no cassette directory at {directory.absolute()}: pass --cassette-dir DIR, set "
        "GHOSTRUN_CASSETTE_DIR, or say it once for the project in pyproject.toml:\n"
        '    [tool.ghostrun]\n    cassette_dir = "tests/cassettes"'
    )


def run_path(runs: Path, name: str) -> Path:
    """A run file: ``name`` as a path to one, else the snapshot ``runs/NAME.json``."""
    as_path = Path(name)
    if as_path.suffix == ".json" and as_path.is_file():
        return as_path
    path = runs / f"{name}.json"
    if path.is_file():
        return path
    known = ", ".join(sorted(p.stem for p in run_files(runs))) or "none yet"
    raise UsageError(
        f"no run named {name!r} (looked for {path}; runs saved: {known}). Run the tests to "
        "write _last, and save a snapshot with `pytest --ghostrun-snapshot NAME`."
    )


def run_files(runs: Path) -> list[Path]:
    """The run files of a ``runs/`` folder (none if there is no such folder)."""
    return [p for p in runs.glob("*.json") if not p.name.startswith(".")] if runs.is_dir() else []


def last_run(directory: Path) -> RunLogFile:
    """The run log ``runs/_last.json`` of ``directory``; a UsageError if there is none."""
    last = _runlog.runs_dir(directory) / f"{_runlog.LAST}.json"
    if not last.is_file():
        raise UsageError(
            f"no run log at {last}: run the test suite first (in replay mode, e.g. "
            "`pytest --ghostrun-replay`), then check"
        )
    return _runlog.load_run(last)


def prices(args: argparse.Namespace) -> _tokens.Prices | None:
    """The user's price table (``--prices FILE``), or None without one."""
    if args.prices is None:
        return None
    try:
        return _tokens.load_prices(args.prices)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
