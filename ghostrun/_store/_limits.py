"""What a cassette may contain: the headers ghostrun never writes, and the size limits.

A cassette is data, and it often comes from a pull request by someone the
maintainers do not know; CI replays it in a job that holds real keys. So
before replay trusts a file, `_validate` checks it against this module: a
response header here (`FORBIDDEN_HEADERS`, `FORBIDDEN_PREFIXES`) was put
there by hand, never by ghostrun, and would make the client do something
(inflate a gzip bomb, store a cookie, read the body as chunked), so the file
is a `CassetteError`; and a file past a limit (`LIMITS`) is refused before
it costs memory or a stack overflow. ``docs/security-cassettes.md`` shows
these tables, and a test holds the page to them.

Each check is a pure function used by the validator's fast path and its
slow path alike (`header_problem`, `over`), so the two cannot drift;
`headers_replayable` asks `header_problem`'s question of a whole response at
once, and where it cannot tell says so (tests/store/test_replay_checks.py holds
the two together).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "FORBIDDEN_HEADERS",
    "FORBIDDEN_PREFIXES",
    "LIMITS",
    "Limit",
    "header_problem",
    "headers_replayable",
    "json_depth",
    "limit_message",
]

# Response headers ghostrun never writes, and why each would be an instruction.
FORBIDDEN_HEADERS: Mapping[str, str] = {
    "content-encoding": "a stored body is already decoded, and the client would inflate it"
    " again: a small gzip bomb becomes gigabytes",
    "transfer-encoding": "a stored body is whole: the client would parse it as chunks",
    "content-length": "replay sets the length from the stored body",
    "set-cookie": "a cookie would reach the client's cookie jar and every later request",
    "set-cookie2": "a cookie would reach the client's cookie jar and every later request",
    "connection": "hop-by-hop: it describes a connection replay never makes",
    "keep-alive": "hop-by-hop: it describes a connection replay never makes",
    "te": "hop-by-hop: it describes a connection replay never makes",
    "trailer": "hop-by-hop: it announces trailers a stored body does not have",
    "upgrade": "hop-by-hop: it would switch the protocol of a connection replay never makes",
}
FORBIDDEN_PREFIXES: Mapping[str, str] = {
    "proxy-": "hop-by-hop: proxy headers are for a proxy replay never talks to",
}
# An HTTP header name is a token (RFC 9110 5.1); a value is visible ASCII, spaces and tabs
# (no line break, control or non-ASCII character: httpx encodes values as ASCII).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[^\t\x20-\x7e]")
# A redirect goes to an http(s) URL or a path: any other scheme is not a provider's answer.
_URL_HEADERS = frozenset({"location", "content-location"})
_SCHEME = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*:")
_HTTP = re.compile(r"\s*https?://[^/?#\s]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit: its value, what it counts, and the unit shown in messages."""

    value: int
    what: str
    unit: str = ""


LIMITS: Mapping[str, Limit] = {
    "file_bytes": Limit(64 * 1024 * 1024, "size of one cassette file", "bytes"),
    "body_bytes": Limit(48 * 1024 * 1024, "size of one body as replayed", "bytes"),
    "json_depth": Limit(100, "nesting depth of JSON (objects and lists inside each other)"),
    "responses": Limit(10_000, "responses in one cassette"),
    "chunks": Limit(100_000, "chunks of one streamed body"),
    "conversations": Limit(1_000, "conversations in one WebSocket cassette"),
    "frames": Limit(100_000, "frames of one WebSocket conversation"),
    # http.client (requests, urllib3) refuses more than 100 header lines; replay adds some.
    "headers": Limit(80, "header values of one response (or handshake)"),
    "header_name": Limit(256, "length of one header name", "characters"),
    "header_value": Limit(16 * 1024, "length of one header value", "characters"),
}
"""Every limit a cassette is held to; each far above what any provider answers."""


@functools.lru_cache(maxsize=1024)
def _forbidden(name: str) -> str | None:
    lowered = name.lower()
    if lowered in FORBIDDEN_HEADERS:
        return FORBIDDEN_HEADERS[lowered]
    for prefix, why in FORBIDDEN_PREFIXES.items():
        if lowered.startswith(prefix):
            return why
    return None


def header_problem(name: str, value: str) -> str | None:
    """Why a stored response header (one value) may not be replayed, or None if it may."""
    if len(name) > LIMITS["header_name"].value:
        return limit_message("header_name", len(name))
    if not _TOKEN.fullmatch(name):
        return "not a valid header name (RFC 9110: letters, digits and !#$%&'*+-.^_`|~ only)"
    why = _forbidden(name)
    if why is not None:
        return f"ghostrun never writes this header: {why}"
    if len(value) > LIMITS["header_value"].value:
        return limit_message("header_value", len(value))
    if _BAD_VALUE.search(value):
        return "a header value is visible ASCII, spaces and tabs (no line break, no control)"
    return _url_problem(value) if name.lower() in _URL_HEADERS else None


def headers_replayable(headers: Mapping[str, str]) -> bool:
    """True if no header of ``headers`` (one string value each) has a `header_problem`.

    The replay path's form of it: the names are checked once per process for each
    list of them (a provider sends the same list every time), the values all at once;
    False whenever it cannot tell (a redirect's URL), so the caller asks
    `header_problem` one by one.
    """
    if not _plain_names(tuple(headers), LIMITS["header_name"].value):
        return False
    values = headers.values()
    if max(map(len, values), default=0) > LIMITS["header_value"].value:
        return False
    return _BAD_VALUE.search(" ".join(values)) is None  # a space joins them: an allowed one


@functools.lru_cache(maxsize=256)
def _plain_names(names: tuple[str, ...], limit: int) -> bool:
    """Header names `header_problem` lets through whatever their values (no URL's)."""
    return all(
        len(name) <= limit
        and _TOKEN.fullmatch(name) is not None
        and _forbidden(name) is None
        and name.lower() not in _URL_HEADERS
        for name in names
    )


def _url_problem(value: str) -> str | None:
    """Why a ``location`` is not an http(s) URL or a reference to one, or None."""
    if _SCHEME.match(value) and not _HTTP.match(value):
        return "a redirect goes to an http or https URL, or a path, never another scheme"
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError as exc:
        return f"a redirect goes to a well-formed URL ({exc})"
    if any(char.isspace() for char in value.strip()) or (parts.netloc and not parts.hostname):
        return "a redirect goes to a well-formed URL (a host, and no space inside)"
    if port == 0:
        return "a redirect goes to a well-formed URL (port 0)"
    return None


def limit_message(name: str, found: int | str) -> str:
    """The message for a value over limit ``name``: the limit, what was found, the fix."""
    limit = LIMITS[name]
    unit = f" {limit.unit}" if limit.unit else ""
    shown = f"{found:,}" if isinstance(found, int) else found
    return (
        f"{shown}{unit} is over ghostrun's limit of {limit.value:,}{unit} for the "
        f"{limit.what} (LIMITS[{name!r}], docs/security-cassettes.md); ghostrun never writes "
        "such a file, so it was made or edited by hand"
    )


def json_depth(value: object, stop: int) -> int:
    """The nesting depth of a JSON value, counted up to ``stop`` + 1 at most."""
    depth, level = 0, [value]
    while level and depth <= stop:
        children: list[object] = []
        for item in level:
            if isinstance(item, dict):
                children.extend(item.values())
            elif isinstance(item, list):
                children.extend(item)
        if not children and not any(isinstance(i, (dict, list)) for i in level):
            break
        depth += 1
        level = children
    return depth
