"""A request as the deck sees it, whichever library sent it, and its match key.

A road hands the engine a request's parts; `describe` makes of them a
`RequestInfo`: the method, the canonical URL, the headers (possibly lazy), the
query and the body, and the key its cassette is found by (`_store._keys`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from urllib.parse import parse_qsl

from .._core._normalize import Normalizer
from .._secrets._memory import Frozen
from .._store._keys import canonical_body, canonical_url, match_key

__all__ = ["LazyHeaders", "RequestInfo", "content_type", "describe"]


class LazyHeaders(Sequence[tuple[str, str]]):
    """A road's request headers, built when first read: replaying JSON never reads them.

    `frozen` is how a replayed request's headers are held until a scrub needs them
    (`_secrets._memory.defer_secrets`): a road may hand them over without building them.
    """

    __slots__ = ()

    def frozen(self) -> Frozen:
        return tuple(itertools.chain.from_iterable(self))


class RequestInfo:
    """What a deck needs to know about a request, whichever library sent it."""

    __slots__ = ("_content_type", "body", "headers", "key", "method", "query", "url")

    def __init__(
        self,
        method: str,
        url: str,  # canonical: credential query parameters dropped, query sorted
        headers: Sequence[tuple[str, str]],  # lower-case names; may be built when first read
        query: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        self.method, self.url, self.headers, self.query = method, url, headers, query
        self.body, self.key = body, ""
        self._content_type: str | None = None

    @property
    def content_type(self) -> str:
        """Looked up when first asked for: replaying a JSON request never needs it."""
        if self._content_type is None:
            self._content_type = content_type(self.headers)
        return self._content_type

    def frozen_headers(self) -> Frozen:
        """The headers flat, ``(name, value, ...)``, to be held (`LazyHeaders.frozen`)."""
        headers = self.headers
        if isinstance(headers, LazyHeaders):
            return headers.frozen()
        return tuple(itertools.chain.from_iterable(headers))


def describe(
    method: str,
    url_parts: tuple[str, str, int | None, str, str],
    headers: Sequence[tuple[str, str]],
    body: bytes,
    ignore: Sequence[tuple[str, ...]],
    shapes: Normalizer | None,
    portless: bool = False,
) -> RequestInfo:
    """Build the key of a request from its parts (scheme, host, port, path, query).

    ``headers`` may be a lazy sequence: replaying a JSON request never
    reads them (the key reads any body that looks like JSON as JSON, so only
    another body's content type is looked up). ``ignore`` and ``shapes`` are the
    session's ``ignore_fields`` and ``normalize``: left out of the key. ``portless``: the
    port is left out of the key too (a local provider's, `HostMatcher.keys_without_port`).
    """
    method = method.upper()
    url = canonical_url(*url_parts)
    query = parse_qsl(url_parts[4], keep_blank_values=True) if url_parts[4] else []
    info = RequestInfo(method, url, headers, query, body)
    key_type = "" if body[:1] in (b"{", b"[") else info.content_type
    key_url = url if not portless else canonical_url(*url_parts[:2], None, *url_parts[3:])
    key_url = key_url if shapes is None else shapes.url(key_url)
    info.key = match_key(method, key_url, canonical_body(body, key_type, ignore, shapes))
    return info


def content_type(headers: Iterable[tuple[str, str]]) -> str:
    """The value of the ``content-type`` header, or ``""``."""
    for name, value in headers:
        if name.lower() == "content-type":
            return value
    return ""
