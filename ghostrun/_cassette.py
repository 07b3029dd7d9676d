"""The cassette: one readable JSON file per distinct request.

    {
      "version": 1,
      "key": "<32 hex digits>",
      "request": {"method": ..., "url": ..., "headers": {...}, "body": BODY},
      "responses": [{"status": 200, "headers": {...}, "body": BODY,
                     "stream_error": {"type": ..., "message": ...}?}, ...]
    }

A BODY names its encoding by its only key: ``json`` (a JSON value), ``text``,
``base64`` (bytes that are not UTF-8), or, for streams, ``sse``, ``ndjson`` or
``chunks`` (the list of chunks received, each a string) and ``chunks_base64``,
or ``eventstream`` (AWS's binary frames, each chunk the list of its frames:
see ``_eventstream``).
Bodies are stored decoded (never gzipped); replay reproduces streams chunk
for chunk and binary bodies byte for byte.

Runs. A response may carry ``"session": "<session name>"`` (the test id
under pytest and unittest): the responses of one name form that session's
*run*, kept contiguous in the file. When two sessions send the same request
at once (``pytest -n`` workers, two tests of one suite, two processes), each
keeps its own run, so nothing is lost and a loop replays its own sequence:
a session replays its own run when the file has one, else the first run in
the file (which it then extends, in ``auto``, past its end); ``record``
replaces only the session's own run. Responses without the field (unnamed
sessions, files from before runs) are one run.

Every file is validated on read (`ghostrun._validate`): a bad one raises
`CassetteError` naming the file and the field, and is never overwritten.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from . import _eventstream, _validate
from ._exceptions import CassetteError
from ._files import dump_json, write_atomic

__all__ = [
    "FORMAT_VERSION",
    "RUN_FIELD",
    "Cassette",
    "Recording",
    "decode_body",
    "encode_body",
    "read_run",
]

FORMAT_VERSION = _validate.FORMAT_VERSIONS["cassette"]
RUN_FIELD = "session"
_STREAM_KINDS = ("sse", "ndjson", "chunks")
_BYTE_KINDS = ("json", "text", "base64")


@dataclass(slots=True)
class Recording:
    """One response as the provider sent it (bodies decoded)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: list[bytes] | None = None  # set for streamed responses
    stream_error: tuple[str, str] | None = None  # (exception type, message)

    @property
    def transient(self) -> bool:
        """A failure an SDK retries past (429, 5xx): not worth keeping if it did."""
        return self.status == 429 or self.status >= 500


class Cassette:
    """A cassette's JSON document, for adding a response to it (replay uses `read_run`)."""

    __slots__ = ("key", "path", "raw_responses", "request")

    def __init__(
        self,
        path: str | Path,
        key: str,
        request: dict[str, Any],
        raw_responses: list[dict[str, Any]],
    ) -> None:
        self.path = path
        self.key = key
        self.request = request
        self.raw_responses = raw_responses

    def __len__(self) -> int:
        return len(self.raw_responses)

    def response(self, index: int) -> Recording:
        return _decode_response(self.raw_responses[index], self.path)

    @classmethod
    def load(cls, path: str | Path) -> Cassette | None:
        """The cassette at ``path``, checked, or None if there is none."""
        found = _read(path)
        return None if found is None else cls(path, *found)

    def save(self) -> None:
        document = {
            "version": FORMAT_VERSION,
            "key": self.key,
            "request": self.request,
            "responses": self.raw_responses,
        }
        write_atomic(self.path, dump_json(document))

    # -- runs ----------------------------------------------------------------------------

    def run(self, label: str | None) -> list[int]:
        """The positions in the file of the responses of run ``label``."""
        return [i for i, raw in enumerate(self.raw_responses) if raw.get(RUN_FIELD) == label]

    def choose_run(self, name: str | None) -> str | None:
        """The run a session named ``name`` uses: its own, else the file's first."""
        return choose_run(self.raw_responses, name)

    def add(self, response: dict[str, Any], label: str | None) -> int:
        """Add ``response`` at the end of run ``label``; its index within the run."""
        if label is not None:
            response = {**response, RUN_FIELD: label}
        positions = self.run(label)
        where = positions[-1] + 1 if positions else len(self.raw_responses)
        self.raw_responses.insert(where, response)
        return len(positions)

    def drop_run(self, label: str | None) -> None:
        self.raw_responses = [r for r in self.raw_responses if r.get(RUN_FIELD) != label]


def choose_run(raw_responses: list[dict[str, Any]], name: str | None) -> str | None:
    """A session's own run if the responses hold one, else the first run, else its own."""
    first = _NO_RUN
    for raw in raw_responses:
        label = raw.get(RUN_FIELD)
        if label == name:
            return name
        if first is _NO_RUN:
            first = label
    return name if first is _NO_RUN else first


_NO_RUN: Any = object()


def read_run(
    path: str, name: str | None, label: Any = _NO_RUN
) -> tuple[str | None, list[Recording]] | None:
    """The replay path: (run label, its responses decoded), or None if there is no file.

    ``label`` is the run the session already uses for this key; by default (or
    when that run is gone) the session's own run, else the file's first.
    """
    found = _read(path)
    if found is None:
        return None
    raw_responses = found[2]
    if len(raw_responses) == 1:  # nearly always: one run of one response
        return raw_responses[0].get(RUN_FIELD), [_decode_response(raw_responses[0], path)]
    labels = {raw.get(RUN_FIELD) for raw in raw_responses}
    if label is _NO_RUN or label not in labels:
        label = choose_run(raw_responses, name)
    chosen = [raw for raw in raw_responses if raw.get(RUN_FIELD) == label]
    return label, [_decode_response(raw, path) for raw in chosen]


def _read(path: str | Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]] | None:
    """(key, request, raw responses) of the cassette at ``path``, checked; None if there is none."""
    data = _validate.load(path, "cassette")
    if data is None:
        return None
    return data["key"], data["request"], data["responses"]


def encode_response(recording: Recording, content_type: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "status": recording.status,
        "headers": _headers_to_json(recording.headers),
    }
    if recording.chunks is not None:
        entry["body"] = encode_chunks(recording.chunks, content_type)
    else:
        entry["body"] = encode_body(recording.body, content_type)
    if recording.stream_error is not None:
        kind, message = recording.stream_error
        entry["stream_error"] = {"type": kind, "message": message}
    return entry


def encode_body(data: bytes, content_type: str) -> dict[str, Any]:
    """JSON as a value, text as text, anything else as base64."""
    if data and "json" in content_type.lower():
        try:
            return {"json": orjson.loads(data)}
        except orjson.JSONDecodeError:
            pass
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def encode_chunks(chunks: list[bytes], content_type: str) -> dict[str, Any]:
    ctype = content_type.lower()
    if "amazon.eventstream" in ctype and (frames := _eventstream.encode_chunks(chunks)):
        return {"eventstream": frames}
    kind = "sse" if "event-stream" in ctype else "ndjson" if "ndjson" in ctype else "chunks"
    try:
        return {kind: [chunk.decode("utf-8") for chunk in chunks]}
    except UnicodeDecodeError:
        return {"chunks_base64": [base64.b64encode(chunk).decode("ascii") for chunk in chunks]}


def decode_body(body: dict[str, Any]) -> bytes | list[bytes]:
    """Inverse of `encode_body` / `encode_chunks`: bytes, or the list of chunks."""
    if len(body) != 1:
        raise ValueError(f"a body has exactly one encoding key, got {sorted(body)}")
    ((kind, value),) = body.items()
    if kind == "json":
        return orjson.dumps(value)
    if kind == "text":
        return str(value).encode("utf-8")
    if kind == "base64":
        return base64.b64decode(value, validate=True)
    if kind in _STREAM_KINDS:
        return [str(chunk).encode("utf-8") for chunk in value]
    if kind == "chunks_base64":
        return [base64.b64decode(chunk, validate=True) for chunk in value]
    if kind == "eventstream":
        return _eventstream.decode_chunks(value)
    raise ValueError(f"unknown body encoding {kind!r}")


def _decode_response(raw: dict[str, Any], path: str | Path) -> Recording:
    try:
        status, headers = int(raw["status"]), _headers_from_json(raw.get("headers") or {})
        body = raw.get("body")
        if body is not None and len(body) == 1 and "json" in body and "stream_error" not in raw:
            return Recording(status, headers, orjson.dumps(body["json"]))  # nearly every one
        decoded = decode_body(body or {"text": ""})
        error = raw.get("stream_error")
        return Recording(
            status,
            headers,
            body=decoded if isinstance(decoded, bytes) else b"",
            chunks=decoded if isinstance(decoded, list) else None,
            stream_error=(str(error["type"]), str(error["message"])) if error else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CassetteError(f"corrupt cassette {path}: bad response entry ({exc})") from exc


def _headers_to_json(headers: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for name, value in headers:
        seen = out.get(name)
        if seen is None:
            out[name] = value
        elif isinstance(seen, list):
            seen.append(value)
        else:
            out[name] = [seen, value]
    return out


def _headers_from_json(headers: dict[str, str | list[str]]) -> list[tuple[str, str]]:
    if list not in map(type, headers.values()):  # no header was sent twice: nearly always
        return list(headers.items())  # type: ignore[arg-type]
    pairs = []
    for name, value in headers.items():
        if isinstance(value, list):
            pairs += [(name, one) for one in value]
        else:
            pairs.append((name, value))
    return pairs
