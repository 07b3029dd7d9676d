"""Which hosts are LLM providers, and so intercepted.

Everything else passes through untouched. A pattern is a host name (which
also matches its subdomains), a ``*`` wildcard (``bedrock-runtime.*.amazonaws.com``),
or either of these with a ``:port``; an IPv6 address with a port is written in
brackets (``[::1]:8080``). ``localhost``, ``127.0.0.1`` and ``::1`` are one host,
in patterns and in requests alike: ``localhost:11434`` matches the ollama
client's ``127.0.0.1:11434``. A host is compared as `host_name` spells it: its
trailing dot off, an address by what it reaches (DESIGN §1).

A local provider (a loopback server, a docker-compose port mapping) often listens
on a port chosen afresh each run. A loopback request is keyed without its port
unless an entry written with that port matches it (`HostMatcher.keys_without_port`),
so what was recorded on one port replays on another, and ``ghostrun import`` (which
reads no session's hosts) keys it the same way; an entry with a port keeps the
port in the key, and so does every other host.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

__all__ = ["PROVIDER_HOSTS", "HostMatcher", "host_name", "shared_matcher"]

PROVIDER_HOSTS: tuple[str, ...] = (
    "api.openai.com",
    "openai.azure.com",
    "cognitiveservices.azure.com",
    "services.ai.azure.com",
    "models.inference.ai.azure.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "*-aiplatform.googleapis.com",
    "bedrock-runtime.*.amazonaws.com",
    "bedrock-agent-runtime.*.amazonaws.com",
    "api.mistral.ai",
    "api.cohere.com",
    "api.cohere.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.together.ai",
    "api.fireworks.ai",
    "api.deepseek.com",
    "api.x.ai",
    "api.perplexity.ai",
    "openrouter.ai",
    "api.ai21.com",
    "api.voyageai.com",
    "api.cerebras.ai",
    "api.deepinfra.com",
    "api-inference.huggingface.co",
    "router.huggingface.co",
    "api.replicate.com",
    "api.moonshot.ai",
    "dashscope.aliyuncs.com",
)


_LOOPBACK = "localhost"
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class HostMatcher:
    """Answers "is this host a provider?" in one dict lookup after the first time."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(dict.fromkeys(_pattern(p) for p in patterns if p.strip()))
        self._cache: dict[tuple[str, int | None], bool] = {}
        self._portless: dict[tuple[str, int | None], bool] = {}

    def __call__(self, host: str, port: int | None = None) -> bool:
        found = self._cache.get((host, port))
        if found is None:
            found = self._cache[(host, port)] = self._match(host_name(host), port)
        return found

    def _match(self, host: str, port: int | None) -> bool:
        return any(_matches(pattern, host, port) for pattern in self.patterns)

    def keys_without_port(self, host: str, port: int | None) -> bool:
        """Whether a request to ``host:port`` is keyed without its port (the module's
        docstring): loopback, and matched by no entry written with this port."""
        if port is None:
            return False
        found = self._portless.get((host, port))
        if found is None:
            name = host_name(host)
            found = name == _LOOPBACK and self._any_port(name, port)
            self._portless[(host, port)] = found
        return found

    def _any_port(self, name: str, port: int) -> bool:
        return not any(want and _matches((n, want), name, port) for n, want in self.patterns)


_shared: dict[tuple[str, ...], HostMatcher] = {}
_SHARED_MAX = 64  # distinct host lists in one process; past it, start afresh


def shared_matcher(patterns: tuple[str, ...]) -> HostMatcher:
    """The one matcher for this exact list of patterns, built the first time it is asked for.

    Every session builds its host list afresh (the provider hosts, ``configure(hosts=)``,
    ``GHOSTRUN_HOSTS``, its own ``hosts=``), and the list is nearly always the one the
    last session had: parsing its 30-odd patterns again cost about a quarter of an
    empty session. A list that differs in anything is another key, so a new
    ``hosts=`` or ``configure()`` gets its own matcher; its answers, which depend
    only on the patterns, are shared by every session using it.
    """
    found = _shared.get(patterns)
    if found is None:
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        found = _shared[patterns] = HostMatcher(patterns)
    return found


def host_name(host: str) -> str:
    """A host as matched: lower case, IPv6 brackets off, every loopback spelling one name.

    A name written absolute, with its trailing dot (``api.openai.com.``), is the
    same name. An address is judged by what it reaches: an IPv4-mapped IPv6
    address (``::ffff:127.0.0.1``, ``::ffff:7f00:1``) is its IPv4 address, and
    the unspecified addresses (``0.0.0.0``, ``::``), which a connect sends to
    this machine, are loopback.
    """
    name = host.lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name.rstrip(".")
    if name in _LOOPBACK_NAMES:
        return _LOOPBACK
    if ":" in name or name[:1].isdigit():
        return _reached(name)
    return name


def _reached(name: str) -> str:
    """An IP address as the host it reaches (`host_name`); any other text unchanged."""
    import ipaddress  # lazily: asked once per host, matchers cache the answer

    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(name)
    except ValueError:
        return name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified:
        return _LOOPBACK
    name = str(address)
    return _LOOPBACK if name in _LOOPBACK_NAMES else name


def _pattern(text: str) -> tuple[str, str]:
    """Accept what users paste: ``https://host:port/v1`` means ``host:port``.

    Returns the host name (as `host_name` spells it) and the port, ``""`` for any port.
    """
    text = text.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0]
    if text.startswith("["):  # [::1] or [::1]:8080
        name, _sep, rest = text[1:].partition("]")
        return host_name(name), rest[1:] if rest.startswith(":") and rest[1:].isdigit() else ""
    name, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        return host_name(name), port
    return host_name(text), ""  # no port, or a bare IPv6 address


def _matches(pattern: tuple[str, str], host: str, port: int | None) -> bool:
    name, want_port = pattern
    if want_port and str(port) != want_port:
        return False
    if "*" in name:
        return fnmatchcase(host, name)
    return host == name or host.endswith("." + name)
