"""What a library's function accepts, read once per function: the roads' hook checks.

A road checks, before it installs, that its library still has the hooks it relies
on, down to the keywords a function takes (`_aiohttp._missing_hook`,
`_urllib3._missing_hook`). The first block of every session runs those checks, and
``inspect.signature`` cost about 40 % of an empty session (aiohttp is imported by
openai's and anthropic's SDKs, so its check runs for nearly everyone). A signature
cannot change while its function lives, so each is read once, keyed by the function
object itself: a library patched, reloaded or imported later brings new functions,
which are read afresh when the next session checks them.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["parameters", "takes_keyword"]

_Shape = tuple[frozenset[str], bool]  # parameter names; whether it takes **kwargs
_shapes: weakref.WeakKeyDictionary[Callable[..., Any], _Shape] = weakref.WeakKeyDictionary()


def parameters(fn: Callable[..., Any]) -> frozenset[str]:
    """The names of ``fn``'s parameters (``inspect.signature``'s)."""
    return _shape(fn)[0]


def takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """True if ``fn`` accepts ``name=`` (another library's ``**kwargs`` wrapper passes it on)."""
    names, var_keyword = _shape(fn)
    return var_keyword or name in names


def _shape(fn: Callable[..., Any]) -> _Shape:
    try:
        found = _shapes.get(fn)
    except TypeError:  # not weakly referenceable (a builtin): read it each time
        return _read(fn)
    if found is None:
        found = _shapes[fn] = _read(fn)
    return found


def _read(fn: Callable[..., Any]) -> _Shape:
    params = inspect.signature(fn).parameters.values()
    names = frozenset(p.name for p in params)
    return names, any(p.kind is p.VAR_KEYWORD for p in params)
