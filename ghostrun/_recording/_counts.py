"""What a session did, counted: one object, one lock, changed only through its methods.

The deck, the engine (a request passed through, the unlisted-host warning),
the WebSocket link and the guard all count here, from any thread or task; the
session reads the counts back (``replayed``, ``recorded``, ``passed_through``,
``misses``) and the run log reads the keys used and their trail. The counts
last as long as the session; the warning flag is reset each time it is
entered anew (`entered`).
"""

from __future__ import annotations

import threading

from .._core._exceptions import CacheMiss

__all__ = ["Counts"]


class Counts:
    """A session's counts, its keys used and their trail, under one lock."""

    __slots__ = (
        "_lock",
        "_warned_unlisted",
        "misses",
        "passed_through",
        "rebased",
        "recorded",
        "replayed",
        "trail",
        "used_keys",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.replayed = 0
        self.recorded = 0
        self.passed_through = 0
        self.rebased = 0  # rebase: answered by the recorded step, written under the new key
        self.misses: list[CacheMiss] = []  # every CacheMiss raised in the session, in order
        self.used_keys: set[str] = set()
        # (key, "replayed" | "recorded" | "rebased" | "missed") in the order requests were made: the
        # run log keeps it per test, so `ghostrun review` knows which cassettes are whose.
        self.trail: list[tuple[str, str]] = []
        self._warned_unlisted = False  # the engine's UnlistedHostWarning: once per entry

    def entered(self) -> None:
        """The session is entered anew: the unlisted-host warning may be given again."""
        with self._lock:
            self._warned_unlisted = False

    def use(self, key: str) -> None:
        """A request (or conversation) with this key was made."""
        with self._lock:
            self.used_keys.add(key)

    def replay(self, key: str) -> None:
        """A request with this key was made and answered from its cassette."""
        with self._lock:
            self.used_keys.add(key)
            self.replayed += 1
            self.trail.append((key, "replayed"))

    def rebase(self, key: str) -> None:
        """A request answered by the recorded step at its place, and written under ``key``."""
        with self._lock:
            self.used_keys.add(key)
            self.replayed += 1
            self.rebased += 1
            self.trail.append((key, "rebased"))

    def record(self, key: str) -> None:
        """A response sent for real and written."""
        with self._lock:
            self.recorded += 1
            self.trail.append((key, "recorded"))

    def unrecord(self, key: str) -> None:
        """The last write of ``key`` was replaced (a retried-past transient failure)."""
        with self._lock:
            self.recorded -= 1
            trail = self.trail
            at = len(trail) - 1 - trail[::-1].index((key, "recorded"))
            del trail[at]

    def miss(self, key: str) -> None:
        """A request with this key was made, and neither replayed nor recorded."""
        with self._lock:
            self.used_keys.add(key)
            self.trail.append((key, "missed"))

    def book(self, miss: CacheMiss) -> None:
        """A `CacheMiss` raised in the session."""
        with self._lock:
            self.misses.append(miss)

    def pass_through(self) -> None:
        """A request went out untouched."""
        with self._lock:
            self.passed_through += 1

    def add_replayed(self, count: int) -> None:
        """A conversation replayed (1), or one a replay handed over to a live connection (-1)."""
        with self._lock:
            self.replayed += count

    def add_recorded(self) -> None:
        """A conversation written (its key's trail is not kept)."""
        with self._lock:
            self.recorded += 1

    def warn_unlisted(self) -> bool:
        """True the first time it is asked since the session was entered: warn then only."""
        with self._lock:
            first, self._warned_unlisted = not self._warned_unlisted, True
            return first

    @property
    def warned_unlisted(self) -> bool:
        """Whether the unlisted-host warning was given since the session was entered."""
        return self._warned_unlisted
