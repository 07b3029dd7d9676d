"""The session side of one gRPC call, shared by the sync and ``grpc.aio`` roads (no I/O).

A call is an `_engine.Exchange` like any HTTP request (DESIGN §1-§3), so the
sessions, modes, ordering, concurrency, secrets and miss rules are the HTTP
ones:

- **The key** is the HTTP key of ``POST grpc://host[:port]/package.Service/Method``
  with the request message as its JSON body: `json_format`'s JSON of the
  message (field names as in the ``.proto``), canonical as any JSON body is
  (keys sorted, ``ignore_fields`` removed). A client stream's body is the
  list of its messages. A request of no protobuf type is keyed by its bytes
  (``{"base64": ...}``). Metadata is never part of the key.
- **Metadata** is handed to the deck as the request's headers: it is stored
  only by the request-header safe-list, and every credential in it
  (``authorization``, ``x-goog-api-key``, ``x-api-key``, ...) is masked
  wherever it appears in what is written, as an HTTP header's is.
- **The outcome** is stored as `_store._grpcreply` says, and replayed as the
  exact bytes received.

The roads (`_grpc`, `_grpc_aio`) build a `GrpcCall`, ask it to `replay`, and
otherwise send for real inside `GrpcCall.sending` and `record` what came back.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import orjson

from .._core._exceptions import CassetteError
from .._recording._deck import Deck
from .._recording._session import current_deck
from .._store._grpcreply import Reply, decode_reply, encode_reply, http_status, kept_metadata
from .._wire._protobuf import message_json, message_of
from ._engine import Exchange, route

__all__ = ["GrpcCall", "Reply", "Route", "deck_for", "serialise"]

_SCHEME = "grpc"


Route = tuple[Deck, tuple[str, int]]  # the deck answering a call, and the address it is keyed by


def deck_for(addresses: Sequence[tuple[str, int]], method: str) -> Route | None:
    """The deck that answers a call to a target reaching ``addresses``, and the address its
    key names; None: pass it through.

    The address is the first one the governing session lists (a target may list several,
    ``ipv4:a:p,b:p``, and gRPC may dial any of them), else the first.
    """
    if not addresses:
        return None
    deck = current_deck()
    listed = [a for a in addresses if deck is not None and deck.settings.matcher(*a)]
    host, port = (listed or addresses)[0]
    found = route(host, port, f"{_SCHEME}://{host}{method}")
    return None if found is None else (found, (host, port))


def serialise(requests: Sequence[Any], serializer: Callable[[Any], bytes] | None) -> list[bytes]:
    """The bytes each request message is sent as (the SDK's own serialiser)."""
    if serializer is None:
        return [bytes(request) for request in requests]
    return [serializer(request) for request in requests]


class GrpcCall:
    """One intercepted call: its key, its recording if there is one, its record."""

    __slots__ = ("exchange", "method")

    def __init__(
        self,
        deck: Deck,
        address: tuple[str, int],
        method: str,
        requests: Sequence[Any],
        raw: Sequence[bytes],
        metadata: Sequence[tuple[str, Any]] | None,
        *,
        streaming: bool,
    ) -> None:
        self.method = method
        bodies, type_name = _request_json(requests, raw)
        body = orjson.dumps(bodies if streaming else bodies[0])
        headers = [
            ("content-type", "application/grpc"),
            *(("grpc-message-type", type_name) for _ in (1,) if type_name),
            *_text_metadata(metadata),
        ]
        host, port = address
        self.exchange = Exchange(deck, "POST", (_SCHEME, host, port, method, ""), headers, body)

    def replay(self) -> Reply | None:
        """The recorded outcome, or None to send for real; raises `CacheMiss` in replay."""
        recording = self.exchange.replay()
        if recording is None:
            return None
        try:
            return decode_reply(recording.headers, recording.body, self._path())
        except CassetteError as error:  # a miss, as HTTP's: no ``except Exception`` hides it
            raise self.exchange.deck.damaged(error) from error

    def parsed(self, reply: Reply, parse: Callable[[Reply], list[Any]]) -> list[Any]:
        """A replayed reply's messages as the SDK's deserialiser reads them (``parse``).

        A message it cannot read came from a damaged cassette: a `DamagedCassette`,
        not the deserialiser's own error, which an app's ``except Exception`` would take.
        """
        try:
            return parse(reply)
        except Exception as exc:
            error = CassetteError(
                f"corrupt cassette {self._path()}: bad gRPC response field body.messages: "
                f"{self.method} cannot read it ({type(exc).__name__}: {exc})"
            )
            raise self.exchange.deck.damaged(error) from exc

    def _path(self) -> Path:
        return self.exchange.deck.cassette_dir / f"{self.exchange.info.key}.json"

    def sending(self) -> AbstractContextManager[None]:
        """Wrap the real call in it (an intercepted library below passes through)."""
        return self.exchange.sending()

    def record(self, reply: Reply, parsed: Sequence[Any]) -> None:
        """Write what the call gave back (``parsed``: its messages as deserialised)."""
        stored = Reply(
            reply.code,
            reply.details,
            reply.messages,
            kept_metadata(reply.initial_metadata),
            kept_metadata(reply.trailing_metadata),
        )
        headers, body = encode_reply(stored, parsed)
        self.exchange.record(http_status(reply.code), headers, body)


def _request_json(requests: Sequence[Any], raw: Sequence[bytes]) -> tuple[list[Any], str]:
    """Each request as its JSON (its bytes if it is no protobuf message), and its type name."""
    bodies: list[Any] = []
    type_name = ""
    for request, data in zip(requests, raw, strict=True):
        message = message_of(request)
        if message is None:
            bodies.append({"base64": base64.b64encode(data).decode("ascii")})
            continue
        type_name, value = message_json(message)
        bodies.append(value)
    return bodies, type_name


def _text_metadata(metadata: Sequence[tuple[str, Any]] | None) -> list[tuple[str, str]]:
    """Metadata as header pairs: names lower-cased; ``-bin`` values (bytes) left out."""
    return [
        (str(name).lower(), str(value))
        for name, value in metadata or ()
        if not str(name).lower().endswith("-bin")
    ]
