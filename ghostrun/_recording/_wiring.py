"""What runs before the first session enters: the layers above sessions, wired late.

``ghostrun/__init__`` wires interception and the run log to sessions (`_deck.subscribe`),
and those layers are most of what the package imports. Wired at import, they cost every
process that imports ghostrun and never opens a session (a pytest run whose tests do not
use it pays for its plugin). So the package registers its wiring here
(`before_first_session`), and every session's entry asks for it (`ready`), which runs it
before the first session's hooks are called: a session can never enter unwired, however
its module was reached. A runner (the pytest plugin) registers its own start-up here too,
so a test that opens a session itself starts it as a marked test would.

Each setup runs once per deck module: a deck module imported anew (pytest's in-process
``pytester`` runs drop the modules a run imported) has hooks of its own, and is wired
anew. So the setups are kept, and must be safe to run again (the plugin's start is).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["before_first_session", "ready"]

_setups: list[Callable[[], None]] = []
_lock = threading.RLock()
_wired: object = None  # the deck's hooks the setups ran for
_ran = 0  # how many of the setups ran for them


def before_first_session(setup: Callable[[], None]) -> None:
    """Run ``setup`` before the next session enters (and for every deck module anew)."""
    with _lock:
        _setups.append(setup)


def ready(hooks: object) -> None:
    """Run, for the deck whose subscribers are ``hooks``, each setup not yet run for it.

    The hot path of every session's entry: two comparisons once all ran. A setup
    that raises is tried again at the next entry.
    """
    global _wired, _ran
    if hooks is _wired and _ran == len(_setups):
        return
    with _lock:
        if hooks is not _wired:
            _wired, _ran = hooks, 0
        while _ran < len(_setups):
            _setups[_ran]()
            _ran += 1
