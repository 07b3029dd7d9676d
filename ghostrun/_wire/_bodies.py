"""How a body is stored in a cassette so that replay gives back its exact bytes (DESIGN §3).

A stored BODY is a JSON object with one *encoding* key, which holds the body,
and at most one *modifier*, which says how to get the bytes back exactly:

    {"json": VALUE}                  a JSON body whose bytes are ``orjson.dumps(VALUE)``
    {"json": VALUE, "format": NAME}  ... whose bytes are ``JSON_FORMATS[NAME](VALUE)``
    {"text": STR}                    UTF-8 text (JSON that no format reproduces, too)
    {"base64": STR}                  bytes that are not UTF-8
    {"sse" | "ndjson" | "chunks": [STR, ...]}
                                     a stream, the chunks as received, one string each
    {... the same, "carry": [[I, N], ...]}
                                     ... where chunk I ended N bytes into a UTF-8
                                     character: its text stops before that character,
                                     which is stored whole in the text after it
    {"chunks_base64": [STR, ...]}    a stream that is not UTF-8
    {"eventstream": [[FRAME, ...], ...]}
                                     AWS's binary event-stream frames, each chunk
                                     the list of its frames (see `_eventstream`)

A response's JSON body is stored as JSON only when that is provably exact:
when recording, the value is serialised in each format that could have
produced the bytes (`JSON_FORMATS`: the ways providers' servers write JSON)
and kept with the first whose output equals them; else the body is text. So
key order, white space, ``\\uXXXX`` escapes and number spellings (``6.1e-05``,
``1.0``) replay as received, and what no format reproduces (an integer past
2**64, which orjson reads as a float; a duplicate key; an escaped ``/``) is
kept as text. The formats are tried fastest first, so the common ones
(``compact``, ``indent2``) replay at orjson's speed.

Request bodies are never replayed: they are stored as JSON whenever they
parse, whatever their spelling (`encode_body`).

Version 1 cassettes have neither modifier (their JSON bodies replayed compact),
so they read as they always did.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, cast

import orjson

from . import _eventstream

__all__ = [
    "JSON_FORMATS",
    "MODIFIERS",
    "STREAM_KINDS",
    "Body",
    "decode_body",
    "encode_body",
    "encode_chunks",
    "encode_response_body",
    "json_body_bytes",
    "stream_kind",
]

Serialiser = Callable[[Any], bytes]


class Body(TypedDict, total=False):
    """A stored body, as above: exactly one encoding key, and at most one modifier."""

    json: Any  # any JSON value: the body itself
    format: str  # a name in `JSON_FORMATS`
    text: str
    base64: str
    sse: list[str]
    ndjson: list[str]
    chunks: list[str]
    carry: list[list[int]]  # [[chunk index, bytes moved], ...]
    chunks_base64: list[str]
    eventstream: list[list[_eventstream.Frame]]  # each chunk's frames


STREAM_KINDS = ("sse", "ndjson", "chunks")
MODIFIERS = frozenset({"format", "carry"})


def _python(**options: Any) -> Serialiser:
    """Python's ``json`` module with these options (its C encoder unless ``indent`` is set)."""
    encoder = json.JSONEncoder(**options)
    return lambda value: encoder.encode(value).encode("utf-8")


def _with_newline(serialise: Serialiser) -> Serialiser:
    return lambda value: serialise(value) + b"\n"


# The serialisations JSON bodies are stored in: name -> (serialiser, pretty, ASCII only).
# In the order they are tried when recording: the fastest to replay first. orjson
# spells numbers as JavaScript does (0.000061, 1e-7); Python's json as Python does
# (6.1e-05, 1e-07), and only it escapes non-ASCII characters (\u00e9).
_BASE_FORMATS: dict[str, tuple[Serialiser, bool, bool]] = {
    # {"a":1}: JSON.stringify, orjson, Go without HTML characters; most providers.
    "compact": (orjson.dumps, False, False),
    # 2-space indent, ": " after keys: JSON.stringify(v, null, 2), OpenAI's pretty bodies.
    "indent2": (lambda value: orjson.dumps(value, option=orjson.OPT_INDENT_2), True, False),
    # {"a":1} with Python numbers: Starlette's and FastAPI's JSONResponse.
    "python-compact-utf8": (_python(ensure_ascii=False, separators=(",", ":")), False, False),
    # {"a": 1}: json.dumps(v, ensure_ascii=False).
    "python-utf8": (_python(ensure_ascii=False), False, False),
    # {"a": 1}, non-ASCII as \uXXXX: json.dumps(v), Python's default.
    "python": (_python(), False, True),
    "python-compact": (_python(separators=(",", ":")), False, True),
    # Pretty with Python numbers (Gemini's pretty bodies with an exponent float).
    "python-indent2-utf8": (_python(ensure_ascii=False, indent=2), True, False),
    "python-indent2": (_python(indent=2), True, True),
}
# Each of them also with a trailing newline, as Google's servers end their bodies.
JSON_FORMATS: dict[str, Serialiser] = {
    **{name: entry[0] for name, entry in _BASE_FORMATS.items()},
    **{f"{name}+newline": _with_newline(entry[0]) for name, entry in _BASE_FORMATS.items()},
}
_COMPACT = "compact"


def encode_body(data: bytes, content_type: str) -> Body:
    """A request body: JSON as a value (never replayed, so any spelling), else text or base64."""
    if data and "json" in content_type.lower():
        try:
            return {"json": orjson.loads(data)}
        except orjson.JSONDecodeError:
            pass
    return _text_or_base64(data)


def encode_response_body(data: bytes, content_type: str) -> Body:
    """A response body: JSON with the format that gives its bytes back, else text or base64."""
    if data and "json" in content_type.lower():
        found = _exact_json(data)
        if found is not None:
            return found
    return _text_or_base64(data)


def _text_or_base64(data: bytes) -> Body:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def _exact_json(data: bytes) -> Body | None:
    """``{"json": value, "format": name}`` for the first format that rebuilds ``data``."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    for name in _candidates(data):
        if JSON_FORMATS[name](value) == data:
            return {"json": value} if name == _COMPACT else {"format": name, "json": value}
    return None


def _candidates(data: bytes) -> list[str]:
    """The formats that could have written ``data``, told apart by two cheap byte tests.

    A line break inside valid JSON is white space, so only a pretty format
    writes one (and a pretty format writes none only for a value that a compact
    one writes alike); only UTF-8 formats write a byte past ASCII.
    """
    newline = data.endswith(b"\n")
    core = data[:-1] if newline else data
    pretty, ascii_only = b"\n" in core, core.isascii()
    suffix = "+newline" if newline else ""
    return [
        name + suffix
        for name, (_serialise, is_pretty, escapes) in _BASE_FORMATS.items()
        if is_pretty == pretty and (ascii_only or not escapes)
    ]


def json_body_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes of a stored ``json`` body: the replay hot path, one dict lookup past orjson."""
    name = body.get("format")
    if name is None:
        return orjson.dumps(body["json"])
    serialise = JSON_FORMATS.get(name) if isinstance(name, str) else None
    if serialise is None:
        raise ValueError(f"unknown JSON format {name!r} (known: {', '.join(JSON_FORMATS)})")
    return serialise(body["json"])


# -- streams -------------------------------------------------------------------------

STREAM_TYPES: tuple[tuple[str, str], ...] = (
    ("event-stream", "sse"),  # text/event-stream: OpenAI, Anthropic, Gemini, Mistral, ...
    ("ndjson", "ndjson"),  # application/x-ndjson: Ollama, watsonx
    ("jsonl", "ndjson"),  # application/jsonl, application/jsonlines
    ("stream+json", "ndjson"),  # application/stream+json: Cohere's chat stream
    ("amazon.eventstream", "eventstream"),  # application/vnd.amazon.eventstream: Bedrock
)
"""The streamed content types, by a part of their media type, and how each is stored.

A response of one of these types is a stream on every road: handed on chunk by
chunk as it arrives while recording, stored as its chunks, replayed in them.
``stream+json`` and JSON lines are newline-delimited JSON, so they store as ``ndjson``.
"""


def stream_kind(content_type: str) -> str | None:
    """How a response of this content type is stored as a stream, or None: not a stream."""
    media = content_type.partition(";")[0].strip().lower()
    for part, kind in STREAM_TYPES:
        if part in media:
            return kind
    return None


def encode_chunks(chunks: list[bytes], content_type: str) -> Body:
    """A stream as readable text chunks, boundaries kept; base64 only if it is not UTF-8."""
    kind = stream_kind(content_type) or "chunks"
    if kind == "eventstream":
        if frames := _eventstream.encode_chunks(chunks):
            return {"eventstream": frames}
        kind = "chunks"
    texts = _text_chunks(chunks)
    if texts is None:
        return {"chunks_base64": [base64.b64encode(chunk).decode("ascii") for chunk in chunks]}
    strings, carry = texts
    body = cast(Body, {kind: strings})  # kind: one of `STREAM_KINDS`
    if carry:
        body["carry"] = carry
    return body


def _text_chunks(chunks: list[bytes]) -> tuple[list[str], list[list[int]]] | None:
    """Each chunk's text, a character split between chunks moved whole into the later one.

    Returns the texts and the carries ``[index, bytes moved]``, or None when the
    stream is not UTF-8 (or ends inside a character, as a broken stream can).
    """
    texts: list[str] = []
    carry: list[list[int]] = []
    pending = b""
    for index, chunk in enumerate(chunks):
        data = pending + chunk if pending else chunk
        whole = _whole_characters(data)
        try:
            texts.append(data[:whole].decode("utf-8"))
        except UnicodeDecodeError:
            return None
        pending = data[whole:]
        if pending:
            carry.append([index, len(pending)])
    return None if pending else (texts, carry)


def _whole_characters(data: bytes) -> int:
    """The length of ``data`` up to the last character it holds whole (all of it, usually)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: the last character starts here
            size = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) - back if size > back else len(data)
    return len(data)  # continuation bytes only: not UTF-8, as decoding will say


def _restore_chunks(texts: list[str], carry: Any) -> list[bytes]:
    """The chunks as received, from their texts and carries (`_text_chunks` undone)."""
    encoded = list(map(str.encode, texts))  # UTF-8; no Python frame per chunk
    if not carry:
        return encoded
    moved = _carries(carry, len(texts))
    data = b"".join(encoded)
    chunks, start, stored_end = [], 0, 0
    for index, piece in enumerate(encoded):
        stored_end += len(piece)
        end = stored_end + moved.get(index, 0)
        if end < start or end > len(data):
            raise ValueError(f"carry {moved[index]} of chunk {index} runs past its neighbours")
        chunks.append(data[start:end])
        start = end
    return chunks


def _carries(carry: Any, count: int) -> dict[int, int]:
    """``{index: bytes moved}`` from a stored ``carry`` list, checked."""
    if not isinstance(carry, list):
        raise ValueError(f'"carry" must be a list of [chunk index, bytes], got {carry!r}')
    moved: dict[int, int] = {}
    for item in carry:
        ok = isinstance(item, list) and len(item) == 2 and all(type(n) is int for n in item)
        if not ok or not 0 <= item[0] < count - 1 or not 1 <= item[1] <= 3 or item[0] in moved:
            raise ValueError(
                f'bad "carry" entry {item!r}: [index of a chunk but the last, 1 to 3 bytes]'
            )
        moved[item[0]] = item[1]
    return moved


# -- decoding ------------------------------------------------------------------------


def decode_body(body: Mapping[str, Any]) -> bytes | list[bytes]:
    """Inverse of `encode_response_body` / `encode_chunks`: bytes, or the list of chunks."""
    if len(body) == 1:  # a stream without carries, nearly always: its chunks at C speed
        ((kind, value),) = body.items()
        if kind in STREAM_KINDS and type(value) is list:
            try:
                return list(map(str.encode, value))  # as `_restore_chunks` encodes them
            except TypeError:
                pass  # a chunk that is not a string: read below, as it always was
    kinds = [name for name in body if name not in MODIFIERS]
    if len(kinds) != 1:
        raise ValueError(f"a body has exactly one encoding key, got {sorted(body)}")
    (kind,) = kinds
    value = body[kind]
    allowed = {"json": {"format"}, **{name: {"carry"} for name in STREAM_KINDS}}.get(kind, set())
    extra = set(body) - {kind} - allowed
    if extra:
        raise ValueError(f"a {kind!r} body cannot have {', '.join(sorted(extra))}")
    if kind == "json":
        return json_body_bytes(body)
    if kind == "text":
        return str(value).encode("utf-8")
    if kind == "base64":
        return base64.b64decode(value, validate=True)
    if kind in STREAM_KINDS:
        return _restore_chunks(list(map(str, value)), body.get("carry"))
    if kind == "chunks_base64":
        return [base64.b64decode(chunk, validate=True) for chunk in value]
    if kind == "eventstream":
        return _eventstream.decode_chunks(value)
    raise ValueError(f"unknown body encoding {kind!r}")
