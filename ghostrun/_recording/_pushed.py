"""Server-pushed streams replayed at the pace of the requests they answer (MCP over SSE).

MCP's SSE transport opens one long GET stream, and the server pushes onto it
the JSON-RPC answers to the requests the client POSTs on other connections
(a streamable HTTP server's GET listener is such a stream too). Live, each
answer comes after its request, and the stream lasts until the client leaves.
Replayed whole, it would hand the client answers to requests not sent yet,
then end, which the client takes for the server gone. So a replayed push
stream hands on a chunk that completes an answer only once the session has
replayed the request it answers (by JSON-RPC id, sent after the stream
opened). MCP's SSE stream (it opens with the ``endpoint`` event) only ends
when its client leaves: replayed, it stays open after its last chunk until
the client closes it (or a DELETE to its endpoint ends the session). Any other
push stream ends after its last chunk, as its server may have ended it: the
recording does not say who did.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

if TYPE_CHECKING:
    from ._deck import Deck

__all__ = ["Ledger", "answers_by_chunk", "is_push_stream", "ledger", "paced"]


class Ledger:
    """What a session replayed that push streams wait for: JSON-RPC request ids, DELETEs.

    Append-only, so a stream counts only what was sent after it opened; the
    waiting streams are woken at each entry (all in one event loop: MCP's
    clients are async).
    """

    def __init__(self) -> None:
        self.sent: list[str] = []  # ``id:<json>`` for a request, ``delete:<endpoint>``
        self._waiting: list[Any] = []

    def replayed(self, method: str, url: str, body: bytes) -> None:
        """A request was replayed: note its JSON-RPC ids, or the endpoint it DELETEd."""
        if method == "DELETE":
            self.sent.append("delete:" + _endpoint(url))
        elif b'"jsonrpc"' in body:
            self.sent += _request_ids(body)
        else:
            return
        waiting, self._waiting = self._waiting, []
        for event in waiting:
            event.set()

    async def until(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` holds, woken by each entry."""
        import anyio  # only here: a push stream is being replayed

        while not ready():
            event = anyio.Event()
            self._waiting.append(event)
            await event.wait()


_ledgers: weakref.WeakKeyDictionary[Deck, Ledger] = weakref.WeakKeyDictionary()


def ledger(deck: Deck) -> Ledger:
    """The session's ledger (made at its first use)."""
    found = _ledgers.get(deck)
    if found is None:
        found = _ledgers[deck] = Ledger()
    return found


def is_push_stream(method: str, chunks: list[bytes] | None) -> bool:
    """A recorded GET stream that carries JSON-RPC messages, or MCP's ``endpoint`` event."""
    return (
        method == "GET"
        and bool(chunks)
        and any(b'"jsonrpc"' in c or b"event: endpoint" in c for c in chunks or ())
    )


def answers_by_chunk(chunks: list[bytes]) -> list[tuple[str, ...]]:
    """For each chunk, the ids (``id:<json>``) of the JSON-RPC answers whose SSE event it
    completes (an event may span chunks: it belongs to the chunk that ends it)."""
    out: list[tuple[str, ...]] = []
    pending = b""
    for chunk in chunks:
        pending += chunk
        events = pending.replace(b"\r\n", b"\n").split(b"\n\n")
        pending = events.pop()  # normalised: a CRLF cut between chunks joins in the next
        out.append(tuple(i for event in events for i in _answered(event)))
    return out


async def paced(chunks: list[bytes], ledger: Ledger, url: str, start: int) -> AsyncIterator[bytes]:
    """The chunks, each once the requests it answers were replayed (after ``start``, the
    ledger's length when the stream opened); then, for MCP's SSE stream, open until
    closed or its endpoint DELETEd."""
    sent = ledger.sent
    for chunk, ids in zip(chunks, answers_by_chunk(chunks), strict=True):
        if ids:
            await ledger.until(lambda ids=ids: all(i in sent[start:] for i in ids))  # type: ignore[misc]
        yield chunk
    if chunks and chunks[0].startswith(b"event: endpoint"):
        deleted = "delete:" + _endpoint(url)
        await ledger.until(lambda: deleted in sent[start:])


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _request_ids(body: bytes) -> list[str]:
    """The ids of the JSON-RPC requests in a body (one, or a batch)."""
    return [_id(m) for m in _messages(body) if "method" in m and "id" in m]


def _answered(event: bytes) -> list[str]:
    """The id a pushed SSE event answers, if its data is a JSON-RPC result or error."""
    data = b"\n".join(
        line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
    )
    if b'"jsonrpc"' not in data:
        return []
    return [
        _id(m)
        for m in _messages(data)
        if "method" not in m and "id" in m and ("result" in m or "error" in m)
    ]


def _messages(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects a JSON-RPC body or event holds (one, or a batch); none if not JSON."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return []
    return [m for m in (message if isinstance(message, list) else [message]) if isinstance(m, dict)]


def _id(message: dict[str, Any]) -> str:
    return "id:" + orjson.dumps(message["id"]).decode()
