"""The ``grpc`` road's sync side: the multi-callables a ``grpc.Channel`` hands out.

`hook` wraps a method of grpc's channel class (``unary_unary``,
``unary_stream``, ``stream_unary``, ``stream_stream``): the multi-callable it
returns is the library's own, inside one of these. Each call asks the session
(`_grpclink`): not ours, it goes to the library's untouched; recorded, the
code gets the recorded outcome; else the same method is called for real with
no serialisers (bytes in, bytes out, so the bytes received are what is stored)
and the outcome is recorded, then handed on as a replay would hand it. What the
code receives either way: the messages as the SDK's deserialiser makes them,
a call object answering ``code()``, ``details()``, ``initial_metadata()``,
``trailing_metadata()`` (and a ``grpc.Future``), and on a failure a
``grpc.RpcError`` that is such a call too, as grpc's own is.

A streamed response being recorded is handed on message by message as it
arrives (`LiveStream`); a client stream is read whole before the call is keyed.
Imported by `_grpc` when it installs (this module imports grpc).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]

from .._recording._deck import Deck
from ._grpclink import GrpcCall, Reply, Route, deck_for, serialise
from ._guard import grpc_addresses

__all__ = ["Outcome", "hook"]

KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def hook(kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``Channel.<kind>`` returning the library's multi-callable inside ghostrun's."""
    wrapper = _CALLABLES[kind]

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
        addresses = grpc_addresses(str(getattr(self, "_target", "")))
        return wrapper(live, raw, addresses, method, request_serializer, response_deserializer)

    return multicallable


class _Callable:
    """What every kind shares: the route, the key, replay or the real call, the record."""

    stream_in = stream_out = False

    def __init__(
        self,
        live: Any,
        raw: Callable[[], Any],
        addresses: tuple[tuple[str, int], ...],
        method: str | bytes,
        serializer: Any,
        deserializer: Any,
    ) -> None:
        self._live, self._make_raw, self._addresses = live, raw, addresses
        self._method = method.decode() if isinstance(method, bytes) else method
        self._serializer, self._deserializer = serializer, deserializer
        self._raw: Any = None

    def _outcome(
        self, route: Route, requests: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Outcome | LiveStream:
        deck, address = route
        raw = serialise(requests, self._serializer)
        call = GrpcCall(
            deck, address, self._method, requests, raw, _metadata(args, kwargs),
            streaming=self.stream_in,
        )  # fmt: skip
        reply = call.replay()
        if reply is not None:
            return Outcome(reply, call.parsed(reply, self._parse))
        if self.stream_out:  # recorded as the code reads it, handed on message by message
            with call.sending():
                stream = self._raw_callable()(_request(raw, self.stream_in), *args, **kwargs)
            return LiveStream(stream, call, self._deserializer, deck)
        with call.sending():
            reply = self._send(raw, args, kwargs)
        parsed = self._parse(reply)
        call.record(reply, parsed)
        return Outcome(reply, parsed)

    def _deck(self) -> Route | None:
        return deck_for(self._addresses, self._method)

    def _parse(self, reply: Reply) -> list[Any]:
        if self._deserializer is None:
            return list(reply.messages)
        return [self._deserializer(message) for message in reply.messages]

    def _raw_callable(self) -> Any:
        """The same method made with no serialisers: bytes in, bytes out."""
        if self._raw is None:
            self._raw = self._make_raw()
        return self._raw

    def _send(self, raw: list[bytes], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Reply:
        """The real call of a unary response, bytes in and out; its outcome, failures included."""
        request = _request(raw, self.stream_in)
        try:
            response, call = self._raw_callable().with_call(request, *args, **kwargs)
        except grpc.RpcError as error:
            if not hasattr(error, "code"):
                raise
            return _reply(error, [])
        return _reply(call, [response])


class _UnaryUnary(_Callable, grpc.UnaryUnaryMultiCallable):  # type: ignore[misc]
    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live(request, *args, **kwargs)
        return self._outcome(deck, [request], args, kwargs).result()

    def with_call(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live.with_call(request, *args, **kwargs)
        outcome = self._outcome(deck, [request], args, kwargs)
        return outcome.result(), outcome

    def future(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live.future(request, *args, **kwargs)
        return self._outcome(deck, [request], args, kwargs)


class _UnaryStream(_Callable, grpc.UnaryStreamMultiCallable):  # type: ignore[misc]
    stream_out = True

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live(request, *args, **kwargs)
        return self._outcome(deck, [request], args, kwargs)


class _StreamUnary(_Callable, grpc.StreamUnaryMultiCallable):  # type: ignore[misc]
    stream_in = True

    def __call__(self, request_iterator: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live(request_iterator, *args, **kwargs)
        return self._outcome(deck, list(request_iterator), args, kwargs).result()

    def with_call(self, request_iterator: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live.with_call(request_iterator, *args, **kwargs)
        outcome = self._outcome(deck, list(request_iterator), args, kwargs)
        return outcome.result(), outcome

    def future(self, request_iterator: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live.future(request_iterator, *args, **kwargs)
        return self._outcome(deck, list(request_iterator), args, kwargs)


class _StreamStream(_Callable, grpc.StreamStreamMultiCallable):  # type: ignore[misc]
    stream_in = stream_out = True

    def __call__(self, request_iterator: Any, *args: Any, **kwargs: Any) -> Any:
        deck = self._deck()
        if deck is None:
            return self._live(request_iterator, *args, **kwargs)
        return self._outcome(deck, list(request_iterator), args, kwargs)


_CALLABLES: dict[str, type[_Callable]] = {
    "unary_unary": _UnaryUnary,
    "unary_stream": _UnaryStream,
    "stream_unary": _StreamUnary,
    "stream_stream": _StreamStream,
}


def _metadata(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``metadata`` argument, given by name or second after the request (timeout first)."""
    return kwargs.get("metadata", args[1] if len(args) > 1 else None)


def _request(raw: list[bytes], stream: bool) -> Any:
    return iter(raw) if stream else raw[0]


def _reply(call: Any, messages: list[bytes]) -> Reply:
    """A finished call's outcome (a call object, or the ``RpcError`` that is one)."""
    return Reply(
        call.code().name,
        call.details() or "",
        messages,
        list(call.initial_metadata() or ()),
        list(call.trailing_metadata() or ()),
    )


# -- what the code under test receives ----------------------------------------------


class _Finished:
    """A call that has ended: ``grpc.Call`` and ``grpc.Future`` both, as grpc's own are."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply

    def initial_metadata(self) -> tuple[tuple[str, Any], ...]:
        return tuple(self.reply.initial_metadata)

    def trailing_metadata(self) -> tuple[tuple[str, Any], ...]:
        return tuple(self.reply.trailing_metadata)

    def code(self) -> Any:
        return grpc.StatusCode[self.reply.code]

    def details(self) -> str:
        return self.reply.details

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False  # grpc: False once the call has ended; the callback is not called

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def traceback(self, timeout: float | None = None) -> None:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        fn(self)


class Outcome(_Finished, grpc.Call, grpc.Future):  # type: ignore[misc]
    """What a routed call hands back: its result, its messages in order, or its error."""

    def __init__(self, reply: Reply, parsed: list[Any]) -> None:
        super().__init__(reply)
        self.parsed = parsed
        self._next = 0

    def result(self, timeout: float | None = None) -> Any:
        if not self.reply.ok:
            raise ReplayedRpcError(self.reply)
        return self.parsed[0] if self.parsed else None

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return None if self.reply.ok else ReplayedRpcError(self.reply)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._next < len(self.parsed):
            self._next += 1
            return self.parsed[self._next - 1]
        if not self.reply.ok:
            raise ReplayedRpcError(self.reply)
        raise StopIteration

    next = __next__


class ReplayedRpcError(_Finished, grpc.RpcError, grpc.Call, grpc.Future):  # type: ignore[misc]
    """A call's failure, as grpc raises it: the error is the ended call."""

    def __init__(self, reply: Reply) -> None:
        _Finished.__init__(self, reply)
        grpc.RpcError.__init__(self)

    def result(self, timeout: float | None = None) -> Any:
        raise self

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self

    def __str__(self) -> str:
        return (
            "<_InactiveRpcError of RPC that terminated with:\n"
            f'\tstatus = {self.code()}\n\tdetails = "{self.reply.details}"\n>'
        )


class LiveStream(grpc.Call, grpc.Future):  # type: ignore[misc]
    """A streamed response being recorded: handed on message by message as the code reads
    it, and recorded once it ends, breaks, is cancelled, or (never read to its end) when the
    session closes; then it is cancelled, and recorded with what arrived."""

    def __init__(self, stream: Any, call: GrpcCall, deserializer: Any, deck: Deck) -> None:
        self._stream, self._call, self._deserializer = stream, call, deserializer
        self._raw: list[bytes] = []
        self._parsed: list[Any] = []
        self._done = False
        deck.on_close(self._finish)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            raw = next(self._stream)
        except (StopIteration, grpc.RpcError):
            self._finish()
            raise
        parsed = raw if self._deserializer is None else self._deserializer(raw)
        self._raw.append(raw)
        self._parsed.append(parsed)
        return parsed

    next = __next__

    def _finish(self) -> None:
        if self._done:
            return
        self._done = True
        if self._stream.is_active():
            self._stream.cancel()
        self._call.record(_reply(self._stream, self._raw), self._parsed)

    def cancel(self) -> bool:
        cancelled = bool(self._stream.cancel())
        self._finish()
        return cancelled

    # grpc.Call and grpc.Future: the live call's answers

    def initial_metadata(self) -> Any:
        return self._stream.initial_metadata()

    def trailing_metadata(self) -> Any:
        return self._stream.trailing_metadata()

    def code(self) -> Any:
        return self._stream.code()

    def details(self) -> Any:
        return self._stream.details()

    def is_active(self) -> bool:
        return bool(self._stream.is_active())

    def time_remaining(self) -> Any:
        return self._stream.time_remaining()

    def add_callback(self, callback: Callable[[], None]) -> Any:
        return self._stream.add_callback(callback)

    def cancelled(self) -> bool:
        return bool(self._stream.cancelled())

    def running(self) -> bool:
        return bool(self._stream.running())

    def done(self) -> bool:
        return bool(self._stream.done())

    def result(self, timeout: float | None = None) -> Any:
        return self._stream.result(timeout)

    def exception(self, timeout: float | None = None) -> Any:
        return self._stream.exception(timeout)

    def traceback(self, timeout: float | None = None) -> Any:
        return self._stream.traceback(timeout)

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        self._stream.add_done_callback(lambda _future: fn(self))
