"""Protobuf messages as readable JSON, and back to their exact bytes (DESIGN §3, gRPC).

A gRPC message is stored as the JSON `google.protobuf.json_format` writes for
it (field names as in the ``.proto``: ``preserving_proto_field_name=True``),
with its full type name, so a cassette reads like a JSON API's. Exact, as the
JSON-body rule is (`_bodies`): `encode_message` parses the JSON back, serialises
it and compares with the bytes received; only when they differ (unknown fields,
an unusual field order) are the bytes kept too, as base64, and replay uses
those. `message_bytes` is the way back.

Messages are read from what the SDK's own deserialiser made of the bytes: a
generated protobuf class, or a proto-plus wrapper (Google's clients) around
one. Bytes of any other kind (a channel used without serialisers) are stored
as base64 alone. protobuf is imported lazily: only gRPC traffic needs it, and
the message types are registered by the SDK that made the call.
"""

from __future__ import annotations

import base64
import importlib
from typing import Any

__all__ = ["check_bytes", "encode_message", "message_bytes", "message_json", "message_of"]


def message_of(value: Any) -> Any | None:
    """The protobuf message behind a (de)serialised value: itself, a proto-plus wrapper's, or
    None (bytes, or a type protobuf does not know)."""
    try:
        message_class: Any = importlib.import_module("google.protobuf.message").Message
    except ImportError:  # no protobuf: every message is stored as its bytes
        return None
    if isinstance(value, message_class):
        return value
    pb = getattr(type(value), "pb", None)  # proto-plus: ``Type.pb(instance)`` is the message
    if callable(pb):
        try:
            inner = pb(value)
        except (TypeError, AttributeError):
            return None
        return inner if isinstance(inner, message_class) else None
    return None


def message_json(message: Any) -> tuple[str, Any]:
    """(full type name, JSON value) of a protobuf message, as `json_format` writes it."""
    json_format = _protobuf("json_format")

    value = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return str(message.DESCRIPTOR.full_name), value


def encode_message(raw: bytes, parsed: Any) -> dict[str, Any]:
    """A message as stored: ``{"type", "json"}``, plus ``"base64"`` when the JSON does not
    give back ``raw``; ``{"base64"}`` alone when ``parsed`` is no protobuf message."""
    message = message_of(parsed)
    if message is None:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    name, value = message_json(message)
    entry: dict[str, Any] = {"type": name, "json": value}
    try:
        exact = message_bytes(name, value) == raw
    except (LookupError, ValueError):
        exact = False
    if not exact:
        entry["base64"] = base64.b64encode(raw).decode("ascii")
    return entry


def message_bytes(type_name: str, value: Any) -> bytes:
    """The bytes of the message of type ``type_name`` whose JSON is ``value``.

    Raises `LookupError` when no imported module defines the type, and
    `ValueError` when ``value`` is not a JSON form of it, or gives bytes the
    type's own parser refuses (a ``Struct`` nested past protobuf's depth limit
    is written but not read back: `check_bytes`).
    """
    json_format = _protobuf("json_format")
    cls = _message_class(type_name)
    try:
        built = json_format.ParseDict(value, cls())
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from exc
    data = bytes(built.SerializeToString())
    check_bytes(type_name, data)
    return data


def check_bytes(type_name: str, data: bytes) -> None:
    """Raise `ValueError` unless ``data`` reads as a ``type_name`` (its wire format, within
    protobuf's depth limit), as the SDK's deserialiser will read it; `LookupError` when no
    imported module defines the type."""
    message = _protobuf("message")
    try:
        _message_class(type_name).FromString(data)
    except (message.DecodeError, RecursionError) as exc:
        raise ValueError(f"not a {type_name} in its wire format ({exc})") from exc


def _message_class(type_name: str) -> Any:
    descriptor_pool = _protobuf("descriptor_pool")
    message_factory = _protobuf("message_factory")
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(type_name)
    except KeyError as exc:
        raise LookupError(f"no protobuf message type {type_name!r} is imported") from exc
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf 4.21 and later
    if get_class:
        return get_class(descriptor)
    return message_factory.MessageFactory().GetPrototype(descriptor)


def _protobuf(name: str) -> Any:
    """A module of ``google.protobuf``, imported when gRPC traffic first needs it (no stubs)."""
    return importlib.import_module(f"google.protobuf.{name}")
