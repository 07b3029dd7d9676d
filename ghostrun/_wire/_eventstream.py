"""AWS event-stream framing (``application/vnd.amazon.eventstream``), read and written.

Bedrock's streaming answers (``converse_stream``,
``invoke_model_with_response_stream``) are a sequence of binary frames::

    total length (u32) | headers length (u32) | CRC32 of those 8 bytes (u32)
    headers: name length (u8) | name | value type (u8) | value, ...
    payload
    CRC32 of everything before it (u32)

A cassette stores such a stream readably: each chunk received is the list of
the frames it carried, each frame its headers, in order, and its payload
(JSON as a value when that gives back its bytes, else text, else base64)::

    {"headers": [":event-type: contentBlockDelta", ":content-type: application/json",
                 ":message-type: event"],
     "json": {"contentBlockIndex": 0, "delta": {"text": "Hello"}}}

A header with a string value is one ``"name: value"`` line; one of another
type is a ``[name, value]`` pair whose value is a one-key object
(``{"int": 5}``, ``{"bool": true}``, ``{"bytes": "<base64>"}``). Bytes that
are no whole frame of their chunk (a frame split by a chunk boundary, a
stream cut mid-frame) are a ``{"base64": ...}`` piece of that chunk.
Replay writes the frames again, CRCs included, and `encode_chunks` only
chooses this form when doing so gives back exactly the bytes received (else
the cassette keeps base64 chunks): replay is byte for byte, chunk for chunk.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable
from typing import Any

import orjson

from .._core._files import dump_json

__all__ = ["decode_chunks", "encode_chunks", "encode_frame", "read_frames"]

_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
_MIN_FRAME = _PRELUDE.size + 2 * _CRC.size  # prelude, its CRC, the message CRC
# Header value types of a fixed width: code -> (JSON tag, struct format).
_FIXED = {
    2: ("byte", ">b"),
    3: ("short", ">h"),
    4: ("int", ">i"),
    5: ("long", ">q"),
    8: ("timestamp", ">q"),
}
_TAGS = {tag: (code, fmt) for code, (tag, fmt) in _FIXED.items()}
_BOOL_TRUE, _BOOL_FALSE, _BYTES, _STRING, _UUID = 0, 1, 6, 7, 9

Frame = dict[str, Any]  # {"headers": ["name: value" | [name, value], ...], "json": ...}
_SEPARATOR = ": "


def encode_chunks(chunks: list[bytes]) -> list[list[Frame]] | None:
    """Each chunk as the frames it carried, or None if no frame can be read at all.

    A frame that a chunk boundary splits, and bytes that are no frame (a
    stream cut mid-frame), are kept as ``{"base64": ...}`` pieces of their
    chunks; the frames around them stay readable.
    """
    data = b"".join(chunks)
    frames, pos = [], 0
    while (found := _read_frame(data, pos)) is not None:
        frames.append((pos, found[1], found[0]))
        pos = found[1]
    if not frames:
        return None
    encoded, start = [], 0
    for chunk in chunks:
        end = start + len(chunk)
        encoded.append(_chunk_items(data, start, end, frames))
        start = end
    return encoded if decode_chunks(encoded) == chunks else None


def _chunk_items(
    data: bytes, start: int, end: int, frames: list[tuple[int, int, Frame]]
) -> list[Frame]:
    """The frames within ``data[start:end]``, and base64 pieces for the bytes around them."""
    items: list[Frame] = []
    pos = start
    for frame_start, frame_end, frame in frames:
        if frame_end <= start or frame_start >= end:
            continue
        if start <= frame_start and frame_end <= end:
            items += _piece(data[pos:frame_start])
            items.append(frame)
            pos = frame_end
    return items + _piece(data[pos:end])


def _piece(data: bytes) -> list[Frame]:
    return [{"base64": _b64(data)}] if data else []


def decode_chunks(value: Any) -> list[bytes]:
    """Inverse of `encode_chunks`; ``ValueError`` names what is malformed."""
    if not isinstance(value, list) or not all(isinstance(chunk, list) for chunk in value):
        raise ValueError("an eventstream body is a list of chunks, each a list of frames")
    return [b"".join(_item_bytes(item) for item in chunk) for chunk in value]


def _item_bytes(item: Any) -> bytes:
    if isinstance(item, dict) and list(item) == ["base64"]:
        return base64.b64decode(item["base64"], validate=True)
    return _frame_bytes(item)


def encode_frame(headers: list[tuple[str, Any]], payload: bytes) -> bytes:
    """One frame: headers as in the cassette (a string, or a one-key typed object)."""
    head = b"".join(_header_bytes(name, value) for name, value in headers)
    total = _MIN_FRAME + len(head) + len(payload)
    prelude = _PRELUDE.pack(total, len(head))
    message = prelude + _CRC.pack(zlib.crc32(prelude)) + head + payload
    return message + _CRC.pack(zlib.crc32(message))


def read_frames(data: bytes) -> list[Frame] | None:
    """The frames ``data`` consists of, or None unless it is whole, well-formed frames."""
    frames, pos = [], 0
    while pos < len(data):
        frame = _read_frame(data, pos)
        if frame is None:
            return None
        frames.append(frame[0])
        pos = frame[1]
    return frames


def _read_frame(data: bytes, pos: int) -> tuple[Frame, int] | None:
    if len(data) - pos < _MIN_FRAME:
        return None
    total, head_len = _PRELUDE.unpack_from(data, pos)
    end = pos + total
    if total < _MIN_FRAME + head_len or end > len(data):
        return None
    prelude_crc = _CRC.unpack_from(data, pos + _PRELUDE.size)[0]
    message_crc = _CRC.unpack_from(data, end - _CRC.size)[0]
    if prelude_crc != zlib.crc32(data[pos : pos + _PRELUDE.size]):
        return None
    if message_crc != zlib.crc32(data[pos : end - _CRC.size]):
        return None
    head_start = pos + _PRELUDE.size + _CRC.size
    headers = _read_headers(data[head_start : head_start + head_len])
    if headers is None:
        return None
    payload = data[head_start + head_len : end - _CRC.size]
    return {"headers": headers, **_payload_form(payload)}, end


def _read_headers(data: bytes) -> list[Any] | None:
    headers: list[Any] = []
    pos = 0
    try:
        while pos < len(data):
            name_len = data[pos]
            name = data[pos + 1 : pos + 1 + name_len].decode("utf-8")
            pos += 1 + name_len
            value, pos = _read_value(data, pos)
            plain = isinstance(value, str) and _SEPARATOR not in name
            headers.append(f"{name}{_SEPARATOR}{value}" if plain else [name, value])
    except (IndexError, UnicodeDecodeError, struct.error):
        return None
    return headers if pos == len(data) else None


def _read_value(data: bytes, pos: int) -> tuple[Any, int]:
    code, pos = data[pos], pos + 1
    if code in (_BOOL_TRUE, _BOOL_FALSE):
        return {"bool": code == _BOOL_TRUE}, pos
    if code in _FIXED:
        tag, fmt = _FIXED[code]
        return {tag: struct.unpack_from(fmt, data, pos)[0]}, pos + struct.calcsize(fmt)
    if code == _UUID:
        if pos + 16 > len(data):
            raise IndexError("uuid")
        return {"uuid": data[pos : pos + 16].hex()}, pos + 16
    if code in (_BYTES, _STRING):
        (size,) = struct.unpack_from(">H", data, pos)
        raw = data[pos + 2 : pos + 2 + size]
        if len(raw) != size:
            raise IndexError("value")
        value = raw.decode("utf-8") if code == _STRING else {"bytes": _b64(raw)}
        return value, pos + 2 + size
    raise IndexError(f"header value type {code}")


def _header_bytes(name: str, value: Any) -> bytes:
    raw_name = name.encode("utf-8")
    return bytes([len(raw_name)]) + raw_name + _value_bytes(value)


def _value_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return bytes([_STRING]) + struct.pack(">H", len(raw)) + raw
    if not (isinstance(value, dict) and len(value) == 1):
        raise ValueError(f"a header value is a string or a one-key object, got {value!r}")
    ((tag, item),) = value.items()
    if tag == "bool":
        return bytes([_BOOL_TRUE if item else _BOOL_FALSE])
    if tag in _TAGS:
        code, fmt = _TAGS[tag]
        return bytes([code]) + struct.pack(fmt, item)
    if tag == "uuid":
        return bytes([_UUID]) + bytes.fromhex(item)
    if tag == "bytes":
        raw = base64.b64decode(item, validate=True)
        return bytes([_BYTES]) + struct.pack(">H", len(raw)) + raw
    raise ValueError(f"unknown header value type {tag!r}")


def _frame_bytes(frame: Any) -> bytes:
    if not isinstance(frame, dict) or not isinstance(frame.get("headers"), list):
        raise ValueError(f'an eventstream frame has "headers" and a payload, got {frame!r}')
    payloads = [kind for kind in _PAYLOADS if kind in frame]
    if len(payloads) != 1 or len(frame) != 2:
        raise ValueError(f"an eventstream frame has one payload (json, text or base64): {frame!r}")
    headers = [_header_pair(header) for header in frame["headers"]]
    try:
        return encode_frame(headers, _PAYLOADS[payloads[0]](frame[payloads[0]]))
    except struct.error as exc:  # a number or a length out of its type's range
        raise ValueError(f"eventstream frame {frame!r}: {exc}") from exc


def _header_pair(header: Any) -> tuple[str, Any]:
    if isinstance(header, str) and _SEPARATOR in header:
        name, value = header.split(_SEPARATOR, 1)
        return name, value
    if isinstance(header, list) and len(header) == 2 and isinstance(header[0], str):
        return header[0], header[1]
    raise ValueError(f'an eventstream header is "name: value" or [name, value], got {header!r}')


def _payload_form(payload: bytes) -> dict[str, Any]:
    """JSON as a value when the cassette gives back the same bytes, else text, else base64."""
    if payload[:1] in (b"{", b"["):
        try:
            value = orjson.loads(payload)
        except orjson.JSONDecodeError:
            pass
        else:
            if orjson.dumps(orjson.loads(dump_json(value))) == payload:
                return {"json": value}
    try:
        return {"text": payload.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": _b64(payload)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_PAYLOADS: dict[str, Callable[[Any], bytes]] = {
    "json": orjson.dumps,
    "text": lambda text: str(text).encode("utf-8"),
    "base64": lambda text: base64.b64decode(text, validate=True),
}
