"""Reference-counted patching of the HTTP libraries' hooks, and the registry of roads.

The first open session installs every road's hooks, the last one to close
restores the exact original functions. A road is a module of this package
listed in `ROADS`; its ``adapters()`` returns one `Adapter` per library it
covers, each with two steps: ``check`` (is the library importable? raise
`UnsupportedHttpx` if it is but lacks its hook, before anything is
installed, so a missing hook can never let a request slip to the real
network) and ``install`` (returns the function that restores the original).
Adding a road is one entry in `ROADS` and a module with ``adapters()``.

Road modules are imported here, when the first session opens, never by
``import ghostrun``; each imports its HTTP library only in ``check``.

Two small pieces serve every installer of hooks in this package (the roads
and the guard): `Refcount`, installed while anyone holds it, and `replace`,
which sets attributes and returns the function that puts back what was there.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._recording._deck import Deck

__all__ = [
    "ROADS",
    "Adapter",
    "Refcount",
    "Restore",
    "acquire",
    "release",
    "replace",
    "restore_all",
    "session_entered",
    "session_exited",
]

ROADS: tuple[str, ...] = (
    "_httpx",  # httpx and httpx2
    "_aiohttp",
    "_urllib3",  # requests, botocore/boto3
    "_websockets",  # websockets' sync and asyncio clients (WebSocket conversations)
    "_aiohttp_ws",  # aiohttp's ws_connect (WebSocket conversations)
)
"""The road modules of ``ghostrun._intercept``, in installation order."""

Restore = Callable[[], None]
"""What an install returns: the function that puts the originals back."""


class Adapter(Protocol):
    def check(self) -> bool:
        """True if the library is installed and patchable; raise if it is installed but not."""

    def install(self) -> Restore:
        """Install the hook; return the function that restores the original."""


# -- the pieces every installer shares ------------------------------------------------


class Refcount:
    """Installed while held: the first `acquire` installs, the last `release` restores.

    Both run under ``lock``, which the owner may also take for its own work (the
    guard patches a module under it when the module is imported late). An
    install that raises leaves the count where it was.
    """

    def __init__(
        self, install: Callable[[], None], restore: Restore, lock: AbstractContextManager[Any]
    ) -> None:
        self._install, self._restore, self._lock = install, restore, lock
        self.count = 0

    def acquire(self) -> None:
        with self._lock:
            if self.count == 0:
                self._install()
            self.count += 1

    def release(self) -> None:
        with self._lock:
            self.count -= 1
            if self.count == 0:
                self._restore()


def replace(*changes: tuple[Any, str, Any]) -> Restore:
    """Set each ``(owner, name, value)``; return the function that puts back what was there.

    What was there is the owner's own attribute; one it only inherited is
    deleted again, so the owner goes back to inheriting it.
    """
    saved = [(owner, name, owner.__dict__.get(name, _ABSENT)) for owner, name, _ in changes]
    for owner, name, value in changes:
        setattr(owner, name, value)

    def restore() -> None:
        for owner, name, original in saved:
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    return restore


def restore_all(restorers: list[Restore]) -> None:
    """Run and drop the restorers, the last installed first."""
    while restorers:
        restorers.pop()()


_ABSENT: Any = object()


# -- the roads ------------------------------------------------------------------------

_restorers: list[Restore] = []


def _install_all() -> None:
    ready = [adapter for adapter in _adapters() if adapter.check()]
    try:
        for adapter in ready:
            _restorers.append(adapter.install())
    except BaseException:
        restore_all(_restorers)
        raise


_roads = Refcount(_install_all, lambda: restore_all(_restorers), threading.Lock())


def acquire() -> None:
    """Install every road's hooks (the first caller does), until the last `release`."""
    _roads.acquire()


def release() -> None:
    """The last release restores the exact original functions."""
    _roads.release()


def _adapters() -> list[Adapter]:
    adapters: list[Adapter] = []
    for road in ROADS:
        adapters += importlib.import_module(f"{__package__}.{road}").adapters()
    return adapters


def session_entered(deck: Deck) -> None:
    """Every open session holds the roads installed (a `Deck` subscriber)."""
    acquire()


def session_exited(deck: Deck) -> None:
    release()
