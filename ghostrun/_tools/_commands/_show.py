"""``ghostrun show KEY|PATH``: one cassette or verdict, readable (`_tools._show`).

The file is read and checked by the store's one loader (`_store._validate`);
only its kind is learnt here, from its content, else its place. A file of a
newer format is shown as raw JSON, with a warning, rather than refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..._store import _validate
from .. import _show
from ._args import Subparsers, UsageError, add_command, cassette_dir
from ._console import out

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "show",
        run,
        "print one cassette or judge verdict readably (streams reassembled into text)",
        "KEY is a cassette key or verdict key (a unique prefix will do); PATH a file.",
    )
    parser.add_argument("target", metavar="KEY|PATH")


def run(args: argparse.Namespace) -> int:
    path = _find(args.target, args)
    document = _validate.read(path, "cassette")  # its kind unknown yet: a cassette's fix
    kind = _show.kind_of(path, document)
    if kind is None:
        raise UsageError(f"{path} is neither a ghostrun cassette nor a judge verdict")
    try:
        checked = _validate.check(document, path, kind)
    except _validate.NewerFormat as newer:
        print(
            f"ghostrun show: warning: {path} has {kind} format version {newer.version}, but "
            f"this ghostrun reads version {_validate.FORMAT_VERSIONS[kind]}; shown as raw "
            "JSON. Upgrade ghostrun to read it.",
            file=sys.stderr,
        )
        out(_show.raw(newer.document))
        return 0
    out(_show.render_file(path, checked))
    return 0


def _find(target: str, args: argparse.Namespace) -> Path:
    as_path = Path(target)
    if as_path.is_file():
        return as_path
    directory = cassette_dir(args)
    key = target.removesuffix(".json")
    for folder in (directory, directory / "judge"):
        if (folder / f"{key}.json").is_file():
            return folder / f"{key}.json"
    matches = [p for f in (directory, directory / "judge") for p in _json_files(f)]
    matches = [p for p in matches if p.stem.startswith(key)] if key else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(str(p.relative_to(directory)) for p in matches[:5])
        raise UsageError(f"{target!r} is ambiguous: {names}{', ...' if len(matches) > 5 else ''}")
    raise UsageError(f"no cassette or verdict {target!r} in {directory}, and no such file")


def _json_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))
