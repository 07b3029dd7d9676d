"""The httpx family (httpx 0.2x and httpx2 2.x): the road most SDKs take (DESIGN §1).

The hook is ``Client._transport_for_url`` and ``AsyncClient._transport_for_url``:
for a request to a provider host it returns a `Transport` (or
`AsyncTransport`) in front of the real one, so clients built before or inside
a session, by any SDK, are covered. The transports only convert: an httpx
request into the engine's terms, the engine's `Recording` into an httpx
response. Both libraries share these classes; what differs between them (the
response and stream classes, the exception tree) is looked up once per
library in a `Flavor`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

from .._core._exceptions import UnsupportedLibrary
from .._recording._deck import Deck
from .._recording._pushed import Ledger, is_push_stream, ledger, paced
from .._recording._request import LazyHeaders
from .._secrets._memory import Frozen
from .._store._cassette import Recording
from ._engine import Exchange, Tape, is_stream, route
from ._once import built
from ._patch import Footprint, Restore, library, replace

__all__ = ["HTTPX_FAMILY", "AsyncTransport", "Flavor", "HttpxFamilyAdapter", "Transport"]

HTTPX_FAMILY = ("httpx", "httpx2")
SUPPORTED = {"httpx": ">=0.27", "httpx2": ">=2"}
"""The versions each library is supported from (pyproject.toml's extras say the same)."""


def adapters() -> list[HttpxFamilyAdapter]:
    return [HttpxFamilyAdapter(name) for name in HTTPX_FAMILY]


class HttpxFamilyAdapter:
    """Wraps ``Client._transport_for_url`` and ``AsyncClient._transport_for_url``."""

    def __init__(self, module_name: str) -> None:
        self.module_name = self.waits_for = self.road = self.distribution = module_name
        self.supported = SUPPORTED[module_name]
        self.footprint = Footprint((module_name,))
        self.module: Any = None

    def check(self) -> bool:
        self.module = library(self.module_name)
        if self.module is None:
            return False
        for cls_name in ("Client", "AsyncClient"):
            cls = getattr(self.module, cls_name, None)
            if cls is None or not callable(cls.__dict__.get("_transport_for_url")):
                version = getattr(self.module, "__version__", "?")
                raise UnsupportedLibrary(
                    f"{self.module_name} {version} has no {cls_name}._transport_for_url, the "
                    "hook ghostrun wraps, so its requests cannot be intercepted. Install a "
                    f"supported {self.module_name}: pip install '{self.module_name}"
                    f"{self.supported}'."
                )
        return True

    def install(self) -> Restore:
        lib, flavor = self.module, Flavor.of(self.module)
        sync, aio = (cls.__dict__["_transport_for_url"] for cls in (lib.Client, lib.AsyncClient))
        return replace(
            (lib.Client, "_transport_for_url", built(_routing, sync, flavor, Transport)),
            (lib.AsyncClient, "_transport_for_url", built(_routing, aio, flavor, AsyncTransport)),
        )


def _routing(original: Callable[..., Any], flavor: Flavor, wrapper: type[Any]) -> Any:
    """A ``_transport_for_url`` that puts our transport in front of provider hosts."""

    @functools.wraps(original)
    def _transport_for_url(self: Any, url: Any) -> Any:
        transport = original(self, url)
        deck = route(url.host, url.port, url)
        if deck is None:
            return transport
        return wrapper(flavor, transport, deck)

    return _transport_for_url


# -- the transports ------------------------------------------------------------------


class Transport:
    """In front of a sync transport to a provider host: replay, or send and record."""

    __slots__ = ("deck", "flavor", "inner")

    def __init__(self, flavor: Flavor, inner: Any, deck: Deck) -> None:
        self.flavor, self.inner, self.deck = flavor, inner, deck

    def handle_request(self, request: Any) -> Any:
        exchange = Exchange(self.deck, *_describe(request), request.read(), rewrites=True)
        recording = exchange.replay()
        if recording is not None:
            return self.flavor.replayed(recording)
        request = _forked(self.flavor, exchange, request, request.read())
        _drop_foreign_credentials(exchange, request)
        with exchange.sending():
            response = self.inner.handle_request(request)
        return self.flavor.record(exchange, response)


class AsyncTransport:
    """In front of an async transport to a provider host: replay, or send and record."""

    __slots__ = ("deck", "flavor", "inner")

    def __init__(self, flavor: Flavor, inner: Any, deck: Deck) -> None:
        self.flavor, self.inner, self.deck = flavor, inner, deck

    async def handle_async_request(self, request: Any) -> Any:
        exchange = Exchange(self.deck, *_describe(request), await request.aread(), rewrites=True)
        recording = exchange.replay()
        if recording is not None:
            if request.method == "GET" and is_push_stream("GET", recording.chunks):
                return self.flavor.pushed(recording, ledger(self.deck), str(request.url))
            return self.flavor.replayed(recording)
        request = _forked(self.flavor, exchange, request, await request.aread())
        _drop_foreign_credentials(exchange, request)
        with exchange.sending():
            response = await self.inner.handle_async_request(request)
        return await self.flavor.arecord(exchange, response)


def _forked(flavor: Flavor, exchange: Exchange, request: Any, sent: bytes) -> Any:
    """The request to send: ``request``, or a copy carrying a fork's changed body."""
    body = exchange.rewritten(sent)
    if body is None:
        return request
    headers = [(k, v) for k, v in request.headers.multi_items() if k != "content-length"]
    return flavor.lib.Request(
        request.method, request.url, headers=headers, content=body, extensions=request.extensions
    )


def _drop_foreign_credentials(exchange: Exchange, request: Any) -> None:
    """A redirect hop to another host goes without the first host's credentials."""
    for name in exchange.foreign_credentials(list(request.headers.keys())):
        del request.headers[name]


def _describe(request: Any) -> tuple[str, tuple[str, str, int | None, str, str], _HeaderPairs]:
    url = request.url
    parts = (url.scheme, url.host, url.port, url.path, url.query.decode("ascii", "replace"))
    return request.method, parts, _HeaderPairs(request.headers)


def _received(headers: Any) -> list[tuple[str, str]]:
    """Response headers with their names spelt as received (``multi_items()`` lower-cases)."""
    encoding = headers.encoding
    return [(k.decode(encoding), v.decode(encoding)) for k, v in headers.raw]


def _reason(response: Any) -> str | None:
    """The phrase the server sent, if the transport says (HTTP/2 has none: then None)."""
    phrase = response.extensions.get("reason_phrase")
    return phrase.decode("latin-1") if isinstance(phrase, bytes) else None


class _HeaderPairs(LazyHeaders):
    """``headers.multi_items()``, built when first read: replaying JSON never reads them."""

    __slots__ = ("_headers", "_items")

    def __init__(self, headers: Any) -> None:
        self._headers = headers
        self._items: list[tuple[str, str]] | None = None

    def _list(self) -> list[tuple[str, str]]:
        if self._items is None:
            self._items = self._headers.multi_items()
        return self._items

    def __getitem__(self, index: Any) -> Any:
        return self._list()[index]

    def __len__(self) -> int:
        return len(self._list())

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._list())

    def frozen(self) -> Frozen:
        """The raw pairs, flat, while they are all ASCII: httpx would decode them as ASCII."""
        if self._items is None:
            raw = tuple(itertools.chain.from_iterable(self._headers.raw))
            if b"".join(raw).isascii():
                return raw
        return super().frozen()


# -- one library's classes -----------------------------------------------------------


class Flavor:
    """What the transports need of one httpx-family library, looked up once.

    httpx reads a response's stream only if it is an instance of the library's
    own ``SyncByteStream`` / ``AsyncByteStream``, so each library gets
    subclasses of the stream classes below (their code is here, once).
    """

    def __init__(self, lib: ModuleType) -> None:
        self.Response = lib.Response
        self.ByteStream = lib.ByteStream
        self.TransportError = lib.TransportError
        self.RemoteProtocolError = lib.RemoteProtocolError
        self.lib = lib
        base = {"__module__": __name__, "__slots__": ()}
        sync, both = (lib.SyncByteStream,), (lib.SyncByteStream, lib.AsyncByteStream)
        self.ReplayStream = type("ReplayStream", (ReplayStream, *both), base)
        self.RecordingStream = type("RecordingStream", (RecordingStream, *sync), base)
        self.AsyncRecordingStream = type(
            "AsyncRecordingStream", (AsyncRecordingStream, lib.AsyncByteStream), base
        )
        self.PushStream = type("PushStream", (PushStream, lib.AsyncByteStream), base)

    @staticmethod
    @functools.cache
    def of(lib: ModuleType) -> Flavor:
        return Flavor(lib)

    def replayed(self, recording: Recording, tag: str = "replayed") -> Any:
        if recording.chunks is not None or recording.stream_error is not None:
            chunks = recording.chunks
            if chunks is None:
                chunks = [recording.body] if recording.body else []
            stream: Any = self.ReplayStream(self, chunks, recording.stream_error)
        else:
            stream = self.ByteStream(recording.body)
        extensions: dict[str, Any] = {"ghostrun": tag}
        if recording.reason is not None:  # else httpx gives the standard phrase
            extensions["reason_phrase"] = recording.reason.encode("latin-1", "replace")
        return self.Response(
            recording.status, headers=recording.headers, stream=stream, extensions=extensions
        )

    def pushed(self, recording: Recording, ledger: Ledger, url: str) -> Any:
        """A server's push stream (MCP over SSE), replayed at the pace of the requests it
        answers (`_recording._pushed`)."""
        stream = self.PushStream(recording.chunks or [], ledger, url)
        return self.Response(
            recording.status,
            headers=recording.headers,
            stream=stream,
            extensions={"ghostrun": "replayed"},
        )

    def record(self, exchange: Exchange, response: Any) -> Any:
        headers = _received(response.headers)
        if is_stream(response.headers.get("content-type", "")):
            return self._taped(exchange, response, headers, self.RecordingStream)
        try:
            body = response.read()  # decoded by the library
        finally:
            response.close()
        return self._kept(exchange, response, headers, body)

    async def arecord(self, exchange: Exchange, response: Any) -> Any:
        headers = _received(response.headers)
        if is_stream(response.headers.get("content-type", "")):
            return self._taped(exchange, response, headers, self.AsyncRecordingStream)
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        return self._kept(exchange, response, headers, body)

    def _taped(
        self, exchange: Exchange, response: Any, headers: list[tuple[str, str]], stream: type[Any]
    ) -> Any:
        """A live stream handed on as the client reads it, each chunk taped (`record`'s twins)."""
        tape = exchange.tape(response.status_code, headers, _reason(response))
        return self._handed_on(response, tape.headers, stream(self, response, tape))

    def _kept(
        self, exchange: Exchange, response: Any, headers: list[tuple[str, str]], body: bytes
    ) -> Any:
        """A live body read whole: recorded, then handed on (`record`'s twins)."""
        recording = exchange.record(response.status_code, headers, body, _reason(response))
        return self._handed_on(response, recording.headers, self.ByteStream(body))

    def _handed_on(self, response: Any, headers: list[tuple[str, str]], stream: Any) -> Any:
        return self.Response(
            response.status_code,
            headers=headers,
            stream=stream,
            extensions={**response.extensions, "ghostrun": "recorded"},
        )

    def stream_error(self, error: tuple[str, str]) -> BaseException:
        """The recorded break as the library's own exception (a `TransportError`)."""
        cls = getattr(self.lib, error[0], None)
        if not (isinstance(cls, type) and issubclass(cls, self.TransportError)):
            cls = self.RemoteProtocolError
        exc: BaseException = cls(error[1])
        return exc


class ReplayStream:
    """Hands back the recorded chunks one by one, then the recorded break, if any.

    A stream that did not break is handed over as the list's own iterator: the client
    gets the same chunks, with no Python frame resumed per chunk.
    """

    __slots__ = ("chunks", "error", "flavor")

    def __init__(self, flavor: Flavor, chunks: list[bytes], error: tuple[str, str] | None) -> None:
        self.flavor, self.chunks, self.error = flavor, chunks, error

    def __iter__(self) -> Iterator[bytes]:
        return self._broken() if self.error else iter(self.chunks)

    def _broken(self) -> Iterator[bytes]:
        yield from self.chunks
        raise self.flavor.stream_error(self.error)  # type: ignore[arg-type]  # set: a break

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.error:
            raise self.flavor.stream_error(self.error)


class PushStream:
    """Hands back a push stream's chunks as the session replays what they answer."""

    __slots__ = ("chunks", "ledger", "start", "url")

    def __init__(self, chunks: list[bytes], ledger: Ledger, url: str) -> None:
        self.chunks, self.ledger, self.url = chunks, ledger, url
        self.start = len(ledger.sent)  # what was sent before it opened answers none of it

    def __aiter__(self) -> AsyncIterator[bytes]:
        return paced(self.chunks, self.ledger, self.url, self.start)


class RecordingStream:
    """Passes a live sync stream on chunk by chunk, taping each chunk for the cassette."""

    __slots__ = ("flavor", "response", "tape")

    def __init__(self, flavor: Flavor, response: Any, tape: Tape) -> None:
        self.flavor, self.response, self.tape = flavor, response, tape

    def __iter__(self) -> Iterator[bytes]:
        tape = self.tape
        try:
            for chunk in self.response.iter_bytes():
                tape.chunks.append(chunk)
                yield chunk
        except self.flavor.TransportError as exc:
            tape.finish(exc)
            raise
        tape.finish()

    def close(self) -> None:
        try:
            self.response.close()
        finally:
            self.tape.finish()


class AsyncRecordingStream:
    """Passes a live async stream on chunk by chunk, taping each chunk for the cassette."""

    __slots__ = ("flavor", "response", "tape")

    def __init__(self, flavor: Flavor, response: Any, tape: Tape) -> None:
        self.flavor, self.response, self.tape = flavor, response, tape

    async def __aiter__(self) -> AsyncIterator[bytes]:
        tape = self.tape
        try:
            async for chunk in self.response.aiter_bytes():
                tape.chunks.append(chunk)
                yield chunk
        except self.flavor.TransportError as exc:
            tape.finish(exc)
            raise
        tape.finish()

    async def aclose(self) -> None:
        try:
            await self.response.aclose()
        finally:
            self.tape.finish()
