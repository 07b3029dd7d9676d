"""Hosts that went live in a replay run: said once per host per run (DESIGN §1, the guard).

A host that is neither a provider host (``PROVIDER_HOSTS``, ``hosts=``) nor a
tool host (``tool_hosts=``) is not recorded, so in replay its traffic still goes
to the network: a tool API an agent calls, a web page it fetches. That is the
default (ghostrun records what it was told is a model or a tool, and a test may
mean to reach its own services), but it is never silent: the first lookup of, or
connect to, such a host in a replay run says so with an `UnlistedHostWarning`
naming the host and the fix (``tool_hosts=[...]`` for a tool, ``hosts=[...]``
for a model). Loopback is this machine, not the network, and is never named.
``--ghostrun-block-network`` (``GHOSTRUN_BLOCK_NETWORK=1``), the CI recipe,
refuses such hosts instead.

One object (`LiveHosts`) keeps the hosts already named, so a connect to the
address a named host resolved to is not named again; tests start it afresh
(`swap`).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from .._core._exceptions import UnlistedHostWarning

__all__ = ["LiveHosts", "first_time", "resolved", "swap", "went_live"]

_DEFAULT_PORTS = (80, 443, None)


class LiveHosts:
    """The hosts (and the addresses they resolved to) named in this run so far."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._named: set[str] = set()

    def first_time(self, host: str) -> bool:
        """Whether ``host`` is named now for the first time in this run."""
        with self._lock:
            if host in self._named:
                return False
            self._named.add(host)
            return True

    def named(self, host: str) -> bool:
        with self._lock:
            return host in self._named

    def add(self, addresses: list[str]) -> None:
        with self._lock:
            self._named.update(addresses)


_hosts = LiveHosts()


def swap(hosts: LiveHosts) -> LiveHosts:
    """Keep the named hosts in ``hosts`` from now on; returns the one used so far."""
    global _hosts
    previous, _hosts = _hosts, hosts
    return previous


def first_time(host: str) -> bool:
    """Whether ``host`` goes live for the first time in this run (then `went_live` says so)."""
    return _hosts.first_time(host)


def went_live(host: str, port: int | None, caller: str, governed: str) -> None:
    """``caller`` is about to reach ``host`` for real in replay: say so (once: `first_time`)."""
    listed = host if port in _DEFAULT_PORTS else f"{host}:{port}"
    warnings.warn(
        f"ghostrun: in replay mode, {caller} went to {listed} live, unrecorded, {governed}: "
        "it is neither a provider host nor a tool host, so this replay depends on it being "
        "up and answering as before. If it serves your agent's tools, declare it and record "
        f'once: ghostrun.session(tool_hosts=["{listed}"]) (or the marker\'s tool_hosts=, '
        f"GHOSTRUN_TOOL_HOSTS, [tool.ghostrun] tool_hosts); its calls then replay as tool "
        f'steps. If it serves a model, hosts=["{listed}"]. To refuse every such host in CI: '
        "--ghostrun-block-network (GHOSTRUN_BLOCK_NETWORK=1). Said once per host per run.",
        UnlistedHostWarning,
        stacklevel=4,
    )


def resolved(host: Any, found: Any) -> None:
    """A named host was looked up: the addresses it resolved to are named with it."""
    if not isinstance(host, str) or not _hosts.named(host) or not isinstance(found, list):
        return
    addresses = [
        str(entry[4][0])
        for entry in found
        if isinstance(entry, tuple) and len(entry) == 5 and isinstance(entry[4], tuple)
    ]
    _hosts.add(addresses)
