"""What the commands print: it survives any console encoding.

JSON is ASCII-escaped on a console that is not UTF-8, so it stays valid JSON;
text shows ASCII stand-ins for ghostrun's own arrows and dots, and
``\\xe9``-style escapes for what else the console cannot show
(`never_crash_on_encoding`). No control character from a cassette reaches the
terminal (`_safe_text.terminal`).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import sys
from pathlib import Path

from ..._core import _safe_text as safe
from ..._core._files import write_atomic

__all__ = [
    "confirm",
    "never_crash_on_encoding",
    "out",
    "out_json",
    "out_report",
    "write",
]

# ghostrun's own typography, and what a console that cannot show it gets instead.
_ASCII_STAND_INS = str.maketrans({"\u2192": "->", "\u00b7": "-", "\u2026": "...", "\u2014": "--"})


def never_crash_on_encoding() -> None:
    """A console that cannot show a character shows ``\\xe9`` instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            with contextlib.suppress(ValueError):
                stream.reconfigure(errors="backslashreplace")


def out(text: str) -> None:
    """Text for a person: no control character from a cassette reaches the terminal."""
    text = safe.terminal(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def out_report(text: str) -> None:
    """A report in ghostrun's typography: ASCII arrows where the console has no others."""
    out(text if _console_is_unicode() else text.translate(_ASCII_STAND_INS))


def out_json(text: str) -> None:
    """JSON as is on a UTF-8 console, ASCII-escaped on any other (still valid JSON)."""
    if not _console_is_unicode():
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=True) + "\n"
    sys.stdout.write(text)


def write(path: Path | None, text: str) -> None:
    """``text`` to the file ``path`` (atomically), or shown when there is none."""
    if path is None:
        out(text)
    else:
        write_atomic(path, text.encode("utf-8"))


def confirm(question: str) -> bool:
    """Ask; only ``y`` or ``yes`` is a yes (no input at all is a no)."""
    sys.stdout.write(question)
    sys.stdout.flush()
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _console_is_unicode() -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-16", "utf-32")
    except LookupError:
        return False
