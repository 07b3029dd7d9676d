"""The deck: the record/replay machinery a session owns, and what the engine drives.

A `Session` is what users hold (its arguments, its counts); its `Deck` is what
the layers above talk to, typed: the engine (``_intercept._engine``) calls
`Deck.describe`, `Deck.plan` and `Deck.commit` for every road, the WebSocket
link steps through the same per-key cursors, the guard and the judge's cache
`book` their misses here, and the run log reads what the deck kept (the keys
used, their trail, what the user's hook edited). A tape deck plays cassettes
and records onto them; so does this.

The deck decides nothing itself and touches no file: it wires its session's
collaborators (`_settings`, `_decide`, `_cassettes`, `_redaction`, `_miss`,
`_counts`, `_closing`: ``_recording/__init__`` says what each holds) and
carries out what they say. It publishes its entries, exits and closes to the
layers that `subscribe`: interception installs its hooks while any session is
open, the run log saves each one's use; this module imports neither.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload
from urllib.parse import urlsplit

from .._core._age import today
from .._core._exceptions import CacheMiss, CassetteError, DamagedCassette
from .._core._files import defer_dir_syncs, sync_deferred_dirs
from .._core._hosts import HostMatcher
from .._core._modes import Mode
from .._core._normalize import Normalizer
from .._core._telemetry import UrlList
from .._secrets._memory import defer_secrets
from .._store._cassette import Recording
from . import _rebase, _stale, _trajectory, _wiring
from ._cassettes import Cassettes
from ._closing import Closing, Owed, warn_auth
from ._counts import Counts
from ._decide import Miss, Rebase, Replay, decide
from ._hops import Hops
from ._miss import forbidden, replay_miss
from ._redaction import EntryRedactor
from ._request import LazyHeaders, RequestInfo, describe
from ._settings import Arguments, Redactor, Settings, check, current_test_id, resolve
from ._steps import Step, ToolUse

__all__ = [
    "Arguments",
    "Deck",
    "Hook",
    "LazyHeaders",
    "Redactor",
    "RequestInfo",
    "carries_miss",
    "current_test_id",
    "subscribe",
    "wire",
]

Hook = Callable[["Deck"], None]
P = TypeVar("P")
_AUTH_FAILURES = frozenset({401, 403, 407})  # recorded, and said at exit (`warn_auth`)


@dataclass
class _Hooks:
    entering: list[Hook] = field(default_factory=list)  # each enter, under the deck's lock
    exiting: list[Hook] = field(default_factory=list)  # each exit, likewise
    closed: list[Hook] = field(default_factory=list)  # the last exit, once its tapes are written


_hooks = _Hooks()
_NOTHING_OWED = Owed()  # what a session that never made its `Closing` owes: read, never filled


def subscribe(
    *, entering: Hook | None = None, exiting: Hook | None = None, closed: Hook | None = None
) -> None:
    """Have the layers above told of sessions: interception when one enters and
    exits (it installs its hooks while any is open), the run log when one closes.
    ``ghostrun/__init__`` subscribes them; this module imports neither."""
    for hooks, hook in (
        (_hooks.entering, entering),
        (_hooks.exiting, exiting),
        (_hooks.closed, closed),
    ):
        if hook is not None:
            hooks.append(hook)


def wire() -> None:
    """Wire the layers above sessions now (`_wiring`): before a runner holds the roads, so
    a road left unhooked holds the guard as it does for a session."""
    _wiring.ready(_hooks)


class _Part(Generic[P]):
    """A part of the deck made at its first use: a session that made no request never
    builds its store, counts, redactor, closing or hops (an empty session is a test's
    whole cost). Once made it is a plain attribute of the deck: the hot path reads it so.

    Two threads that ask first at once get the same part (``setdefault``), never two.
    """

    def __init__(self, make: Callable[[Deck], P]) -> None:
        self._make = make
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, deck: None, owner: type | None = None) -> _Part[P]: ...
    @overload
    def __get__(self, deck: Deck, owner: type | None = None) -> P: ...
    def __get__(self, deck: Deck | None, owner: type | None = None) -> P | _Part[P]:
        if deck is None:
            return self
        part: P = deck.__dict__.setdefault(self._name, self._make(deck))
        return part


def _redactor(deck: Deck) -> EntryRedactor:
    return EntryRedactor(deck.arguments.redact)


def _store(deck: Deck) -> Cassettes:
    store = Cassettes()
    store.adopt(deck.settings)
    return store


class Deck:
    """A session's engine side: it wires the decision, the store, the redactor and the counts.

    Its `settings` (read back as ``mode``, ``cassette_dir``, ``name``,
    ``block_network``, the host ``matcher``, the ``telemetry`` list, the
    ``ignore`` paths, ...) and its cursors are resolved afresh each time its
    session is entered anew; its `counts` and what it kept for the run log last
    as long as the session. Its parts are made when first used (`_Part`).
    """

    counts = _Part(lambda deck: Counts())
    store = _Part(_store)
    redactor = _Part(_redactor)
    closing = _Part(lambda deck: Closing())
    hops = _Part(lambda deck: Hops())  # the redirects handed on: afresh at each entry

    def __init__(self, arguments: Arguments, *, checked: bool = False) -> None:
        # The settings are resolved when the session is entered, or read before that
        # (`settings`): not here too, which cost a second resolve per session. A bad
        # setting in the environment still fails here, where the session is written
        # (``checked``: its session did).
        if not checked:
            check(arguments)
        self.arguments: Arguments = arguments
        # The model calls of the session's latest entry, in order, by reference: its
        # trajectory (`_trajectory`) and what ``expect_trajectory`` reads.
        self.steps: list[Step] = []
        # The tool calls MCP servers answered, each placed after the model calls before it.
        self.tools: list[ToolUse] = []
        self.session_index = 0  # its place among the sessions of its test (`_trajectory`)
        self.depth = 0  # how many blocks of the session are open
        self._lock = threading.RLock()
        self._used = False  # its settings were resolved once: its cursors may have moved
        self._syncs = False  # its last entry defers its directories' syncs to its last exit

    # -- its settings, as last resolved ------------------------------------------------

    @functools.cached_property
    def settings(self) -> Settings:
        """As resolved when the session was last entered; read before that, resolved now.

        Once resolved, a plain attribute: the hot path reads it several times a request.
        """
        return self._resolve()

    def _resolve(self) -> Settings:
        """Read mode, directory and hosts afresh, and start the cursors anew (a deck never
        entered has them new: its store takes the settings, and that is all)."""
        settings = self.settings = resolve(self.arguments)
        if not self._used:
            self._used = True
            return settings
        made = self.__dict__  # the parts made so far (`_Part`): the others are made new
        if "store" in made:
            self.store.reset(settings)
        if "closing" in made:
            self.closing.take()
        if "counts" in made:
            self.counts.entered()
        made.pop("hops", None)
        return settings

    @property
    def mode(self) -> Mode:
        return self.settings.mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        """Set it over the resolved one (``ghostrun import`` records whatever the environment)."""
        self._adopt(self.settings._replace(mode=mode))

    @property
    def cassette_dir(self) -> Path:
        return self.settings.cassette_dir

    @property
    def name(self) -> str | None:
        return self.settings.name

    @name.setter
    def name(self, name: str | None) -> None:
        self._adopt(self.settings._replace(name=name))

    def _adopt(self, settings: Settings) -> None:
        self.settings = settings
        if "store" in self.__dict__:  # else made with these settings (`_store`)
            self.store.adopt(settings)

    @property
    def block_network(self) -> bool:
        return self.settings.block_network

    @property
    def ignore(self) -> tuple[tuple[str, ...], ...]:
        return self.settings.ignore

    @property
    def max_age(self) -> int | None:
        return self.settings.max_age

    @property
    def normalizer(self) -> Normalizer | None:
        return self.settings.normalizer

    @property
    def matcher(self) -> HostMatcher:
        return self.settings.matcher

    @property
    def telemetry(self) -> UrlList:
        return self.settings.telemetry

    # -- what it counted and kept, read by the session and the run log ------------------

    @property
    def replayed(self) -> int:
        return self.counts.replayed

    @property
    def recorded(self) -> int:
        return self.counts.recorded

    @property
    def passed_through(self) -> int:
        return self.counts.passed_through

    @property
    def misses(self) -> list[CacheMiss]:
        return self.counts.misses

    @property
    def trail(self) -> list[tuple[str, str]]:
        return self.counts.trail

    @property
    def used_keys(self) -> set[str]:
        return self.counts.used_keys

    @property
    def hook_edits(self) -> dict[str, str]:
        """What the session's ``redact`` hook changed: applied to run logs."""
        return self.redactor.hook_edits

    # -- entering and leaving ------------------------------------------------

    def enter(self) -> None:
        """A block of the session opens; the first one (again) resolves its settings afresh."""
        _wiring.ready(_hooks)  # the layers above hear of sessions from the first one on
        with self._lock:
            outermost = not self.depth
            if outermost:
                settings = self._resolve()
                self.steps = []
                self.tools = []
                self.session_index = _trajectory.opened(self)
            for entering in _hooks.entering:
                entering(self)
            if outermost:
                # New names' directories: synced once, at the last exit. Replay names none.
                self._syncs = settings.mode is not Mode.REPLAY
                if self._syncs:
                    defer_dir_syncs()
            self.depth += 1

    def exit(self, exc: BaseException | None) -> None:
        """A block ends (``exc``: its error). The last one writes the tapes still open, tells
        the run log, then raises a miss the code under test swallowed, or a failed write."""
        with self._lock:
            self.depth -= 1
            for exiting in _hooks.exiting:
                exiting(self)
            if self.depth:
                return
            closing = self.__dict__.get("closing")  # never made: nothing is owed (`_Part`)
            owed = _NOTHING_OWED if closing is None else closing.take()
        unraised, write_errors = owed.unraised, owed.write_errors
        try:
            for finish in owed.finishers:
                finish()
            failed = exc is not None or bool(unraised)
            unplayed = _trajectory.session_closed(self, failed=failed)  # writes it if recorded
        finally:
            _trajectory.closed(self)  # whatever happened: the test's run can end
            if self._syncs:
                sync_deferred_dirs()  # DESIGN §3: each directory once per session, not per file
        for closed in _hooks.closed:
            closed(self)
        if owed.auth_failures:
            warn_auth(owed.auth_failures, self.name)
        if unraised and not carries_miss(exc):
            raise unraised[0] from exc
        if write_errors and exc is not write_errors[0]:
            raise write_errors[0]  # the block's own error, if any, is its __context__
        settings = self.settings
        if exc is None and settings.max_age is not None:
            _stale.report(owed.stale, settings.max_age, settings.on_stale)
        if unplayed is not None:
            raise unplayed

    @property
    def idle(self) -> bool:
        """Whether it counted nothing: no request, no miss (the run log skips the rest)."""
        counts = self.__dict__.get("counts")  # never made: nothing counted (`_Part`)
        return counts is None or not (
            counts.used_keys or counts.misses or counts.trail or counts.replayed or counts.recorded
        )

    # -- one request -----------------------------------------------------------

    def describe(
        self,
        method: str,
        url_parts: tuple[str, str, int | None, str, str],
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> RequestInfo:
        """A request's parts (scheme, host, port, path, query) and its key (`_request`)."""
        settings = self.settings
        portless = settings.matcher.keys_without_port(url_parts[1], url_parts[2])
        ignore, shapes = settings.ignore, settings.normalizer
        return describe(method, url_parts, headers, body, ignore, shapes, portless)

    def plan(self, info: RequestInfo, mode: Mode | None = None) -> Recording | None:
        """The recording to replay, or None to send the request for real.

        Raises `CacheMiss` when the request is not recorded and the mode is replay.
        ``mode`` beats the session's for this request (a fork plan's step: `_fork`).
        The session steps through its run of the key (`ghostrun._store._cassette`, "Runs")
        with a cursor that only a replay or a write moves, so a response another
        process appended meanwhile is replayed, and none is ever handed out twice.
        """
        key, settings, store = info.key, self.settings, self.store
        with store.lock:  # the counts mark the key used: `replay`, `miss`, or `use` to send
            mode, max_age = mode or settings.mode, settings.max_age
            try:
                replies, index = (None, 0) if mode is Mode.RECORD else store.read(key)
            except CassetteError as exc:
                self.counts.miss(key)
                raise self.damaged(exc) from exc
            decision = decide(mode, replies, index, max_age, None if max_age is None else today())
            if isinstance(decision, Replay):
                return self._replay(info, decision)
            if isinstance(decision, Rebase):
                return self._rebase(info, decision)
            if isinstance(decision, Miss):
                self.counts.miss(key)
                raise self.book(replay_miss(info, self))
            self.counts.use(key)
            if decision.stale_from is not None:  # auto: a recording older than max_age
                store.record_from(key, decision.stale_from)
            return None

    def _replay(self, info: RequestInfo, decision: Replay) -> Recording:
        key, index, reply = info.key, decision.at, decision.reply
        self.store.advance(key, index)
        if decision.stale_on is not None:
            self.closing.stale(self.store.path(key), decision.stale_on)
        self.counts.replay(key)
        defer_secrets(info)  # its secrets are still scrubbed from run logs
        tool = self._is_tool(info.url)
        self.steps.append(Step(info.method, info.url, key, index, info.body, reply, False, tool))
        return reply

    def _is_tool(self, url: str) -> bool:
        """Whether ``url``'s host is a declared tool host: its exchange is a tool step."""
        tools = self.settings.tools
        if not tools.patterns:
            return False
        parts = urlsplit(url)
        return tools(parts.hostname or "", parts.port)

    def _rebase(self, info: RequestInfo, decision: Rebase) -> Recording:
        """Rebase mode: the recorded step at the request's place answers it, if only what
        lies outside the conversation changed (`_rebase`); it is written under the new key,
        with its recording day. Else the fallback (replay the run's last), or a miss."""
        key = info.key
        found = _rebase.attempt(info, self, past_end=decision.fallback is not None)
        if isinstance(found, _rebase.Refused):
            if decision.fallback is not None:
                return self._replay(info, decision.fallback)
            self.counts.miss(key)
            raise self.book(_rebase.rebase_miss(info, self, found))
        recording = found.recording
        if recording.recorded_on is None:  # a recording that kept no day: none is made up
            recording = dataclasses.replace(recording, recorded_on="")
        if found.moves_cursor:  # no trajectory: the old key's run is stepped through
            self.store.advance(found.old_key, found.old_index)
        self.counts.rebase(key)
        defer_secrets(info)
        try:
            entry = self.redactor.entry(info, recording)
            index = self.store.write(key, entry, False, self.counts.unrecord)
        except Exception as exc:  # kept for the exit, as a failed write of a recording is
            self.write_failed(exc)  # and the step is no rebased one: its file is not there
            tool = self._is_tool(info.url)
            self.steps.append(Step(info.method, info.url, key, 0, info.body, recording, tool=tool))
            return recording
        note = (found.old_key, _rebase.changed_fields(found.comparison.changed))
        tool = self._is_tool(info.url)
        self.steps.append(
            Step(info.method, info.url, key, index, info.body, recording, True, tool, note)
        )
        return recording

    def commit(self, info: RequestInfo, recording: Recording) -> None:
        """Write a response just received; a retried-past transient failure is replaced.

        Every status the provider sent is written, in order, but a transient
        failure (408, 429, 5xx) the SDK retried past (`Cassettes.write`). An
        authentication failure (401, 403, 407) is written too, so replay answers as
        the provider did (the app's error handling can be tested), and is said once
        when the session closes (`warn_auth`), so a recording made with a bad key is
        noticed.
        """
        key = info.key
        with self.store.lock:
            if recording.status in _AUTH_FAILURES:
                self.closing.auth_failure(urlsplit(info.url).hostname or "?", recording.status)
            entry = self.redactor.entry(info, recording)
            index = self.store.write(key, entry, recording.transient, self.counts.unrecord)
            self.counts.record(key)
            tool = self._is_tool(info.url)
            self.steps.append(
                Step(info.method, info.url, key, index, info.body, recording, True, tool)
            )

    def stored_request(self, info: RequestInfo) -> dict[str, Any]:
        """The request as its cassette would store it: what a miss diff compares."""
        return self.redactor.stored_request(info)

    # -- misses and failures ---------------------------------------------------

    def write_failed(self, exc: Exception) -> None:
        """A response could not be written: handed on anyway, ``exc`` raised at exit.

        See ``_exceptions``: raised inside a transport, it would be retried.
        """
        self.closing.write_failed(exc)

    def forbid(self, what: str) -> CacheMiss:
        """A miss for traffic that cannot be recorded at all, refused in replay mode."""
        return self.book(forbidden(what, self.name))

    def damaged(self, error: CassetteError) -> CacheMiss:
        """A file read for a request is damaged: a miss (`DamagedCassette`), booked."""
        return self.book(DamagedCassette.of(error))

    def book(self, miss: CacheMiss) -> CacheMiss:
        """Count a miss raised here; one the code under test swallows is raised at exit."""
        self.counts.book(miss)
        self.closing.unraised(miss)
        return miss

    def tool_used(self, use: ToolUse) -> None:
        """A tool call an MCP server answered: a tool step, after the model calls made so far."""
        with self._lock:
            use.after = len(self.steps)
            self.tools.append(use)

    # -- WebSocket conversations (``_intercept._wslink``) ---------------------

    def next_index(self, key: str) -> int:
        """The how-many-th conversation with this key in this session (from 0)."""
        index = self.store.next_index(key)
        self.counts.use(key)
        return index

    def count_replayed(self, count: int) -> None:
        """A conversation replayed (1), or one a replay handed over to a live connection (-1)."""
        self.counts.add_replayed(count)

    def on_close(self, finish: Callable[[], None]) -> None:
        """Call ``finish`` when the session closes: a connection the client never closed."""
        self.closing.on_close(finish)

    @contextmanager
    def writing(self, key: str) -> Iterator[bool]:
        """Write a conversation's cassette inside: under the store's lock, counted if it
        succeeds. Yields whether the write starts the key afresh (`Cassettes.writing`)."""
        with self.store.writing(key) as fresh:
            yield fresh
            self.counts.add_recorded()


def carries_miss(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a `CacheMiss`, or a group holding one."""
    if exc is None:
        return False
    if isinstance(exc, CacheMiss):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(CacheMiss) is not None
    return False
