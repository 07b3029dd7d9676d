"""Fixtures the interception tests share: a tripwire on the network's way out."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

import pytest


@pytest.fixture
def tripwire(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse, and note, every look-up of a name and connect to an address off loopback."""
    attempts: list[str] = []
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def loopback(host: Any) -> bool:
        text = host.decode() if isinstance(host, bytes) else str(host)
        if text in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(text.strip("[]")).is_loopback
        except ValueError:
            return False

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not loopback(host):
            attempts.append(f"look up {host}")
            raise socket.gaierror(socket.EAI_NONAME, "refused by the test's tripwire")
        return lookup(host, *args, **kwargs)

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not loopback(address[0]):
            attempts.append(f"connect to {address[0]}")
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused by the test's tripwire")
        return connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return attempts
