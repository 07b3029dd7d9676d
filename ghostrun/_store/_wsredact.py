"""WebSocket conversations as they may be written: every credential masked (DESIGN §4).

A conversation's secrets are what its handshake carried (headers, query, the
subprotocol) and what its frames hold in credential fields, read by the same
rule as an HTTP body's (`_secrets._collect.field_secrets`); each frame is then
masked as an HTTP body is (`_secrets._mask_entry.redact_entry`), and a secret
spelled across frames is masked as across SSE events. The format itself is
`_wscassette`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from .._secrets._collect import entry_secrets, field_secrets
from .._secrets._credentials import MINTED_SHAPES
from .._secrets._headers import SUBPROTOCOLS, keep_request_header, keep_response_header
from .._secrets._mask import MASK, mask_text, patterns
from .._secrets._mask_entry import mask_shapes, redact_entry
from .._secrets._memory import collect_secrets, remember_secrets
from .._secrets._streams import mask_events
from .._secrets._walk import strings
from ._formats import FrameEvent
from ._wscassette import Conversation

__all__ = ["redact_conversation", "redact_event", "redact_events", "secrets_of"]

_EPHEMERAL = MINTED_SHAPES
"""Ephemeral client secrets a provider mints (Realtime session tokens, ``ek_…``): masked
in server frames too, since a greeting may hand one out."""


def redact_conversation(
    conversation: Conversation,
    headers: Iterable[tuple[str, str]],
    query: Iterable[tuple[str, str]],
) -> Conversation:
    """The conversation as it may be written: headers by safe-list, credentials masked.

    Every credential the handshake carried (``Authorization: Bearer …``,
    ``api-key``, a ``key=`` query parameter) and every value of a credential
    field in a client frame is masked wherever it appears, in every frame;
    secret shapes are masked in client frames, and ephemeral client secrets
    (``ek_…``, ``client_secret.value``) in server frames too.
    """
    pairs = list(headers)
    if conversation.subprotocol is not None:  # the one the server chose, offered or not
        pairs.append((SUBPROTOCOLS, conversation.subprotocol))
    secrets = secrets_of(pairs, query, conversation.events)
    kept = {k.lower(): v for k, v in pairs if keep_request_header(k)}
    answered = {
        k.lower(): v for k, v in conversation.response_headers.items() if keep_response_header(k)
    }
    events = [
        redact_event(event, secrets) for event in _across_frames(conversation.events, secrets)
    ]
    handshake = redact_entry(
        {"request": {"url": conversation.url, "headers": kept}, "response": {"headers": answered}},
        secrets,
    )
    subprotocol = conversation.subprotocol
    if subprotocol is not None:
        subprotocol = mask_shapes(mask_text(subprotocol, patterns(secrets)))
    return Conversation(
        handshake["request"]["url"],
        handshake["request"]["headers"],
        subprotocol,
        handshake["response"]["headers"],
        events,
    )


def redact_events(events: list[FrameEvent], secrets: frozenset[str]) -> list[FrameEvent]:
    """Frames as they may be written, without a handshake (an MCP connection's messages):
    masked one by one and across frames, as `redact_conversation` masks a conversation's."""
    return [redact_event(event, secrets) for event in _across_frames(events, secrets)]


def _across_frames(events: list[FrameEvent], secrets: frozenset[str]) -> list[FrameEvent]:
    """Each side's JSON and text frames masked together, read as they were sent: a model
    may spell a key over two delta events (``response.text.delta``), as over two SSE
    events, or over two text frames that stream the answer as it is."""
    compiled = patterns(secrets)
    out = list(events)
    for side in ("server", "client"):
        at = [
            (index, kind)
            for index, event in enumerate(out)
            if isinstance(event.get(side), dict)
            for kind in ("json", "binary_json", "text")
            if kind in event[side] and (kind != "text" or isinstance(event[side][kind], str))
        ]
        values = [_as_value(kind, out[i][side][kind]) for i, kind in at]
        masked = mask_events(values, compiled)
        for (index, kind), value, before in zip(at, masked, values, strict=True):
            if value is not before:
                frame = {kind: value[_TEXT_FRAME] if kind == "text" else value}
                out[index] = cast(FrameEvent, {side: frame})  # the same kind, on the same side
    return out


_TEXT_FRAME = "\u0000text frame"  # a text frame read as a JSON value holding it


def _as_value(kind: str, value: Any) -> Any:
    return {_TEXT_FRAME: value} if kind == "text" else value


def secrets_of(
    headers: Iterable[tuple[str, str]],
    query: Iterable[tuple[str, str]],
    events: Iterable[FrameEvent] = (),
) -> frozenset[str]:
    """The credentials a conversation carried: handshake headers and query, credential
    fields (remembered at once: a test may assert on a frame long before the cassette is
    written, and the run log scrubs its outputs of what is remembered)."""
    found = collect_secrets(list(headers), list(query)) | _frame_secrets(events)
    remember_secrets(found)
    return found


def _frame_secrets(events: Iterable[FrameEvent]) -> frozenset[str]:
    """Credential fields' values (read as an HTTP body's are: `field_secrets`), ephemeral
    secrets, and what a client frame shows itself as an HTTP request body would (secret
    shapes in a prompt): a server may echo them."""
    found: set[str] = set()
    shown: frozenset[str] = frozenset()
    for event in events:
        for side in ("client", "server"):
            frame = event.get(side)
            for kind in ("json", "binary_json"):
                if isinstance(frame, dict) and kind in frame:
                    found |= field_secrets(frame[kind])
                    found.update(
                        s for s in strings(frame[kind], keys=False) if _EPHEMERAL.fullmatch(s)
                    )
        if isinstance(event.get("client"), dict):
            shown |= entry_secrets({"body": event["client"]})
    return shown | frozenset(v for v in found if len(v) >= 6 and v != MASK)


def redact_event(event: FrameEvent, secrets: frozenset[str]) -> FrameEvent:
    """One ``{"client": FRAME}`` or ``{"server": FRAME}`` as it may be written."""
    if "client" in event:
        entry = redact_entry({"request": {"body": event["client"]}, "response": {}}, secrets)
        return {"client": mask_shapes(entry["request"]["body"], _EPHEMERAL)}
    if "server" in event:
        entry = redact_entry({"request": {}, "response": {"body": event["server"]}}, secrets)
        body = entry["response"]["body"]
        return {"server": mask_shapes(body, _EPHEMERAL)}
    return event
