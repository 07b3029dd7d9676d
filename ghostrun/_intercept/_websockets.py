"""The ``websockets`` road (DESIGN §1): its sync and asyncio clients.

Hooks, one per client, the one method every way of opening a connection goes
through (``await``, ``async with``, ``async for``, ``reconnect``), subclasses
included (openai's async Realtime client subclasses the asyncio ``connect``):

- websockets 13 to 16: the sync client's ``websockets.sync.client.connect``
  (the module attribute: the openai SDK imports it when it connects; code that
  imported the function itself before the session opened keeps the original,
  and in ``replay`` the guard refuses its connection), and the asyncio
  client's ``connect.__await_impl__``;
- websockets 17 on: the sync ``reconnect.connect`` method (``connect()``,
  ``connect(legacy=False)`` and ``reconnect()`` all open through it) and the
  asyncio ``connect.connect`` method (17.1 dropped ``__await_impl__``).

For a provider host, `_wslink` decides. Recording wraps the real connection
in a pass-through proxy that tapes each message sent and received and the
close; replaying hands the client a connection that never connects: its
``send`` checks each message against the recording and its ``recv`` hands out
the recorded server messages, with the library's semantics (``recv(timeout=)``
raises ``TimeoutError``, iteration ends at a normal close, a close raises
``ConnectionClosedOK`` or ``ConnectionClosedError`` with the recorded code).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .._core._exceptions import UnsupportedLibrary
from .._secrets._headers import SUBPROTOCOLS
from .._store._wscassette import Close
from ._patch import Restore, library, replace
from ._wslink import NeedsLive, Player, Recorder, Replaying, open_link

__all__ = ["WebsocketsAdapter", "adapters"]


def adapters() -> list[WebsocketsAdapter]:
    """This road's adapters, for `_patch.ROADS`: websockets' sync and asyncio clients."""
    return [WebsocketsAdapter()]


class WebsocketsAdapter:
    """Wraps each client's opening method: the one of `SYNC_HOOKS` and `ASYNC_HOOKS` it has.

    It waits for the package: every import of a client module imports it first,
    and `check` then imports both clients.
    """

    waits_for = distribution = road = "websockets"
    supported = ">=15"

    def __init__(self) -> None:
        self.sync: Any = None
        self.aio: Any = None

    def check(self) -> bool:
        if library("websockets") is None:
            return False
        self.sync = importlib.import_module("websockets.sync.client")
        self.aio = importlib.import_module("websockets.asyncio.client")
        version = getattr(importlib.import_module("websockets"), "__version__", "?")
        if _release(version) < (15,):  # before 15 its asyncio connect keeps no uri, headers
            raise UnsupportedLibrary(
                f"websockets {version} has no asyncio.client.connect.additional_headers, which "
                "ghostrun reads to record its conversations. Install websockets 15 or later: "
                "pip install 'websockets>=15'."
            )
        if _sync_hook(self.sync) is None or _async_hook(self.aio) is None:
            raise UnsupportedLibrary(
                f"websockets {version} has none of {' or '.join(SYNC_HOOKS)} in "
                f"websockets.sync.client, or none of {' or '.join(ASYNC_HOOKS)} in "
                "websockets.asyncio.client, which ghostrun wraps to record its conversations. "
                "Install websockets 15 or later: pip install 'websockets>=15'."
            )
        return True

    def install(self) -> Restore:
        sync_owner, sync_name = _sync_hook(self.sync) or (None, "")
        aio_owner, aio_name = _async_hook(self.aio) or (None, "")
        sync_original = sync_owner.__dict__[sync_name]
        aio_original = aio_owner.__dict__[aio_name]
        sync_wrapper = (
            _sync_connect(sync_original) if sync_owner is self.sync else _reconnect(sync_original)
        )
        # __await_impl__ (websockets <= 16) keeps the connection on the connecter itself.
        keeps = aio_name == "__await_impl__"
        return replace(
            (sync_owner, sync_name, sync_wrapper),
            (aio_owner, aio_name, _await_impl(aio_original, keeps)),
        )


SYNC_HOOKS = ("reconnect.connect", "connect")
"""The sync client's opening point, newest first: websockets 17 on, then 13 to 16."""
ASYNC_HOOKS = ("connect.connect", "connect.__await_impl__")
"""The asyncio client's opening point, newest first: websockets 17 on, then 13 to 16."""


def _release(version: str) -> tuple[int, ...]:
    """``"16.1.1"`` as ``(16, 1, 1)``; the leading numbers of a pre-release."""
    numbers = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def _sync_hook(module: Any) -> tuple[Any, str] | None:
    """Where the sync client opens a connection: ``reconnect.connect``, else ``connect``."""
    reconnect = getattr(module, "reconnect", None)
    if isinstance(reconnect, type) and callable(reconnect.__dict__.get("connect")):
        return reconnect, "connect"
    if callable(getattr(module, "connect", None)):
        return module, "connect"
    return None


def _async_hook(module: Any) -> tuple[Any, str] | None:
    """Where the asyncio client opens: ``connect.connect``, else ``connect.__await_impl__``."""
    cls = getattr(module, "connect", None)
    if not isinstance(cls, type):
        return None
    for name in ("connect", "__await_impl__"):
        if callable(cls.__dict__.get(name)):
            return cls, name
    return None


def _link(uri: str, headers: Any, subprotocols: Any = None) -> Player | Recorder | None:
    from websockets.datastructures import Headers
    from websockets.headers import build_authorization_basic
    from websockets.uri import parse_uri

    parsed = parse_uri(uri)
    pairs = list(Headers(headers).raw_items()) if headers is not None else []
    if parsed.user_info is not None:  # websockets sends the URI's user:password as Basic auth
        pairs.append(("authorization", build_authorization_basic(*parsed.user_info)))
    if subprotocols:  # a key may be offered as one (``openai-insecure-api-key.<key>``)
        pairs.append((SUBPROTOCOLS, ", ".join(map(str, subprotocols))))
    scheme = "wss" if parsed.secure else "ws"
    return open_link(scheme, parsed.host, parsed.port, parsed.path, parsed.query, pairs)


def _sync_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def connect(uri: str, **kwargs: Any) -> Any:
        link = _link(uri, kwargs.get("additional_headers"), kwargs.get("subprotocols"))
        if link is None:
            return original(uri, **kwargs)
        if isinstance(link, Player):
            return SyncReplay(link, lambda: original(uri, **kwargs))
        return SyncTaped(original(uri, **kwargs), link)

    return connect


def _reconnect(original: Callable[..., Any]) -> Callable[..., Any]:
    """websockets 17's ``reconnect.connect``: every sync connection opens through it."""

    @functools.wraps(original)
    def connect(self: Any) -> Any:
        offered = (getattr(self, "protocol_kwargs", None) or {}).get("subprotocols")
        link = _link(self.uri, self.additional_headers, offered)
        if link is None:
            return original(self)
        if isinstance(link, Player):
            return SyncReplay(link, lambda: original(self))
        return SyncTaped(original(self), link)

    return connect


def _await_impl(original: Callable[..., Any], keeps: bool) -> Callable[..., Any]:
    """The asyncio opening method; ``keeps``: it stores the connection on the connecter."""

    @functools.wraps(original)
    async def opening(self: Any) -> Any:
        link = _link(self.uri, self.additional_headers, _offered(self))
        if link is None:
            return await original(self)
        if isinstance(link, Player):
            connection: Any = AsyncReplay(link, lambda: original(self))
        else:
            connection = AsyncTaped(await original(self), link)
        if keeps:
            self.connection = connection
        return connection

    return opening


def _offered(connecter: Any) -> Any:
    """The subprotocols an asyncio ``connect`` offers: its ``__init__`` keeps them only in
    the closure of the protocol factory it builds (websockets 13 to 17), so they are read
    from there; None when a version keeps them elsewhere (the chosen one is still masked)."""
    factory = getattr(connecter, "protocol_factory", None) or getattr(connecter, "factory", None)
    code = getattr(factory, "__code__", None)
    cells = getattr(factory, "__closure__", None) or ()
    names = code.co_freevars if code is not None else ()
    for name, cell in zip(names, cells, strict=False):
        if name == "subprotocols":
            return cell.cell_contents
    return None


# -- messages ---------------------------------------------------------------------


def _outgoing(message: Any, text: bool | None) -> str | bytes:
    """One message as its frame: str for text, bytes for binary; fragments joined."""
    if not isinstance(message, (str, bytes, bytearray, memoryview)):
        message = list(message)
        message = "".join(message) if message and isinstance(message[0], str) else b"".join(message)
    if isinstance(message, str):
        return message.encode() if text is False else message
    data = bytes(message)
    return data.decode("utf-8") if text else data


def _delivered(message: str | bytes, decode: bool | None) -> str | bytes:
    """What ``recv(decode=...)`` returns for a frame."""
    if isinstance(message, str):
        return message.encode("utf-8") if decode is False else message
    return message.decode("utf-8") if decode else message


def _closed_error(rcvd: Close | None, sent: Close | None) -> Exception:
    """The library's exception for a closed connection (the side that closed first, first)."""
    from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK
    from websockets.frames import Close as Frame

    got = None if rcvd is None or rcvd.code is None else Frame(rcvd.code, rcvd.reason)
    out = None if sent is None or sent.code is None else Frame(sent.code, sent.reason)
    codes = {c.code for c in (got, out) if c is not None}
    ok = (got is not None or out is not None) and codes <= {1000, 1001}
    first = None if rcvd is None or sent is None else rcvd.by == "server"
    return (ConnectionClosedOK if ok else ConnectionClosedError)(got, out, first)


def _messages(connection: Any) -> Iterator[str | bytes]:
    """Iterating a connection: each message, until a normal close ends it.

    ``recv`` is looked up for each message: a replay that a live connection
    took over mid-iteration reads on from the live one.
    """
    from websockets.exceptions import ConnectionClosedOK

    try:
        while True:
            yield connection.recv()
    except ConnectionClosedOK:
        return


async def _amessages(connection: Any) -> AsyncIterator[str | bytes]:
    """The async twin of `_messages`."""
    from websockets.exceptions import ConnectionClosedOK

    try:
        while True:
            yield await connection.recv()
    except ConnectionClosedOK:
        return


class _Taped:
    """What the sync and asyncio proxies share: taping, and the rest left to the live one."""

    def __init__(self, live: Any, link: Recorder) -> None:
        """Tape ``live``, just connected: its handshake's answer first."""
        self._live, self._link = live, link
        response = getattr(live, "response", None)
        headers = response.headers.raw_items() if response is not None else []
        link.connected(live.subprotocol, headers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._live, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """The proxy's own state is private; the rest is the live connection's (websockets
        17's ``connect`` clears the live one's ``pending_legacy_warning`` flag this way)."""
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._live, name, value)

    def _got(self, message: str | bytes, decode: bool | None) -> str | bytes:
        self._link.received(message)
        return _delivered(message, decode)

    def _ended(self, exc: Any) -> None:
        by = "client" if getattr(exc, "rcvd_then_sent", None) is False else "server"
        close = getattr(exc, "rcvd", None) or getattr(exc, "sent", None)
        self._link.closed(by, getattr(close, "code", None), getattr(close, "reason", "") or "")


class SyncTaped(_Taped):
    """A live sync connection that tapes every message for the cassette."""

    def send(self, message: Any, text: bool | None = None) -> None:
        data = _outgoing(message, text)
        self._live.send(data)
        self._link.sent(data)

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> str | bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            message = self._live.recv(timeout)
        except ConnectionClosed as exc:
            self._ended(exc)
            raise
        return self._got(message, decode)

    def recv_streaming(self, decode: bool | None = None) -> Iterator[str | bytes]:
        yield self.recv(decode=decode)

    def __iter__(self) -> Iterator[str | bytes]:
        return _messages(self)

    def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            self._live.close(code, reason)
        finally:
            self._link.closed("client", code, reason)

    def __enter__(self) -> SyncTaped:
        self._live.__enter__()  # websockets 17 warns of a connection used outside a with
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncTaped(_Taped):
    """A live asyncio connection that tapes every message for the cassette."""

    async def send(self, message: Any, text: bool | None = None) -> None:
        if hasattr(message, "__aiter__"):
            message = [piece async for piece in message]
        data = _outgoing(message, text)
        await self._live.send(data)
        self._link.sent(data)

    async def recv(self, decode: bool | None = None) -> str | bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self._live.recv()
        except ConnectionClosed as exc:
            self._ended(exc)
            raise
        return self._got(message, decode)

    async def recv_streaming(self, decode: bool | None = None) -> AsyncIterator[str | bytes]:
        yield await self.recv(decode=decode)

    def __aiter__(self) -> AsyncIterator[str | bytes]:
        return _amessages(self)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            await self._live.close(code, reason)
        finally:
            self._link.closed("client", code, reason)

    async def __aenter__(self) -> AsyncTaped:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


# -- replay -----------------------------------------------------------------------


class _Replay(Replaying):
    """A connection answered from the cassette: the state both clients share."""

    def __init__(self, link: Player, opener: Callable[[], Any]) -> None:
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        super().__init__(link, opener)
        self._rcvd: Close | None = None
        self._sent: Close | None = None
        self.id = uuid.uuid4()
        self.latency = 0.0
        self.transport = None
        self.local_address = ("127.0.0.1", 0)
        self.remote_address = ("127.0.0.1", 0)
        self.request = None
        headers = Headers(list(link.response_headers.items()))
        self.response = Response(101, "Switching Protocols", headers)
        self.subprotocol = link.subprotocol

    @property
    def state(self) -> Any:
        from websockets.protocol import State

        return State.CLOSED if self._closed else State.OPEN

    @property
    def _closed(self) -> bool:
        return self._rcvd is not None or self._sent is not None

    @property
    def close_code(self) -> int | None:
        close = self._rcvd or self._sent
        return None if close is None else close.code

    @property
    def close_reason(self) -> str | None:
        close = self._rcvd or self._sent
        return None if close is None else close.reason

    def _check_open(self) -> None:
        if self._closed:
            raise _closed_error(self._rcvd, self._sent)

    def _take(self) -> str | bytes | None:
        """The next server message, None to wait for the client, or the close raised."""
        self._check_open()
        event = self._link.receive()
        if isinstance(event, Close):
            self._rcvd = self._sent = event  # the client answers a close with the same close
            raise _closed_error(event, event)
        return event

    def _close(self, code: int, reason: str) -> None:
        if not self._closed:
            self._sent = self._rcvd = Close("client", code, reason)


class SyncReplay(_Replay):
    """A sync ``ClientConnection`` that never connects: the cassette answers."""

    def __init__(self, link: Player, opener: Callable[[], Any]) -> None:
        super().__init__(link, opener)
        self._wake = threading.Condition()

    def send(self, message: Any, text: bool | None = None) -> None:
        self._check_open()
        data = _outgoing(message, text)
        try:
            self._link.send(data)
        except NeedsLive:
            self._take_over(self._taped, SyncTaped.recv).send(data)
        with self._wake:
            self._wake.notify_all()

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> str | bytes:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._wake:
            while self._live is None:  # another thread's send may hand over to a live one
                if timeout is not None and self._link.ended() and not self._closed:
                    raise TimeoutError("timed out while waiting for a message")
                message = self._take()
                if message is not None:
                    return _delivered(message, decode)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("timed out while waiting for a message")
                self._wake.wait(left)
        left = None if deadline is None else max(deadline - time.monotonic(), 0)
        received: str | bytes = self._live.recv(left, decode)
        return received

    def recv_streaming(self, decode: bool | None = None) -> Iterator[str | bytes]:
        yield self.recv(decode=decode)

    def __iter__(self) -> Iterator[str | bytes]:
        return _messages(self)

    def ping(self, data: Any = None, ack_on_close: bool = False) -> threading.Event:
        self._check_open()
        pong = threading.Event()
        pong.set()
        return pong

    def pong(self, data: Any = b"") -> None:
        self._check_open()

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._close(code, reason)
        with self._wake:
            self._wake.notify_all()

    def close_socket(self) -> None:
        self.close(1006, "")

    def _taped(self, live: Any, link: Recorder) -> SyncTaped:
        """The live connection auto takes over with: warned as this one was used (17 on)."""
        if getattr(self, "pending_legacy_warning", True) is False:
            live.pending_legacy_warning = False
        return SyncTaped(live, link)

    def __enter__(self) -> SyncReplay:
        self.pending_legacy_warning = False  # as websockets 17's ClientConnection.__enter__
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncReplay(_Replay):
    """An asyncio ``ClientConnection`` that never connects: the cassette answers."""

    def __init__(self, link: Player, opener: Callable[[], Any]) -> None:
        super().__init__(link, opener)
        self._wake: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    async def send(self, message: Any, text: bool | None = None) -> None:
        self._check_open()
        if hasattr(message, "__aiter__"):
            message = [piece async for piece in message]
        data = _outgoing(message, text)
        try:
            self._link.send(data)
        except NeedsLive:
            await (await self._atake_over(AsyncTaped, AsyncTaped.recv)).send(data)
        self._event().set()

    async def recv(self, decode: bool | None = None) -> str | bytes:
        while self._live is None:  # another task's send may hand over to a live one
            message = self._take()
            if message is not None:
                return _delivered(message, decode)
            wake = self._event()
            wake.clear()
            await wake.wait()
        received: str | bytes = await self._live.recv(decode)
        return received

    async def recv_streaming(self, decode: bool | None = None) -> AsyncIterator[str | bytes]:
        yield await self.recv(decode=decode)

    def __aiter__(self) -> AsyncIterator[str | bytes]:
        return _amessages(self)

    async def ping(self, data: Any = None) -> Any:
        self._check_open()
        pong: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        pong.set_result(0.0)
        return pong

    async def pong(self, data: Any = b"") -> None:
        self._check_open()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._close(code, reason)
        self._event().set()

    async def wait_closed(self) -> None:
        while not self._closed:
            wake = self._event()
            wake.clear()
            await wake.wait()

    async def __aenter__(self) -> AsyncReplay:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
