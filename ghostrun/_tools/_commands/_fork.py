"""``ghostrun fork TEST --at N``: one test re-run from step N on, live and changed, in a branch.

The steps before N replay from the recording; step N and every later one are
sent for real with the overrides applied (``--model``, ``--set``), into
``<cassette_dir>/branches/<NAME>/`` (`_tools._branches`, `_recording._fork`).
The recorded cassettes and trajectory are never written to. ``ghostrun review
--branch NAME`` then shows the branch against the recording.
"""

from __future__ import annotations

import argparse
import re
import sys

from ..._recording._fork import ForkError, ForkPlan, parse_set
from .._branches import BranchError, fresh_branch, run_pytest, seed
from ._args import Subparsers, UsageError, add_command, cassette_dir

__all__ = ["add_parser", "model_override", "run", "safe_label"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "fork",
        run,
        "re-run one test from step N on, live, on another model or with changed requests",
        "TEST is a pytest node id (tests/test_agent.py::test_refund). Its steps before N "
        "replay from the recording; step N and later are sent for real with --model and "
        "--set applied to each request body, and recorded into "
        "<cassette_dir>/branches/NAME/ (a branch of that name is replaced). The recording is "
        "never written to. Exit status: pytest's.",
    )
    parser.add_argument("test", metavar="TEST", help="the pytest node id of the test")
    parser.add_argument("--at", type=int, required=True, metavar="N", help="the first live step")
    parser.add_argument(
        "--model", metavar="M", help="the model of every live request (or OLD=NEW: only OLD's)"
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="set a field of every live request body (the miss diff's notation: "
        "temperature=0, messages[0].content='Hi'); VALUE is read as JSON, else as text",
    )
    parser.add_argument("--name", metavar="NAME", help="the branch's name (default from --model)")


def model_override(text: str | None) -> tuple[str | None, dict[str, str]]:
    """``--model M`` (every request) or ``--model OLD=NEW`` (only OLD's requests)."""
    if text is None:
        return None, {}
    old, equals, new = text.partition("=")
    if not equals:
        return text, {}
    if not old or not new:
        raise UsageError(f"--model takes MODEL or OLD=NEW, got {text!r}")
    return None, {old: new}


def run(args: argparse.Namespace) -> int:
    directory = cassette_dir(args)
    model, models = model_override(args.model)
    name = args.name or _default_name(args.model, args.at)
    try:
        sets = [parse_set(text) for text in args.sets]
        branch = fresh_branch(directory, name)
        plan = ForkPlan(branch.absolute(), args.at, model, models, sets)
        steps = seed(directory, branch, args.test, args.at)
    except (ForkError, BranchError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    replayed = f"steps 1-{args.at - 1} replayed, " if args.at > 1 else ""
    print(
        f"ghostrun fork: {args.test} ({steps} steps recorded): {replayed}step {args.at} on "
        f"live, into {branch}",
        file=sys.stderr,
    )
    status = run_pytest([args.test, "-p", "no:cacheprovider"], plan)
    print(f"ghostrun fork: compare it with: ghostrun review --branch {name}", file=sys.stderr)
    return status


def _default_name(model: str | None, at: int) -> str:
    return f"{safe_label(model or 'fork', 'fork')}-at-{at}"[:100]


def safe_label(model: str, fallback: str, limit: int | None = None) -> str:
    """A ``--model`` value (``[from=]to``) as a name for a folder: its target model, with
    only letters, digits and ``._-``, at most ``limit`` long; ``fallback`` if nothing is left."""
    return _UNSAFE.sub("-", model.rpartition("=")[2]).strip(".-_")[:limit] or fallback
