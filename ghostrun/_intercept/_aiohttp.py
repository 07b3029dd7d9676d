"""aiohttp interception (DESIGN §1): google-genai's async road, and apps' own.

aiohttp has no transport to wrap, but since 3.12 it has client middlewares:
a chain of ``f(request, handler)`` around the function that connects and
sends. The hook wraps ``ClientSession._request`` only to append one
middleware, innermost, to every request's chain; the session's and the
request's own middlewares stay in front of it, as they are in front of the
network. aiohttp itself still builds the URL, headers, cookies and body,
follows redirects and applies timeouts and ``raise_for_status``.

For a provider host the middleware turns the final `ClientRequest` into a
`RequestInfo` (the same key as httpx's), and either answers it from the
cassette or sends it and records what comes back. Either way the caller gets
a real ``ClientResponse`` whose ``content`` is a ``StreamReader`` fed one
chunk per wait, so a stream replays in the recorded chunks and a live stream
is recorded chunk by chunk as the client reads it. ``import ghostrun`` never
imports aiohttp: `AiohttpAdapter.check` does, once a session opens.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterable
from http import HTTPStatus
from types import ModuleType
from typing import Any, NoReturn

from .._cassette import Recording
from .._exceptions import UnsupportedHttpx
from .._modes import Mode
from .._session import RequestInfo, Session, Tape, intercepting_session
from ._httpx import is_stream

__all__ = ["AiohttpAdapter"]

_DROPPED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
_RESPONSE_ARGS = ("writer", "continue100", "timer", "request_info", "traces", "loop", "session")
_READ_LIMIT = 2**16


class AiohttpAdapter:
    """Appends the record/replay middleware to every ``ClientSession`` request."""

    def __init__(self) -> None:
        self.module: Any = None

    def check(self) -> bool:
        if importlib.util.find_spec("aiohttp") is None:
            return False
        self.module = importlib.import_module("aiohttp")
        missing = _missing_hook(self.module)
        if missing:
            raise UnsupportedHttpx(
                f"aiohttp {getattr(self.module, '__version__', '?')} has no {missing}, which "
                "ghostrun needs to intercept its requests (google-genai's async calls go "
                "through aiohttp). Install aiohttp 3.12 or later: pip install 'aiohttp>=3.12'."
            )
        return True

    def install(self) -> Callable[[], None]:
        cls = self.module.ClientSession
        original = cls.__dict__["_request"]
        cls._request = _wrap_request(original, _kit(self.module).middleware)

        def restore() -> None:
            cls._request = original

        return restore


def _missing_hook(aiohttp: ModuleType) -> str | None:
    """What the installed aiohttp lacks of the few points we rely on, if anything."""
    request = aiohttp.ClientSession.__dict__.get("_request")
    if not callable(request):
        return "ClientSession._request"
    if not (hasattr(aiohttp, "client_middlewares") and _takes_keyword(request, "middlewares")):
        return "client middlewares (ClientSession._request(middlewares=...))"
    if not callable(getattr(aiohttp.payload.Payload, "as_bytes", None)):
        return "Payload.as_bytes"
    response_params = inspect.signature(aiohttp.ClientResponse.__init__).parameters
    if not set(_RESPONSE_ARGS) <= set(response_params):
        return "ClientResponse(writer=, continue100=, timer=, request_info=, traces=, ...)"
    return None


def _takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """True if `fn` accepts ``name=`` (another library's ``**kwargs`` wrapper passes it on)."""
    params = inspect.signature(fn).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _wrap_request(original: Callable[..., Any], middleware: Any) -> Any:
    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        chain = kwargs.get("middlewares")
        if chain is None:
            chain = getattr(self, "_middlewares", None) or ()
        kwargs["middlewares"] = (*chain, middleware)
        return await original(self, method, str_or_url, **kwargs)

    return _request


def _describe(session: Session, request: Any, body: bytes) -> RequestInfo:
    url = request.url
    parts = (url.scheme, url.host or "", url.explicit_port, url.path, url.raw_query_string)
    headers = [(name.lower(), value) for name, value in request.headers.items()]
    return session.describe(request.method, parts, headers, body)


def _live_headers(headers: Any) -> list[tuple[str, str]]:
    """Response headers as handed on: the body is decoded, so its framing headers go."""
    pairs = ((name.lower(), value) for name, value in headers.items())
    return [(name, value) for name, value in pairs if name not in _DROPPED_HEADERS]


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class _Wire:
    """Stands in for the connection protocol a ``StreamReader`` throttles."""

    connected = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


_WIRE = _Wire()


@functools.cache
def _kit(aiohttp: ModuleType) -> Any:
    """Build the middleware and its stream readers for the installed aiohttp."""
    from multidict import CIMultiDict, CIMultiDictProxy

    takes_stream_writer = "stream_writer" in inspect.signature(aiohttp.ClientResponse).parameters

    def stream_error(error: tuple[str, str]) -> BaseException:
        cls = getattr(aiohttp, error[0], None)
        kinds = (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)
        if not (isinstance(cls, type) and issubclass(cls, kinds)):
            cls = aiohttp.ClientPayloadError
        exc: BaseException = cls(error[1])
        return exc

    class ChunkReader(aiohttp.StreamReader):  # type: ignore[misc, name-defined]
        """A StreamReader that gets its next chunk by calling `pull` instead of waiting."""

        def __init__(self, loop: Any) -> None:
            super().__init__(_WIRE, _READ_LIMIT, loop=loop)
            self.begin_http_chunk_receiving()  # so iter_chunks() sees the chunk boundaries

        def give(self, chunk: bytes) -> None:
            self.feed_data(chunk)
            self.end_http_chunk_receiving()

        def fail(self, exc: BaseException) -> NoReturn:
            aiohttp.StreamReader.set_exception(self, exc)
            raise exc

        async def _wait(self, func_name: str) -> None:
            await self.pull()

        async def pull(self) -> None:
            raise NotImplementedError

    class ReplayReader(ChunkReader):
        """Hands out the recorded chunks one per wait, then the end or the recorded break."""

        def __init__(self, chunks: Iterable[bytes], error: Any, loop: Any) -> None:
            super().__init__(loop)
            self.chunks = iter([chunk for chunk in chunks if chunk])
            self.error = error

        async def pull(self) -> None:
            chunk = next(self.chunks, None)
            if chunk is not None:
                self.give(chunk)
            elif self.error is not None:
                self.fail(stream_error(self.error))
            else:
                self.feed_eof()

    class RelayReader(ChunkReader):
        """Passes a live stream on chunk by chunk, taping each chunk for the cassette."""

        def __init__(self, live: Any, tape: Tape, loop: Any) -> None:
            super().__init__(loop)
            self.live, self.tape = live, tape

        async def pull(self) -> None:
            try:
                chunk, end_of_chunk = await self.live.content.readchunk()
            except aiohttp.ClientError as exc:  # the stream broke: record the break
                self.tape.finish(exc)
                self.live.close()
                self.fail(exc)
            if chunk:
                self.tape.chunks.append(chunk)
                self.give(chunk)
            elif not end_of_chunk:  # (b"", False) is the end of the stream
                self.tape.finish()
                self.feed_eof()

        def set_exception(self, exc: BaseException, *args: Any, **kwargs: Any) -> None:
            """The response was released or closed before the end: keep what arrived."""
            super().set_exception(exc, *args, **kwargs)
            self.tape.finish()
            self.live.close()

    def response(
        req: Any, status: int, reason: str, headers: list[tuple[str, str]], content: Any
    ) -> Any:
        """A real ClientResponse for `req`, as if it had just read status and headers."""
        kwargs: dict[str, Any] = {
            "writer": None,
            "continue100": None,
            "timer": getattr(req, "_timer", None),
            "request_info": req.request_info,
            "traces": getattr(req, "_traces", None) or [],
            "loop": req.loop,
            "session": getattr(req, "_session", None),
        }
        if takes_stream_writer:
            kwargs["stream_writer"] = _SentWriter()
        resp = req.response_class(req.method, req.original_url, **kwargs)
        resp.version = aiohttp.HttpVersion11
        resp.status, resp.reason = status, reason
        resp._headers = CIMultiDictProxy(CIMultiDict(headers))
        resp._raw_headers = tuple((k.encode(), v.encode()) for k, v in headers)
        cookies = tuple(value for name, value in headers if name == "set-cookie")
        resp._raw_cookie_headers = cookies or None
        resp._closed = False
        resp.content = content
        content.on_eof(resp._response_eof)
        return resp

    def replayed(req: Any, recording: Recording, reason: str | None = None) -> Any:
        chunks = recording.chunks if recording.chunks is not None else [recording.body]
        reader = ReplayReader(chunks, recording.stream_error, req.loop)
        status = recording.status
        return response(req, status, reason or _reason(status), recording.headers, reader)

    async def body_of(req: Any) -> bytes:
        body = req.body
        return b"" if isinstance(body, bytes) else bytes(await body.as_bytes())

    async def middleware(req: Any, handler: Any) -> Any:
        """Answer a provider request from the cassette, or send it and record the answer."""
        session = intercepting_session(req.url.host or "", req.url.explicit_port)
        if session is None:
            return await handler(req)
        if "upgrade" in req.headers:  # a websocket (a realtime API): not an exchange to record
            if session.mode is Mode.REPLAY:
                raise session.forbid(f"a WebSocket connection to {req.url}")
            return await handler(req)
        info = _describe(session, req, await body_of(req))
        recording = session.plan(info)
        if recording is not None:
            return replayed(req, recording)
        live = await handler(req)
        headers = _live_headers(live.headers)
        if is_stream(live.headers.get("content-type", "")):
            tape = Tape(session, info, live.status, headers)
            relay = RelayReader(live, tape, req.loop)
            return response(req, live.status, live.reason or "", headers, relay)
        try:
            body = await live.read()
        finally:
            live.release()
        recording = Recording(live.status, headers, body)
        session.commit(info, recording)
        return replayed(req, recording, live.reason)

    class Kit:
        pass

    kit = Kit()
    kit.middleware = middleware  # type: ignore[attr-defined]
    return kit


class _SentWriter:
    """What a ClientResponse asks of the writer of a request already sent: nothing to write."""

    output_size = 0
