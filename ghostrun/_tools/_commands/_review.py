"""``ghostrun review [BEFORE] [AFTER]``: what a prompt change did (`_tools._review`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..._core._config import settings
from ..._core._normalize import normalizer
from ..._recording import _runlog
from .._branches import BranchError, branch_dir
from .._review._branch import FORMATS as BRANCH_FORMATS
from .._review._branch import branch_review, render_branch
from .._review._compare import Suite, review
from .._review._rebased import rebased_tests, with_rebased
from .._review._render import FORMATS, render
from .._review._states import ReviewError, State, state_from_dir, state_from_git
from ._args import PRICES_HELP, Subparsers, UsageError, add_command, cassette_dir, prices
from ._console import out, out_json

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "review",
        run,
        "what a prompt change did: the requests, answers and verdicts that changed, per test",
        "BEFORE and AFTER are git revisions or directories; BEFORE defaults to HEAD and AFTER "
        "to the cassette directory as it is now (run the tests, re-recording, first). With "
        "--runs they name two run snapshots of the cassette directory instead. Each new "
        "cassette is paired with the one it replaced, by test and endpoint, else by the "
        "closest body. Each test tells one story: its outcome change, its final answer before and "
        "after, and each request change once (provider-minted ids and the suite's normalize "
        "and ignore_fields left out). Exit status 1 when a test's outcome got worse (it "
        "passed, or was new, and now fails or errors) or a verdict went from PASS to FAIL; "
        "0 otherwise.",
    )
    parser.add_argument("before", nargs="?", metavar="BEFORE", help="default: HEAD")
    parser.add_argument("after", nargs="?", metavar="AFTER", help="default: the directory now")
    parser.add_argument("--runs", action="store_true", help="BEFORE and AFTER are run snapshots")
    parser.add_argument(
        "--run", dest="run_name", default=_runlog.LAST, metavar="NAME", help="the run log to read"
    )
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--prices", type=Path, metavar="FILE", help=PRICES_HELP)
    parser.add_argument(
        "--branch", metavar="NAME", help="a branch (fork, compare) against the recording"
    )


def run(args: argparse.Namespace) -> int:
    two_dirs = not args.runs and all(w and Path(w).is_dir() for w in (args.before, args.after))
    directory = args.cassette_dir if two_dirs else cassette_dir(args)  # two dirs: none needed
    if args.branch is not None:
        return _branch(args, directory)
    try:
        if args.runs:
            if not (args.before and args.after):
                raise UsageError("--runs compares two run snapshots: name BEFORE and AFTER")
            before = state_from_dir(directory, args.before, f"run {args.before}")
            after = state_from_dir(directory, args.after, f"run {args.after}")
        else:
            before = _state(args.before or "HEAD", directory, args.run_name)
            after = (
                _state(args.after, directory, args.run_name)
                if args.after
                else state_from_dir(directory, args.run_name, "now")
            )
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    found = review(before, after, prices(args), suite_settings())
    out(with_rebased(render(found, args.format), rebased_tests(before, after), args.format))
    return 1 if found.needs_review else 0


def _state(where: str, directory: Path, run: str) -> State:
    """A directory on disk, or ``directory`` at a git revision."""
    if Path(where).is_dir():
        return state_from_dir(Path(where), run)
    return state_from_git(where, directory, run)


def _branch(args: argparse.Namespace, directory: Path) -> int:
    """``--branch NAME``: the branch against the recording (`_review._branch`)."""
    try:
        branch = branch_dir(directory, args.branch)
    except BranchError as exc:
        raise UsageError(str(exc)) from None
    if not branch.is_dir():
        raise UsageError(f"no branch {args.branch!r} at {branch}: make one with ghostrun fork")
    found = branch_review(directory, branch, prices(args))
    text = render_branch(found, args.format if args.format in BRANCH_FORMATS else "text")
    (out_json if args.format == "json" else out)(text)
    return 0


def suite_settings() -> Suite:
    """The suite's ``normalize`` and ``ignore_fields``, read where its sessions read them
    (``configure()`` or the pytest ini, then ``[tool.ghostrun]``), shown left out."""
    shapes = settings.resolve_normalize()
    try:
        normalizer(list(shapes))
    except ValueError as exc:
        raise UsageError(f"[tool.ghostrun] normalize: {exc}") from None
    return Suite(tuple(shapes), settings.resolve_ignore_fields())
