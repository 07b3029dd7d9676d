"""Telemetry URLs: traffic SDKs send to provider hosts that is not model traffic (DESIGN §1).

openai-agents uploads its traces (on by default) to
``POST https://api.openai.com/v1/traces/ingest``, with random ids and
timestamps: recorded, every run would be a new request, and replay would end
in a `CacheMiss`. Such a request is never written to a cassette. It is sent
for real only in ``record`` mode; in ``replay`` and ``auto`` it is answered
locally, so a run that replays leaves nothing on the network. Recording in
``auto`` answers it locally too: ``auto`` touches the network only on a miss,
and a trace upload is not one.

The local answer is the one the real endpoint gives (`TELEMETRY_ANSWERS`):
OpenAI's trace ingest answers ``204 No Content`` with no body. A URL the user
adds, whose answer ghostrun cannot know, gets `EMPTY_SUCCESS`: ``200`` with
``{}``, which every JSON exporter accepts.

A pattern is a path (``/v1/traces/ingest``: on any intercepted host), or a
host and path (``api.openai.com/v1/traces/ingest``); either may use ``*``
wildcards and carry a scheme, which is ignored, and a query never matters.
Users extend the built-in `TELEMETRY_URLS` with ``session(ignore_urls=...)``
or ``configure(ignore_urls=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

__all__ = [
    "EMPTY_SUCCESS",
    "NO_CONTENT",
    "TELEMETRY_ANSWERS",
    "TELEMETRY_URLS",
    "Answer",
    "UrlList",
    "shared_url_list",
]

Answer = tuple[int, tuple[tuple[str, str], ...], bytes]
"""A local answer: status, headers, body."""

NO_CONTENT: Answer = (204, (), b"")
EMPTY_SUCCESS: Answer = (200, (("content-type", "application/json"),), b"{}")

TELEMETRY_URLS: tuple[str, ...] = (
    "/v1/traces/ingest",  # openai-agents' trace export (agents.tracing.processors)
)
TELEMETRY_ANSWERS: dict[str, Answer] = {
    "/v1/traces/ingest": NO_CONTENT,  # what api.openai.com answers a trace upload
}
"""The real endpoint's answer to each built-in pattern (others get `EMPTY_SUCCESS`)."""


class UrlList:
    """Answers "is this URL on the list, and what does it answer?"; a path lookup in a dict
    when no pattern is a glob."""

    __slots__ = ("_globs", "_host_paths", "_paths")

    def __init__(self, patterns: Iterable[str]) -> None:
        paths: dict[str, Answer] = {}
        host_paths: dict[str, Answer] = {}
        globs: list[tuple[str, Answer]] = []
        for raw in patterns:
            if not raw.strip():
                continue
            pattern = _normalise(raw)
            answer = TELEMETRY_ANSWERS.get(pattern, EMPTY_SUCCESS)
            if "*" in pattern or "?" in pattern or "[" in pattern:
                globs.append((pattern, answer))
            elif pattern.startswith("/"):
                paths.setdefault(pattern, answer)
            else:
                host_paths.setdefault(pattern, answer)
        self._paths = paths
        self._host_paths = host_paths
        self._globs = tuple(globs)

    def __call__(self, host: str, port: int | None, path: str) -> Answer | None:
        """The local answer if the URL is on the list (the first pattern's), else None."""
        found = self._paths.get(path)
        if found is not None:
            return found
        if not (self._host_paths or self._globs):
            return None
        host = host.lower()
        candidates = (path, f"{host}{path}", f"{host}:{port}{path}")
        for candidate in candidates[1:]:
            found = self._host_paths.get(candidate)
            if found is not None:
                return found
        for glob, answer in self._globs:
            if any(fnmatchcase(c, glob) for c in candidates):
                return answer
        return None


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
