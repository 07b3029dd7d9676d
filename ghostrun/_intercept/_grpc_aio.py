"""The ``grpc`` road's ``grpc.aio`` side: the multi-callables an aio channel hands out.

As `_grpc_sync`, for asyncio: `hook` wraps the aio channel class's
``unary_unary`` ... ``stream_stream``. The channel's target is read from its
C channel (``target``); where a grpc version does not show it there,
`hook_init` has noted it as the channel was made. A routed call
returns an `AioOutcome`: awaitable (unary responses), async-iterable and
``read()``-able (streams), with ``code()``, ``details()``,
``initial_metadata()``, ``trailing_metadata()`` and ``wait_for_connection()``
as grpc's calls have; a failure raises ``grpc.aio.AioRpcError``. The call runs
when first awaited or read, in the caller's task: the session is the one
governing the call (DESIGN §2). Interceptors the channel was made with run on
the real call (with bytes for messages, as it is made without serialisers);
a replay has no real call.

A client stream is read whole (an iterator, sync or async, or the messages
given to ``write()`` until ``done_writing()``) before the call is keyed.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc  # type: ignore[import-untyped]

from .._recording._deck import Deck
from ._grpclink import GrpcCall, Reply, deck_for, serialise
from ._guard import grpc_address

__all__ = ["AioOutcome", "hook", "hook_init"]

TARGET = "_ghostrun_target"


def hook_init(original: Callable[..., Any]) -> Callable[..., Any]:
    """The aio channel's ``__init__``, noting its target (for a grpc that keeps it only in C)."""

    @functools.wraps(original)
    def __init__(self: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        setattr(self, TARGET, target)
        original(self, target, *args, **kwargs)

    return __init__


def hook(kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``Channel.<kind>`` returning the library's multi-callable inside ghostrun's."""
    stream_in, stream_out = kind.startswith("stream"), kind.endswith("stream")

    @functools.wraps(original)
    def multicallable(
        self: Any,
        method: str,
        request_serializer: Any = None,
        response_deserializer: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        live = original(self, method, request_serializer, response_deserializer, *args, **kwargs)
        raw = functools.partial(original, self, method, None, None, *args, **kwargs)
        target = _target(self)
        address = None if target is None else grpc_address(target)
        return _CALLABLES[kind](
            live, raw, address, method, request_serializer, response_deserializer,
            stream_in=stream_in, stream_out=stream_out,
        )  # fmt: skip

    return multicallable


def _target(channel: Any) -> str | None:
    """An aio channel's target: as its C channel holds it, else as `hook_init` noted it."""
    target = getattr(getattr(channel, "_channel", None), "target", None)
    if callable(target):
        target = target()
    if target is None:
        target = getattr(channel, TARGET, None)
    if isinstance(target, bytes):
        return target.decode("ascii", "replace")
    return None if target is None else str(target)


class _AioCallable:
    """One method of an aio channel: routed calls are ghostrun's, the others the library's."""

    def __init__(
        self,
        live: Any,
        raw: Callable[[], Any],
        address: tuple[str, int] | None,
        method: str | bytes,
        serializer: Any,
        deserializer: Any,
        *,
        stream_in: bool,
        stream_out: bool,
    ) -> None:
        self._live, self._make_raw, self._address = live, raw, address
        self._method = method.decode() if isinstance(method, bytes) else method
        self._serializer, self._deserializer = serializer, deserializer
        self.stream_in, self.stream_out = stream_in, stream_out
        self._raw: Any = None

    def __call__(self, request: Any = None, *args: Any, **kwargs: Any) -> Any:
        deck = deck_for(self._address, self._method)
        if deck is None:
            return self._live(request, *args, **kwargs)
        outcome = AioOutcome()
        outcome.start(functools.partial(self._outcome, deck, outcome, request, args, kwargs))
        return outcome

    async def _outcome(
        self,
        deck: Deck,
        outcome: AioOutcome,
        request: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[Reply, list[Any]]:
        requests = await _requests(request, outcome) if self.stream_in else [request]
        raw = serialise(requests, self._serializer)
        metadata = kwargs.get("metadata", args[1] if len(args) > 1 else None)
        address = self._address or ("", 0)  # a routed call has one
        call = GrpcCall(
            deck, address, self._method, requests, raw, metadata, streaming=self.stream_in
        )
        reply = call.replay()
        if reply is not None:
            return reply, self._parse(reply)
        with call.sending():
            reply = await self._send(raw, args, kwargs)
        parsed = self._parse(reply)
        call.record(reply, parsed)
        return reply, parsed

    def _parse(self, reply: Reply) -> list[Any]:
        if self._deserializer is None:
            return list(reply.messages)
        return [self._deserializer(message) for message in reply.messages]

    async def _send(self, raw: list[bytes], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reply:
        """The real call, bytes in and out; its outcome, failures included."""
        if self._raw is None:
            self._raw = self._make_raw()
        call = self._raw(iter(raw) if self.stream_in else raw[0], *args, **kwargs)
        messages: list[bytes] = []
        try:
            if self.stream_out:
                messages.extend([message async for message in call])
            else:
                messages.append(await call)
        except grpc.RpcError:
            pass  # the call's status says how it ended
        return Reply(
            (await call.code()).name,
            await call.details() or "",
            messages,
            list(await call.initial_metadata() or ()),
            list(await call.trailing_metadata() or ()),
        )


# Subclasses of grpc's abstract multi-callables: SDKs tell the kinds apart by them
# (google.api_core wraps a stream's call differently from a unary one).
class _UnaryUnary(_AioCallable, grpc.aio.UnaryUnaryMultiCallable):  # type: ignore[misc]
    pass


class _UnaryStream(_AioCallable, grpc.aio.UnaryStreamMultiCallable):  # type: ignore[misc]
    pass


class _StreamUnary(_AioCallable, grpc.aio.StreamUnaryMultiCallable):  # type: ignore[misc]
    pass


class _StreamStream(_AioCallable, grpc.aio.StreamStreamMultiCallable):  # type: ignore[misc]
    pass


_CALLABLES: dict[str, type[_AioCallable]] = {
    "unary_unary": _UnaryUnary,
    "unary_stream": _UnaryStream,
    "stream_unary": _StreamUnary,
    "stream_stream": _StreamStream,
}


async def _requests(source: Any, outcome: AioOutcome) -> list[Any]:
    """A client stream's messages: an async or sync iterator, or what was ``write()``-n."""
    if source is None:
        return list(outcome.written)
    if hasattr(source, "__aiter__"):
        return [message async for message in source]
    return list(source)


class AioOutcome:
    """What a routed aio call hands back; it runs when first awaited, read or iterated."""

    def __init__(self) -> None:
        self.written: list[Any] = []
        self._run: Callable[[], Any] | None = None
        self._result: tuple[Reply, list[Any]] | None = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._next = 0

    def start(self, run: Callable[[], Any]) -> None:
        self._run = run

    async def _ended(self) -> tuple[Reply, list[Any]]:
        if self._result is None:
            run, self._run = self._run, None
            if run is None:
                raise grpc.aio.UsageError("ghostrun: this call is already running")
            self._result = await run()
            for callback in self._callbacks:
                callback(self)
        return self._result

    # -- the response ---------------------------------------------------------------

    def __await__(self) -> Any:
        return self._response().__await__()

    async def _response(self) -> Any:
        reply, parsed = await self._ended()
        if not reply.ok:
            raise _error(reply)
        return parsed[0] if parsed else None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Any]:
        while True:
            message = await self.read()
            if message is grpc.aio.EOF:
                return
            yield message

    async def read(self) -> Any:
        reply, parsed = await self._ended()
        if self._next < len(parsed):
            self._next += 1
            return parsed[self._next - 1]
        if not reply.ok:
            raise _error(reply)
        return grpc.aio.EOF

    # -- a client stream ------------------------------------------------------------

    async def write(self, request: Any) -> None:
        self.written.append(request)

    async def done_writing(self) -> None:
        return None

    # -- grpc.aio.Call ----------------------------------------------------------------

    async def initial_metadata(self) -> Any:
        return grpc.aio.Metadata(*(await self._ended())[0].initial_metadata)

    async def trailing_metadata(self) -> Any:
        return grpc.aio.Metadata(*(await self._ended())[0].trailing_metadata)

    async def code(self) -> Any:
        return grpc.StatusCode[(await self._ended())[0].code]

    async def details(self) -> str:
        return (await self._ended())[0].details

    async def wait_for_connection(self) -> None:
        await self._ended()

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return self._result is not None

    def time_remaining(self) -> float | None:
        return None

    def cancel(self) -> bool:
        return False

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        if self._result is not None:
            callback(self)
        else:
            self._callbacks.append(callback)


def _error(reply: Reply) -> Any:
    return grpc.aio.AioRpcError(
        grpc.StatusCode[reply.code],
        grpc.aio.Metadata(*reply.initial_metadata),
        grpc.aio.Metadata(*reply.trailing_metadata),
        reply.details,
    )
