"""What the process remembers of the credentials it saw, for the files besides cassettes.

Run logs and verdict files are scrubbed of every credential collected so far
(`_scrub.scrub_text`). A replayed request writes no cassette, so its
credentials are collected only when a scrub first needs them (`defer_secrets`).
All of it is one object, `MEMORY`, which tests reset (`Memory.reset`) instead of
reaching into its parts.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from ._collect import carried_secrets, request_secrets_of

__all__ = [
    "MAX_REMEMBERED",
    "MEMORY",
    "Frozen",
    "Memory",
    "Request",
    "collect_secrets",
    "defer_secrets",
    "remember_secrets",
    "request_secrets",
    "thawed",
]

MAX_REMEMBERED = 1024
# Replayed requests held for a later scrub (`defer_secrets`), counted by their bytes
# (URL, body, header names and values). Past the bound they are collected at once and
# let go. An OpenAI SDK chat request counts about 0.6 KB and takes about 2 KB of memory
# held (measured with tracemalloc), so about 7,000 of them fill it (some 14 MB).
MAX_HELD_BYTES = 4 * 1024 * 1024

Frozen = tuple[str, ...] | tuple[bytes, ...]
"""A request's headers held flat, ``(name, value, name, value, ...)``: as text, or as the
raw bytes while they are all ASCII (which decode alike in every encoding a library may
pick). One tuple of strings, which the garbage collector stops tracking, not an object."""


class Request(Protocol):
    """A request as the deck describes it (``_recording._deck.RequestInfo``): what
    `request_secrets` and `defer_secrets` read. A protocol, since this layer sits below
    the deck's."""

    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Iterable[tuple[str, str]]: ...
    @property
    def query(self) -> Iterable[tuple[str, str]]: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str: ...
    def frozen_headers(self) -> Frozen: ...


_Snapshot = tuple[str, bytes, tuple[tuple[str, str], ...], Frozen, int]
"""A held request: URL, body, query, headers (flat) and the bytes they count."""
Collect = Callable[
    [str, list[tuple[str, str]], tuple[tuple[str, str], ...], bytes, str], frozenset[str]
]
"""How a held request's credentials are found: URL, headers, query, body, content type."""


class Memory:
    """Credentials remembered (the newest `MAX_REMEMBERED`), and replayed requests held
    until a scrub needs theirs.

    Each held request is one tuple of strings and bytes (`_Snapshot`), never the
    request's objects: thousands of these cost the garbage collector nothing,
    where thousands of held requests (a few objects each) cost a W1 replay about
    as much in full collections as collecting their secrets would have.
    """

    __slots__ = (
        "_collect",
        "_held",
        "_held_lock",
        "_lock",
        "_remembered",
        "held_bytes",
        "max_held_bytes",
    )

    def __init__(self, collect: Collect = request_secrets_of) -> None:
        self._collect = collect
        self._remembered: dict[str, None] = {}  # insertion-ordered: the oldest go first
        self._lock = threading.Lock()
        # Held while collecting: a scrub never reads what is remembered while another
        # thread is still collecting the requests it took.
        self._held_lock = threading.Lock()
        self._held: collections.deque[_Snapshot] = collections.deque()
        self.held_bytes = 0
        self.max_held_bytes = MAX_HELD_BYTES

    def remember(self, secrets: frozenset[str]) -> None:
        if not secrets or all(s in self._remembered for s in secrets):
            return
        with self._lock:
            for secret in secrets:
                self._remembered.pop(secret, None)
                self._remembered[secret] = None
            while len(self._remembered) > MAX_REMEMBERED:
                del self._remembered[next(iter(self._remembered))]

    def hold(self, request: Request) -> None:
        """Hold a replayed request; past `max_held_bytes`, collect every one held."""
        url, body, headers = request.url, request.body, request.frozen_headers()
        size = len(url) + len(body) + sum(map(len, headers))
        with self._held_lock:
            self._held.append((url, body, tuple(request.query), headers, size))
            self.held_bytes += size
            if self.held_bytes > self.max_held_bytes:
                self._collect_held()

    def known(self) -> frozenset[str]:
        """Every credential remembered, those of the requests held collected first."""
        with self._held_lock:
            self._collect_held()
        with self._lock:
            return frozenset(self._remembered)

    def remembered(self) -> tuple[str, ...]:
        """What is remembered now, oldest first (held requests not collected)."""
        with self._lock:
            return tuple(self._remembered)

    @property
    def held_requests(self) -> int:
        return len(self._held)

    def reset(self, remembered: Iterable[str] = ()) -> None:
        """Forget every credential and every held request, then remember ``remembered``
        (oldest first): for tests, as a fresh process, or as the process was before."""
        with self._held_lock, self._lock:
            self._held.clear()
            self.held_bytes = 0
            self._remembered = dict.fromkeys(remembered)

    def _collect_held(self) -> None:
        """Oldest first, so the newest stay remembered longest; one at a time, so a
        request that fails to be read costs no other its collection."""
        while self._held:
            url, body, query, frozen, size = self._held.popleft()
            self.held_bytes -= size
            headers = thawed(frozen)
            content_type = next((v for n, v in headers if n == "content-type"), "")
            self.remember(self._collect(url, headers, query, body, content_type))


def thawed(frozen: Frozen) -> list[tuple[str, str]]:
    """Held headers as the request's (lower-case name, value) pairs again."""
    texts = [item.decode("ascii") if isinstance(item, bytes) else item for item in frozen]
    return [(name.lower(), value) for name, value in zip(texts[::2], texts[1::2], strict=True)]


MEMORY = Memory()
"""The process's memory: every function below remembers in it."""


def collect_secrets(
    headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]] = ()
) -> frozenset[str]:
    """Every credential value a request carried in its headers and query (remembered)."""
    secrets = carried_secrets(headers, query)
    MEMORY.remember(secrets)
    return secrets


def request_secrets(request: Request) -> frozenset[str]:
    """Every credential a request carried, wherever it was (remembered)."""
    secrets = request_secrets_of(
        request.url, request.headers, request.query, request.body, request.content_type
    )
    MEMORY.remember(secrets)
    return secrets


def remember_secrets(secrets: frozenset[str]) -> None:
    """Remember credentials seen as they pass (a WebSocket frame, long before its
    conversation's cassette is written), so the run log scrubs a test's output of them."""
    MEMORY.remember(secrets)


def defer_secrets(request: Request) -> None:
    """A replayed request: its credentials are collected when a scrub first needs them.

    Replay writes no cassette, and every other file is written through
    `scrub_text`, which collects what is held first; until then the request's
    URL, body, query and headers are only held, up to `MAX_HELD_BYTES`: past
    it, they are collected at once and let go. Collecting costs a few per cent of
    a replay (a second parse of the body and a walk of its strings), which a run
    that writes no run log never pays.
    """
    MEMORY.hold(request)
