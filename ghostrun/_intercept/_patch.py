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
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._recording._session import Session

__all__ = ["ROADS", "Adapter", "acquire", "release", "session_entered", "session_exited"]

ROADS: tuple[str, ...] = (
    "_httpx",  # httpx and httpx2
    "_aiohttp",
    "_urllib3",  # requests, botocore/boto3
    "_websockets",  # websockets' sync and asyncio clients (WebSocket conversations)
    "_aiohttp_ws",  # aiohttp's ws_connect (WebSocket conversations)
)
"""The road modules of ``ghostrun._intercept``, in installation order."""

_lock = threading.Lock()
_count = 0
_restorers: list[Callable[[], None]] = []


class Adapter(Protocol):
    def check(self) -> bool:
        """True if the library is installed and patchable; raise if it is installed but not."""

    def install(self) -> Callable[[], None]:
        """Install the hook; return the function that restores the original."""


def acquire() -> None:
    global _count
    with _lock:
        if _count == 0:
            _install_all()
        _count += 1


def release() -> None:
    global _count
    with _lock:
        _count -= 1
        if _count == 0:
            while _restorers:
                _restorers.pop()()


def _install_all() -> None:
    ready = [adapter for adapter in _adapters() if adapter.check()]
    try:
        for adapter in ready:
            _restorers.append(adapter.install())
    except BaseException:
        while _restorers:
            _restorers.pop()()
        raise


def _adapters() -> list[Adapter]:
    adapters: list[Adapter] = []
    for road in ROADS:
        adapters += importlib.import_module(f"{__package__}.{road}").adapters()
    return adapters


def session_entered(session: Session) -> None:
    """Every open session holds the roads installed (a `Session` subscriber)."""
    acquire()


def session_exited(session: Session) -> None:
    release()
