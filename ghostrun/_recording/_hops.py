"""Requests a response caused: redirect hops (DESIGN §1, "What a cassette may cause").

A cassette is data, possibly a stranger's from a pull request, replayed in a
CI job that holds real keys. A replayed ``3xx`` whose ``location`` names
another host must not make the client send the prompt, or the key, there. So
the deck notes every redirect it hands on, replayed or recorded, in its
`Hops`:

- in ``replay``, the host a replayed redirect points at is the session's own
  for the rest of the session, whatever it is (listed or not, loopback,
  ``169.254.169.254``): a request to it is answered from the cassette or is a
  ``CacheMiss``, never sent;
- in every mode, the next request to that host is a *hop*: it carries the
  credentials of the host the chain began at, and the roads drop every
  credential header from it when it goes to another host or port
  (`Hop.foreign`). httpx, aiohttp and requests drop ``Authorization`` alone
  on such a hop; ``x-api-key``, ``api-key``, ``x-goog-api-key`` and cookies
  they keep.

Hosts are compared as `host_name` spells them (``api.openai.com.`` is
``api.openai.com``), with the scheme's default port filled in.
"""

from __future__ import annotations

import threading
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit

from .._core._hosts import host_name

__all__ = ["Hop", "Hops", "Origin", "origin_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class Origin(NamedTuple):
    """Where a request goes, as compared: host name and port (the default filled in)."""

    host: str
    port: int | None


def origin_of(scheme: str, host: str, port: int | None) -> Origin:
    return Origin(host_name(host), port if port is not None else _DEFAULT_PORTS.get(scheme))


class Hop(NamedTuple):
    """A request made because a response redirected to it."""

    origin: Origin  # where the chain began: whom its credentials were meant for
    target: Origin  # where this hop goes

    @property
    def foreign(self) -> bool:
        """Its credentials were meant for another host (or port): they must not go."""
        return self.origin != self.target


class Hops:
    """The redirects a session handed on, and the hosts they made its own."""

    __slots__ = ("_caused", "_lock", "_pending")

    def __init__(self) -> None:
        self._pending: dict[Origin, Origin] = {}  # hop target: the origin of its chain
        self._caused: set[str] = set()  # hosts replayed redirects point at (replay mode)
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._pending or self._caused)

    def note(
        self,
        url: tuple[str, str, int | None, str],
        location: str,
        chain: Origin | None,
        replayed: bool,
    ) -> None:
        """A response to ``url`` (scheme, host, port, path) redirected to ``location``.

        ``chain``: where the chain began, if this response answered a hop itself.
        """
        scheme, host, port, path = url
        base = f"{scheme}://{_netloc(host, port)}{path}"
        try:
            parts = urlsplit(urljoin(base, location.strip()))
            target = origin_of(parts.scheme, parts.hostname or "", parts.port)
        except ValueError:  # a port out of range, a malformed bracket: no client follows it
            return
        if not target.host:
            return
        with self._lock:
            self._pending[target] = chain or origin_of(scheme, host, port)
            if replayed:
                self._caused.add(target.host)

    def caused(self, host: str) -> bool:
        """Whether a replayed redirect pointed at ``host``: it may only be replayed."""
        return bool(self._caused) and host_name(host) in self._caused

    def expects(self, host: str, port: int | None) -> bool:
        """Whether a request to ``host:port`` would be a hop, or go to a host a replay caused."""
        if not self:
            return False
        name = host_name(host)
        with self._lock:  # other threads of the session may note or take meanwhile
            if name in self._caused:
                return True
            return any(t.host == name and (port is None or t.port == port) for t in self._pending)

    def take(self, scheme: str, host: str, port: int | None) -> Hop | None:
        """The hop a request to this address is, if one is pending (once)."""
        if not self._pending:
            return None
        target = origin_of(scheme, host, port)
        with self._lock:
            chain = self._pending.pop(target, None)
        return None if chain is None else Hop(chain, target)


def _netloc(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return shown if port is None else f"{shown}:{port}"
