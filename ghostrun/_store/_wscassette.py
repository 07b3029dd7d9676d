"""WebSocket cassettes: the conversation format, its key and the replay script (no I/O).

One conversation with a provider host over a WebSocket is one cassette
(DESIGN §3, WebSocket cassettes)::

    {
      "version": 1,
      "kind": "websocket",
      "key": "<32 hex digits>",
      "conversations": [
        {"handshake": {"url": "wss://...", "headers": {...}, "subprotocol": null,
                       "response_headers": {...}},
         "frames": [{"server": FRAME}, {"client": FRAME}, {"server": FRAME}, ...,
                    {"close": {"by": "server", "code": 1000, "reason": ""}}]}
      ]
    }

A FRAME names its encoding by its only key: ``json`` (a text frame holding a
JSON object or array, stored as the value), ``text`` (any other text frame),
``binary_json`` (a binary frame holding JSON, as Gemini Live sends) or
``base64`` (any other binary frame, such as audio). Frames are kept in the order
the client saw them: a server frame follows every client frame that was sent
before the client received it, so replay may hand it out as soon as those
client frames have been sent.

The key. The conversation is identified by its handshake URL (credentials
dropped, `_keys.canonical_url`) and its first client frame, canonicalised as
every client frame is matched (below): ``sha256(URL)`` gives the first 16 hex
digits, ``sha256(URL, first frame)`` the last 16. The URL alone cannot tell
apart two conversations with one endpoint (every Realtime session has the same
URL), and the first frame is the closest thing a WebSocket has to a request
body; the URL prefix lets replay find every conversation with an endpoint
before the client has sent anything (a client that waits for the server's
greeting, ``session.created``, first). Several connections with the same key
in one session replay the recorded conversations in order, like repeated HTTP
requests.

Matching. Each frame the client sends is compared with the recorded client
frame at that position, both canonicalised: JSON with sorted keys, the
session's ``ignore_fields`` and credential fields removed, and ids the client
generates at random made equal. The leniency rule for ids: a string value is
replaced by ``"<id>"`` when its field is named ``event_id`` (at any depth),
or when it looks generated: a UUID, or a lower-case prefix, ``_`` and at least
12 letters and digits of which one at least is a digit (``evt_Bx81kQ2mZ0aa``,
``item_0a1b2c3d4e5f``). Two such values therefore always match, whatever
they are; every other value must be equal. Text frames that are not JSON and
binary frames must be equal byte for byte.
"""

from __future__ import annotations

import base64
import difflib
import json
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

import orjson

from .._core._files import parse_json
from .._core._normalize import Normalizer
from ._formats import (
    ConversationRecord,
    Frame,
    FrameEvent,
    HandshakeRecord,
    WebSocketFile,
)
from ._keys import canonical_body, match_key
from ._render import render_body

__all__ = [
    "FORMAT_VERSION",
    "KIND",
    "Canonical",
    "Close",
    "Conversation",
    "Frame",
    "Script",
    "canonical_frame",
    "conversation_key",
    "decode_frame",
    "encode_frame",
    "frame_diff",
    "parse_document",
    "url_prefix",
]

Canonical = Callable[[Frame, Sequence[tuple[str, ...]], Normalizer | None], bytes]
"""How a client frame is compared: the frame, the fields to leave out, the shapes to equal."""

FORMAT_VERSION = 1
KIND: Final = "websocket"
ID_PLACEHOLDER = "<id>"
_GENERATED_ID = re.compile(
    r"(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[a-z]{2,10}_(?=[A-Za-z]*[0-9])[A-Za-z0-9]{12,})"
)
_ID_FIELDS = frozenset({"event_id"})
_MAX_DIFF_LINES = 60


@dataclass(frozen=True, slots=True)
class Close:
    """A closing handshake: who started it, its code and reason."""

    by: str  # "server" or "client"
    code: int | None
    reason: str


@dataclass
class Conversation:
    """One conversation as recorded: handshake, then frames and a close in the client's order."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    subprotocol: str | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    events: list[FrameEvent] = field(default_factory=list)

    def client(self, data: str | bytes) -> None:
        self.events.append({"client": encode_frame(data)})

    def server(self, data: str | bytes) -> None:
        self.events.append({"server": encode_frame(data)})

    def close(self, by: str, code: int | None, reason: str) -> None:
        if not any("close" in event for event in self.events):
            self.events.append({"close": {"by": by, "code": code, "reason": reason}})

    def first_client_frame(self) -> Frame | None:
        for event in self.events:
            if "client" in event:
                return event["client"]
        return None

    def to_json(self) -> ConversationRecord:
        handshake: HandshakeRecord = {
            "url": self.url,
            "headers": self.headers,
            "subprotocol": self.subprotocol,
            "response_headers": self.response_headers,
        }
        return {"handshake": handshake, "frames": self.events}

    @classmethod
    def from_json(cls, raw: Any) -> Conversation:
        """Raises ValueError (with the field) on a malformed entry."""
        if not isinstance(raw, dict) or not isinstance(raw.get("handshake"), dict):
            raise ValueError('a conversation needs a "handshake" object')
        handshake, frames = raw["handshake"], raw.get("frames")
        if not isinstance(handshake.get("url"), str) or not isinstance(frames, list):
            raise ValueError('"handshake.url" or "frames" missing')
        for index, event in enumerate(frames):
            _check_event(event, index)
        subprotocol = handshake.get("subprotocol")
        return cls(
            handshake["url"],
            dict(handshake.get("headers") or {}),
            subprotocol if isinstance(subprotocol, str) else None,
            dict(handshake.get("response_headers") or {}),
            list(frames),
        )


def _check_event(event: Any, index: int) -> None:
    if not isinstance(event, dict) or len(event) != 1:
        raise ValueError(f"frames[{index}] must have exactly one of client, server, close")
    ((side, body),) = event.items()
    if side == "close":
        if not isinstance(body, dict) or body.get("by") not in ("client", "server"):
            raise ValueError(f'frames[{index}].close needs "by": "client" or "server"')
        code, reason = body.get("code"), body.get("reason") or ""
        if code is not None and (type(code) is not int or not 1000 <= code <= 4999):
            raise ValueError(f"frames[{index}].close.code: expected null or 1000..4999")
        if not isinstance(reason, str) or len(reason.encode("utf-8", "replace")) > 123:
            raise ValueError(f"frames[{index}].close.reason: expected at most 123 bytes of text")
    elif side in ("client", "server"):
        try:
            decode_frame(body)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"frames[{index}].{side}: {exc}") from exc
    else:
        raise ValueError(f"frames[{index}]: unknown entry {side!r}")


# -- frames -------------------------------------------------------------------


def encode_frame(data: str | bytes) -> Frame:
    """JSON objects and arrays as their value (``binary_json`` when a binary frame holds
    one, as Gemini Live sends them), other text as text, other binary frames as base64."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        value = _json_value(data)
        if value is not None:
            return {"binary_json": value}
        return {"base64": base64.b64encode(data).decode("ascii")}
    value = _json_value(data)
    return {"text": data} if value is None else {"json": value}


def _json_value(data: str | bytes) -> Any:
    """The JSON object or array ``data`` holds, or None: also when parsing it would change a
    number (an integer past 64 bits reads as a float), so such a frame is kept as it came."""
    value = parse_json(data) if data[:1] in ("{", "[", b"{", b"[") else None
    if value is not None and _holds_big_float(value) and json.loads(data) != value:
        return None
    return value


def _holds_big_float(value: Any) -> bool:
    """True if a whole float past 64 bits is in ``value``: what a wider integer parses as."""
    if isinstance(value, float):
        return value.is_integer() and abs(value) >= 2.0**63
    if isinstance(value, dict):
        return any(_holds_big_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_big_float(item) for item in value)
    return False


def decode_frame(frame: Any) -> str | bytes:
    """Inverse of `encode_frame`: a JSON frame replays as compact JSON (text, or bytes)."""
    if not isinstance(frame, dict) or len(frame) != 1:
        raise ValueError("a frame has exactly one encoding key: json, text or base64")
    ((kind, value),) = frame.items()
    if kind == "json":
        return orjson.dumps(value).decode("utf-8")
    if kind == "binary_json":
        return orjson.dumps(value)
    if kind == "text" and isinstance(value, str):
        return value
    if kind == "base64" and isinstance(value, str):
        return base64.b64decode(value, validate=True)
    raise ValueError(f"unknown frame encoding {kind!r}")


def canonical_frame(
    frame: Frame, ignore: Sequence[tuple[str, ...]] = (), normalize: Normalizer | None = None
) -> bytes:
    """A client frame as matching sees it (see the module docstring; ``normalize``: the
    session's ``normalize=``, as a request body's)."""
    if "json" in frame or "binary_json" in frame:
        kind: Literal["json", "binary_json"] = "json" if "json" in frame else "binary_json"
        value = orjson.dumps(_lenient_ids(frame[kind], ""))
        return kind.encode() + b":" + canonical_body(value, "application/json", ignore, normalize)
    if "text" in frame:
        text = str(frame["text"])
        return b"text:" + (text if normalize is None else normalize.text(text)).encode("utf-8")
    return b"base64:" + str(frame.get("base64", "")).encode("ascii")


def _lenient_ids(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return {k: _lenient_ids(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_lenient_ids(v, name) for v in value]
    if isinstance(value, str) and (name in _ID_FIELDS or _GENERATED_ID.fullmatch(value)):
        return ID_PLACEHOLDER
    return value


def url_prefix(url: str) -> str:
    """The first half of every key of the conversations with this handshake URL."""
    return match_key("WEBSOCKET", url, b"")[:16]


def conversation_key(
    url: str,
    first: Frame | None,
    ignore: Sequence[tuple[str, ...]],
    normalize: Normalizer | None = None,
) -> str:
    """A conversation's cassette key: its URL and first client frame, seen as a request's
    URL and body are (``ignore_fields``, ``normalize``)."""
    canonical = b"" if first is None else canonical_frame(first, ignore, normalize)
    keyed = url if normalize is None else normalize.url(url)
    return url_prefix(url) + match_key("WEBSOCKET", keyed, canonical)[16:]


def frame_diff(recorded: Frame | None, sent: Frame, name: str, what: str = "frame") -> list[str]:
    """A unified diff of a recorded client frame and the one just sent, as the HTTP miss shows
    (``what``: what the client sends, a frame or an MCP message)."""
    missing = [f"(no more client {what}s were recorded)"]
    theirs = missing if recorded is None else _lines(recorded)
    diff = list(
        difflib.unified_diff(
            theirs, _lines(sent), f"recorded ({name})", f"this {what}", lineterm="", n=1
        )
    )
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"... ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    return ["    " + line for line in diff] or [f"    (the {what}s differ only in ignored ids)"]


def _lines(frame: Frame) -> list[str]:
    """A frame as the HTTP miss shows a body: ``path: value`` lines for JSON."""
    if "binary_json" in frame:
        return ["(binary)", *render_body({"json": frame["binary_json"]})]
    return render_body(frame)


# -- the replay script ----------------------------------------------------------


class Script:
    """Steps through one recorded conversation; the adapters wait, this only decides.

    `next_server` gives the next server frame or close the client may receive
    now, `None` when the next recorded event is a client frame (receive must
    wait for the client to send it), and raises `EOFError` past the end of the
    recording. `match` checks a sent frame against the next recorded client
    frame (the server frames recorded before it stay due) and returns ``True``,
    or the recorded frame it differs from (``None``: no more were recorded).
    """

    def __init__(
        self,
        conversation: Conversation | Any,
        ignore: Sequence[tuple[str, ...]],
        canonical: Canonical | None = None,
        normalize: Normalizer | None = None,
    ) -> None:
        """``conversation``: anything with ``events`` (an MCP connection too); ``canonical``:
        how a client frame is compared (`canonical_frame` unless given), with the fields
        ``ignore`` names left out and the shapes ``normalize`` names made equal."""
        self.conversation = conversation
        self.events: list[FrameEvent] = conversation.events
        self.ignore = ignore
        self.canonical = canonical or canonical_frame
        self.normalize = normalize
        self.position = 0
        self.due: deque[FrameEvent] = deque()

    def next_server(self) -> str | bytes | Close | None:
        event = self.next_server_event()
        return None if event is None else _server_event(event)

    def next_server_event(self) -> FrameEvent | None:
        """`next_server`, as recorded (``{"server": FRAME}`` or ``{"close": ...}``)."""
        if self.due:
            return self.due.popleft()
        if self.position >= len(self.events):
            raise EOFError("the recorded conversation ends here")
        event = self.events[self.position]
        if "client" in event or event.get("close", {}).get("by") == "client":
            return None
        self.position += 1
        return event

    def skip_server(self, count: int) -> None:
        """Pass over the greeting frames already handed out from another recording."""
        for _ in range(count):
            if self.next_server() is None:
                return

    def match(self, sent: Frame) -> Frame | bool | None:
        while self.position < len(self.events) and _is_server(self.events[self.position]):
            self.due.append(self.events[self.position])
            self.position += 1
        event: FrameEvent = self.events[self.position] if self.position < len(self.events) else {}
        recorded = event.get("client")
        ignore, shapes = self.ignore, self.normalize
        if recorded is not None and self.canonical(recorded, ignore, shapes) == self.canonical(
            sent, ignore, shapes
        ):
            self.position += 1
            return True
        return recorded


def _is_server(event: FrameEvent) -> bool:
    return "server" in event or event.get("close", {}).get("by") == "server"


def _server_event(event: FrameEvent) -> str | bytes | Close:
    if "close" in event:
        raw = event["close"]
        code = raw.get("code")
        reason = str(raw.get("reason") or "")
        return Close(str(raw["by"]), code if isinstance(code, int) else None, reason)
    return decode_frame(event["server"])


# -- the file -------------------------------------------------------------------


def document(key: str, conversations: list[Conversation]) -> WebSocketFile:
    return {
        "version": FORMAT_VERSION,
        "kind": KIND,
        "key": key,
        "conversations": [c.to_json() for c in conversations],
    }


def parse_document(data: Any, path: str) -> list[Conversation]:
    """The conversations of a WebSocket cassette; ValueError naming the field if malformed."""
    kind = (KIND, FORMAT_VERSION, "a WebSocket cassette")
    return parse_items(data, path, kind, "conversations", Conversation.from_json)


_T = TypeVar("_T")


def parse_items(
    data: Any, path: str, kind: tuple[str, int, str], field: str, read: Callable[[Any], _T]
) -> list[_T]:
    """The items of a conversation file's list ``field`` (WebSocket conversations, MCP
    connections), each read by ``read``; ValueError naming the kind, version or item.

    ``kind``: the file's ``"kind"``, its format version, and its name in a message."""
    name, version, what = kind
    if not isinstance(data, dict) or data.get("kind") != name:
        raise ValueError(f'not {what} (no "kind": "{name}")')
    if data.get("version") != version:
        raise ValueError(
            f"format version {data.get('version')!r}, but this ghostrun reads version "
            f"{version}: upgrade ghostrun, or delete {path} and re-record"
        )
    raw = data.get(field)
    if not isinstance(raw, list):
        raise ValueError(f'"{field}" missing')
    out = []
    for index, item in enumerate(raw):
        try:
            out.append(read(item))
        except ValueError as exc:
            raise ValueError(f"{field}[{index}]: {exc}") from exc
    return out
