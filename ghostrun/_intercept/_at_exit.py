"""Telemetry flushed at exit, after the last session closed: answered locally (DESIGN §1).

openai-agents exports its traces from a background processor, and flushes what
is left from an ``atexit`` handler, long after the test's session closed and
the roads were restored: in a replay run that upload went to the network (with
three retries and their back-off, seconds of a run's exit). Telemetry is never
model traffic (``_core._telemetry``); in replay it is answered locally inside
sessions, and this module extends that to the process's exit.

Once a session has replayed in this process, its last close registers
`answer_at_exit` with ``atexit`` again (unregistered first) if any handler was
registered since it last did, so it is the most recent handler and runs before
the handlers a framework registered during the session (``atexit`` runs the
newest first); a session per test that registers nothing re-registers nothing.
At exit it installs the roads for the rest of the process and hands `route`
(``_engine``) a deck in replay mode with that session's arguments (its
``hosts=``, its ``ignore_urls=``): telemetry to a listed host is answered with
its empty success and never recorded, and any other request to a listed host
is replayed or is a `CacheMiss`, never sent.
"""

from __future__ import annotations

import atexit

from .._core._modes import Mode
from .._recording._deck import Arguments, Deck
from . import _patch

__all__ = ["EXIT", "AtExit", "answer_at_exit", "session_closed"]


class AtExit:
    """The last replayed session's arguments, and the deck built from them at exit."""

    def __init__(self) -> None:
        self.arguments: Arguments | None = None  # the last replayed session's, as written
        self.deck: Deck | None = None  # set at exit: what `route` falls back on
        self.handlers = -1  # how many ``atexit`` handlers there were once ours was the newest


EXIT = AtExit()


def session_closed(deck: Deck) -> None:
    """A session closed (a `Deck` subscriber): after a replay, answer telemetry at exit."""
    if deck.settings.mode is not Mode.REPLAY:
        return
    EXIT.arguments = deck.arguments
    if _handlers() != EXIT.handlers or EXIT.handlers < 0:  # one registered since ours
        atexit.unregister(answer_at_exit)
        atexit.register(answer_at_exit)  # the newest handler: it runs before the framework's
        EXIT.handlers = _handlers()


def _handlers() -> int:
    """How many ``atexit`` handlers are registered (-1 where ``atexit`` does not say: then
    ours is registered again at every replayed session's close)."""
    return -1 if _ncallbacks is None else int(_ncallbacks())


_ncallbacks = getattr(atexit, "_ncallbacks", None)


def answer_at_exit() -> None:
    """The process exits: the roads stay installed, governed by a replay deck, to its end."""
    if EXIT.arguments is None or EXIT.deck is not None:
        return
    EXIT.deck = Deck(EXIT.arguments._replace(mode=Mode.REPLAY))
    _patch.acquire()  # never released: the process is ending
