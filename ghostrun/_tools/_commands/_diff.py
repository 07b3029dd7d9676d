"""``ghostrun diff [BASE] [CANDIDATE]``: regressions, fixes and drift between two runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..._recording import _runlog
from ..._store._formats import RunLogFile
from .. import _diff
from ._args import Subparsers, UsageError, add_command, cassette_dir, run_files, run_path
from ._console import out_json, out_report

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "diff",
        run,
        "compare two runs: regressions (PASS -> FAIL), fixes and output drift",
        "BASE and CANDIDATE are snapshot names (runs/NAME.json in the cassette directory) "
        "or paths to run files. Defaults: BASE is the most recent named snapshot, CANDIDATE "
        "the last run (_last). Save a snapshot with `pytest --ghostrun-snapshot NAME` or "
        "GHOSTRUN_SNAPSHOT=NAME. Exit status 1 when an assertion regressed.",
    )
    parser.add_argument(
        "base", nargs="?", metavar="BASE", help="the run before (default: latest snapshot)"
    )
    parser.add_argument(
        "candidate", nargs="?", metavar="CANDIDATE", help="the run after (default: _last)"
    )
    parser.add_argument(
        "--format",
        choices=_diff.FORMATS,
        default="text",
        help="text for a terminal, markdown for a pull-request comment, json for tools",
    )


def run(args: argparse.Namespace) -> int:
    runs = _runlog.runs_dir(cassette_dir(args))
    candidate_path = run_path(runs, args.candidate or _runlog.LAST)
    candidate = _runlog.load_run(candidate_path)
    base_path = run_path(runs, args.base) if args.base else _latest_snapshot(runs, candidate)
    base = _runlog.load_run(base_path)
    result = _diff.compare(base, candidate, _label(base_path), _label(candidate_path))
    (out_json if args.format == "json" else out_report)(_diff.render(result, args.format))
    return 1 if result.regressed else 0


def _latest_snapshot(runs: Path, candidate: RunLogFile) -> Path:
    """The most recent named snapshot that is not the candidate run itself."""
    snapshots = sorted(
        (p for p in run_files(runs) if p.stem != _runlog.LAST),
        key=lambda p: (p.stat().st_mtime, p.name),
        reverse=True,
    )
    for path in snapshots:
        if _runlog.load_run(path).get("run_id") != candidate.get("run_id"):
            return path
    raise UsageError(
        f"no snapshot to compare with in {runs}: save one with `pytest --ghostrun-snapshot "
        "NAME` (or GHOSTRUN_SNAPSHOT=NAME) before changing the prompt, or name both runs: "
        "ghostrun diff BASE CANDIDATE"
    )


def _label(path: Path) -> str:
    return path.stem if path.parent.name == "runs" else str(path)
