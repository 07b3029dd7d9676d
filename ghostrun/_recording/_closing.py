"""What a session owes when its last block exits, kept until then under one lock.

A miss the code under test swallowed (raised at exit), a response that could
not be written (likewise: raised inside a transport it would be retried, see
`_core._exceptions`), WebSocket tapes still open (written), the
authentication failures it recorded (said once, `warn_auth`) and the stale
recordings it replayed (reported, `_stale`). The deck fills it as requests go
and `take`s it all at the last exit.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable

from .._core._exceptions import AuthFailureWarning, CacheMiss

__all__ = ["Closing", "Owed", "warn_auth"]


class Owed:
    """What one exit settles, taken from `Closing`."""

    __slots__ = ("auth_failures", "finishers", "stale", "unraised", "write_errors")

    def __init__(self) -> None:
        self.unraised: list[CacheMiss] = []
        self.write_errors: list[Exception] = []
        self.finishers: list[Callable[[], None]] = []  # WebSocket tapes still open, to write
        self.auth_failures: dict[str, set[int]] = {}  # per host: the 401/403s it recorded
        self.stale: dict[str, str] = {}  # replayed cassettes older than max_age: path -> day


class Closing:
    """What the session's last exit settles, filled from any thread, under one lock."""

    __slots__ = ("_lock", "owed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owed = Owed()

    def take(self) -> Owed:
        """All that is owed now, leaving nothing: at the last exit, or on entering anew."""
        with self._lock:
            owed, self.owed = self.owed, Owed()
            return owed

    def unraised(self, miss: CacheMiss) -> None:
        """A miss raised here: one the code under test swallows is raised at exit."""
        with self._lock:
            self.owed.unraised.append(miss)

    def write_failed(self, exc: Exception) -> None:
        """A response could not be written: handed on anyway, ``exc`` raised at exit."""
        with self._lock:
            errors = self.owed.write_errors
            if not errors:
                exc.add_note(
                    "ghostrun: raised when the session closed. The response was handed on "
                    "to the code under test unrecorded, so that no SDK retried the request."
                )
            errors.append(exc)

    def on_close(self, finish: Callable[[], None]) -> None:
        """Call ``finish`` when the session closes: a connection the client never closed."""
        with self._lock:
            self.owed.finishers.append(finish)

    def auth_failure(self, host: str, status: int) -> None:
        """A 401, 403 or 407 from ``host`` was recorded."""
        with self._lock:
            self.owed.auth_failures.setdefault(host, set()).add(status)

    def stale(self, path: str, day: str) -> None:
        """The cassette at ``path`` replayed a response recorded on ``day``, older than max_age."""
        with self._lock:
            found = self.owed.stale
            found[path] = min(day, found.get(path, day))


def warn_auth(failures: dict[str, set[int]], name: str | None) -> None:
    """Say once that the session recorded authentication failures, and from where.

    Called from `Deck.exit`, itself called from the session's ``__exit__``: the
    warning points at the user's block (stacklevel 4).
    """
    hosts = ", ".join(sorted(failures))
    statuses = ", ".join(map(str, sorted(set().union(*failures.values()))))
    warnings.warn(
        f"ghostrun: recorded an authentication failure from {hosts}: check the key "
        f"(HTTP {statuses}, session {name or '(unnamed)'}). The cassette replays it "
        "as the provider answered; once the key is fixed, record again with "
        "GHOSTRUN_MODE=record.",
        AuthFailureWarning,
        stacklevel=4,
    )
