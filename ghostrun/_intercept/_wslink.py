"""The session side of a WebSocket conversation, shared by every WebSocket adapter.

At the handshake, `open_link` asks the governing session what to do: `None`
(not a provider host: the library connects as usual), a `Recorder` (connect
for real and tape every frame) or a `Player` (answer locally, never connect).
A session in ``replay`` plays when any conversation with the handshake URL is
recorded and raises `CacheMiss` at once when none is; ``auto`` plays when one
is, else records; ``record`` always records.

A `Player` only knows which recording it plays once the client's first frame
is sent (the key, `_wscassette`): until then, what the server said first (a
greeting such as ``session.created``) comes from the first recorded
conversation with the URL, by key. Several connections with one key replay
its conversations in order; past the last, ``replay`` repeats the last and
``auto`` records another, as for HTTP. A client frame that differs from the
recording is a `CacheMiss` with a diff, in any mode: a conversation half
replayed cannot be continued against a live server, so the fix is to
re-record it (``GHOSTRUN_MODE=record``).

A `Recorder` writes its cassette when the connection closes, and when its
session closes if the client never closed it (an agent's persistent
connection). The adapters do the waiting (threads or tasks); their replaying
connections share `Replaying`, which hands over to a live connection when
``auto`` must record. This module reads and writes files, and the session's
deck (``.._recording._deck``) keeps the counts and the per-key cursors.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast
from urllib.parse import parse_qsl

from .._core._exceptions import CacheMiss, CassetteError
from .._core._files import dump_json, ensure_dir, write_atomic
from .._core._lock import cassette_lock
from .._core._modes import Mode
from .._recording._deck import Deck
from .._store import _validate
from .._store._formats import FrameEvent
from .._store._keys import canonical_url
from .._store._render import render_body
from .._store._wscassette import (
    Close,
    Conversation,
    Frame,
    Script,
    conversation_key,
    decode_frame,
    document,
    encode_frame,
    frame_diff,
    parse_document,
    url_prefix,
)
from .._store._wsredact import redact_conversation, redact_event, secrets_of
from ._engine import route

__all__ = ["NeedsLive", "Player", "Recorder", "Replaying", "open_link"]

Taped = TypeVar("Taped")
Side = Literal["client", "server"]


class NeedsLive(Exception):
    """``auto``: the first client frame matches no recording, so this one is made for real."""


def open_link(
    scheme: str,
    host: str,
    port: int | None,
    path: str,
    query: str,
    headers: Iterable[tuple[str, str]],
) -> Player | Recorder | None:
    """What to do with a WebSocket handshake to this URL (see the module docstring)."""
    deck = route(host, port, f"{scheme}://{host}{path}")
    if deck is None:
        return None
    url = canonical_url(scheme, host, port, path, query)
    pairs = [(str(k).lower(), str(v)) for k, v in headers]
    params = parse_qsl(query, keep_blank_values=True) if query else []
    if deck.mode is not Mode.RECORD:
        player = Player(deck, url, _recorded(deck.cassette_dir, url), (pairs, params))
        if player.handshake is not None:
            return player
        if deck.mode.offline:  # rebase too: a conversation is never rebased
            raise deck.book(_no_recording(deck, url))
    return Recorder(deck, url, pairs, params)


def _recorded(directory: Path, url: str) -> list[str]:
    """The keys of every cassette with this URL's prefix, sorted: found by name, read on demand."""
    prefix = url_prefix(url)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n[: -len(".json")] for n in names if n.startswith(prefix) and n.endswith(".json"))


def read_conversations(path: Path) -> list[Conversation]:
    """The conversations of a cassette ([] if there is none); CassetteError naming the field."""
    data = _validate.load(path, "cassette")
    if data is None:
        return []
    try:
        return parse_document(data, str(path))
    except ValueError as exc:  # an HTTP cassette where a WebSocket one was expected
        raise CassetteError(f"corrupt WebSocket cassette {path}: {exc}") from exc


def _no_recording(deck: Deck, url: str) -> CacheMiss:
    return CacheMiss(
        f"ghostrun: no recorded WebSocket conversation with {url}\n"
        f"  mode:         {deck.mode.value}"
        + (f" (session {deck.name})" if deck.name else "")
        + f"\n  cassette dir: {deck.cassette_dir}\n"
        "  To record it, run once with GHOSTRUN_MODE=record (or pytest --ghostrun-record) "
        "with the provider reachable."
    )


def hooked(deck: Deck, url: str, event: FrameEvent, secrets: frozenset[str]) -> FrameEvent:
    """One frame as the session's ``redact=`` hook leaves it (DESIGN §4: the hook applies to
    every file ghostrun writes). The hook sees a frame as it sees an HTTP exchange: a client
    frame as the request's body, a server frame as the response's. What it changes is learnt
    for the run log, and no secret it puts back is kept."""
    side: Side | None = "client" if "client" in event else "server" if "server" in event else None
    if deck.redactor.hook is None or side is None:
        return event
    part = "request" if side == "client" else "response"
    entry: dict[str, Any] = {
        "request": {"method": "WEBSOCKET", "url": url, "headers": {}},
        "response": {"status": 101, "headers": {}},
    }
    entry[part]["body"] = event[side]
    entry = deck.redactor.run_hook(entry)
    frame = entry.get(part, {}).get("body") if isinstance(entry, dict) else None
    try:
        decode_frame(frame)
    except (TypeError, ValueError) as exc:
        raise CassetteError(
            f"the redact hook left a WebSocket {side} frame that is not a frame ({exc}): "
            f'keep {part}["body"] a dict with one of json, text, binary_json, base64'
        ) from None
    return redact_event(cast(FrameEvent, {side: frame}), secrets)  # a frame: checked above


class Player:
    """Plays a recorded conversation back; the adapter turns its answers into the library's."""

    def __init__(
        self,
        deck: Deck,
        url: str,
        keys: list[str],
        handshake: tuple[list[tuple[str, str]], list[tuple[str, str]]],
    ) -> None:
        self.deck, self.url, self.keys = deck, url, keys
        self.pairs, self.params = handshake
        self.secrets = secrets_of(*handshake)
        self.ignore = deck.ignore
        self.normalize = deck.normalizer
        self.loaded: dict[str, list[Conversation]] = {}
        # The first recorded conversation answers the handshake and any greeting.
        first = next((c[0] for c in map(self._load, keys) if c), None)
        self.handshake: Conversation | None = first
        self.script: Script | None = None
        self.key = ""
        self.greeting = Script(first or Conversation(url), self.ignore, None, self.normalize)
        self.greeted = 0
        self.lock = threading.Lock()
        if first is not None:
            deck.count_replayed(1)

    def _load(self, key: str) -> list[Conversation]:
        """The conversations of one cassette with this URL ([] for another URL's)."""
        if key not in self.loaded:
            try:
                found = read_conversations(self.deck.cassette_dir / f"{key}.json")
            except CassetteError as exc:  # raised in the client's connect: a miss's treatment
                raise self.deck.damaged(exc) from exc
            self.loaded[key] = found if found and found[0].url == self.url else []
        return self.loaded[key]

    @property
    def subprotocol(self) -> str | None:
        return None if self.handshake is None else self.handshake.subprotocol

    @property
    def response_headers(self) -> dict[str, str]:
        return {} if self.handshake is None else self.handshake.response_headers

    def receive(self) -> str | bytes | Close | None:
        """The next server frame or close, or None: wait for the client's next frame.

        Raises `CacheMiss` past the end of the recording (nothing would ever come).
        """
        with self.lock:
            script = self.script or self.greeting
            try:
                event = script.next_server()
            except EOFError:
                raise self.deck.book(self._ended()) from None
            if self.script is None and event is not None:
                self.greeted += 1
            return event

    def ended(self) -> bool:
        """True when the recording has nothing more for the client, ever."""
        with self.lock:
            script = self.script or self.greeting
            return not script.due and script.position >= len(script.events)

    def send(self, data: str | bytes) -> None:
        """Check a client frame against the recording; `CacheMiss` with a diff if it differs."""
        # Compared as it would be stored: the recording holds only masked credentials, and
        # what the session's redact= hook left of each frame.
        event = redact_event({"client": encode_frame(data)}, self.secrets)
        frame = hooked(self.deck, self.url, event, self.secrets)["client"]
        with self.lock:
            if self.script is None:
                self.script = self._choose(frame)  # NeedsLive in auto when none matches
            result = self.script.match(frame)
        if result is not True:
            raise self.deck.book(self._differs(result or None, frame))

    def go_live(self) -> tuple[Recorder, int]:
        """A recorder for the live connection that replaces this one, and how many greeting
        frames the client already had (the live server's own greeting is taped, not handed on)."""
        self.deck.count_replayed(-1)
        return Recorder(self.deck, self.url, self.pairs, self.params), self.greeted

    def _choose(self, frame: Frame) -> Script:
        key = conversation_key(self.url, frame, self.ignore, self.normalize)
        conversations = self._load(key) if key in self.keys else []
        if conversations:
            index = self.deck.next_index(key)
            if index >= len(conversations) and self.deck.mode is Mode.AUTO:
                raise NeedsLive(key)  # past the last recorded one: auto records another
            conversation = conversations[min(index, len(conversations) - 1)]
            script = Script(conversation, self.ignore, None, self.normalize)
            script.skip_server(self.greeted)
            self.key = key
            return script
        if self.deck.mode is Mode.AUTO:
            raise NeedsLive(key)
        self.deck.next_index(key)
        raise self.deck.book(self._no_first(key, frame))

    def _no_first(self, key: str, frame: Frame) -> CacheMiss:
        """No recording starts with this frame: the diff against the closest first frame."""
        mine = render_body(frame)
        recorded = [(k, self._load(k)) for k in self.keys]
        firsts = [(k, c[0].first_client_frame() or {"text": ""}) for k, c in recorded if c]
        closest_key, closest = max(
            firsts, key=lambda f: difflib.SequenceMatcher(None, render_body(f[1]), mine).ratio()
        )
        lines = [
            f"ghostrun: no recorded WebSocket conversation with {self.url} starts with this frame",
            *self._where(),
            f"  expected:     {key}.json",
            "  To record it, run once with GHOSTRUN_MODE=record (or pytest --ghostrun-record) "
            "with the provider reachable.",
            f"  Closest recorded conversation with this URL: {closest_key}.json",
            *frame_diff(closest, frame, f"{closest_key}.json"),
        ]
        return CacheMiss("\n".join(lines))

    def _where(self) -> list[str]:
        deck = self.deck
        named = f" (session {deck.name})" if deck.name else ""
        return [
            f"  mode:         {deck.mode.value}{named}",
            f"  cassette dir: {deck.cassette_dir}",
        ]

    def _differs(self, recorded: Frame | None, sent: Frame) -> CacheMiss:
        script = self.script
        before = sum(1 for e in script.events[: script.position] if "client" in e) if script else 0
        lines = [
            f"ghostrun: a WebSocket frame to {self.url} differs from the recording",
            *self._where(),
            f"  cassette:     {self.key}.json, client frame {before + 1}",
            "  A conversation cannot be half replayed: re-record it with GHOSTRUN_MODE=record "
            "(or pytest --ghostrun-record) with the provider reachable.",
            *frame_diff(recorded, sent, f"{self.key}.json"),
        ]
        return CacheMiss("\n".join(lines))

    def _ended(self) -> CacheMiss:
        return CacheMiss(
            f"ghostrun: the recorded WebSocket conversation with {self.url} ends here, but the "
            "client waits for another server frame. Re-record it with GHOSTRUN_MODE=record."
        )


class Replaying:
    """What every adapter hands its client in place of a connection, while a `Player` answers.

    In ``auto`` a client frame that no recording starts with (`NeedsLive`)
    hands the connection over to a live one (`_take_over`, `_atake_over`):
    from then on that taped live connection answers everything public.
    ``opener`` makes it: the adapter's own connect, called only then.
    """

    def __init__(self, link: Player, opener: Callable[[], Any]) -> None:
        self._link, self._opener = link, opener
        self._live: Any = None  # auto: the taped live connection that took over

    def __getattribute__(self, name: str) -> Any:
        """Once a live connection took over, it answers everything public."""
        if not name.startswith("_"):
            live = object.__getattribute__(self, "_live")
            if live is not None:
                return getattr(live, name)
        return object.__getattribute__(self, name)

    async def _atake_over(
        self, tape: Callable[[Any, Recorder], Taped], receive: Callable[[Taped], Awaitable[object]]
    ) -> Taped:
        """Connect for real, ``tape`` the live connection; it answers from now on.

        The live server greets again: the greeting frames the client already had
        from the recording are read off it with ``receive`` (taped, not handed on).
        """
        recorder, greeted = self._link.go_live()
        taped = tape(await self._opener(), recorder)
        for _ in range(greeted):
            await receive(taped)
        self._live = taped
        return taped

    def _take_over(
        self, tape: Callable[[Any, Recorder], Taped], receive: Callable[[Taped], object]
    ) -> Taped:
        """`_atake_over` for a sync client."""
        recorder, greeted = self._link.go_live()
        taped = tape(self._opener(), recorder)
        for _ in range(greeted):
            receive(taped)
        self._live = taped
        return taped


class Recorder:
    """Tapes a live conversation and writes it once, however it ends."""

    def __init__(
        self,
        deck: Deck,
        url: str,
        headers: list[tuple[str, str]],
        query: list[tuple[str, str]],
    ) -> None:
        self.deck, self.headers, self.query = deck, headers, query
        self.conversation = Conversation(url)
        self.lock = threading.Lock()
        self.done = True  # until the handshake succeeded: a failed connect writes nothing
        secrets_of(headers, query)  # remembered now: the run log scrubs what the test saw

    def connected(
        self, subprotocol: str | None, response_headers: Iterable[tuple[str, str]]
    ) -> None:
        self.conversation.subprotocol = subprotocol
        self.conversation.response_headers = {str(k).lower(): str(v) for k, v in response_headers}
        self.done = False
        self.deck.on_close(self.finish)

    def sent(self, data: str | bytes) -> None:
        with self.lock:
            self.conversation.client(data)
            secrets_of((), (), self.conversation.events[-1:])  # remembered, as above

    def received(self, data: str | bytes) -> None:
        with self.lock:
            self.conversation.server(data)
            secrets_of((), (), self.conversation.events[-1:])

    def closed(self, by: str, code: int | None, reason: str) -> None:
        with self.lock:
            self.conversation.close(by, code, reason)
        self.finish()

    def finish(self) -> None:
        """Write the cassette (once); later frames of a connection left open are not kept."""
        with self.lock:
            if self.done:
                return
            self.done = True
            conversation = redact_conversation(self.conversation, self.headers, self.query)
        deck = self.deck
        secrets = secrets_of(self.headers, self.query)
        conversation.events = [
            hooked(deck, conversation.url, e, secrets) for e in conversation.events
        ]
        # Keyed as it is stored, so that replay, which compares masked frames, finds it.
        first = conversation.first_client_frame()
        key = conversation_key(conversation.url, first, deck.ignore, deck.normalizer)
        deck.next_index(key)
        path = deck.cassette_dir / f"{key}.json"
        with deck.writing(key) as fresh:
            ensure_dir(deck.cassette_dir)
            with cassette_lock(str(path)):  # read again under the lock: keep another's append
                kept = [] if fresh else read_conversations(path)
                write_atomic(path, dump_json(document(key, [*kept, conversation])))
