"""What a plain script shows when a semantic check skips and nothing catches the skip.

Test runners catch ``unittest.SkipTest``; a plain script does not, and would end
on a traceback through ghostrun's internals. The first skip ghostrun raises arms
a ``sys.excepthook`` that prints one of *ghostrun's* skips, left uncaught, as a
single line (``ghostrun: the script stopped at a skipped check: ...``) and hands
every other exception to the hook it wraps. The exit status stays 1: the script
did not run to its end.
"""

from __future__ import annotations

import sys
import unittest
from types import TracebackType

__all__ = ["ghostrun_skip"]

_MARK = "_ghostrun_skip"
_armed = False


def ghostrun_skip(message: str) -> unittest.SkipTest:
    """A SkipTest that a plain script reports as one line if it escapes."""
    _arm()
    skip = unittest.SkipTest(message)
    setattr(skip, _MARK, True)
    return skip


def _arm() -> None:
    global _armed
    if _armed:
        return
    _armed = True
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if getattr(exc, _MARK, False):
            sys.stderr.write(f"ghostrun: the script stopped at a skipped check: {exc}\n")
            return
        previous(kind, exc, tb)

    sys.excepthook = hook
