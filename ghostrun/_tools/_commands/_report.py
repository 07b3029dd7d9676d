"""``ghostrun report [RUN]``: a run as one self-contained HTML page (`_tools._report`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..._core._files import write_atomic
from ..._recording import _runlog
from .. import _report
from .._review._states import state_from_dir
from ._args import PRICES_HELP, Subparsers, add_command, cassette_dir, prices, run_path

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "report",
        run,
        "write one self-contained HTML page of a run: outcomes, trajectories, verdicts",
        "RUN is a snapshot name or a run file (default: the last run). With --base, the tests "
        "whose verdicts went from PASS to FAIL since that run come first. The page loads "
        "nothing from the network.",
    )
    parser.add_argument("run_name", nargs="?", default=_runlog.LAST, metavar="RUN")
    parser.add_argument("--base", metavar="RUN", help="the run to compare with")
    parser.add_argument(
        "--output", "-o", type=Path, metavar="FILE", help="default: runs/report.html"
    )
    parser.add_argument("--prices", type=Path, metavar="FILE", help=PRICES_HELP)


def run(args: argparse.Namespace) -> int:
    directory = cassette_dir(args)
    runs = _runlog.runs_dir(directory)
    run_log = _runlog.load_run(run_path(runs, args.run_name))
    base = _runlog.load_run(run_path(runs, args.base)) if args.base else None
    state = state_from_dir(directory)
    output: Path = args.output or runs / "report.html"
    page = _report.render_report(run_log, state.cassettes, base, state.trajectories, prices(args))
    root = None if args.output else directory  # runs/ may not be a link: refused
    write_atomic(output, page.encode("utf-8"), root=root)
    print(f"wrote {output}", file=sys.stderr)
    return 0
