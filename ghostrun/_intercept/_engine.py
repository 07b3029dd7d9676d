"""The record/replay engine: the one decision every road's adapter drives (DESIGN §1-§3).

An adapter (``_httpx``, ``_aiohttp``, ``_urllib3``, ...) only converts: its
library's request into the engine's terms, and the engine's `Recording` back
into its library's response. It decides nothing. The engine does no network
I/O and imports no HTTP library; the cassette store is a separate piece it
reaches through the governing session's deck (``.._recording._deck``:
`Deck.plan`, `Deck.commit`), which counts what it does too (`Deck.counts`).
How an adapter uses it, whatever the library::

    deck = route(host, port, url)          # the hot path: None = not ours
    if deck is None:
        return send(request)               # untouched (also: an outer layer is sending)
    exchange = Exchange(deck, method, (scheme, host, port, path, query), headers, body)
    recording = exchange.replay()          # may raise CacheMiss (replay mode)
    if recording is not None:              # status, headers, body, or chunks + stream_error
        return library_response(recording)
    with exchange.sending():               # any intercepted library below passes through
        live = send(request)
    # a whole body, decoded (see `decoder` when the library left it compressed):
    recording = exchange.record(live.status, live_header_pairs, body, live.reason)
    return library_response(recording)     # recording.headers: the live ones, minus framing
    # or a stream (`is_stream(content_type)`), recorded chunk by chunk as the caller reads:
    tape = exchange.tape(live.status, live_header_pairs, live.reason)
    tape.chunks.append(chunk)              # for each chunk handed on
    tape.finish() / tape.finish(error)     # at the end, at a break, at close: once

``url_parts`` are ``(scheme, host, port or None, path, raw query string)``;
``headers`` a sequence of ``(lower-case name, value)`` pairs, which may be lazy
(replaying JSON never reads them); ``body`` the request body as bytes. The
reason phrase is the one the library shows (None where it has none, as over
HTTP/2); an adapter hands on ``_store._cassette.reason_of(recording)``.

What the engine guarantees for every road:

- **Exactly once.** `Exchange.sending` marks the current context (thread or
  async task) while the real request is made, and `route` answers ``None``
  there: when an httpx transport sends through aiohttp (litellm,
  ``openai.DefaultAioHttpClient``), only the outer layer records or replays.
  (A request the outer layer passes through, to a host no session lists,
  reaches the inner one unmarked, which decides the same: only the
  ``passed_through`` count sees it twice.)
- **Telemetry** (``.._telemetry``): never recorded; answered locally as the
  real endpoint answers (OpenAI's trace ingest: ``204``, no body) except in
  ``record`` mode.
- **No billed retries.** A cassette that cannot be written does not fail the
  request: the response is handed on and the error is raised when the session
  exits (``.._exceptions`` says why), so no SDK retry loop can resend it.
- **Redirect hops** (``.._recording._hops``): the request a redirect handed on
  causes is routed to the deck whatever its host, so in replay it is answered
  from the cassette or is a miss; and a hop to another host or port goes
  without the credential headers (`Exchange.foreign_credentials`).
- **A warning** (`UnlistedHostWarning`), once per session, when a request
  that passes through because its host is not listed looks like an LLM call.
"""

from __future__ import annotations

import importlib
import re
import warnings
import zlib
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .._core._exceptions import UnlistedHostWarning
from .._core._modes import Mode
from .._recording._deck import Deck
from .._recording._fork import ForkError
from .._recording._pushed import ledger
from .._recording._request import RequestInfo
from .._recording._session import bypass_interception, current_deck, passing_through
from .._secrets._credentials import is_credential_header
from .._store._cassette import Recording
from .._wire._bodies import stream_kind
from ._at_exit import EXIT

__all__ = [
    "DROPPED_HEADERS",
    "Decoder",
    "Exchange",
    "Recording",
    "Tape",
    "decoder",
    "hand_on_headers",
    "is_stream",
    "route",
]

DROPPED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
"""Framing headers of the live response, dropped from what is handed on: bodies are decoded."""

_LLM_CALL = re.compile(
    r"/chat/completions|/v\d\w*/(?:messages|responses|completions|embeddings|chat|rerank)\b"
    r"|:(?:stream)?generatecontent|:(?:batch)?embedcontents?|:predict\b"
    r"|/api/(?:chat|generate|embed|embeddings)\b|/model/[^/]+/(?:converse|invoke)",
    re.IGNORECASE,
)


# -- routing (the hot path) ------------------------------------------------------


def route(host: str, port: int | None, url: object = None) -> Deck | None:
    """The deck that records or replays a request to ``host:port``, or None.

    None when no session governs, inside `bypass_interception` (the judge's
    traffic) or `Exchange.sending` (an outer layer is sending for real), and
    when the host is not a provider host: then it counts as passed through,
    and ``str(url)`` is looked at, once per session at most, for the warning.
    """
    if passing_through():
        return None
    found = current_deck() or EXIT.deck  # at exit, after a replay: `_at_exit`
    if found is None:
        return None
    if found.settings.matcher(host, port) or (found.hops and found.hops.expects(host, port)):
        return found  # a listed host, or a redirect hop (``_recording._hops``)
    counts = found.counts
    counts.pass_through()
    if url is not None and not counts.warned_unlisted:
        _warn_if_llm_call(found, host, port, str(url))
    return None


def _warn_if_llm_call(deck: Deck, host: str, port: int | None, url: str) -> None:
    if not _LLM_CALL.search(url.split("?", 1)[0]) or not deck.counts.warn_unlisted():
        return
    listed = f"{host}:{port}" if port is not None else host
    warnings.warn(
        f"ghostrun: {url.split('?', 1)[0]} looks like an LLM API call, but {listed} is not a "
        f"provider host, so it went to the network unrecorded (session "
        f"{deck.name or '(unnamed)'}). To record and replay it, list its host: "
        f'ghostrun.session(hosts=["{listed}"]), configure(hosts=[...]) or '
        f"GHOSTRUN_HOSTS={listed}.",
        UnlistedHostWarning,
        stacklevel=2,
    )


# -- one exchange ------------------------------------------------------------------


class Exchange:
    """One intercepted request: replayed, or sent for real and recorded, or a miss.

    A request a redirect caused (`hop`) may not carry the credentials of the
    host its chain began at to another host: the road drops the headers
    `foreign_credentials` names before it sends it.
    """

    __slots__ = ("body", "deck", "forced", "hop", "info", "parts", "telemetry")

    def __init__(
        self,
        deck: Deck,
        method: str,
        url_parts: tuple[str, str, int | None, str, str],
        headers: Sequence[tuple[str, str]],
        body: bytes,
        rewrites: bool = False,
    ) -> None:
        self.deck = deck
        self.parts = url_parts
        self.hop = deck.hops.take(*url_parts[:3]) if deck.hops else None
        self.telemetry = deck.settings.telemetry(url_parts[1], url_parts[2], url_parts[3])
        self.forced: Mode | None = None
        fork = deck.settings.fork
        if fork is not None and self.telemetry is None:  # `_recording._fork`: a forked run
            step = fork.next_step(body)
            if step.body != body and not rewrites:
                raise ForkError(
                    "a fork changes request bodies (--model, --set) on the httpx road only "
                    f"(the OpenAI, Anthropic, Groq... SDKs); this request to {url_parts[1]} "
                    "goes through another library: fork it without overrides"
                )
            self.forced, body = step.mode, step.body
        self.body = body  # what to send: a fork's overrides applied (`rewritten`)
        self.info: RequestInfo = deck.describe(method, url_parts, headers, body)

    def rewritten(self, sent: bytes) -> bytes | None:
        """The body to send instead of ``sent`` (a fork's overrides, for a road that passed
        ``rewrites=True``), or None: send it as is."""
        return None if self.body is sent or self.body == sent else self.body

    def replay(self) -> Recording | None:
        """The response to hand back without sending, or None to send for real.

        Raises `CacheMiss` when replay mode has no recording for the request.
        """
        answer = self.telemetry
        if answer is not None:
            if self.deck.mode is Mode.RECORD:
                self.deck.counts.pass_through()
                return None
            return Recording(answer[0], list(answer[1]), answer[2])
        recording = self.deck.plan(self.info, self.forced)
        if recording is not None:
            replayed = self.deck.settings.mode.offline
            self._note(recording.status, recording.headers, replayed)
            info = self.info
            if info.method == "DELETE" or b'"jsonrpc"' in info.body:  # push streams wait for it
                ledger(self.deck).replayed(info.method, info.url, info.body)
        return recording

    def foreign_credentials(self, names: Iterable[str]) -> list[str]:
        """The credential headers among ``names`` to drop before sending: all of them on a hop
        to another host or port than its chain began at, else none."""
        if self.hop is None or not self.hop.foreign:
            return []
        return [name for name in names if is_credential_header(name)]

    def _note(self, status: int, headers: Iterable[tuple[str, str]], replayed: bool) -> None:
        """A redirect handed on: the request it causes is a hop (``_recording._hops``)."""
        if not 300 <= status < 400:
            return
        for name, value in headers:
            if name.lower() == "location":
                chain = self.hop.origin if self.hop is not None else None
                self.deck.hops.note(self.parts[:4], value, chain, replayed)
                return

    def sending(self) -> AbstractContextManager[None]:
        """Wrap the real send in it: intercepted libraries it calls pass through."""
        return bypass_interception()

    def record(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        reason: str | None = None,
    ) -> Recording:
        """Record a whole response (body decoded, ``reason`` its phrase if the library
        says); return what to hand on."""
        recording = Recording(status, hand_on_headers(headers), body, reason=reason)
        if self.telemetry is None:
            _commit(self.deck, self.info, recording)
        self._note(status, recording.headers, False)
        return recording

    def tape(
        self, status: int, headers: Iterable[tuple[str, str]], reason: str | None = None
    ) -> Tape:
        """Start recording a streamed response; ``tape.headers`` are the ones to hand on."""
        handed_on = hand_on_headers(headers)
        self._note(status, handed_on, False)
        return Tape(self, status, handed_on, reason)


class Tape:
    """Collects a live stream's chunks and commits them once, however the stream ends.

    Every adapter records streams through one of these, so a stream that broke
    mid-way is stored the same way whichever library read it.
    """

    __slots__ = ("chunks", "done", "exchange", "headers", "reason", "status")

    def __init__(
        self,
        exchange: Exchange,
        status: int,
        headers: list[tuple[str, str]],
        reason: str | None = None,
    ) -> None:
        self.exchange, self.status, self.headers = exchange, status, headers
        self.reason = reason
        self.chunks: list[bytes] = []
        self.done = False

    def finish(self, error: BaseException | None = None) -> None:
        """The stream ended (``error``: how it broke); later calls do nothing."""
        if self.done:
            return
        self.done = True
        if self.exchange.telemetry is not None:
            return
        broke = (type(error).__name__, str(error)) if error is not None else None
        recording = Recording(
            self.status, self.headers, chunks=self.chunks, stream_error=broke, reason=self.reason
        )
        _commit(self.exchange.deck, self.exchange.info, recording)


def _commit(deck: Deck, info: RequestInfo, recording: Recording) -> None:
    """Write through the store; a failure is kept for the session's exit, never raised here.

    Raised from inside a transport, it would reach SDKs' ``except Exception``
    retry loops (anthropic, groq) and become billed retries of a request that
    succeeded.
    """
    try:
        deck.commit(info, recording)
    except Exception as exc:
        deck.write_failed(exc)


# -- responses as handed on ------------------------------------------------------------


def hand_on_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Live response headers, names spelt as received, minus framing: the body handed on is
    decoded."""
    return [(k, v) for k, v in headers if k.lower() not in DROPPED_HEADERS]


def is_stream(content_type: str) -> bool:
    """True for a streamed response: SSE, NDJSON, JSON lines, Cohere's ``stream+json``,
    AWS event stream (`_wire._bodies.STREAM_TYPES`)."""
    return stream_kind(content_type) is not None


class Decoder:
    """Undoes a response's content-encoding, chunk by chunk (gzip, deflate; br, zstd if installed).

    For libraries that hand back the body as sent (aiohttp with
    ``auto_decompress=False``): cassettes store bodies decoded.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._inner: Any = _decompressor(encoding)
        self._raw_deflate = False

    def decode(self, data: bytes) -> bytes:
        if self.encoding == "deflate" and not self._raw_deflate:
            try:
                return bytes(self._inner.decompress(data))
            except zlib.error:  # deflate sent without its zlib header, as some servers do
                self._raw_deflate = True
                self._inner = zlib.decompressobj(-zlib.MAX_WBITS)
        return bytes(self._inner.decompress(data))

    def flush(self) -> bytes:
        flush = getattr(self._inner, "flush", None)
        return bytes(flush()) if flush is not None else b""

    def whole(self, data: bytes) -> bytes:
        return self.decode(data) + self.flush()


def decoder(encoding: str) -> Decoder | None:
    """A `Decoder` for a ``content-encoding`` value, or None for identity or one we cannot undo."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return None
    try:
        return Decoder(name)
    except LookupError:
        return None


def _decompressor(name: str) -> Any:
    if name in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if name == "deflate":
        return zlib.decompressobj()
    if name == "br":
        for module in ("brotli", "brotlicffi"):
            try:
                inner = importlib.import_module(module).Decompressor()
            except ImportError:
                continue
            return inner if hasattr(inner, "decompress") else _Process(inner)
    if name == "zstd":
        try:
            return importlib.import_module("zstandard").ZstdDecompressor().decompressobj()
        except ImportError:
            pass
    raise LookupError(name)


class _Process:
    """brotli's ``Decompressor.process`` under the name zlib's decompressors use."""

    def __init__(self, inner: Any) -> None:
        self.decompress = inner.process
