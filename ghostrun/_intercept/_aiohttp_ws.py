"""aiohttp's ``ClientSession.ws_connect`` (DESIGN §1): WebSocket conversations over aiohttp.

The hook wraps ``ClientSession._ws_connect``, the coroutine behind
``ws_connect`` (``await`` and ``async with`` both go through it). For a
provider host, `_wslink` decides: recording wraps the live
``ClientWebSocketResponse`` in a pass-through proxy that tapes each message
and the close; replaying returns a stand-in that never connects, with
aiohttp's semantics: ``receive(timeout=)`` raises ``TimeoutError``, a server
close arrives as a ``CLOSE`` message and then ``CLOSED``, async iteration
ends at the close.

A connection this road owns (recorded, or handed over live in ``auto``) is
made inside `bypass_interception`, so the HTTP road's middleware
(``_aiohttp``, which refuses an ``upgrade`` request in ``replay``) passes it
on untouched and it is recorded once, here. Any other ``ws_connect`` (a host
no session lists, no session) goes to aiohttp unchanged, and the middleware
treats its upgrade request as ever.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any

from .._core._exceptions import UnsupportedLibrary
from .._recording._session import bypass_interception
from .._secrets._headers import SUBPROTOCOLS
from .._store._wscassette import Close
from ._once import built
from ._patch import Footprint, Restore, library, replace
from ._wslink import NeedsLive, Player, Recorder, Replaying, open_link

__all__ = ["AiohttpWsAdapter", "adapters"]


def adapters() -> list[AiohttpWsAdapter]:
    """This road's adapter, for `_patch.ROADS`: aiohttp's ``ClientSession._ws_connect``."""
    return [AiohttpWsAdapter()]


class AiohttpWsAdapter:
    """Wraps ``ClientSession._ws_connect``."""

    waits_for = distribution = "aiohttp"
    road = "aiohttp ws"
    supported = ">=3.14"
    footprint = Footprint(("aiohttp",), functions=("_ws_connect",))

    def __init__(self) -> None:
        self.module: Any = None

    def check(self) -> bool:
        self.module = library("aiohttp")
        if self.module is None:
            return False
        if not callable(self.module.ClientSession.__dict__.get("_ws_connect")):
            raise UnsupportedLibrary(
                f"aiohttp {getattr(self.module, '__version__', '?')} has no "
                "ClientSession._ws_connect, which ghostrun wraps to record WebSocket "
                "conversations. Install aiohttp 3.14 or later: pip install 'aiohttp>=3.14'."
            )
        return True

    def install(self) -> Restore:
        cls = self.module.ClientSession
        return replace((cls, "_ws_connect", built(_wrap, cls.__dict__["_ws_connect"])))


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def _ws_connect(self: Any, url: Any, **kwargs: Any) -> Any:
        link = _link(self, url, kwargs)
        if link is None:
            return await original(self, url, **kwargs)
        decode_text = kwargs.get("decode_text", True)

        async def connect() -> Any:
            with bypass_interception():  # this road owns it: the HTTP middleware passes it on
                return await original(self, url, **kwargs)

        if isinstance(link, Player):
            return AiohttpReplay(link, connect, decode_text)
        return AiohttpTaped(await connect(), link)

    return _ws_connect


def _link(session: Any, url: Any, kwargs: dict[str, Any]) -> Player | Recorder | None:
    from aiohttp import BasicAuth
    from multidict import CIMultiDict
    from yarl import URL

    target = URL(url)
    if session._base_url is not None and not target.is_absolute():
        target = session._base_url.join(target)
    if kwargs.get("params"):
        target = target.extend_query(kwargs["params"])
    headers = CIMultiDict(session.headers)
    headers.update(kwargs.get("headers") or {})
    pairs = [(str(k), str(v)) for k, v in headers.items()]
    # Basic auth aiohttp adds to the handshake itself (auth=, the session's, the URL's
    # user:password): its secrets are masked in the frames like a header's.
    for auth in (kwargs.get("auth"), session.auth, BasicAuth.from_url(target)):
        if auth is not None:
            pairs.append(("authorization", auth.encode()))
    if kwargs.get("protocols"):  # a key may be offered as one (``openai-insecure-api-key.``)
        pairs.append((SUBPROTOCOLS, ", ".join(map(str, kwargs["protocols"]))))
    return open_link(
        target.scheme,
        target.host or "",
        target.explicit_port,
        target.raw_path,
        target.raw_query_string,
        pairs,
    )


def _message(kind: str, data: Any = None, extra: Any = None) -> Any:
    import aiohttp

    return aiohttp.WSMessage(aiohttp.WSMsgType[kind], data, extra)


class _Receiving:
    """The ``receive_*`` helpers and iteration, over ``receive``, as aiohttp has them."""

    async def receive(self, timeout: float | None = None) -> Any:
        raise NotImplementedError

    async def receive_str(self, *, timeout: float | None = None) -> Any:
        return await self._receive_kind("TEXT", timeout)

    async def receive_bytes(self, *, timeout: float | None = None) -> bytes:
        data: bytes = await self._receive_kind("BINARY", timeout)
        return data

    async def receive_json(
        self, *, loads: Callable[[Any], Any] = json.loads, timeout: float | None = None
    ) -> Any:
        return loads(await self.receive_str(timeout=timeout))

    async def _receive_kind(self, kind: str, timeout: float | None) -> Any:
        import aiohttp

        msg = await self.receive(timeout)
        if msg.type is not aiohttp.WSMsgType[kind]:
            raise aiohttp.WSMessageTypeError(
                f"Received message {msg.type}:{msg.data!r} is not WSMsgType.{kind}"
            )
        return msg.data

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        import aiohttp

        msg = await self.receive()
        ends = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED)
        if msg.type in ends:
            raise StopAsyncIteration
        return msg

    async def send_json(
        self, data: Any, compress: int | None = None, *, dumps: Callable[[Any], str] = json.dumps
    ) -> None:
        await self.send_str(dumps(data), compress=compress)

    async def send_str(self, data: str, compress: int | None = None) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        raise NotImplementedError


class AiohttpTaped(_Receiving):
    """A live ``ClientWebSocketResponse`` that tapes every message for the cassette."""

    def __init__(self, live: Any, link: Recorder) -> None:
        """Tape ``live``, just connected: its handshake's answer first."""
        self._live, self._link = live, link
        response = getattr(live, "_response", None)
        headers = list(response.headers.items()) if response is not None else []
        link.connected(live.protocol, headers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._live, name)

    async def send_str(self, data: str, compress: int | None = None) -> None:
        await self._live.send_str(data, compress)
        self._link.sent(data)

    async def send_bytes(self, data: bytes, compress: int | None = None) -> None:
        await self._live.send_bytes(data, compress)
        self._link.sent(bytes(data))

    async def send_frame(self, message: bytes, opcode: Any, compress: int | None = None) -> None:
        import aiohttp

        await self._live.send_frame(message, opcode, compress)
        if opcode is aiohttp.WSMsgType.TEXT:
            self._link.sent(bytes(message).decode("utf-8"))
        elif opcode is aiohttp.WSMsgType.BINARY:
            self._link.sent(bytes(message))

    async def receive(self, timeout: float | None = None) -> Any:
        import aiohttp

        msg = await self._live.receive(timeout)
        kind = aiohttp.WSMsgType
        if msg.type is kind.TEXT:
            data = msg.data
            self._link.received(data if isinstance(data, str) else bytes(data).decode("utf-8"))
        elif msg.type is kind.BINARY:
            self._link.received(bytes(msg.data))
        elif msg.type is kind.CLOSE:
            self._link.closed("server", msg.data, str(msg.extra or ""))
        elif msg.type in (kind.CLOSED, kind.ERROR):
            self._link.closed("server", self._live.close_code, "")
        return msg

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        try:
            closed: bool = await self._live.close(code=code, message=message)
        finally:
            self._link.closed("client", code, bytes(message).decode("utf-8", "replace"))
        return closed


class AiohttpReplay(_Receiving, Replaying):
    """A ``ClientWebSocketResponse`` that never connects: the cassette answers."""

    def __init__(self, link: Player, opener: Callable[[], Any], decode_text: bool) -> None:
        super().__init__(link, opener)
        self._decode_text = decode_text
        self._closed = False
        self._close_code: int | None = None
        self._wake: asyncio.Event | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def close_code(self) -> int | None:
        return self._close_code

    @property
    def protocol(self) -> str | None:
        return self._link.subprotocol

    def exception(self) -> BaseException | None:
        return None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    async def ping(self, message: bytes = b"") -> None:
        return None

    async def pong(self, message: bytes = b"") -> None:
        return None

    def _event(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    async def _send(self, data: str | bytes) -> None:
        if self._closed:
            raise ConnectionResetError("Cannot write to closing transport")
        try:
            self._link.send(data)
        except NeedsLive:
            live = await self._atake_over(AiohttpTaped, AiohttpTaped.receive)
            await (live.send_str(data) if isinstance(data, str) else live.send_bytes(data))
        self._event().set()

    async def send_str(self, data: str, compress: int | None = None) -> None:
        await self._send(data)

    async def send_bytes(self, data: bytes, compress: int | None = None) -> None:
        await self._send(bytes(data))

    async def send_frame(self, message: bytes, opcode: Any, compress: int | None = None) -> None:
        import aiohttp

        if opcode is aiohttp.WSMsgType.TEXT:
            await self._send(bytes(message).decode("utf-8"))
        elif opcode is aiohttp.WSMsgType.BINARY:
            await self._send(bytes(message))

    async def receive(self, timeout: float | None = None) -> Any:
        while self._live is None:  # another task's send may hand over to a live one
            if self._closed:
                return _message("CLOSED")
            if timeout and self._link.ended():
                raise TimeoutError()
            event = self._link.receive()
            if isinstance(event, Close):
                self._closed, self._close_code = True, event.code
                return _message("CLOSE", event.code, event.reason)
            if isinstance(event, str):
                return _message("TEXT", event if self._decode_text else event.encode("utf-8"))
            if isinstance(event, bytes):
                return _message("BINARY", event)
            wake = self._event()
            wake.clear()
            try:
                await asyncio.wait_for(wake.wait(), timeout or None)
            except TimeoutError:
                self._close_code = 1006  # as aiohttp marks a receive that timed out
                raise
        return await self._live.receive(timeout)

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        if self._closed:
            return False
        self._closed, self._close_code = True, code
        self._event().set()
        return True
