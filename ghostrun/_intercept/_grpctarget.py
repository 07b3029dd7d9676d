"""A gRPC target read the way gRPC's C core reads it (DESIGN §1, "The guard"; issue 41).

grpc connects below Python's socket module, so in replay the target is the
only thing the guard can judge, and it must see every address gRPC would
dial. `read_target` follows gRPC's own steps:

1. The text is parsed as a URI (``scheme:[//authority]path``), authority and
   path percent-decoded byte for byte (``%31%32%37.0.0.1`` is ``127.0.0.1``).
   A scheme gRPC has a resolver for is matched in any case (``DNS:``,
   ``IPV4:``); any other text (``localhost:50051``, ``10.0.0.1:50051``,
   ``[::1]:50051``) is read as ``dns:///`` followed by the text.
2. ``dns:`` names one ``host[:port]`` (its leading ``/`` off; the port 443
   when none is written); an authority (``dns://8.8.8.8/...``) is the DNS
   server asked, an address of its own (port 53).
3. ``ipv4:`` and ``ipv6:`` are comma-separated address lists: every one of
   them is an address gRPC may dial, not only the first.
4. ``unix:``, ``unix-abstract:`` and ``vsock:`` reach no TCP address.

A host is kept as gRPC reads it: an IP literal (an IPv6 zone ``%lo`` taken
off: it picks an interface, not an address) or a name. A name reaches the
addresses it resolves to: the guard resolves it where a listed host is an
address (`_guard`).

Whatever the reader cannot say for certain raises `UnreadableTarget`, and the
guard refuses it in replay (fail closed): a query or fragment, a port that is
not plain digits up to 65535 (gRPC reads ``+80``, ``80abc`` or ``65616``, the
last wrapping to 80), a host with characters no name has, a scheme whose
addresses come from elsewhere (``xds:``, ``google-c2p:``), a malformed URI.
No I/O here: the reader is pure, and cached.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import ipaddress

__all__ = ["GrpcTarget", "UnreadableTarget", "is_ip", "read_target"]

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_LOCAL = frozenset({"unix", "unix-abstract", "vsock"})  # no TCP address
_ELSEWHERE = frozenset({"xds", "google-c2p", "c2p"})  # addresses from a control plane
_LISTS = frozenset({"ipv4", "ipv6"})
_DEFAULT_PORT, _DNS_PORT = 443, 53

Address = tuple[str, int]


class UnreadableTarget(ValueError):
    """A target whose addresses ghostrun cannot name for certain; the message says why."""


class GrpcTarget(NamedTuple):
    """What a target reaches: ``addresses`` (host, port), every one gRPC may dial."""

    text: str
    scheme: str
    addresses: tuple[Address, ...]


def read_target(text: str) -> GrpcTarget:
    """The target ``text`` as gRPC reads it; `UnreadableTarget` if that is not certain."""
    return _read(text)


@functools.lru_cache(maxsize=256)
def _read(text: str) -> GrpcTarget:
    scheme, authority, path = _resolver_uri(text)
    if scheme in _LOCAL:
        return GrpcTarget(text, scheme, ())
    if scheme in _ELSEWHERE:
        raise UnreadableTarget(f"a {scheme}: target's addresses come from its control plane")
    if scheme in _LISTS:
        if authority:
            raise UnreadableTarget(f"an {scheme}: target has no authority")
        return GrpcTarget(text, scheme, _address_list(scheme, path))
    found = [_host_port(path.removeprefix("/"), _DEFAULT_PORT)]
    if authority:
        found.append(_host_port(authority, _DNS_PORT))
    return GrpcTarget(text, "dns", tuple(found))


def _resolver_uri(text: str) -> tuple[str, str, str]:
    """(scheme lower-cased, authority, path) of the URI gRPC resolves, decoded."""
    parsed = _uri(text)
    if parsed is None or parsed[0].lower() not in _LOCAL | _ELSEWHERE | _LISTS | {"dns"}:
        parsed = _uri("dns:///" + text)
    if parsed is None:
        raise UnreadableTarget("it is not a URI gRPC can read")
    scheme, authority, path = parsed
    return scheme.lower(), _decoded(authority), _decoded(path)


def _uri(text: str) -> tuple[str, str, str] | None:
    """``scheme:[//authority]path``, None if ``text`` has no valid scheme."""
    scheme, colon, rest = text.partition(":")
    if not colon or not scheme[:1].isalpha() or not _SCHEME_CHARS.issuperset(scheme):
        return None
    if "?" in rest or "#" in rest:  # gRPC reads and drops them: not for certain here
        raise UnreadableTarget("it has a query or fragment")
    authority = ""
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
    return scheme, authority, rest


def _decoded(part: str) -> str:
    """Percent-decoded byte for byte, as gRPC does (an invalid escape stays as written)."""
    if "%" not in part:
        return part
    from urllib.parse import unquote_to_bytes  # lazily: ``import ghostrun`` loads this module

    return unquote_to_bytes(part).decode("latin-1")


def _address_list(scheme: str, path: str) -> tuple[Address, ...]:
    found = []
    for item in path.split(","):
        if not item:
            continue  # gRPC skips empty entries
        host, port = _host_port(item.removeprefix("/"), None)
        version = _address(host).version if is_ip(host) else 0
        if version != (4 if scheme == "ipv4" else 6):
            raise UnreadableTarget(f"{item!r} is not an {scheme} address")
        found.append((host, port))
    if not found:
        raise UnreadableTarget(f"the {scheme}: list is empty")
    return tuple(found)


def _host_port(text: str, default_port: int | None) -> Address:
    """gRPC's ``SplitHostPort``: ``[v6]:port``, ``host:port``, or a host alone."""
    if text.startswith("["):
        host, bracket, tail = text[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")) or ":" not in host:
            raise UnreadableTarget(f"{text!r} is not [IPv6 address]:port")
        port = tail[1:] if tail else None
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:  # a host alone, or a bare IPv6 address
        host, port = text, None
    return _host(host), _port(port, default_port)


def _host(host: str) -> str:
    if ":" in host:
        address = host.partition("%")[0]  # an IPv6 zone names an interface
        if not is_ip(address):
            raise UnreadableTarget(f"{host!r} is not an IPv6 address")
        return address
    if not host or not _NAME_CHARS.issuperset(host):
        raise UnreadableTarget(f"{host!r} is not a host name or address")
    return host


def _port(port: str | None, default_port: int | None) -> int:
    if port is None or (port == "" and default_port is not None):
        if default_port is None:
            raise UnreadableTarget("an address without a port")
        return default_port
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise UnreadableTarget(f"the port {port!r} is not a number from 0 to 65535")
    return int(port)


def is_ip(host: str) -> bool:
    """An IP address (an IPv6 one with or without its zone)."""
    try:
        _address(host.partition("%")[0])
    except ValueError:
        return False
    return True


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    import ipaddress  # lazily: ``import ghostrun`` loads this module (the guard reads targets)

    return ipaddress.ip_address(host)
