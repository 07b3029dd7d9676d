"""What the roads compute once per library function, not once per session.

The first block of every session checks each imported library for the hooks its
road relies on, down to the keywords a function takes (`_aiohttp._missing_hook`,
`_urllib3._missing_hook`), then installs a wrapper around each hook. Reading
signatures cost about 40 % of an empty session (aiohttp is imported by openai's and
anthropic's SDKs, so its check runs for nearly everyone), and building the wrappers
(``functools.wraps``) another few percent. Neither can change while the function
lives, so each is computed once, keyed by the function object itself: a library
patched, reloaded or imported later brings new functions, read and wrapped afresh
when the next session checks them.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["built", "parameters", "takes_keyword"]

T = TypeVar("T")

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


_built: dict[tuple[Hashable, ...], Any] = {}
_BUILT_MAX = 256  # wrappers kept; past it (libraries patched over and over), start afresh


def built(build: Callable[..., T], *inputs: Hashable) -> T:
    """``build(*inputs)``, made the first time these inputs are seen and reused after.

    For a road's wrapper around a library function: the same original function (and
    the same helpers) make the same wrapper, so a session reinstalls the one the
    last session built instead of building another.
    """
    key = (build, *inputs)
    found = _built.get(key)
    if found is None:
        if len(_built) >= _BUILT_MAX:
            _built.clear()
        found = _built[key] = build(*inputs)
    return found
