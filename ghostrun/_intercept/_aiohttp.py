"""aiohttp interception (DESIGN §1): google-genai's async road, and apps' own.

aiohttp has no transport to wrap, but since 3.12 it has client middlewares:
a chain of ``f(request, handler)`` around the function that connects and
sends. The hook wraps ``ClientSession._request`` only to append one
middleware, innermost, to every request's chain; the session's and the
request's own middlewares stay in front of it, as they are in front of the
network. aiohttp itself still builds the URL, headers, cookies and body,
follows redirects and applies timeouts and ``raise_for_status``.

For a provider host the `Middleware` turns the final `ClientRequest` into the
engine's terms (the same key as httpx's) and the engine's answer into a real
``ClientResponse`` whose ``content`` is a ``StreamReader`` fed one chunk per
wait, so a stream replays in the recorded chunks and a live stream is
recorded chunk by chunk as the client reads it. Inside an outer layer's real
send (litellm's and ``openai.DefaultAioHttpClient``'s httpx transports call
aiohttp) the engine's `route` says pass through: that layer records.

The body handed on is always decoded, without ``content-encoding``, when
recording and when replaying, also for a request made with
``auto_decompress=False`` (which leaves aiohttp's body compressed): the
middleware decodes it itself. That is a response any server may send (the
identity encoding), so code that decodes by ``content-encoding`` reads it
right; a cassette stores bodies decoded, so it is the one response replay can
give back exactly. ``import ghostrun`` never imports aiohttp, nor does opening
a session: `AiohttpAdapter.check` runs at the open if aiohttp is imported,
else when it is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from .._core._exceptions import UnsupportedLibrary
from .._store._cassette import Recording, reason_of
from ._engine import Decoder, Exchange, Tape, decoder, is_stream, route
from ._once import built, parameters, takes_keyword
from ._patch import Footprint, Restore, is_unhooked, library, replace

__all__ = ["AiohttpAdapter", "Middleware"]

_RESPONSE_ARGS = ("writer", "continue100", "timer", "request_info", "traces", "loop", "session")
_READ_LIMIT = 2**16


def adapters() -> list[AiohttpAdapter]:
    return [AiohttpAdapter()]


class AiohttpAdapter:
    """Appends the record/replay middleware to every ``ClientSession`` request."""

    waits_for = distribution = road = "aiohttp"
    supported = ">=3.14"
    footprint = Footprint(("aiohttp",), unless=("_ws_connect",))  # ws is its own road

    def __init__(self) -> None:
        self.module: Any = None

    def check(self) -> bool:
        self.module = library("aiohttp")
        if self.module is None:
            return False
        missing = _missing_hook(self.module)
        if missing:
            raise UnsupportedLibrary(
                f"aiohttp {getattr(self.module, '__version__', '?')} has no {missing}, which "
                "ghostrun needs to intercept its requests (google-genai's async calls go "
                "through aiohttp). Install aiohttp 3.14 or later: pip install 'aiohttp>=3.14'."
            )
        return True

    def install(self) -> Restore:
        cls, kit = self.module.ClientSession, Kit.of(self.module)
        return replace((cls, "_request", built(_hook, cls.__dict__["_request"], kit)))


def _hook(original: Callable[..., Any], kit: Kit) -> Any:
    return _wrap_request(original, Middleware(kit, True), Middleware(kit, False))


def _missing_hook(aiohttp: ModuleType) -> str | None:
    """What the installed aiohttp lacks of the few points we rely on, if anything."""
    request = aiohttp.ClientSession.__dict__.get("_request")
    version = tuple(int(p) for p in aiohttp.__version__.split(".")[:2] if p.isdigit())
    if version < (3, 14):  # a replayed body's StreamReader asks its protocol more before 3.14
        return "a StreamReader that reads a replayed body without its protocol (3.14 on)"
    if not callable(request):
        return "ClientSession._request"
    if not (hasattr(aiohttp, "client_middlewares") and takes_keyword(request, "middlewares")):
        return "client middlewares (ClientSession._request(middlewares=...))"
    if not callable(getattr(aiohttp.payload.Payload, "as_bytes", None)):
        return "Payload.as_bytes"
    if not set(_RESPONSE_ARGS) <= parameters(aiohttp.ClientResponse.__init__):
        return "ClientResponse(writer=, continue100=, timer=, request_info=, traces=, ...)"
    return None


def _wrap_request(original: Callable[..., Any], decoded: Middleware, raw: Middleware) -> Any:
    """``ClientSession._request`` with our middleware last (``raw``: auto_decompress=False)."""

    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        chain = kwargs.get("middlewares")
        if chain is None:
            chain = getattr(self, "_middlewares", None) or ()
        auto_decompress = kwargs.get("auto_decompress")
        if auto_decompress is None:
            auto_decompress = getattr(self, "_auto_decompress", True)
        kwargs["middlewares"] = (*chain, decoded if auto_decompress else raw)
        return await original(self, method, str_or_url, **kwargs)

    return _request


def _describe(request: Any) -> tuple[str, tuple[str, str, int | None, str, str], Any]:
    url = request.url
    parts = (url.scheme, url.host or "", url.explicit_port, url.path, url.raw_query_string)
    return request.method, parts, _pairs(request.headers)


def _pairs(headers: Any) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in headers.items()]


async def _body_of(request: Any) -> bytes:
    body = request.body
    return b"" if isinstance(body, bytes) else bytes(await body.as_bytes())


class _Wire:
    """Stands in for the connection protocol a ``StreamReader`` throttles."""

    connected = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


_WIRE = _Wire()


class Middleware:
    """The client middleware: answer a provider request from the cassette, or send and record.

    ``decoded``: aiohttp decodes the live body (its default); False for a
    request made with ``auto_decompress=False``, whose body this decodes.
    """

    __slots__ = ("decoded", "kit")

    def __init__(self, kit: Kit, decoded: bool) -> None:
        self.kit, self.decoded = kit, decoded

    async def __call__(self, req: Any, handler: Any) -> Any:
        url = req.url
        deck = route(url.host or "", url.explicit_port, url)
        if deck is None:
            return await handler(req)
        # an upgrade not made by the WebSocket road (``_aiohttp_ws`` records its own, inside
        # bypass_interception, so it never gets here): not an exchange to record
        if "upgrade" in req.headers:
            # the WebSocket road unhooked: the guard refuses it, as UnsupportedLibrary
            if deck.mode.offline and not is_unhooked("aiohttp ws"):
                raise deck.forbid(f"a WebSocket connection to {url}")
            return await handler(req)
        exchange = Exchange(deck, *_describe(req), await _body_of(req))
        recording = exchange.replay()
        if recording is not None:
            return self.kit.replayed(req, recording)
        for name in exchange.foreign_credentials(list(req.headers.keys())):
            req.headers.popall(name, None)  # a redirect hop to another host: not its keys
        with exchange.sending():
            live = await handler(req)
        return await self.kit.record(req, exchange, live, self.decoded)


class Kit:
    """What the middleware needs of the installed aiohttp, looked up once.

    ``content`` must be an ``aiohttp.StreamReader``, so the readers below get
    a subclass of it each (their code is here, once).
    """

    def __init__(self, aiohttp: ModuleType) -> None:
        from multidict import CIMultiDict, CIMultiDictProxy

        self.aiohttp = aiohttp
        self.proxy, self.multidict = CIMultiDictProxy, CIMultiDict
        params = inspect.signature(aiohttp.ClientResponse).parameters
        self.takes_stream_writer = "stream_writer" in params
        base = (aiohttp.StreamReader,)
        self.ReplayReader = type("ReplayReader", (ReplayReader, *base), {"__module__": __name__})
        self.RelayReader = type("RelayReader", (RelayReader, *base), {"__module__": __name__})

    @staticmethod
    @functools.cache
    def of(aiohttp: ModuleType) -> Kit:
        return Kit(aiohttp)

    def replayed(self, req: Any, recording: Recording) -> Any:
        chunks = recording.chunks if recording.chunks is not None else [recording.body]
        reader = self.ReplayReader(self, chunks, recording.stream_error, req.loop)
        status = recording.status
        return self.response(req, status, reason_of(recording), recording.headers, reader)

    async def record(self, req: Any, exchange: Exchange, live: Any, decoded: bool) -> Any:
        headers = [(str(name), value) for name, value in live.headers.items()]  # str, not istr
        decode = None if decoded else decoder(live.headers.get("content-encoding", ""))
        reason = live.reason
        if is_stream(live.headers.get("content-type", "")):
            tape = exchange.tape(live.status, headers, reason)
            chunked = "chunked" in live.headers.get("transfer-encoding", "").lower()
            relay = self.RelayReader(self, live, tape, decode, chunked, req.loop)
            return self.response(req, live.status, reason or "", tape.headers, relay)
        try:
            body = await live.read()
        finally:
            live.release()
        if decode is not None:
            body = decode.whole(body)
        return self.replayed(req, exchange.record(live.status, headers, body, reason))

    def response(
        self, req: Any, status: int, reason: str, headers: list[tuple[str, str]], content: Any
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
        if self.takes_stream_writer:
            kwargs["stream_writer"] = _SentWriter()
        resp = req.response_class(req.method, req.original_url, **kwargs)
        resp.version = self.aiohttp.HttpVersion11
        resp.status, resp.reason = status, reason
        resp._headers = self.proxy(self.multidict(headers))
        resp._raw_headers = tuple((k.encode(), v.encode()) for k, v in headers)
        cookies = tuple(value for name, value in headers if name.lower() == "set-cookie")
        resp._raw_cookie_headers = cookies or None
        resp._closed = False
        resp.content = content
        content.on_eof(resp._response_eof)
        return resp

    def stream_error(self, error: tuple[str, str]) -> BaseException:
        """The recorded break as aiohttp's own exception."""
        aiohttp = self.aiohttp
        cls = getattr(aiohttp, error[0], None)
        kinds = (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)
        if not (isinstance(cls, type) and issubclass(cls, kinds)):
            cls = aiohttp.ClientPayloadError
        exc: BaseException = cls(error[1])
        return exc


class ChunkReader:
    """A StreamReader that gets its next chunk by calling `pull` instead of waiting."""

    kit: Kit

    def __init__(self, kit: Kit, loop: Any) -> None:
        self.kit = kit
        super().__init__(_WIRE, _READ_LIMIT, loop=loop)  # type: ignore[call-arg]
        self.begin_http_chunk_receiving()  # so iter_chunks() sees the chunk boundaries

    def give(self, chunk: bytes) -> None:
        self.feed_data(chunk)
        self.end_http_chunk_receiving()

    def fail(self, exc: BaseException) -> NoReturn:
        self.kit.aiohttp.StreamReader.set_exception(self, exc)
        raise exc

    async def _wait(self, func_name: str) -> None:
        await self.pull()

    async def pull(self) -> None:
        raise NotImplementedError

    # aiohttp.StreamReader's, for the type checker (the real ones come from the subclass)
    if TYPE_CHECKING:

        def begin_http_chunk_receiving(self) -> None: ...
        def end_http_chunk_receiving(self) -> None: ...
        def feed_data(self, data: bytes) -> None: ...
        def feed_eof(self) -> None: ...
        def set_exception(self, exc: BaseException, *args: Any, **kwargs: Any) -> None: ...


class ReplayReader(ChunkReader):
    """Hands out the recorded chunks one per wait, then the end or the recorded break."""

    def __init__(self, kit: Kit, chunks: Iterable[bytes], error: Any, loop: Any) -> None:
        super().__init__(kit, loop)
        self.chunks = iter([chunk for chunk in chunks if chunk])
        self.error = error

    async def pull(self) -> None:
        chunk = next(self.chunks, None)
        if chunk is not None:
            self.give(chunk)
        elif self.error is not None:
            self.fail(self.kit.stream_error(self.error))
        else:
            self.feed_eof()


class RelayReader(ChunkReader):
    """Passes a live stream on chunk by chunk (decoded), taping each chunk for the cassette.

    A chunk is what aiohttp reports as one: of a chunked response, one HTTP
    chunk, however many reads it took to arrive (``readchunk`` says where one
    ends); of any other, what each read brought. So a server's event written as
    one chunk in two TCP pieces is one chunk here, in the cassette and in replay,
    as ``iter_chunks()`` reports it without ghostrun.
    """

    def __init__(
        self, kit: Kit, live: Any, tape: Tape, decode: Decoder | None, chunked: bool, loop: Any
    ) -> None:
        super().__init__(kit, loop)
        self.live, self.tape, self.decode, self.chunked = live, tape, decode, chunked
        self.pending = b""  # the start of an HTTP chunk whose end has not arrived

    async def pull(self) -> None:
        while True:
            try:
                data, end_of_chunk = await self.live.content.readchunk()
            except self.kit.aiohttp.ClientError as exc:  # the stream broke: record the break
                if self.pending:  # what arrived of the last chunk first (the break comes next)
                    self.hand_on(self.take_pending())
                    return
                self.tape.finish(exc)
                self.live.close()
                self.fail(exc)
            end = not data and not end_of_chunk  # (b"", False) is the end of the stream
            if self.decode is not None:
                data = self.decode.decode(data) + (self.decode.flush() if end else b"")
            if self.chunked and not (end_of_chunk or end):
                self.pending += data  # the rest of this chunk is still on its way
                continue
            self.hand_on(self.take_pending() + data)
            if end:
                self.tape.finish()
                self.feed_eof()
            return

    def take_pending(self) -> bytes:
        pending, self.pending = self.pending, b""
        return pending

    def hand_on(self, chunk: bytes) -> None:
        if chunk:
            self.tape.chunks.append(chunk)
            self.give(chunk)

    def set_exception(self, exc: BaseException, *args: Any, **kwargs: Any) -> None:
        """The response was released or closed before the end: keep what arrived."""
        super().set_exception(exc, *args, **kwargs)
        self.tape.finish()
        self.live.close()


class _SentWriter:
    """What a ClientResponse asks of the writer of a request already sent: nothing to write."""

    output_size = 0
