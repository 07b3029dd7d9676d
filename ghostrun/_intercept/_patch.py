"""Reference-counted patching of the HTTP libraries' routing hooks.

The first open session installs the hooks, the last one to close restores
the exact original functions. Each HTTP library has an adapter with three
steps: ``check`` (raise before anything is installed, so a missing hook can
never let a request slip to the real network), ``install`` and ``restore``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .._exceptions import UnsupportedHttpx

__all__ = ["HTTPX_FAMILY", "acquire", "installed", "release"]

HTTPX_FAMILY = ("httpx", "httpx2")

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


def installed() -> bool:
    return _count > 0


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
    adapters: list[Adapter] = [HttpxFamilyAdapter(name) for name in HTTPX_FAMILY]
    from . import _aiohttp

    adapters.append(_aiohttp.AiohttpAdapter())
    return adapters


class HttpxFamilyAdapter:
    """Wraps ``Client._transport_for_url`` and ``AsyncClient._transport_for_url``."""

    def __init__(self, module_name: str) -> None:
        self.module_name = module_name
        self.module: Any = None

    def check(self) -> bool:
        try:
            self.module = importlib.import_module(self.module_name)
        except ImportError:
            return False
        for cls_name in ("Client", "AsyncClient"):
            cls = getattr(self.module, cls_name, None)
            if cls is None or not callable(cls.__dict__.get("_transport_for_url")):
                version = getattr(self.module, "__version__", "?")
                raise UnsupportedHttpx(
                    f"{self.module_name} {version} has no {cls_name}._transport_for_url, the "
                    "hook ghostrun wraps, so its requests cannot be intercepted. Install a "
                    f"supported {self.module_name} (httpx 0.2x or httpx2 2.x)."
                )
        return True

    def install(self) -> Callable[[], None]:
        from ._httpx import wrap_routing

        lib = self.module
        originals = {c: c.__dict__["_transport_for_url"] for c in (lib.Client, lib.AsyncClient)}
        lib.Client._transport_for_url = wrap_routing(lib, originals[lib.Client], is_async=False)
        lib.AsyncClient._transport_for_url = wrap_routing(
            lib, originals[lib.AsyncClient], is_async=True
        )

        def restore() -> None:
            for cls, original in originals.items():
                cls._transport_for_url = original

        return restore
