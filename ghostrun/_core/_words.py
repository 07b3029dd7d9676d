"""Counting things in a message: ``1 test``, ``2 tests``, ``3 fixes``.

One spelling for every message and report that counts (the CLI, diffs,
reviews, calibration, ``show``, ``check``), below every layer that writes one.
"""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun for it: ``one`` for 1, else ``many`` (by default ``one`` + "s")."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
