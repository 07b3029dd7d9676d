"""How the parts of a stored entry read, for collecting and masking alike.

One reading each: what a request's content type is, when a text body is a form,
which bodies are binary, the bytes a body holds (and those it holds as base64:
`binary_payloads`), and an entry as JSON text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = [
    "BASE64_KINDS",
    "binary_payloads",
    "content_type",
    "is_binary",
    "is_form",
    "stored_bytes",
    "text_of",
]

_FORM = re.compile(r"[^=&\s]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*")
_FORM_TYPE = "application/x-www-form-urlencoded"
BASE64_KINDS = ("base64", "chunks_base64")


def content_type(request: dict[str, Any]) -> str:
    headers = request.get("headers")
    return str(headers.get("content-type", "")) if isinstance(headers, dict) else ""


def is_form(text: Any, content_type: str) -> bool:
    """A text body read as a form: said so by its content type (as the key reads it), or
    shaped like one."""
    if not isinstance(text, str):
        return False
    return content_type.lower().startswith(_FORM_TYPE) or bool(_FORM.fullmatch(text.strip()))


def is_binary(body: Any) -> bool:
    return isinstance(body, dict) and len(body) == 1 and next(iter(body)) in BASE64_KINDS


def stored_bytes(body: dict[str, Any]) -> bytes:
    """The bytes of a stored ``text`` or ``base64`` body (empty for any other)."""
    text = body.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    try:
        return base64.b64decode(str(body.get("base64", "")), validate=True)
    except (binascii.Error, ValueError):
        return b""


def binary_payloads(body: Any) -> Iterator[bytes]:
    """The bytes a stored body holds as base64, decoded: a binary body's (a stream's chunks
    joined), and each ``{"base64": ...}`` object's inside a JSON body (a raw gRPC message).

    Text searches never see into them; the secret shapes are looked for here too.
    """
    if not isinstance(body, dict):
        return
    if is_binary(body):
        ((kind, value),) = body.items()
        chunks = [value] if kind == "base64" else value if isinstance(value, list) else []
        yield b"".join(_decoded(chunk) for chunk in chunks)
    elif "json" in body:
        yield from _nested_base64(body["json"])


def _nested_base64(value: Any) -> Iterator[bytes]:
    if isinstance(value, dict):
        if isinstance(value.get("base64"), str):
            yield _decoded(value["base64"])
        for item in value.values():
            yield from _nested_base64(item)
    elif isinstance(value, list):
        for item in value:
            yield from _nested_base64(item)


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return b""


def text_of(value: Any) -> str | None:
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return None  # not JSON (a user hook's doing): take the slow, sure path
