"""Children of a replay run are replay runs (DESIGN §1, "Children of a replay run").

The guard lives in one process; a child Python process (``subprocess`` running
``python``, ``multiprocessing``'s ``spawn``, a tool or MCP server a test starts)
begins without it. So while a process is a replay run, whatever made it one (a
session in ``replay``, which the CI default, ``GHOSTRUN_MODE`` in any spelling,
a pytest flag or the project's table may have chosen; the pytest plugin
guarding the run; the suite-wide switch at ``import ghostrun``), it holds
``GHOSTRUN_REPLAY_PARENT=<its pid>`` in ``os.environ`` (`started`/`ended`,
reference-counted; ``<its pid>:block`` while one of them has ``block_network``
on), and the ``hosts=`` of its open replay sessions in
``GHOSTRUN_REPLAY_HOSTS``, which every child it starts inherits.

In the child, the start-up line ghostrun ships (``ghostrun_replay_guard.pth``)
sees the variable and imports ghostrun, which guards the whole process from
its start, refusing the parent's hosts as well as its own; and
`parent_replays` makes the child's suite-wide mode ``replay``, and
`parent_blocks` its ``block_network`` on, beating whatever the child says
itself (a flag, ``GHOSTRUN_MODE``, code): a process started by a replay run
never goes live (fail closed). A process that
is no replay run pays one more environment look-up in that line.

Whether this process was started by a replay run is read once, at import,
before this process exports anything itself; a process that ``exec``s keeps
its environment, and so stays a replay run.
"""

from __future__ import annotations

import os
import threading

from . import _environ

__all__ = [
    "ENV",
    "HOSTS_ENV",
    "ended",
    "parent_blocks",
    "parent_hosts",
    "parent_replays",
    "parent_text",
    "started",
]

ENV = "GHOSTRUN_REPLAY_PARENT"
HOSTS_ENV = "GHOSTRUN_REPLAY_HOSTS"  # the hosts= of the replay sessions open in the parent

# What this process was started with, read before it exports its own.
_INHERITED = os.environ.get(ENV, "").strip()
_INHERITED_HOSTS = tuple(h.strip() for h in os.environ.get(HOSTS_ENV, "").split(",") if h.strip())
_lock = threading.Lock()
_holders: list[tuple[tuple[str, ...], bool]] = []  # each replay run's hosts, and its block
_BLOCKS = ":block"  # after the pid: a replay run with block_network on
_NAMES = (ENV, HOSTS_ENV)
_before: tuple[object, ...] = (None, None)  # the variables as the first holder found them


def parent_replays() -> bool:
    """Whether the process that started this one was a replay run."""
    return bool(_INHERITED)


def parent_blocks() -> bool:
    """Whether that parent had ``block_network`` on: this process refuses every connection
    that is not loopback too."""
    return _INHERITED.endswith(_BLOCKS)


def parent_hosts() -> tuple[str, ...]:
    """The hosts the parent's replay sessions listed (``hosts=``): guarded here too."""
    return _INHERITED_HOSTS if _INHERITED else ()


def parent_text() -> str:
    """The parent, in words a message can show."""
    return f"{ENV}={_INHERITED}"


def started(hosts: tuple[str, ...] = (), block: bool = False) -> None:
    """A replay run begins in this process, listing ``hosts`` (``block``: with
    ``block_network`` on): its children are replay runs, refusing those hosts too (and
    every connection not loopback), until it `ended`."""
    global _before
    with _lock:
        _holders.append((hosts, block))
        if len(_holders) > 1:
            _export()
            return
        # Its pid, and its hosts if it lists any (else what was there stays); the variables
        # as the first holder found them, to put back.
        pid = _parent(block)
        _before = _environ.swap(_NAMES, (pid, ",".join(dict.fromkeys(hosts))) if hosts else (pid,))


def ended(hosts: tuple[str, ...] = (), block: bool = False) -> None:
    """The last replay run to end puts the variables back as it found them."""
    with _lock:
        if (hosts, block) not in _holders:
            return
        _holders.remove((hosts, block))
        if _holders:
            _export()
        else:
            _environ.restore(_NAMES, _before)


def _parent(block: bool) -> str:
    return f"{os.getpid()}{_BLOCKS}" if block else str(os.getpid())


def _export() -> None:
    """The variables for the replay runs open now (several: one began or ended)."""
    _environ.put(ENV, _parent(any(block for _, block in _holders)))
    listed = dict.fromkeys(h for held, _ in _holders for h in held)
    if listed:
        _environ.put(HOSTS_ENV, ",".join(listed))
    elif _before[1] is None:
        _environ.restore((HOSTS_ENV,), (None,))
