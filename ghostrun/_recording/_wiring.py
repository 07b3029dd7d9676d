"""What runs before the first session enters: the layers above sessions, wired late.

``ghostrun/__init__`` wires interception and the run log to sessions (`_deck.subscribe`),
and those layers are most of what the package imports. Wired at import, they cost every
process that imports ghostrun and never opens a session (a pytest run whose tests do not
use it pays for its plugin). So the package registers its wiring here
(`before_first_session`), and every session's entry asks for it (`ready`), which runs it
once, before the first session's hooks are called: a session can never enter unwired,
however its module was reached. A runner (the pytest plugin) registers its own start-up
here too, so a test that opens a session itself starts it as a marked test would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["before_first_session", "ready"]

_pending: list[Callable[[], None]] = []
_lock = threading.RLock()


def before_first_session(setup: Callable[[], None]) -> None:
    """Run ``setup`` once, before the next session enters."""
    with _lock:
        _pending.append(setup)


def ready() -> None:
    """Run what waits for the first session, each once, in the order registered.

    The hot path of every session's entry: one truth test once nothing waits.
    A setup that raises stays pending, so the next entry tries it again.
    """
    if not _pending:
        return
    with _lock:
        while _pending:
            _pending[0]()
            del _pending[0]
