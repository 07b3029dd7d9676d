"""urllib3 (2.x): the road of ``requests`` and botocore/boto3 (DESIGN §1).

The hook is ``HTTPConnectionPool._make_request``, which urllib3 calls once
per attempt with a connection from the pool that it has not opened yet:
``PoolManager``, ``requests`` and botocore (``URLLib3Session``) all send
through it. ``urlopen`` around it keeps urllib3's own retries, redirects and
pool bookkeeping, so they behave as they do live. The one thing ``urlopen``
does on the network before it is the CONNECT to an HTTPS proxy, so
``HTTPSConnectionPool._prepare_proxy`` is deferred to the moment of sending.

The hook only converts: the pool's request into the engine's terms, the
engine's `Recording` into a real ``urllib3.HTTPResponse``, built the same way
whether replayed or live: over an ``http.client.HTTPResponse`` that reads an
in-memory wire (a status line, the framing header, then the body, one HTTP
chunk per recorded chunk for a stream). So every way of reading
(``preload_content``, ``read(amt)``, ``stream()``, ``read_chunked()``,
``requests``' ``iter_content``) works as it does live, a stream comes back in
its recorded chunks, and a recorded break ends the wire early, as a cut
connection does. When recording, that wire is fed from the live response as
the caller reads it, each chunk taped for the cassette: what the caller gets
when recording is what it gets in replay. Bodies are handed on decoded (no
``content-encoding``), as the cassette stores them.
``import ghostrun`` never imports urllib3, nor does opening a session:
`Urllib3Adapter.check` runs at the open if urllib3 is imported, else when it is.
"""

from __future__ import annotations

import functools
import http.client
import io
import re
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

from .._core._exceptions import UnsupportedLibrary
from .._store._cassette import Recording, reason_of
from ._engine import Exchange, Tape, is_stream, route
from ._once import built, parameters
from ._patch import Restore, library, replace

__all__ = ["Urllib3Adapter", "adapters"]

_HOOK_ARGS = ("response_conn", "preload_content", "decode_content")
_RESPONSE_ARGS = (
    "original_response",
    "pool",
    "connection",
    "retries",
    "request_method",
    "version_string",  # urllib3 2.3 on
)
_END = b"0\r\n\r\n"
_TUNNEL = "_ghostrun_tunnel_pending"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADER_TEXT = re.compile(r"[\t\x20-\x7e\x80-\xff]*")

UrlParts = tuple[str, str, int | None, str, str]


def adapters() -> list[Urllib3Adapter]:
    return [Urllib3Adapter()]


class Urllib3Adapter:
    """Wraps ``HTTPConnectionPool._make_request``, where every urllib3 request is sent."""

    waits_for = distribution = road = "urllib3"
    supported = ">=2.3"

    def __init__(self) -> None:
        self.module: Any = None

    def check(self) -> bool:
        self.module = library("urllib3")
        if self.module is None:
            return False
        missing = _missing_hook(self.module)
        if missing:
            raise UnsupportedLibrary(
                f"urllib3 {getattr(self.module, '__version__', '?')} has no {missing}, which "
                "ghostrun needs to intercept its requests (requests and boto3 send through "
                "urllib3). Install urllib3 2.3 or later: pip install 'urllib3>=2.3'."
            )
        return True

    def install(self) -> Restore:
        plain = self.module.connectionpool.HTTPConnectionPool
        tls = self.module.connectionpool.HTTPSConnectionPool
        originals = plain.__dict__["_make_request"], tls.__dict__["_prepare_proxy"]
        hook = built(_hook, self.module, *originals)
        return replace((plain, "_make_request", hook), (tls, "_prepare_proxy", _defer_tunnel))


def _missing_hook(urllib3: ModuleType) -> str | None:
    """What the installed urllib3 lacks of the few points we rely on, if anything."""
    pool = getattr(getattr(urllib3, "connectionpool", None), "HTTPConnectionPool", None)
    make_request = getattr(pool, "__dict__", {}).get("_make_request")
    if not callable(make_request):
        return "HTTPConnectionPool._make_request"
    if not set(_HOOK_ARGS) <= parameters(make_request):
        return "HTTPConnectionPool._make_request(response_conn=, preload_content=, ...)"
    https = getattr(urllib3.connectionpool, "HTTPSConnectionPool", None)
    if not callable(getattr(https, "__dict__", {}).get("_prepare_proxy")):
        return "HTTPSConnectionPool._prepare_proxy"
    response = getattr(urllib3, "HTTPResponse", None)
    if response is None or not callable(getattr(response, "read_chunked", None)):
        return "HTTPResponse.read_chunked"
    if not set(_RESPONSE_ARGS) <= parameters(response.__init__):
        return "HTTPResponse(original_response=, pool=, connection=, version_string=, ...)"
    return None


def _hook(
    urllib3: ModuleType, original: Callable[..., Any], open_tunnel: Callable[[Any, Any], None]
) -> Any:
    """A ``_make_request`` that answers a provider request from the cassette or records it."""

    def send(pool: Any, conn: Any, *args: Any, **kw: Any) -> Any:
        if conn.__dict__.pop(_TUNNEL, False):
            open_tunnel(pool, conn)
        return original(pool, conn, *args, **kw)

    @functools.wraps(original)
    def _make_request(
        self: Any,
        conn: Any,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        **kw: Any,
    ) -> Any:
        target = _target(self, url)
        deck = route(target[1], target[2], _Url(target))
        if deck is None:
            return send(self, conn, method, url, body, headers, **kw)
        data = _body_bytes(body)
        pairs = _pairs(self.headers if headers is None else headers)
        exchange = Exchange(deck, method, target, pairs, data)
        reply = _Reply(urllib3, self, method, url, kw)
        recording = exchange.replay()
        if recording is not None:
            return reply.replayed(recording)
        headers = _without(exchange, self.headers if headers is None else headers)
        with exchange.sending():
            live = send(self, conn, method, url, data, headers, **_unloaded(kw))
        return reply.recorded(exchange, live)

    return _make_request


def _without(exchange: Exchange, headers: Any) -> Any:
    """The headers to send: a redirect hop to another host goes without the first's keys."""
    foreign = exchange.foreign_credentials(_text(name) for name in headers)
    if not foreign:
        return headers
    drop = {name.lower() for name in foreign}
    return {name: value for name, value in headers.items() if _text(name).lower() not in drop}


def _defer_tunnel(pool: Any, conn: Any) -> None:
    """``urlopen`` opens an HTTPS proxy's tunnel before ``_make_request``: only mark it.

    The tunnel is opened when the request is sent (`_hook`), so a replayed
    request never connects to the proxy, which would connect to the provider.
    """
    conn.__dict__[_TUNNEL] = True


def _unloaded(kw: dict[str, Any]) -> dict[str, Any]:
    """The live response is read by `_Reply.recorded`, which urllib3 must not do first."""
    return {**kw, "preload_content": False}


class _Reply:
    """Builds the ``urllib3.HTTPResponse`` handed back for one request, replayed or live."""

    def __init__(
        self, urllib3: ModuleType, pool: Any, method: str, url: str, kw: dict[str, Any]
    ) -> None:
        self.urllib3, self.pool, self.method, self.url, self.kw = urllib3, pool, method, url, kw

    def replayed(self, recording: Recording) -> Any:
        """From the cassette; its pool connection (never opened) goes back once it is read."""
        chunked, connection = _is_chunked(recording), self.kw.get("response_conn")
        wire = _replay_wire(recording)
        return self._response(
            recording.status, reason_of(recording), recording.headers, wire, chunked, connection
        )

    def recorded(self, exchange: Exchange, live: Any) -> Any:
        """Sent for real: tape a stream as the caller reads it, or read and record a whole body."""
        headers, reason = _received(live), live.reason
        if not is_stream(live.headers.get("content-type", "")):
            body = live.read(decode_content=True)
            recording = exchange.record(live.status, headers, body, reason)
            wire = _replay_wire(recording)
            return self._response(recording.status, reason or "", recording.headers, wire)
        tape = exchange.tape(live.status, headers, reason)
        wire = _relay(self.urllib3, live, tape)
        on_close = functools.partial(_abandon, live, tape)
        return self._response(
            tape.status, reason or "", tape.headers, wire, True, on_close=on_close
        )

    def _response(
        self,
        status: int,
        reason: str,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        chunked: bool = False,
        connection: Any = None,
        on_close: Callable[[], None] | None = None,
    ) -> Any:
        """A real ``urllib3.HTTPResponse`` reading ``body`` (whole, or HTTP chunks) off a wire,
        with the reason phrase given (the provider's, as recorded or received)."""
        if not _one_line(reason):  # a hand-edited cassette: never a second line on the wire
            reason = ""
        if chunked:
            framing = ("transfer-encoding", "chunked")
        else:
            whole = b"".join(body)
            framing, body = ("content-length", str(len(whole))), iter([whole])
        headers = [*headers, framing]
        socket = _Socket(_Wire(_head(status, reason, headers), body, on_close))
        raw = http.client.HTTPResponse(socket, method=self.method)  # type: ignore[arg-type]
        raw.begin()
        kw = self.kw
        return self.urllib3.HTTPResponse(
            body=raw,
            headers=self.urllib3.HTTPHeaderDict(headers),
            status=status,
            version=11,
            version_string="HTTP/1.1",
            reason=reason,
            preload_content=kw.get("preload_content", True),
            decode_content=kw.get("decode_content", True),
            original_response=raw,
            pool=self.pool,
            connection=connection,
            retries=kw.get("retries"),
            enforce_content_length=kw.get("enforce_content_length", True),
            request_method=self.method,
            request_url=self.url,
        )


def _head(status: int, reason: str, headers: list[tuple[str, str]]) -> bytes:
    """Status line and headers, as a server sends them: ``requests`` reads its cookies here."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{name}: {value}" for name, value in headers if _one_line(name + value)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _one_line(text: str) -> bool:
    """Fits in one header line on the wire (a hand-edited cassette might hold anything)."""
    return _HEADER_TEXT.fullmatch(text) is not None


def _abandon(live: Any, tape: Tape) -> None:
    """The wire was closed: at its end (nothing left to do), or early: keep what arrived."""
    tape.finish()
    live.close()


# -- the request, in the engine's terms -------------------------------------------------


def _target(pool: Any, url: str) -> UrlParts:
    """(scheme, host, port, path, query) of a request target: ``/path?q`` or, via a proxy, a URL."""
    if "://" in url[:12]:
        parts = urlsplit(url)
        scheme, host, port, path, query = (
            parts.scheme,
            parts.hostname or "",
            parts.port,
            parts.path,
            parts.query,
        )
    else:
        scheme, host, port = pool.scheme, pool.host, pool.port
        path, _, query = url.partition("?")
    return scheme, host, port, unquote(path), query  # the path decoded, as httpx's URL.path is


class _Url:
    """The request's URL, spelled out only if the engine's unlisted-host warning asks for it."""

    __slots__ = ("parts",)

    def __init__(self, parts: UrlParts) -> None:
        self.parts = parts

    def __str__(self) -> str:
        scheme, host, port, path, query = self.parts
        netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
        return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _received(live: Any) -> list[tuple[str, str]]:
    """Response headers in the order and spelling sent (``live.headers`` groups a repeated
    name at its first place; the ``http.client`` message under it does not)."""
    message = getattr(getattr(live, "_original_response", None), "msg", None)
    return list(message.items()) if message is not None else list(live.headers.items())


def _pairs(headers: Any) -> list[tuple[str, str]]:
    return [(_text(name).lower(), _text(value)) for name, value in headers.items()]


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _body_bytes(body: Any) -> bytes:
    """The request body as bytes, whatever urllib3 was given (and sent as these bytes)."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        return _as_bytes(body.read())
    return b"".join(_as_bytes(chunk) for chunk in body)


def _as_bytes(data: str | bytes | bytearray | memoryview) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


# -- the response body, as it comes off the wire -----------------------------------------


def _is_chunked(recording: Recording) -> bool:
    return recording.chunks is not None or recording.stream_error is not None


def _replay_wire(recording: Recording) -> Iterator[bytes]:
    """The recorded body as it would come off the wire, after the head."""
    if not _is_chunked(recording):
        yield recording.body
        return
    chunks = recording.chunks if recording.chunks is not None else [recording.body]
    yield from (_chunk(chunk) for chunk in chunks if chunk)
    if recording.stream_error is None:
        yield _END


def _relay(urllib3: ModuleType, live: Any, tape: Tape) -> Iterator[bytes]:
    """A live stream's chunks as they arrive, each taped; a break ends the wire early."""
    try:
        for chunk in _live_chunks(live):
            if chunk:
                tape.chunks.append(chunk)
                yield _chunk(chunk)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        tape.finish(exc)
        live.close()
        return
    tape.finish()
    yield _END


def _live_chunks(live: Any) -> Iterable[bytes]:
    """One HTTP chunk at a time when the stream is chunked, else as the bytes arrive."""
    if live.chunked and live.supports_chunked_reads():
        return live.read_chunked(decode_content=True)  # type: ignore[no-any-return]
    return iter(functools.partial(live.read1, decode_content=True), b"")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class _Wire(io.RawIOBase):
    """The bytes of one response, pulled piece by piece as the reader asks for more."""

    def __init__(
        self, head: bytes, pieces: Iterator[bytes], on_close: Callable[[], None] | None
    ) -> None:
        super().__init__()
        self._pending = memoryview(head)
        self._pieces = pieces
        self._on_close = on_close

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._pending = memoryview(piece)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        if not self.closed and self._on_close is not None:
            self._on_close()
        super().close()


class _Socket:
    """What ``http.client.HTTPResponse`` asks of a socket: a file to read the response from."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(self._wire)
