"""A session's cassettes: reading a key's run, writing under the file's lock, the cursors.

The store the deck hands its decisions to (`_decide` reads none of this). It
owns what the session keeps of its cassette directory between requests: for
each key, the cursor (the next response of its run to use, or for a WebSocket
key the next conversation), the run (label) the session uses, how often it
wrote the key and where it last wrote a transient failure.

Reads are of the file afresh for every request: the file is the state, so a
response another session or process appended since is seen. Writes are
read-modify-writes under the cassette's lock (`_core._lock`), and each session
steps through its own run of a key (`_store._cassette`, "Runs"), so sessions
recording one request at once, in one process or many, lose no response and
are never handed one twice. A step (read, decide, move the cursor) is taken
under `Cassettes.lock`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._core._files import ensure_dir
from .._core._lock import cassette_lock
from .._core._modes import Mode
from .._store._cassette import Cassette, Recording, read_run
from ._settings import Settings

__all__ = ["Cassettes"]

_UNREAD: Any = object()
_NOWHERE = Path()  # the directory of a store that has not taken its settings yet


class Cassettes:
    """A session's view of its cassette directory: its runs, its cursors, its writes.

    `reset` sets the directory, mode and name each time the session is entered
    anew, and starts every cursor afresh.
    """

    __slots__ = (
        "_cursor",
        "_dir",
        "_mode",
        "_name",
        "_prefix",
        "_recorded_here",
        "_run_of",
        "_stale_from",
        "_transient_at",
        "lock",
    )

    def __init__(self) -> None:
        self.lock = threading.RLock()  # a step, or a write: read, decide, move, as one
        self._dir = _NOWHERE
        self._prefix = ""  # the directory with its separator: + key + ".json"
        self._mode = Mode.AUTO
        self._name: str | None = None
        self._cursor: dict[str, int] = {}  # per key: the next response of its run to use
        self._run_of: dict[str, str | None] = {}  # per key: the run (label) this session uses
        self._recorded_here: dict[str, int] = {}  # per key: the writes this session made
        self._transient_at: dict[str, int] = {}  # per key: where it last wrote a 408/429/5xx
        self._stale_from: dict[str, int] = {}  # per key: the stale response auto re-records

    def reset(self, settings: Settings) -> None:
        """The session is entered anew: its settings, and every cursor from the start."""
        with self.lock:
            self.adopt(settings)
            self._cursor, self._run_of, self._recorded_here = {}, {}, {}
            self._transient_at, self._stale_from = {}, {}

    def adopt(self, settings: Settings) -> None:
        """Write to ``settings.cassette_dir``, in ``settings.mode``, as ``settings.name``."""
        with self.lock:
            self._dir, self._prefix = settings.cassette_dir, settings.prefix
            self._mode, self._name = settings.mode, settings.name

    def path(self, key: str) -> str:
        return self._prefix + key + ".json"

    # -- replaying -------------------------------------------------------------------

    def read(self, key: str) -> tuple[list[Recording] | None, int]:
        """The responses of the session's run of ``key`` (None: no cassette), and its cursor.

        Raises `CassetteError` for a damaged file.
        """
        index = self._cursor.get(key, 0)
        found = read_run(self.path(key), self._name, self._run_of.get(key, _UNREAD))
        if found is None:
            return None, index
        self._run_of[key] = found[0]
        return found[1], index

    def advance(self, key: str, index: int) -> None:
        """The response at ``index`` of the key's run was used: the cursor moves past it."""
        self._cursor[key] = index + 1

    def record_from(self, key: str, index: int) -> None:
        """Auto mode found the run stale at ``index``: the next write replaces it from there."""
        self._stale_from.setdefault(key, index)

    # -- recording -------------------------------------------------------------------

    def write(
        self,
        key: str,
        entry: dict[str, Any],
        transient: bool,
        replaced: Callable[[str], None],
    ) -> int:
        """Write a response just received; its index in the session's run of ``key``.

        A key with no cassette yet gets a new file, made only if none appeared
        meanwhile (`_create`). Any other write is a read-modify-write of the
        cassette under its lock: the file is read again once the lock is held, so
        a response another session or process added meanwhile is kept. A transient
        failure (408, 429, 5xx) this session wrote last, and still last in its run,
        is replaced: ``replaced(key)`` is called then.
        """
        path = self.path(key)
        with self.lock:
            if os.path.lexists(path) or not self._create(path, key, entry):
                ensure_dir(self._dir)
                with cassette_lock(path):
                    index = self._add_locked(path, key, entry, replaced)
            else:
                index = 0
            self._cursor[key] = index + 1
            self._recorded_here[key] = self._recorded_here.get(key, 0) + 1
            if transient:
                self._transient_at[key] = index
            else:
                self._transient_at.pop(key, None)
            return index

    def _create(self, path: str, key: str, entry: dict[str, Any]) -> bool:
        """Write the key's first cassette, holding this one response; False if a file is there.

        No lock: the file is made by a link that fails if the name exists
        (`Cassette.create`), so of two sessions creating it at once one makes it and
        the other finds it made, then adds to it under the lock. A new file's run is
        the session's own, whatever the mode (`_run_for_writing` on an empty cassette).
        """
        cassette = Cassette(path, key, entry["request"], [])
        cassette.add(entry["response"], self._name)
        if not cassette.create():
            return False
        if self._mode is not Mode.RECORD:
            self._run_of[key] = self._name
        return True

    def _add_locked(
        self, path: str, key: str, entry: dict[str, Any], replaced: Callable[[str], None]
    ) -> int:
        """The read-modify-write, under the cassette's lock: the response's index in its run.

        A file missing here too is created as `_create` does (a writer without the
        lock may be making it); if one appeared meanwhile, it is read and added to.
        The file is never what ``read`` saw earlier: another writer may have added to
        it since. A file that fails to load raises, so it is never overwritten.
        """
        cassette = Cassette.load(path)
        if cassette is None:
            if self._create(path, key, entry):
                return 0
            cassette = Cassette.load(path)  # as it is on disk now, or a new one
            if cassette is None:
                cassette = Cassette(path, key, entry["request"], [])
        label = self._run_for_writing(key, cassette)
        stale_from = self._stale_from.pop(key, None)
        if stale_from is not None:  # auto re-records a stale run from there on
            for position in reversed(cassette.run(label)[stale_from:]):
                cassette.raw_responses.pop(position)
        if self._replaces_transient(key, cassette, label):
            cassette.raw_responses.pop(cassette.run(label)[-1])
            replaced(key)
        cassette.request = entry["request"]
        index = cassette.add(entry["response"], label)
        cassette.save()
        return index

    def _run_for_writing(self, key: str, cassette: Cassette) -> str | None:
        """Record mode starts the session's own run afresh once; auto extends its run."""
        if self._mode is Mode.RECORD:
            if key not in self._recorded_here:
                cassette.drop_run(self._name)
            return self._name
        label: str | None = self._run_of.get(key, _UNREAD)
        if label is _UNREAD or not (cassette.run(label) or label == self._name):
            label = cassette.choose_run(self._name)
        self._run_of[key] = label
        return label

    def _replaces_transient(self, key: str, cassette: Cassette, label: str | None) -> bool:
        """Whether this session's last write of ``key`` was a 429/5xx, still last in its run."""
        at = self._transient_at.get(key)
        positions = cassette.run(label)
        if at is None or len(positions) != at + 1:
            return False
        return cassette.response(positions[-1]).transient

    # -- WebSocket conversations (``_intercept._wslink``) -----------------------------

    def next_index(self, key: str) -> int:
        """The how-many-th conversation with this key in this session (from 0).

        The per-key cursor HTTP keys use: WebSocket and HTTP keys never meet.
        """
        with self.lock:
            index = self._cursor.get(key, 0)
            self._cursor[key] = index + 1
            return index

    @contextmanager
    def writing(self, key: str) -> Iterator[bool]:
        """Write a conversation's cassette inside, under the lock; counted if it succeeds.

        Yields whether the write starts the key afresh (record mode, its first write in
        this session) rather than adding to what the cassette holds.
        """
        with self.lock:
            yield self._mode is Mode.RECORD and key not in self._recorded_here
            self._recorded_here[key] = self._recorded_here.get(key, 0) + 1
