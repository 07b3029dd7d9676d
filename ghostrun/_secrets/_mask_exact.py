"""Masking the exact secrets of an entry wherever they appear (DESIGN §4).

In any encoding (`_mask`), base64 bodies as bytes, and a stream across its
chunks and events (`_streams`): SSE, NDJSON, a JSON array read whole, AWS
event-stream payloads (their base64-carried events too). A fast check
(`may_hold`) spares the walk of an entry no secret can be in: the usual case.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import re
from typing import Any

import orjson

from ._mask import base64_forms, mask_text, patterns
from ._stored import is_binary, text_of
from ._streams import mask_chunks, mask_events
from ._walk import map_strings

__all__ = ["mask_exact", "may_hold"]

# A text body that may hold a stream's events: a JSON array, SSE data lines or NDJSON lines.
_MAY_STREAM = re.compile(r"\A\s*\[|^data:|\}[ \t]*[\r\n]\s*\{", re.MULTILINE)
_STREAM_KINDS = ("sse", "ndjson", "chunks", "chunks_base64")
_BASE64_MARKERS = ('"base64"', '"chunks_base64"')
_WALK_MARKS = (*_BASE64_MARKERS, "\\u", "\\U")


def mask_exact(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask exact secrets everywhere; a stream is searched across its chunks and events."""
    compiled = patterns(secrets)
    response = entry.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    if isinstance(response, dict) and isinstance(body, dict):
        read = _across_eventstream(body, compiled) if "eventstream" in body else body
        read = _across_whole_body(read, compiled)
        if read is not body:
            body = read
            entry = {**entry, "response": {**response, "body": body}}
    kind = _stream_kind(body)
    if kind is None or not isinstance(response, dict) or not isinstance(body, dict):
        return (
            {k: _mask_part(v, compiled) for k, v in entry.items()}
            if may_hold(entry, secrets)
            else entry
        )
    rest = {**entry, "response": {**response, "body": None}}
    if may_hold(rest, secrets):
        rest = {k: _mask_part(v, compiled) for k, v in rest.items()}
    masked, moved = _mask_stream(kind, body, compiled)
    rest["response"] = {**rest["response"], "body": masked}
    if moved:
        rest["response"]["masked_across_chunks"] = moved
    return rest


def _across_whole_body(body: dict[str, Any], compiled: Any) -> dict[str, Any]:
    """A body read whole, masked across its values: Gemini's ``streamGenerateContent``
    without ``alt=sse`` answers one JSON array of chunks as ``application/json``, a
    server may send SSE or NDJSON under another type, and one answer may spell a secret
    over the items of a list (logprobs' tokens and their bytes, Gemini's parts).

    The events' joined fields are searched even when no whole secret is in the body
    (the fast check `may_hold` only sees whole ones).
    """
    if "json" in body and set(body) <= {"json", "format"}:
        value = body["json"]
        events = value if isinstance(value, list) else [value]
        masked = mask_events(events, compiled)
        if masked is events:
            return body
        return {**body, "json": masked if isinstance(value, list) else masked[0]}
    text = body.get("text")
    if len(body) == 1 and isinstance(text, str) and _MAY_STREAM.search(text):
        (masked_text,), _moved = mask_chunks([text], compiled)
        return body if masked_text == text else {"text": masked_text}
    return body


def _across_eventstream(body: dict[str, Any], compiled: Any) -> dict[str, Any]:
    """An AWS event-stream body whose JSON payloads are masked together: a model may
    spell a key over two ``contentBlockDelta`` events, as over two SSE events.

    A payload ``{"bytes": <base64 JSON>}`` (InvokeModelWithResponseStream; real Bedrock
    adds a ``"p"`` padding field beside it) is read, masked and encoded again as the
    event it carries, so that a mask never lands inside its base64 and the stream
    still decodes on replay.
    """
    chunks = body["eventstream"]
    if not isinstance(chunks, list):
        return body
    at = [
        (c, f)
        for c, chunk in enumerate(chunks)
        if isinstance(chunk, list)
        for f, frame in enumerate(chunk)
        if isinstance(frame, dict) and "json" in frame
    ]
    payloads = [chunks[c][f]["json"] for c, f in at]
    events = [_carried(payload) for payload in payloads]
    masked = mask_events(events, compiled)
    out = [list(chunk) if isinstance(chunk, list) else chunk for chunk in chunks]
    changed = False
    for (c, f), payload, event, value in zip(at, payloads, events, masked, strict=True):
        if event is not payload:  # the event its bytes carry
            value = _mask_value(value, compiled)
            if value == event:
                continue
            data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
            value = {**payload, "bytes": base64.b64encode(data).decode("ascii")}
        elif value is event:
            continue
        out[c][f] = {**out[c][f], "json": value}
        changed = True
    return {**body, "eventstream": out} if changed else body


def _carried(payload: Any) -> Any:
    """The event a ``{"bytes": <base64 JSON>, ...}`` payload carries, else the payload.

    Whatever else the payload holds (Bedrock's ``"p"`` padding) does not hide the event.
    """
    if isinstance(payload, dict) and isinstance(payload.get("bytes"), str):
        try:
            return orjson.loads(base64.b64decode(payload["bytes"], validate=True))
        except (binascii.Error, ValueError):
            pass
    return payload


def _stream_kind(body: Any) -> str | None:
    """The key holding a stream's chunks, beside at most a ``carry`` of split characters."""
    if not isinstance(body, dict) or not set(body) - {"carry"}:
        return None
    kinds = [k for k in body if k in _STREAM_KINDS]
    return kinds[0] if len(kinds) == 1 and set(body) <= {kinds[0], "carry"} else None


def _mask_stream(
    kind: str, body: dict[str, Any], compiled: Any
) -> tuple[dict[str, Any], list[int]]:
    chunks = body[kind]
    if not isinstance(chunks, list):
        return body, []
    if kind == "chunks_base64":
        try:
            data = [base64.b64decode(c, validate=True) for c in chunks]
        except (binascii.Error, TypeError, ValueError):
            return {**body, kind: _mask_value(chunks, compiled)}, []
        masked, moved = mask_chunks(data, compiled)
        return {**body, kind: [base64.b64encode(c).decode("ascii") for c in masked]}, moved
    if not all(isinstance(c, str) for c in chunks):
        return {**body, kind: _mask_value(chunks, compiled)}, []
    texts, moved = mask_chunks(list(chunks), compiled)
    out: dict[str, Any] = {**body, kind: texts}
    carry = body.get("carry")
    if isinstance(carry, list):
        # A character carried to the start of the next chunk (DESIGN §3) stays carried
        # only where that chunk still starts with it.
        def still(c: Any) -> bool:
            index = c[0] if isinstance(c, list) and c and isinstance(c[0], int) else -1
            return 0 <= index < len(texts) - 1 and texts[index + 1][:1] == chunks[index + 1][:1]

        kept = [c for c in carry if still(c)]
        dropped = [c[0] + 1 for c in carry if not still(c) and isinstance(c, list) and c]
        moved = sorted({*moved, *(i for i in dropped if isinstance(i, int))})
        if kept:
            out["carry"] = kept
        else:
            del out["carry"]
    return out, moved


def may_hold(entry: Any, secrets: frozenset[str]) -> bool:
    """False only when no string in ``entry`` can hold a secret: the usual case, checked fast.

    Every pattern matches a secret in any encoding, JSON's included, so one search
    of the entry as JSON text stands for a search of each of its strings; and no
    pattern can match a text that has neither the secret itself nor one of the
    marks its escaped characters start with (`_clues`), so a few substring tests
    spare nearly every search. The string-by-string walk is left to bytes inside
    base64 bodies, to control characters (which JSON escapes its own way) and to
    ``\\u`` escapes written in a string (JSON doubles their backslash).
    """
    if not secrets:
        return False
    text = entry if isinstance(entry, str) else text_of(entry)
    if text is None or any(mark in text for mark in _WALK_MARKS):
        return True
    clues = _clues(secrets)
    if clues is None:
        return True
    if not any(clue in text for clue in clues):
        return False
    return any(p.search(text) for p in patterns(secrets))


@functools.lru_cache(maxsize=128)
def _clues(secrets: frozenset[str]) -> tuple[str, ...] | None:
    """Substrings one of which any match of `patterns` in JSON text contains.

    A secret shows either as itself (or a base64 form of it) or with some
    characters escaped, and every escape `_mask` knows starts with one of
    these marks (``\\u`` is in `_WALK_MARKS`). None: a secret with a control
    character, always walked.
    """
    chars = set("".join(secrets))
    if any(ord(c) < 0x20 for c in chars):
        return None
    clues = {*secrets, "%"}
    for secret in secrets:
        clues.update(base64_forms(secret))
    if chars & set("&<>\"'") or any("+" in c or "/" in c for c in clues):
        clues.add("&")
    if " " in chars:
        clues.add("+")
    if chars & set('"\\/') or any("/" in c for c in clues):
        clues.add("\\")
    return tuple(sorted(clues, key=len))


def _mask_part(part: Any, compiled: Any) -> Any:
    """Mask exact secrets in a request or a response; a binary body is masked as bytes."""
    if not isinstance(part, dict):
        return _mask_value(part, compiled)
    return {
        _mask_value(k, compiled): (
            _mask_body(v, compiled) if k == "body" else _mask_value(v, compiled)
        )
        for k, v in part.items()
    }


def _mask_value(value: Any, compiled: Any) -> Any:
    """Every string of a value masked, the objects' keys too."""
    return map_strings(value, lambda text: mask_text(text, compiled), keys=True)


def _mask_body(body: Any, compiled: Any) -> Any:
    if not is_binary(body):
        return _mask_value(_mask_nested_base64(body, compiled), compiled)
    ((kind, value),) = body.items()
    try:
        if kind == "base64":
            return {kind: _mask_base64(value, compiled)}
        return {kind: [_mask_base64(chunk, compiled) for chunk in value]}
    except (binascii.Error, TypeError, ValueError):
        return _mask_value(body, compiled)  # not base64 after all: mask it as text


def _mask_nested_base64(value: Any, compiled: Any) -> Any:
    """Each ``{"base64": ...}`` object inside a JSON body (a raw gRPC message) masked as its
    bytes, so it stays base64 (masked as text, a form of the secret would break it)."""
    if isinstance(value, list):
        return [_mask_nested_base64(item, compiled) for item in value]
    if not isinstance(value, dict):
        return value
    out = {k: _mask_nested_base64(v, compiled) for k, v in value.items()}
    if isinstance(out.get("base64"), str):
        with contextlib.suppress(binascii.Error, ValueError):  # not base64: masked as text
            out["base64"] = _mask_base64(out["base64"], compiled)
    return out


def _mask_base64(value: str, compiled: Any) -> str:
    data = base64.b64decode(value, validate=True)
    return base64.b64encode(mask_text(data, compiled)).decode("ascii")
