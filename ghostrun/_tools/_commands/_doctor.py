"""``ghostrun doctor``: each road's library, its version, hooked or why not (`_tools._doctor`)."""

from __future__ import annotations

import argparse

from ..._intercept._patch import survey
from .. import _doctor
from ._args import Subparsers, add_command
from ._console import out

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    add_command(
        subparsers,
        "doctor",
        run,
        "show each road ghostrun intercepts: the library's version, hooked or why not",
        "Exit status 1 when an installed library lacks its hook (its calls to a provider "
        "raise UnsupportedLibrary). docs/roads.md lists the supported versions.",
    )


def run(args: argparse.Namespace) -> int:
    """Print the survey; exit status 1 when an installed road is not hooked."""
    states = survey()
    out(_doctor.render(states))
    return 1 if any(s.version is not None and not s.hooked for s in states) else 0
