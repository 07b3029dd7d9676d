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

A streamed response being recorded is handed on as it arrives (`AioTape`). A
client stream is read whole (an iterator, sync or async, or the messages given
to ``write()`` until ``done_writing()``) before the call is keyed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc  # type: ignore[import-untyped]

from ._grpclink import GrpcCall, Reply, Route, deck_for, serialise
from ._guard import grpc_addresses

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
        addresses = () if target is None else grpc_addresses(target)
        return _CALLABLES[kind](
            live, raw, addresses, method, request_serializer, response_deserializer,
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
        addresses: tuple[tuple[str, int], ...],
        method: str | bytes,
        serializer: Any,
        deserializer: Any,
        *,
        stream_in: bool,
        stream_out: bool,
    ) -> None:
        self._live, self._make_raw, self._addresses = live, raw, addresses
        self._method = method.decode() if isinstance(method, bytes) else method
        self._serializer, self._deserializer = serializer, deserializer
        self.stream_in, self.stream_out = stream_in, stream_out
        self._raw: Any = None

    def __call__(self, request: Any = None, *args: Any, **kwargs: Any) -> Any:
        route = deck_for(self._addresses, self._method)
        if route is None:
            return self._live(request, *args, **kwargs)
        outcome = AioOutcome()
        outcome.start(functools.partial(self._outcome, route, outcome, request, args, kwargs))
        return outcome

    async def _outcome(
        self,
        route: Route,
        outcome: AioOutcome,
        request: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[Reply, list[Any]] | AioTape:
        requests = await _requests(request, outcome) if self.stream_in else [request]
        raw = serialise(requests, self._serializer)
        metadata = kwargs.get("metadata", args[1] if len(args) > 1 else None)
        deck, address = route
        call = GrpcCall(
            deck, address, self._method, requests, raw, metadata, streaming=self.stream_in
        )
        reply = call.replay()
        if reply is not None:
            return reply, call.parsed(reply, self._parse)
        if self.stream_out:  # recorded as the code reads it, handed on message by message
            with call.sending():
                stream = self._raw_callable()(_request(raw, self.stream_in), *args, **kwargs)
            tape = AioTape(stream, call, self._deserializer)
            deck.on_close(tape.abandon)
            return tape
        with call.sending():
            reply = await self._send(raw, args, kwargs)
        parsed = self._parse(reply)
        call.record(reply, parsed)
        return reply, parsed

    def _parse(self, reply: Reply) -> list[Any]:
        if self._deserializer is None:
            return list(reply.messages)
        return [self._deserializer(message) for message in reply.messages]

    def _raw_callable(self) -> Any:
        """The same method made with no serialisers: bytes in, bytes out."""
        if self._raw is None:
            self._raw = self._make_raw()
        return self._raw

    async def _send(self, raw: list[bytes], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reply:
        """The real call of a unary response, bytes in and out; its outcome, failures included."""
        call = self._raw_callable()(_request(raw, self.stream_in), *args, **kwargs)
        messages: list[bytes] = []
        with contextlib.suppress(grpc.RpcError):  # the call's status says how it ended
            messages.append(await call)
        return await _reply(call, messages)


def _request(raw: list[bytes], stream: bool) -> Any:
    return iter(raw) if stream else raw[0]


async def _reply(call: Any, messages: list[bytes]) -> Reply:
    """An ended aio call's outcome."""
    return Reply(
        (await call.code()).name,
        await call.details() or "",
        messages,
        list(await call.initial_metadata() or ()),
        list(await call.trailing_metadata() or ()),
    )


class AioTape:
    """A streamed response being recorded: read from the live call as the code reads it,
    recorded once it ends or breaks; one the code never read to its end is cancelled and
    recorded, as far as it was read, when the session closes (`abandon`)."""

    def __init__(self, stream: Any, call: GrpcCall, deserializer: Any) -> None:
        self.stream, self._call, self._deserializer = stream, call, deserializer
        self.raw: list[bytes] = []
        self.parsed: list[Any] = []
        self.reply: Reply | None = None

    async def read(self) -> Any:
        """The next message (as deserialised), or ``grpc.aio.EOF``; raises the live error."""
        try:
            raw = await self.stream.read()
        except grpc.RpcError:
            await self.finish()
            raise
        if raw is grpc.aio.EOF:
            await self.finish()
            return raw
        self.raw.append(raw)
        self.parsed.append(raw if self._deserializer is None else self._deserializer(raw))
        return self.parsed[-1]

    async def finish(self) -> None:
        if self.reply is None:
            self.reply = await _reply(self.stream, self.raw)
            self._call.record(self.reply, self.parsed)

    async def drain(self) -> tuple[Reply, list[Any]]:
        """Read to the end (what was read is kept to hand on); the outcome."""
        with contextlib.suppress(grpc.RpcError):
            while self.reply is None and await self.read() is not grpc.aio.EOF:
                pass
        await self.finish()
        return self.reply or Reply(), self.parsed

    def abandon(self) -> None:
        if self.reply is None:
            self.stream.cancel()
            self.reply = Reply("CANCELLED", "", self.raw)
            self._call.record(self.reply, self.parsed)


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
        self._tape: AioTape | None = None  # a stream being recorded
        self._result: tuple[Reply, list[Any]] | None = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._next = 0

    def start(self, run: Callable[[], Any]) -> None:
        self._run = run

    async def _started(self) -> None:
        """Run the call (once): replayed, recorded whole, or a stream to record as read."""
        if self._run is None:
            return
        run, self._run = self._run, None
        found = await run()
        if isinstance(found, AioTape):
            self._tape = found
        else:
            self._done(found)

    def _done(self, result: tuple[Reply, list[Any]]) -> None:
        self._result = result
        for callback in self._callbacks:
            callback(self)

    async def _ended(self) -> tuple[Reply, list[Any]]:
        await self._started()
        if self._result is None and self._tape is not None:
            self._done(await self._tape.drain())
        if self._result is None:
            raise grpc.aio.UsageError("ghostrun: this call is already running")
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
        await self._started()
        tape = self._tape
        if tape is not None and tape.reply is None and self._next == len(tape.parsed):
            message = await tape.read()  # as it arrives
            if message is not grpc.aio.EOF:
                self._next += 1
                return message
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
        await self._started()
        if self._tape is not None and self._tape.reply is None:
            return await self._tape.stream.initial_metadata()
        return grpc.aio.Metadata(*(await self._ended())[0].initial_metadata)

    async def trailing_metadata(self) -> Any:
        return grpc.aio.Metadata(*(await self._ended())[0].trailing_metadata)

    async def code(self) -> Any:
        return grpc.StatusCode[(await self._ended())[0].code]

    async def details(self) -> str:
        return (await self._ended())[0].details

    async def wait_for_connection(self) -> None:
        await self._started()
        if self._tape is not None and self._tape.reply is None:
            await self._tape.stream.wait_for_connection()
        else:
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
