"""The lm15 road (DESIGN §1): dspy's vendored HTTP client, ``dspy._vendor.lm15.transports``.

dspy 3.4's default engine sends through lm15, a stdlib HTTP/1.1 client of its
own (``socket.create_connection`` and a hand-written request head), not
through httpx. Its transports have a tiny bytes-in/bytes-out contract, the
narrowest stable point: ``StdlibTransport.stream(request)`` returns a
``TransportResponse`` whose iteration yields the body, and
``StdlibAsyncTransport._do_stream(request)`` (which ``await transport.stream``
and ``async with transport.stream`` both go through) an
``AsyncTransportResponse``. Those two are wrapped; the request is turned into
the engine's terms exactly as the httpx road does (same method, URL parts,
headers and body), so dspy's exchanges have the keys an httpx client's would.

It waits for ``dspy`` (every import of it imports the package first) and
imports the transports in `check`; a dspy without lm15 (before 3.4, on
litellm and httpx) has nothing for this road to hook.
"""

from __future__ import annotations

import contextlib
import http
import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

from .._core._exceptions import UnsupportedLibrary
from ._engine import Exchange, Recording, decoder, is_stream, route
from ._patch import Footprint, Restore, library, replace

__all__ = ["Lm15Adapter", "adapters"]

TRANSPORTS = "dspy._vendor.lm15.transports"


def adapters() -> list[Lm15Adapter]:
    """This road's adapter, for `_patch.ROADS`: dspy's lm15 transports."""
    return [Lm15Adapter()]


class Lm15Adapter:
    """Wraps ``StdlibTransport.stream`` and ``StdlibAsyncTransport._do_stream``."""

    waits_for = distribution = "dspy"
    road = "dspy (lm15)"
    supported = ">=3.4"
    footprint = Footprint(("dspy._vendor.lm15",))

    def __init__(self) -> None:
        self.module: Any = None

    def check(self) -> bool:
        dspy = library("dspy")
        if dspy is None:
            return False
        try:
            self.module = importlib.import_module(TRANSPORTS)
        except ImportError:
            return False  # dspy before lm15: it sends through litellm and httpx
        sync, aio = self.module.StdlibTransport, self.module.StdlibAsyncTransport
        if not callable(sync.__dict__.get("stream")) or not callable(
            aio.__dict__.get("_do_stream")
        ):
            raise UnsupportedLibrary(
                f"dspy {getattr(dspy, '__version__', '?')} has no "
                "_vendor.lm15.transports.StdlibTransport.stream or "
                "StdlibAsyncTransport._do_stream, which ghostrun wraps to intercept dspy's "
                "requests. Install a supported dspy: pip install 'dspy>=3.4'."
            )
        return True

    def install(self) -> Restore:
        sync, aio = self.module.StdlibTransport, self.module.StdlibAsyncTransport
        return replace(
            (sync, "stream", _sync_stream(sync.__dict__["stream"], self.module)),
            (aio, "_do_stream", _async_stream(aio.__dict__["_do_stream"], self.module)),
        )


def _exchange(request: Any) -> Exchange | None:
    """The request in the engine's terms, as the httpx road puts it; None if not ours."""
    parts = urlsplit(request.url)
    host, port = parts.hostname or "", parts.port
    deck = route(host, port, request.url)
    if deck is None:
        return None
    url_parts = (parts.scheme, host, port, unquote(parts.path) or "/", parts.query)
    headers = [(name.lower(), value) for name, value in request.headers]
    return Exchange(deck, request.method.upper(), url_parts, headers, bytes(request.body or b""))


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _replayed_chunks(recording: Recording, module: Any) -> Iterator[bytes]:
    yield from recording.chunks if recording.chunks is not None else [recording.body]
    if recording.stream_error is not None:
        raise module.ReadError(": ".join(recording.stream_error))


def _answer(cls: Any, recording: Recording, chunks: Any, release: Callable[..., Any]) -> Any:
    return cls(
        status=recording.status,
        reason=_reason(recording.status),
        headers=list(recording.headers),
        http_version="HTTP/1.1",
        chunks=chunks,
        release=release,
    )


def _sync_stream(original: Callable[..., Any], module: Any) -> Callable[..., Any]:
    def stream(self: Any, request: Any) -> Any:
        exchange = _exchange(request)
        if exchange is None:
            return original(self, request)
        recording = exchange.replay()
        if recording is not None:
            chunks = _replayed_chunks(recording, module)
            return _answer(module.TransportResponse, recording, chunks, lambda _consumed: None)
        with exchange.sending():
            live = original(self, request)
        return _record(exchange, live, module)

    stream.__wrapped__ = original  # type: ignore[attr-defined]
    return stream


def _record(exchange: Exchange, live: Any, module: Any) -> Any:
    headers = list(live.headers)
    decode = decoder(_header(headers, "content-encoding"))
    if is_stream(_header(headers, "content-type")):
        tape = exchange.tape(live.status, headers)
        recording = Recording(live.status, tape.headers)
        return _answer(
            module.TransportResponse, recording, _taped(live, tape, decode), lambda _c: live.close()
        )
    with live:
        body = live.read()
    recording = exchange.record(live.status, headers, decode.whole(body) if decode else body)
    return _answer(module.TransportResponse, recording, iter([recording.body]), lambda _c: None)


def _taped(live: Any, tape: Any, decode: Any) -> Iterator[bytes]:
    """The live body, each chunk taped as the caller reads it; the tape ends with it."""
    with _finishing(tape):
        for chunk in live:
            yield _taken(tape, decode.decode(chunk) if decode else chunk)
        if decode:
            yield _taken(tape, decode.flush())


@contextlib.contextmanager
def _finishing(tape: Any) -> Iterator[None]:
    """The tape ends with the body: read to its end, closed early, or failed."""
    try:
        yield
    except GeneratorExit:
        tape.finish()
        raise
    except BaseException as error:
        tape.finish(error)
        raise
    tape.finish()


def _taken(tape: Any, data: bytes) -> bytes:
    tape.chunks.append(data)
    return data


def _async_stream(original: Callable[..., Any], module: Any) -> Callable[..., Any]:
    async def _do_stream(self: Any, request: Any) -> Any:
        exchange = _exchange(request)
        if exchange is None:
            return await original(self, request)
        recording = exchange.replay()
        if recording is not None:
            chunks = _async_chunks(_replayed_chunks(recording, module))
            return _answer(module.AsyncTransportResponse, recording, chunks, _released)
        with exchange.sending():
            live = await original(self, request)
        return await _arecord(exchange, live, module)

    _do_stream.__wrapped__ = original  # type: ignore[attr-defined]
    return _do_stream


async def _released(_consumed: bool) -> None:
    return None


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _arecord(exchange: Exchange, live: Any, module: Any) -> Any:
    headers = list(live.headers)
    decode = decoder(_header(headers, "content-encoding"))
    cls = module.AsyncTransportResponse
    if is_stream(_header(headers, "content-type")):
        tape = exchange.tape(live.status, headers)

        async def release(_consumed: bool) -> None:
            await live.aclose()

        recording = Recording(live.status, tape.headers)
        return _answer(cls, recording, _ataped(live, tape, decode), release)
    body = await live.read()
    recording = exchange.record(live.status, headers, decode.whole(body) if decode else body)
    return _answer(cls, recording, _async_chunks(iter([recording.body])), _released)


async def _ataped(live: Any, tape: Any, decode: Any) -> AsyncIterator[bytes]:
    """The async twin of `_taped`."""
    with _finishing(tape):
        async for chunk in live:
            yield _taken(tape, decode.decode(chunk) if decode else chunk)
        if decode:
            yield _taken(tape, decode.flush())
