"""Public names report ``ghostrun`` as their module.

Tracebacks, reprs and documentation tools then show ``ghostrun.CacheMiss``,
the name users import, rather than the private module it is defined in; and
pickle finds each one through ``ghostrun``, which exports them all.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["public"]

T = TypeVar("T")


def public(obj: T) -> T:
    """Mark a class or function exported by ``ghostrun``; returns it unchanged otherwise."""
    obj.__module__ = "ghostrun"
    return obj
