"""A gRPC call's outcome as a cassette stores it (DESIGN §3, gRPC; no I/O, no grpc).

A gRPC call is kept in an ordinary cassette (`_cassette`), as the HTTP/2
request it is: ``POST grpc://host:port/package.Service/Method``, the request
message as the JSON body (a list of them for a client stream). Its outcome is
the response::

    {"status": 200,                    # the HTTP status gRPC's code maps to
     "headers": {"content-type": "application/x-ghostrun-grpc+json",
                 ...the initial metadata, safe-listed},
     "body": {"json": {
         "code": "OK",                 # grpc.StatusCode's name
         "details": "",
         "messages": [MESSAGE, ...],   # the response message(s), in order
         "trailing_metadata": {...}}}} # safe-listed as response headers are

MESSAGE is ``{"type": "pkg.Name", "json": {...}}`` (`_wire._protobuf`), with
``"base64"`` too when the JSON does not give back the bytes received, or
``{"base64": ...}`` alone for bytes of no known type. Replay hands out those
exact bytes, to the SDK's own deserialiser.

The HTTP status is Google's mapping of the code (``UNAVAILABLE`` 503,
``RESOURCE_EXHAUSTED`` 429, ``UNAUTHENTICATED`` 401, ...), so the cassette
rules about statuses hold for gRPC as they are: an authentication failure is
never written, a transient failure an SDK retried past is replaced.

Metadata keys ending ``-bin`` carry bytes: stored base64, as gRPC itself sends them.
`decode_reply` validates what it reads: a malformed outcome is a
`CassetteError` naming the file and the field (a message that is not its
type's wire format, a ``Struct`` past protobuf's depth limit, metadata an
HTTP response header could not be: ``set-cookie``, a line break, an invalid
name), which the grpc road turns into a `DamagedCassette` (a miss: no
``except Exception`` swallows it).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._core._exceptions import CassetteError
from .._secrets._headers import keep_response_header
from .._wire._protobuf import check_bytes, encode_message, message_bytes
from ._cassette import headers_json
from ._limits import header_problem

__all__ = [
    "CODES",
    "CONTENT_TYPE",
    "Metadata",
    "Reply",
    "decode_reply",
    "encode_reply",
    "http_status",
    "kept_metadata",
]

CONTENT_TYPE = "application/x-ghostrun-grpc+json"
"""The stored response's content type: says the body is a gRPC outcome, in JSON."""

# grpc.StatusCode names and the HTTP status each maps to (google.rpc.Code's mapping).
CODES: dict[str, int] = {
    "OK": 200,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}

Metadata = list[tuple[str, str | bytes]]
"""gRPC metadata as pairs, in order; a ``-bin`` key's value is bytes."""


@dataclass
class Reply:
    """What a gRPC call gave back: its messages' exact bytes, its status and metadata."""

    code: str = "OK"
    details: str = ""
    messages: list[bytes] = field(default_factory=list)
    initial_metadata: Metadata = field(default_factory=list)
    trailing_metadata: Metadata = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.code == "OK"


def http_status(code: str) -> int:
    return CODES.get(code, 500)


def kept_metadata(pairs: Iterable[tuple[str, Any]] | None) -> Metadata:
    """Metadata a cassette may keep: the response-header safe-list (no credential, no
    account identifier), keys lower-cased as gRPC sends them."""
    kept: Metadata = []
    for name, value in pairs or ():
        key = str(name).lower()
        if keep_response_header(key):
            kept.append((key, bytes(value) if key.endswith("-bin") else str(value)))
    return kept


def encode_reply(reply: Reply, parsed: Sequence[Any]) -> tuple[list[tuple[str, str]], bytes]:
    """(headers, body) of the stored response; ``parsed``: each message as deserialised."""
    headers = [("content-type", CONTENT_TYPE), *_metadata_text(reply.initial_metadata)]
    document = {
        "code": reply.code,
        "details": reply.details,
        "messages": [
            encode_message(raw, one) for raw, one in zip(reply.messages, parsed, strict=True)
        ],
        "trailing_metadata": headers_json(_metadata_text(reply.trailing_metadata)),
    }
    return headers, orjson.dumps(document)


def decode_reply(headers: Sequence[tuple[str, str]], body: bytes, path: object) -> Reply:
    """The `Reply` a stored response holds; `CassetteError` naming the field if it is bad."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _bad(path, "body", f"not a gRPC outcome in JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise _bad(path, "body", "not a JSON object")
    code = document.get("code")
    if code not in CODES:
        raise _bad(path, "body.code", f"{code!r} is not a gRPC status code name")
    details = document.get("details", "")
    if not isinstance(details, str):
        raise _bad(path, "body.details", "not a string")
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise _bad(path, "body.messages", "not a list")
    return Reply(
        code,
        details,
        [_message(item, path, f"body.messages[{i}]") for i, item in enumerate(messages)],
        _metadata_from(
            [(k, v) for k, v in headers if k.lower() != "content-type"], path, "headers"
        ),
        _metadata_from(
            _pairs(document.get("trailing_metadata", {}), path), path, "body.trailing_metadata"
        ),
    )


def _message(item: Any, path: object, where: str) -> bytes:
    if not isinstance(item, dict):
        raise _bad(path, where, "not an object")
    raw = item.get("base64")
    name = item.get("type")
    if raw is not None:
        try:
            data = base64.b64decode(str(raw), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _bad(path, f"{where}.base64", "not base64") from exc
        if isinstance(name, str):
            try:
                check_bytes(name, data)
            except LookupError:
                pass  # bytes of a type not imported here: the SDK's deserialiser judges them
            except ValueError as exc:
                raise _bad(path, f"{where}.base64", str(exc)) from exc
        return data
    if not isinstance(name, str) or "json" not in item:
        raise _bad(path, where, 'needs "type" and "json", or "base64"')
    try:
        return message_bytes(name, item["json"])
    except LookupError as exc:
        raise _bad(
            path, f"{where}.type", f"{exc}: import the SDK whose call this is before replaying"
        ) from exc
    except ValueError as exc:
        raise _bad(path, f"{where}.json", f"not a {name} ({exc})") from exc


def _metadata_text(pairs: Metadata) -> list[tuple[str, str]]:
    return [
        (k, base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v) for k, v in pairs
    ]


def _pairs(value: Any, path: object) -> list[tuple[str, Any]]:
    if not isinstance(value, dict):
        raise _bad(path, "body.trailing_metadata", "not an object")
    pairs: list[tuple[str, Any]] = []
    for name, one in value.items():
        pairs += [(name, item) for item in one] if isinstance(one, list) else [(name, one)]
    return pairs


def _metadata_from(pairs: Sequence[tuple[str, Any]], path: object, where: str) -> Metadata:
    out: Metadata = []
    for name, value in pairs:
        if not isinstance(value, str):
            raise _bad(path, f"{where}.{name}", "not a string")
        problem = header_problem(name, value)  # metadata is headers: HTTP's rules hold
        if problem is not None:
            raise _bad(path, f"{where}.{name}", problem)
        if name.endswith("-bin"):
            try:
                out.append((name, base64.b64decode(value, validate=True)))
            except (binascii.Error, ValueError) as exc:
                raise _bad(path, f"{where}.{name}", "not base64") from exc
        else:
            out.append((name, value))
    return out


def _bad(path: object, where: str, why: str) -> CassetteError:
    return CassetteError(f"corrupt cassette {path}: bad gRPC response field {where}: {why}")
