"""The deck: the record/replay machinery a session owns, and what the engine drives.

A `Session` is what users hold (its arguments, its counts); its `Deck` is what
the layers above talk to, typed: the engine (``_intercept._engine``) calls
`Deck.describe`, `Deck.plan` and `Deck.commit` for every road, the WebSocket
link steps through the same per-key cursors, the guard and the judge's cache
`book` their misses here, and the run log reads what the deck kept (the keys
used, their trail, what the user's hook edited). A tape deck plays cassettes
and records onto them; so does this.

Writes are read-modify-writes under the cassette's lock (`_core._lock`), and
each deck steps through its own run of a key (`_store._cassette`, "Runs"), so
sessions recording one request at once, in one process or many, lose no
response and are never handed one twice. The deck resolves its settings
(mode, directory, hosts) afresh each time its session is entered anew, and
publishes its entries, exits and closes to the layers that `subscribe`:
interception installs its hooks while any session is open, the run log saves
each one's use; this module imports neither.
"""

from __future__ import annotations

import copy
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from .._core._age import is_stale, max_age_days, today
from .._core._config import block_network_default, check_on_stale, resolve_mode, settings
from .._core._exceptions import AuthFailureWarning, CacheMiss, CassetteError, DamagedCassette
from .._core._files import defer_dir_syncs, ensure_dir, sync_deferred_dirs
from .._core._hosts import PROVIDER_HOSTS, HostMatcher, shared_matcher
from .._core._lock import cassette_lock
from .._core._modes import Mode
from .._core._normalize import normalizer
from .._core._telemetry import TELEMETRY_URLS, UrlList, shared_url_list
from .._secrets._redact import (
    Frozen,
    collect_secrets,
    defer_secrets,
    keep_request_header,
    keep_response_header,
    learn_hook_edits,
    redact_entry,
    request_body,
    request_secrets,
    scrub_text,
)
from .._store._cassette import Cassette, Recording, encode_response, read_run
from .._store._keys import canonical_body, canonical_url, match_key, split_field_paths
from . import _stale, _trajectory
from ._hops import Hops
from ._miss import describe_miss
from ._steps import Step

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
]

Redactor = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A session's ``redact=`` hook: edits a cassette entry before it is written, and returns
it (or None, having edited it in place). Exported as ``ghostrun.Redactor``."""

Hook = Callable[["Deck"], None]
_AUTH_FAILURES = frozenset({401, 403, 407})  # recorded, and said at exit (`_warn_auth`)
_UNREAD: Any = object()


@dataclass
class _Hooks:
    entering: list[Hook] = field(default_factory=list)  # each enter, under the deck's lock
    exiting: list[Hook] = field(default_factory=list)  # each exit, likewise
    closed: list[Hook] = field(default_factory=list)  # the last exit, once its tapes are written


_hooks = _Hooks()


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


class Arguments(NamedTuple):
    """A session's arguments, checked, kept once: each entry anew resolves them afresh."""

    mode: Mode | str | None
    cassette_dir: str | os.PathLike[str] | None
    name: str | None
    hosts: tuple[str, ...]
    ignore_fields: tuple[str, ...]
    redact: Redactor | None
    ignore_urls: tuple[str, ...]
    block_network: bool | None
    on_unplayed: str | None = None
    max_age: str | int | None = None  # staleness (`_core._age`, docs/staleness.md)
    on_stale: str | None = None  # "warn" (default) or "fail"
    normalize: Any = None  # value shapes left out of the key (`_core._normalize`)


class LazyHeaders(Sequence[tuple[str, str]]):
    """A road's request headers, built when first read: replaying JSON never reads them.

    `frozen` is how a replayed request's headers are held until a scrub needs them
    (`_secrets._redact.defer_secrets`): a road may hand them over without building them.
    """

    __slots__ = ()

    def frozen(self) -> Frozen:
        return tuple(itertools.chain.from_iterable(self))


class RequestInfo:
    """What a deck needs to know about a request, whichever library sent it."""

    __slots__ = ("_content_type", "body", "headers", "key", "method", "query", "url")

    def __init__(
        self,
        method: str,
        url: str,  # canonical: credential query parameters dropped, query sorted
        headers: Sequence[tuple[str, str]],  # lower-case names; may be built when first read
        query: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        self.method, self.url, self.headers, self.query = method, url, headers, query
        self.body, self.key = body, ""
        self._content_type: str | None = None

    @property
    def content_type(self) -> str:
        """Looked up when first asked for: replaying a JSON request never needs it."""
        if self._content_type is None:
            self._content_type = _content_type(self.headers)
        return self._content_type

    def frozen_headers(self) -> Frozen:
        """The headers flat, ``(name, value, ...)``, to be held (`LazyHeaders.frozen`)."""
        headers = self.headers
        if isinstance(headers, LazyHeaders):
            return headers.frozen()
        return tuple(itertools.chain.from_iterable(headers))


class Deck:
    """A session's engine side: keys, the decision, the writes, the counts and the misses.

    Its settings (``mode``, ``cassette_dir``, ``name``, ``block_network``, the
    host ``matcher``, the ``telemetry`` list, the ``ignore`` paths) and its
    cursors are resolved afresh each time its session is entered anew; its
    counts and what it kept for the run log last as long as the session.
    """

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.replayed = 0
        self.recorded = 0
        self.passed_through = 0
        self.misses: list[CacheMiss] = []
        self.used_keys: set[str] = set()
        # (key, "replayed" | "recorded" | "missed") in the order requests were made: the
        # run log keeps it per test, so `ghostrun review` knows which cassettes are whose.
        self.trail: list[tuple[str, str]] = []
        self.hook_edits: dict[str, str] = {}  # what ``redact`` changed: applied to run logs
        # The model calls of the session's latest entry, in order, by reference: its
        # trajectory (`_trajectory`) and what ``expect_trajectory`` reads.
        self.steps: list[Step] = []
        self.session_index = 0  # its place among the sessions of its test (`_trajectory`)
        self.depth = 0  # how many blocks of the session are open
        self._lock = threading.RLock()
        # The settings are resolved when the session is entered, or read before that
        # (`__getattr__`): not here too, which cost a second resolve per session. A bad
        # setting in the environment still fails here, where the session is written.
        resolve_mode(arguments.mode)
        if arguments.block_network is None:
            block_network_default()
        split_field_paths(arguments.ignore_fields)  # a path that can never match, likewise

    def __getattr__(self, name: str) -> Any:
        """A setting read before the first entry (``session.mode``): resolved now."""
        if name.startswith("__") or "mode" in self.__dict__:
            raise AttributeError(name)
        self._resolve()
        return getattr(self, name)

    def _resolve(self) -> None:
        """Read mode, directory and hosts afresh: the environment may have changed."""
        arguments = self.arguments
        self.mode: Mode = resolve_mode(arguments.mode)
        self.cassette_dir: Path = settings.resolve_cassette_dir(arguments.cassette_dir)
        self._prefix = os.path.join(self.cassette_dir, "")  # + key + ".json": once per request
        self.name: str | None = arguments.name or current_test_id()
        explicit = arguments.block_network
        self.block_network = block_network_default() if explicit is None else bool(explicit)
        self.ignore = split_field_paths(arguments.ignore_fields)
        self.max_age = max_age_days(arguments.max_age, settings.max_age)
        self.on_stale = check_on_stale(arguments.on_stale or settings.on_stale or "warn")
        shapes = settings.normalize if arguments.normalize is None else arguments.normalize
        self.normalizer = normalizer(shapes)
        self.stale: dict[str, str] = {}  # replayed cassettes older than max_age: path -> day
        self._stale_from: dict[str, int] = {}  # per key: the stale response auto re-records
        self.matcher: HostMatcher = shared_matcher(
            PROVIDER_HOSTS + settings.extra_hosts() + arguments.hosts
        )
        self._cursor: dict[str, int] = {}  # per key: the next response of its run to use
        self._run_of: dict[str, str | None] = {}  # per key: the run (label) this session uses
        self._recorded_here: dict[str, int] = {}
        self._transient_at: dict[str, int] = {}  # per key: where it last wrote a 408/429/5xx
        self._auth_failures: dict[str, set[int]] = {}  # per host: the 401/403s it recorded
        self._unraised: list[CacheMiss] = []
        self._write_errors: list[Exception] = []
        self.warned_unlisted = False  # the engine's UnlistedHostWarning: once per session
        ignored = settings.resolve_ignore_urls() + arguments.ignore_urls
        self.telemetry: UrlList = shared_url_list(TELEMETRY_URLS + ignored)
        self._on_close: list[Callable[[], None]] = []  # WebSocket tapes still open, to write
        self.hops = Hops()  # the redirects handed on, and the hosts replayed ones made ours

    # -- entering and leaving ------------------------------------------------

    def enter(self) -> None:
        """A block of the session opens; the first one (again) resolves its settings afresh."""
        with self._lock:
            if self.depth == 0:
                self._resolve()
                self.steps = []
                self.session_index = _trajectory.opened(self)
            for entering in _hooks.entering:
                entering(self)
            if self.depth == 0:
                defer_dir_syncs()  # new names' directories: synced once, at the last exit
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
            unraised, self._unraised = self._unraised, []
            write_errors, self._write_errors = self._write_errors, []
            closing, self._on_close = self._on_close, []
            auth_failures, self._auth_failures = self._auth_failures, {}
            stale, self.stale = self.stale, {}
        try:
            for finish in closing:
                finish()
            failed = exc is not None or bool(unraised)
            unplayed = _trajectory.session_closed(self, failed=failed)  # writes it if recorded
        finally:
            sync_deferred_dirs()  # DESIGN §3: each directory once per session, not per file
        for closed in _hooks.closed:
            closed(self)
        if auth_failures:
            self._warn_auth(auth_failures)
        if unraised and not carries_miss(exc):
            raise unraised[0] from exc
        if write_errors and exc is not write_errors[0]:
            raise write_errors[0]  # the block's own error, if any, is its __context__
        if exc is None and self.max_age is not None:
            _stale.report(stale, self.max_age, self.on_stale)
        if unplayed is not None:
            raise unplayed

    # -- the decision --------------------------------------------------------

    def describe(
        self,
        method: str,
        url_parts: tuple[str, str, int | None, str, str],
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> RequestInfo:
        """Build the key of a request from its parts (scheme, host, port, path, query).

        ``headers`` may be a lazy sequence: replaying a JSON request never
        reads them (the key reads any body that looks like JSON as JSON, so only
        another body's content type is looked up).
        """
        method = method.upper()
        url = canonical_url(*url_parts)
        query = parse_qsl(url_parts[4], keep_blank_values=True) if url_parts[4] else []
        info = RequestInfo(method, url, headers, query, body)
        key_type = "" if body[:1] in (b"{", b"[") else info.content_type
        shapes = self.normalizer
        key_url = url if shapes is None else shapes.url(url)
        info.key = match_key(method, key_url, canonical_body(body, key_type, self.ignore, shapes))
        return info

    def plan(self, info: RequestInfo) -> Recording | None:
        """The recording to replay, or None to send the request for real.

        Raises `CacheMiss` when the request is not recorded and the mode is replay.
        The session steps through its run of the key (`ghostrun._store._cassette`, "Runs")
        with a cursor that only a replay or a write moves, so a response another
        process appended meanwhile is replayed, and none is ever handed out twice.
        """
        key = info.key
        with self._lock:
            self.used_keys.add(key)
            if self.mode is Mode.RECORD:
                return None
            index = self._cursor.get(key, 0)
            # Read for every request: the file is the state, so a response another
            # session appended since is seen, and the session keeps no parsed cassette.
            path = self._prefix + key + ".json"
            try:
                found = read_run(path, self.name, self._run_of.get(key, _UNREAD))
            except CassetteError as exc:
                self.trail.append((key, "missed"))
                raise self.damaged(exc) from exc
            replies = None if found is None else found[1]
            if found is not None:
                self._run_of[key] = found[0]
            if replies and self._stale(key, path, replies, index):
                return None  # auto: a recording older than max_age is made again
            if replies and (index < len(replies) or self.mode is Mode.REPLAY):
                self._cursor[key] = index + 1
                self.replayed += 1
                self.trail.append((key, "replayed"))
                defer_secrets(info)  # its secrets are still scrubbed from run logs
                reply = replies[min(index, len(replies) - 1)]
                self.steps.append(Step(info.method, info.url, key, index, info.body, reply))
                return reply
            if self.mode is Mode.REPLAY:
                self.trail.append((key, "missed"))
                raise self._miss(info)
            return None

    def _stale(self, key: str, path: str, replies: list[Recording], index: int) -> bool:
        """Whether auto mode re-records the response at ``index`` as older than ``max_age``.

        In replay mode it is replayed, and the cassette noted for the warning at exit.
        """
        if self.max_age is None or (index >= len(replies) and self.mode is not Mode.REPLAY):
            return False
        day = replies[min(index, len(replies) - 1)].recorded_on
        if not is_stale(day, self.max_age):
            return False
        if self.mode is Mode.REPLAY:
            self.stale[path] = min(str(day), self.stale.get(path, str(day)))
            return False
        self._stale_from.setdefault(key, index)
        return True

    def commit(self, info: RequestInfo, recording: Recording) -> None:
        """Write a response just received; a retried-past transient failure is replaced.

        Every status the provider sent is written, in order, but a transient
        failure (408, 429, 5xx) the SDK retried past. An authentication failure
        (401, 403, 407) is written too, so replay answers as the provider did
        (the app's error handling can be tested), and is said once when the
        session closes (`_warn_auth`), so a recording made with a bad key is noticed.
        A key with no cassette yet gets a new file, made only if none appeared
        meanwhile (`_create`). Any other write is a read-modify-write of the cassette
        under its lock (`ghostrun._core._lock`): the file is read again once the lock
        is held, so a response another session or process added meanwhile is kept.
        """
        key = info.key
        path = self._prefix + key + ".json"
        with self._lock:
            if recording.status in _AUTH_FAILURES:
                host = urlsplit(info.url).hostname or "?"
                self._auth_failures.setdefault(host, set()).add(recording.status)
            entry = self._entry(info, recording)
            if os.path.lexists(path) or not self._create(path, info, entry):
                ensure_dir(self.cassette_dir)
                with cassette_lock(path):
                    index = self._add_locked(path, info, entry)
            else:
                index = 0
            self._cursor[key] = index + 1
            self._recorded_here[key] = self._recorded_here.get(key, 0) + 1
            if recording.transient:
                self._transient_at[key] = index
            else:
                self._transient_at.pop(key, None)
            self.recorded += 1
            self.trail.append((info.key, "recorded"))
            self.steps.append(Step(info.method, info.url, key, index, info.body, recording, True))

    def _create(self, path: str, info: RequestInfo, entry: dict[str, Any]) -> bool:
        """Write the key's first cassette, holding this one response; False if a file is there.

        No lock: the file is made by a link that fails if the name exists
        (`Cassette.create`), so of two sessions creating it at once one makes it and
        the other finds it made, then adds to it under the lock. A new file's run is
        the session's own, whatever the mode (`_run_for_writing` on an empty cassette).
        """
        cassette = Cassette(path, info.key, entry["request"], [])
        cassette.add(entry["response"], self.name)
        if not cassette.create():
            return False
        if self.mode is not Mode.RECORD:
            self._run_of[info.key] = self.name
        return True

    def _add_locked(self, path: str, info: RequestInfo, entry: dict[str, Any]) -> int:
        """The read-modify-write, under the cassette's lock: the response's index in its run.

        A file missing here too is created as `_create` does (a writer without the
        lock may be making it); if one appeared meanwhile, it is read and added to.
        """
        key = info.key
        cassette = Cassette.load(path)
        if cassette is None:
            if self._create(path, info, entry):
                return 0
            cassette = self._cassette_for_writing(info)
        label = self._run_for_writing(key, cassette)
        stale_from = self._stale_from.pop(key, None)
        if stale_from is not None:  # auto re-records a stale run from there on
            for position in reversed(cassette.run(label)[stale_from:]):
                cassette.raw_responses.pop(position)
        if self._replaces_transient(key, cassette, label):
            cassette.raw_responses.pop(cassette.run(label)[-1])
            self.recorded -= 1
            del self.trail[_last_index(self.trail, (key, "recorded"))]
        cassette.request = entry["request"]
        index = cassette.add(entry["response"], label)
        cassette.save()
        return index

    def _cassette_for_writing(self, info: RequestInfo) -> Cassette:
        """The cassette as it is on disk now (read under its lock), or a new one.

        Never what ``plan`` read earlier: another writer may have added to it
        since. A file that fails to load raises, so it is never overwritten.
        """
        path = self._prefix + info.key + ".json"
        cassette = Cassette.load(path)
        blank = Cassette(path, info.key, {"method": info.method, "url": info.url}, [])
        return blank if cassette is None else cassette  # the caller sets its request

    def _run_for_writing(self, key: str, cassette: Cassette) -> str | None:
        """Record mode starts the session's own run afresh once; auto extends its run."""
        if self.mode is Mode.RECORD:
            if key not in self._recorded_here:
                cassette.drop_run(self.name)
            return self.name
        label: str | None = self._run_of.get(key, _UNREAD)
        if label is _UNREAD or not (cassette.run(label) or label == self.name):
            label = cassette.choose_run(self.name)
        self._run_of[key] = label
        return label

    def _replaces_transient(self, key: str, cassette: Cassette, label: str | None) -> bool:
        """Whether this session's last write of ``key`` was a 429/5xx, still last in its run."""
        at = self._transient_at.get(key)
        positions = cassette.run(label)
        if at is None or len(positions) != at + 1:
            return False
        return cassette.response(positions[-1]).transient

    def _entry(self, info: RequestInfo, recording: Recording) -> dict[str, Any]:
        response = encode_response(
            Recording(
                recording.status,
                [(k, v) for k, v in recording.headers if keep_response_header(k)],
                recording.body,
                recording.chunks,
                recording.stream_error,
                reason=recording.reason,
                recorded_on=today() if recording.recorded_on is None else recording.recorded_on,
            ),
            _content_type(recording.headers),
        )
        return self._redacted(info, response)

    def stored_request(self, info: RequestInfo) -> dict[str, Any]:
        """The request as its cassette would store it: what a miss diff compares.

        The user's hook sees it with an empty response; if the hook fails on
        that, the body is not shown rather than shown unredacted.
        """
        try:
            request: dict[str, Any] = self._redacted(info, {})["request"]
        except Exception as exc:  # the user's hook, on an entry it was not written for
            note = f"(not shown: the redact hook raised {type(exc).__name__} on it)"
            return {"body": {"text": note}}
        return request

    def _redacted(self, info: RequestInfo, response: Mapping[str, Any]) -> dict[str, Any]:
        """An entry with every credential masked, then the user's hook applied."""
        entry = {
            "request": {
                "method": info.method,
                "url": info.url,
                "headers": {k: v for k, v in info.headers if keep_request_header(k)},
                "body": request_body(info.body, info.content_type),
            },
            "response": response,
        }
        secrets = collect_secrets(info.headers, info.query)
        entry = redact_entry(entry, secrets)
        redact = self.arguments.redact
        if redact is None:
            return entry
        before = copy.deepcopy(entry)
        scrubbed = redact(entry)  # returns the entry, or None if it edited in place
        entry = entry if scrubbed is None else scrubbed
        learn_hook_edits(before, entry, self.hook_edits)  # runs/ shows what the cassette does
        return redact_entry(entry, secrets)  # the hook may not reintroduce a secret

    def _warn_auth(self, failures: dict[str, set[int]]) -> None:
        """Say once that the session recorded authentication failures, and from where."""
        hosts = ", ".join(sorted(failures))
        statuses = ", ".join(map(str, sorted(set().union(*failures.values()))))
        warnings.warn(
            f"ghostrun: recorded an authentication failure from {hosts}: check the key "
            f"(HTTP {statuses}, session {self.name or '(unnamed)'}). The cassette replays it "
            "as the provider answered; once the key is fixed, record again with "
            "GHOSTRUN_MODE=record.",
            AuthFailureWarning,
            stacklevel=4,
        )

    def write_failed(self, exc: Exception) -> None:
        """A response could not be written: handed on anyway, ``exc`` raised at exit.

        See ``_exceptions``: raised inside a transport, it would be retried.
        """
        with self._lock:
            if not self._write_errors:
                exc.add_note(
                    "ghostrun: raised when the session closed. The response was handed on "
                    "to the code under test unrecorded, so that no SDK retried the request."
                )
            self._write_errors.append(exc)

    def forbid(self, what: str) -> CacheMiss:
        """A miss for traffic that cannot be recorded at all, refused in replay mode."""
        miss = CacheMiss(
            f"ghostrun: replay mode never touches the network, and {what} cannot be "
            f"recorded or replayed (session {self.name or '(unnamed)'}). Run this test "
            "with GHOSTRUN_MODE=auto against the real provider, or keep it out of replay."
        )
        return self.book(miss)

    def damaged(self, error: CassetteError) -> CacheMiss:
        """A file read for a request is damaged: a miss (`DamagedCassette`), booked."""
        return self.book(DamagedCassette.of(error))

    def book(self, miss: CacheMiss) -> CacheMiss:
        """Count a miss raised here; one the code under test swallows is raised at exit."""
        self.misses.append(miss)
        self._unraised.append(miss)
        return miss

    def _miss(self, info: RequestInfo) -> CacheMiss:
        request_secrets(info)  # remembered: the message, and run logs, are scrubbed of them
        message = describe_miss(info, self, self.ignore)
        return self.book(CacheMiss(scrub_text(message, edits=self.hook_edits)))

    # -- WebSocket conversations (``_intercept._wslink``) ---------------------

    def next_index(self, key: str) -> int:
        """The how-many-th conversation with this key in this session (from 0).

        The per-key cursor HTTP keys use: WebSocket and HTTP keys never meet.
        """
        with self._lock:
            index = self._cursor.get(key, 0)
            self._cursor[key] = index + 1
            self.used_keys.add(key)
            return index

    def count_replayed(self, count: int) -> None:
        """A conversation replayed (1), or one a replay handed over to a live connection (-1)."""
        with self._lock:
            self.replayed += count

    def on_close(self, finish: Callable[[], None]) -> None:
        """Call ``finish`` when the session closes: a connection the client never closed."""
        with self._lock:
            self._on_close.append(finish)

    @contextmanager
    def writing(self, key: str) -> Iterator[bool]:
        """Write a conversation's cassette inside: under the deck's lock, counted if it succeeds.

        Yields whether the write starts the key afresh (record mode, its first write in
        this session) rather than adding to what the cassette holds.
        """
        with self._lock:
            yield self.mode is Mode.RECORD and key not in self._recorded_here
            self._recorded_here[key] = self._recorded_here.get(key, 0) + 1
            self.recorded += 1


def _last_index(items: list[Any], item: Any) -> int:
    return len(items) - 1 - items[::-1].index(item)


def carries_miss(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a `CacheMiss`, or a group holding one."""
    if exc is None:
        return False
    if isinstance(exc, CacheMiss):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(CacheMiss) is not None
    return False


def _content_type(headers: Iterable[tuple[str, str]]) -> str:
    for name, value in headers:
        if name.lower() == "content-type":
            return value
    return ""


def current_test_id() -> str | None:
    """The running pytest test's id, from the variable pytest sets for it."""
    current = os.environ.get("PYTEST_CURRENT_TEST")
    return current.rsplit(" (", 1)[0] if current else None
