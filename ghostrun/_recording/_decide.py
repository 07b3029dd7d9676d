"""The decision: replay a recorded response, send the request for real, or miss.

A pure function of plain data (hishel's shape): the session's mode, the
responses of the key's run as the store read them, where the session's
cursor stands in that run, and the staleness limit with today's date. It
reads no file, moves no cursor, counts nothing and raises nothing; the deck
reads the run before (`_cassettes`) and carries the decision out after.

| mode | a response at the cursor | past the run's end | no run |
|---|---|---|---|
| ``record`` | `Send` | `Send` | `Send` |
| ``auto`` | `Replay` (stale: `Send` from there) | `Send` | `Send` |
| ``replay`` | `Replay` (stale: noted) | `Replay` the last | `Miss` |
| ``rebase`` | `Replay` (stale: noted) | `Rebase`, else `Replay` the last | `Rebase`, else `Miss` |

`Rebase` hands the request to ``_rebase``: the recorded step at its place may
answer it (its conversation unchanged), else the fallback holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .._core._age import is_stale
from .._core._modes import Mode
from .._store._cassette import Recording

__all__ = ["MISS", "REBASE", "SEND", "Decision", "Miss", "Rebase", "Replay", "Send", "decide"]


class Replay(NamedTuple):
    """Hand back ``reply``, the response at ``at`` of the key's run."""

    reply: Recording
    at: int  # the cursor's place in the run (past its end in replay: the last is replayed)
    stale_on: str | None = None  # replay mode: the day of a reply older than max_age, to say


class Send(NamedTuple):
    """Send the request for real (and record what comes back)."""

    stale_from: int | None = None  # auto: the run's responses from here on are recorded anew


class Miss(NamedTuple):
    """Replay mode, and nothing recorded to answer with: a `CacheMiss`."""


class Rebase(NamedTuple):
    """Rebase mode, and the key's run has no response at the cursor: compare the request
    with the recorded step at its place (``_rebase``); if that cannot answer it, do
    ``fallback`` (past the run's end: replay its last, as replay would), or miss (None)."""

    fallback: Replay | None = None


Decision = Replay | Send | Miss | Rebase
"""Values (named tuples: one is made per request, and a tuple is made fastest)."""
SEND = Send()
MISS = Miss()
REBASE = Rebase()


def decide(
    mode: Mode,
    replies: Sequence[Recording] | None,
    index: int,
    max_age: int | None = None,
    today: str | None = None,
) -> Decision:
    """What to do with a request whose run holds ``replies`` (None: no cassette), the
    session's cursor at ``index``; ``today`` (``YYYY-MM-DD``) is needed with ``max_age``."""
    if mode is Mode.RECORD:
        return SEND
    if not replies:
        return REBASE if mode is Mode.REBASE else MISS if mode is Mode.REPLAY else SEND
    last = len(replies) - 1
    if index > last and not mode.offline:
        return SEND  # auto: the run is used up, this one is new
    reply = replies[min(index, last)]
    if max_age is not None and is_stale(reply.recorded_on, max_age, today):
        if not mode.offline:
            return Send(stale_from=index)
        found = Replay(reply, index, reply.recorded_on)
    else:
        found = Replay(reply, index)
    return Rebase(found) if index > last and mode is Mode.REBASE else found
