"""The record/replay transport for the httpx family (httpx and httpx2).

Patching ``_transport_for_url`` is only the routing hook: for a request to a
provider host it returns a `Transport` wrapping the real one. The transport
converts the request to a `RequestInfo`, asks the session for a plan, and
either builds a response from the recording or sends the request for real
and records what comes back. Both libraries share this code: their classes
have the same names, so each gets its own subclasses, built once.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

from .._cassette import Recording
from .._session import RequestInfo, Session, Tape, intercepting_session

__all__ = ["wrap_routing"]

_DROPPED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
_STREAM_TYPES = ("text/event-stream", "ndjson", "jsonl")


def wrap_routing(lib: ModuleType, original: Callable[..., Any], *, is_async: bool) -> Any:
    """A ``_transport_for_url`` that puts our transport in front of provider hosts."""
    kit = _kit(lib)
    wrapper_cls = kit.AsyncTransport if is_async else kit.Transport

    @functools.wraps(original)
    def _transport_for_url(self: Any, url: Any) -> Any:
        transport = original(self, url)
        session = intercepting_session(url.host, url.port)
        if session is None:
            return transport
        return wrapper_cls(transport, session)

    return _transport_for_url


def is_stream(content_type: str) -> bool:
    ctype = content_type.lower()
    return any(kind in ctype for kind in _STREAM_TYPES)


def live_headers(headers: Any) -> list[tuple[str, str]]:
    """Response headers as handed on: the body is decoded, so its framing headers go."""
    return [(k, v) for k, v in headers.multi_items() if k not in _DROPPED_HEADERS]


def _describe(session: Session, request: Any, body: bytes) -> RequestInfo:
    url = request.url
    parts = (url.scheme, url.host, url.port, url.path, url.query.decode("ascii", "replace"))
    return session.describe(request.method, parts, _HeaderPairs(request.headers), body)


class _HeaderPairs(Sequence[tuple[str, str]]):
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


def _tape(session: Session, info: RequestInfo, response: Any) -> Tape:
    return Tape(session, info, response.status_code, live_headers(response.headers))


@functools.cache
def _kit(lib: ModuleType) -> Any:
    """Build the transport and stream classes for one httpx-family library."""

    def replayed(recording: Recording, tag: str = "replayed") -> Any:
        if recording.chunks is not None:
            stream: Any = ReplayStream(recording.chunks, recording.stream_error)
        elif recording.stream_error is not None:
            stream = ReplayStream(
                [recording.body] if recording.body else [], recording.stream_error
            )
        else:
            stream = lib.ByteStream(recording.body)
        return lib.Response(
            recording.status,
            headers=recording.headers,
            stream=stream,
            extensions={"ghostrun": tag},
        )

    def stream_error(error: tuple[str, str]) -> BaseException:
        cls = getattr(lib, error[0], None)
        if not (isinstance(cls, type) and issubclass(cls, lib.TransportError)):
            cls = lib.RemoteProtocolError
        exc: BaseException = cls(error[1])
        return exc

    class ReplayStream(lib.SyncByteStream, lib.AsyncByteStream):  # type: ignore[misc, name-defined]
        """Hands back the recorded chunks one by one, then the recorded break, if any."""

        def __init__(self, chunks: list[bytes], error: tuple[str, str] | None) -> None:
            self.chunks = chunks
            self.error = error

        def __iter__(self) -> Iterator[bytes]:
            yield from self.chunks
            if self.error:
                raise stream_error(self.error)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self.chunks:
                yield chunk
            if self.error:
                raise stream_error(self.error)

    class RecordingStream(lib.SyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, response: Any, tape: Tape) -> None:
            self.response, self.tape = response, tape

        def __iter__(self) -> Iterator[bytes]:
            tape = self.tape
            try:
                for chunk in self.response.iter_bytes():
                    tape.chunks.append(chunk)
                    yield chunk
            except lib.TransportError as exc:
                tape.finish(exc)
                raise
            tape.finish()

        def close(self) -> None:
            try:
                self.response.close()
            finally:
                self.tape.finish()

    class AsyncRecordingStream(lib.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, response: Any, tape: Tape) -> None:
            self.response, self.tape = response, tape

        async def __aiter__(self) -> AsyncIterator[bytes]:
            tape = self.tape
            try:
                async for chunk in self.response.aiter_bytes():
                    tape.chunks.append(chunk)
                    yield chunk
            except lib.TransportError as exc:
                tape.finish(exc)
                raise
            tape.finish()

        async def aclose(self) -> None:
            try:
                await self.response.aclose()
            finally:
                self.tape.finish()

    def recorded(response: Any, stream: Any, headers: list[tuple[str, str]] | None = None) -> Any:
        return lib.Response(
            response.status_code,
            headers=live_headers(response.headers) if headers is None else headers,
            stream=stream,
            extensions={**response.extensions, "ghostrun": "recorded"},
        )

    def whole(session: Session, info: RequestInfo, response: Any, body: bytes) -> Any:
        headers = live_headers(response.headers)
        session.commit(info, Recording(response.status_code, headers, body))
        return recorded(response, lib.ByteStream(body), headers)

    class Transport(lib.BaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any, session: Session) -> None:
            self.inner, self.session = inner, session

        def handle_request(self, request: Any) -> Any:
            session = self.session
            info = _describe(session, request, request.read())
            recording = session.plan(info)
            if recording is not None:
                return replayed(recording)
            response = self.inner.handle_request(request)
            if is_stream(response.headers.get("content-type", "")):
                return recorded(response, RecordingStream(response, _tape(session, info, response)))
            try:
                body = response.read()
            finally:
                response.close()
            return whole(session, info, response, body)

    class AsyncTransport(lib.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any, session: Session) -> None:
            self.inner, self.session = inner, session

        async def handle_async_request(self, request: Any) -> Any:
            session = self.session
            info = _describe(session, request, await request.aread())
            recording = session.plan(info)
            if recording is not None:
                return replayed(recording)
            response = await self.inner.handle_async_request(request)
            if is_stream(response.headers.get("content-type", "")):
                return recorded(
                    response, AsyncRecordingStream(response, _tape(session, info, response))
                )
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            return whole(session, info, response, body)

    class Kit:
        pass

    kit = Kit()
    kit.Transport = Transport  # type: ignore[attr-defined]
    kit.AsyncTransport = AsyncTransport  # type: ignore[attr-defined]
    return kit
