"""Telemetry URLs: traffic SDKs send to provider hosts that is not model traffic (DESIGN §1).

openai-agents uploads its traces (on by default) to
``POST https://api.openai.com/v1/traces/ingest``, with random ids and
timestamps: recorded, every run would be a new request, and replay would end
in a `CacheMiss`. Such a request is never written to a cassette. It is sent
for real only in ``record`` mode; in ``replay`` and ``auto`` it is answered
locally with an empty success (``_intercept._engine.EMPTY_SUCCESS``), so a run that replays leaves
nothing on the network. Recording in ``auto`` answers it locally too: ``auto``
touches the network only on a miss, and a trace upload is not one.

A pattern is a path (``/v1/traces/ingest``: on any intercepted host), or a
host and path (``api.openai.com/v1/traces/ingest``); either may use ``*``
wildcards and carry a scheme, which is ignored, and a query never matters.
Users extend the built-in `TELEMETRY_URLS` with ``session(ignore_urls=...)``
or ``configure(ignore_urls=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

__all__ = ["TELEMETRY_URLS", "UrlList", "shared_url_list"]

TELEMETRY_URLS: tuple[str, ...] = (
    "/v1/traces/ingest",  # openai-agents' trace export (agents.tracing.processors)
)


class UrlList:
    """Answers "is this URL on the list?"; a path lookup in a set when no pattern is a glob."""

    __slots__ = ("_globs", "_host_paths", "_paths")

    def __init__(self, patterns: Iterable[str]) -> None:
        paths: set[str] = set()
        host_paths: set[str] = set()
        globs: list[str] = []
        for raw in patterns:
            if not raw.strip():
                continue
            pattern = _normalise(raw)
            if "*" in pattern or "?" in pattern or "[" in pattern:
                globs.append(pattern)
            elif pattern.startswith("/"):
                paths.add(pattern)
            else:
                host_paths.add(pattern)
        self._paths = frozenset(paths)
        self._host_paths = frozenset(host_paths)
        self._globs = tuple(globs)

    def __call__(self, host: str, port: int | None, path: str) -> bool:
        if path in self._paths:
            return True
        if not (self._host_paths or self._globs):
            return False
        host = host.lower()
        candidates = (path, f"{host}{path}", f"{host}:{port}{path}")
        if self._host_paths.intersection(candidates[1:]):
            return True
        return any(fnmatchcase(c, g) for g in self._globs for c in candidates)


_shared: dict[tuple[str, ...], UrlList] = {}
_SHARED_MAX = 64


def shared_url_list(patterns: tuple[str, ...]) -> UrlList:
    """The one `UrlList` for this exact list, built once: sessions nearly always repeat it."""
    found = _shared.get(patterns)
    if found is None:
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        found = _shared[patterns] = UrlList(patterns)
    return found


def _normalise(text: str) -> str:
    """``https://Host:443/p?q`` -> ``host:443/p``; a bare path stays a path."""
    text = text.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("?", 1)[0]
    if text.startswith("/"):
        return text
    host, slash, path = text.partition("/")
    if not slash:
        raise ValueError(
            f"ignore_urls entry {text!r} names no path: write a path ('/v1/traces/ingest') "
            "or a host and path ('api.openai.com/v1/traces/ingest')"
        )
    return host.lower() + slash + path
