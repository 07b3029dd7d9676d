"""The cassette: one readable JSON file per distinct request.

    {
      "key": "<32 hex digits>",
      "request": {"body": BODY, "headers": {...}, "method": ..., "url": ...},
      "responses": [{"body": BODY, "headers": {...}, "status": 200,
                     "reason": "PermissionDenied"?,
                     "recorded_on": "2026-12-02"?,
                     "stream_error": {"message": ..., "type": ...}?}, ...],
      "version": 2
    }

BODY is described in `_bodies`: JSON as a value, text as text, base64 only for
bytes that are not UTF-8, streams as their chunks (AWS event-stream frames
readably, see `_eventstream`), each stored so that replay
gives back the bytes received (DESIGN §3, exact). Bodies are stored decoded
(never gzipped).

Key order: the file's own keys and the request are sorted, so diffs stay small;
a response's headers and body keep the provider's order, which replay
reproduces (a header sent twice keeps its values in order, under one name).

``reason`` is the status line's phrase, written only when the provider sent
another than the standard one (an empty one, Azure's ``PermissionDenied``); a
file without it replays the standard phrase, as files before it did. An older
ghostrun reads a file with it and ignores it, so it needed no new version.

Version 2 added the body modifiers (``format``, ``carry``) and the provider's
order in responses. A version 1 file (all keys sorted, JSON bodies replayed
compact) is a valid version 2 file and is read as one; version 2 was made a
new number so that an older ghostrun says "upgrade" instead of "corrupt".

Runs. A response may carry ``"session": "<session name>"`` (the test id
under pytest and unittest): the responses of one name form that session's
*run*, kept contiguous in the file. When two sessions send the same request
at once (``pytest -n`` workers, two tests of one suite, two processes), each
keeps its own run, so nothing is lost and a loop replays its own sequence:
a session replays its own run when the file has one, else the first run in
the file (which it then extends, in ``auto``, past its end); ``record``
replaces only the session's own run. Responses without the field (unnamed
sessions, files from before runs) are one run.

Each response carries the day it was recorded (``recorded_on``, `_core._age`),
for ``max_age``; files written before it was kept lack it and still load.

Every file is validated on read (`ghostrun._store._validate`): a bad one raises
`CassetteError` naming the file and the field, and is never overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final, cast

from .._core._exceptions import CassetteError
from .._core._files import create_atomic, dump_json, write_atomic
from .._wire._bodies import (
    decode_body,
    encode_body,
    encode_chunks,
    encode_response_body,
    json_body_bytes,
)
from . import _validate
from ._formats import CassetteFile, Headers, RequestRecord, ResponseRecord
from ._limits import LIMITS, limit_message

__all__ = [
    "FORMAT_VERSION",
    "RUN_FIELD",
    "Cassette",
    "Recording",
    "decode_body",  # from `_bodies`, where they live now
    "encode_body",
    "encode_response",
    "headers_json",
    "read_run",
    "reason_of",
    "standard_reason",
]

FORMAT_VERSION = _validate.FORMAT_VERSIONS["cassette"]
RUN_FIELD: Final = "session"
_JSON_KEYS = frozenset({"json", "format"})


@dataclass(slots=True)
class Recording:
    """One response as the provider sent it (bodies decoded)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: list[bytes] | None = None  # set for streamed responses
    stream_error: tuple[str, str] | None = None  # (exception type, message)
    reason: str | None = None  # the status line's phrase, if not the standard one (`reason_of`)
    # The day it was recorded (``YYYY-MM-DD``). None: today, stamped when written;
    # "": unknown (an import from a source that kept no date), written without one.
    recorded_on: str | None = None

    @property
    def transient(self) -> bool:
        """A failure an SDK retries past (408, 429, 5xx): not worth keeping if it did."""
        return self.status in (408, 429) or self.status >= 500


def standard_reason(status: int) -> str:
    """The reason phrase HTTP gives ``status`` (``""`` for a status it names not)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def reason_of(recording: Recording) -> str:
    """The reason phrase to hand on: the one recorded, else the standard one."""
    reason = recording.reason
    return standard_reason(recording.status) if reason is None else reason


class Cassette:
    """A cassette's JSON document, for adding a response to it (replay uses `read_run`)."""

    __slots__ = ("key", "path", "raw_responses", "request")

    def __init__(
        self,
        path: str | Path,
        key: str,
        request: RequestRecord,
        raw_responses: list[ResponseRecord],
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
        """Write the file, replacing what is there (under the cassette's lock)."""
        write_atomic(self.path, self._dumped())

    def create(self) -> bool:
        """Write the file only if there is none yet; False if there is (`create_atomic`)."""
        return create_atomic(self.path, self._dumped())

    def _dumped(self) -> bytes:
        document: CassetteFile = {
            "key": self.key,
            "request": _sorted(self.request),
            "responses": [_ordered_response(raw) for raw in self.raw_responses],
            "version": FORMAT_VERSION,
        }
        return dump_json(document, sort_keys=False)

    # -- runs ----------------------------------------------------------------------------

    def run(self, label: str | None) -> list[int]:
        """The positions in the file of the responses of run ``label``."""
        return [i for i, raw in enumerate(self.raw_responses) if raw.get(RUN_FIELD) == label]

    def choose_run(self, name: str | None) -> str | None:
        """The run a session named ``name`` uses: its own, else the file's first."""
        return choose_run(self.raw_responses, name)

    def add(self, response: ResponseRecord, label: str | None) -> int:
        """Add ``response`` at the end of run ``label``; its index within the run."""
        if label is not None:
            response = {**response, RUN_FIELD: label}
        positions = self.run(label)
        where = positions[-1] + 1 if positions else len(self.raw_responses)
        self.raw_responses.insert(where, response)
        return len(positions)

    def drop_run(self, label: str | None) -> None:
        self.raw_responses = [r for r in self.raw_responses if r.get(RUN_FIELD) != label]


def choose_run(raw_responses: list[ResponseRecord], name: str | None) -> str | None:
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


def _read(path: str | Path) -> tuple[str, RequestRecord, list[ResponseRecord]] | None:
    """(key, request, raw responses) of the cassette at ``path``, checked; None if there is none."""
    data = _validate.load(path, "cassette")
    if data is None:
        return None
    if "request" in data:
        return data["key"], data["request"], data["responses"]
    raise KeyError("request")  # a WebSocket conversation's (`_wscassette`): not a request's


def encode_response(recording: Recording, content_type: str) -> ResponseRecord:
    entry: ResponseRecord = {
        "status": recording.status,
        "headers": headers_json(recording.headers),
    }
    if recording.chunks is not None:
        entry["body"] = encode_chunks(recording.chunks, content_type)
    else:
        entry["body"] = encode_response_body(recording.body, content_type)
    if recording.stream_error is not None:
        kind, message = recording.stream_error
        entry["stream_error"] = {"type": kind, "message": message}
    if recording.reason is not None and _kept_reason(recording):
        entry["reason"] = recording.reason
    if recording.recorded_on:
        entry["recorded_on"] = recording.recorded_on
    return entry


def _kept_reason(recording: Recording) -> bool:
    """Whether a response's reason phrase is written: only if it is not the standard one
    (most files never hold one) and fits in a status line (a file may not hold another)."""
    reason = recording.reason
    return (
        reason is not None
        and reason != standard_reason(recording.status)
        and _validate.valid_reason(reason)
    )


def _decode_response(raw: ResponseRecord, path: str | Path) -> Recording:
    try:
        status, headers = int(raw["status"]), _headers_from_json(raw.get("headers") or {})
        body = raw.get("body")
        if (
            type(body) is dict
            and "json" in body
            and body.keys() <= _JSON_KEYS
            and "stream_error" not in raw
        ):
            recording = Recording(  # nearly every one
                status,
                headers,
                json_body_bytes(body),
                reason=raw.get("reason"),
                recorded_on=raw.get("recorded_on"),
            )
        else:
            decoded = decode_body(body or {"text": ""})
            error = raw.get("stream_error")
            recording = Recording(
                status,
                headers,
                body=decoded if isinstance(decoded, bytes) else b"",
                chunks=decoded if isinstance(decoded, list) else None,
                stream_error=(str(error["type"]), str(error["message"])) if error else None,
                reason=raw.get("reason"),
                recorded_on=raw.get("recorded_on"),
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise CassetteError(f"corrupt cassette {path}: bad response entry ({exc})") from exc
    size = len(recording.body) + sum(map(len, recording.chunks or ()))
    if size > LIMITS["body_bytes"].value:
        raise CassetteError(
            f"cassette {path}: a response body: {limit_message('body_bytes', size)}. "
            "Delete it and re-record with GHOSTRUN_MODE=record."
        )
    return recording


def _sorted(value: Any) -> Any:
    """``value`` with the keys of every object in it sorted."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _ordered_response(raw: ResponseRecord) -> ResponseRecord:
    """A response entry's own keys sorted; its headers and body values as the provider sent them."""
    out: dict[str, Any] = {key: value for key, value in sorted(raw.items())}
    body = out.get("body")
    if isinstance(body, dict):
        out["body"] = {key: body[key] for key in sorted(body)}
    error = out.get("stream_error")
    if isinstance(error, dict):
        out["stream_error"] = _sorted(error)
    return cast(ResponseRecord, out)  # the same entry, its keys in another order


def headers_json(headers: Iterable[tuple[str, str]]) -> Headers:
    """Headers as a cassette stores them: a repeated name holds the list of its values."""
    out: Headers = {}
    for name, value in headers:
        seen = out.get(name)
        if seen is None:
            out[name] = value
        elif isinstance(seen, list):
            seen.append(value)
        else:
            out[name] = [seen, value]
    return out


def _headers_from_json(headers: Headers) -> list[tuple[str, str]]:
    if list not in map(type, headers.values()):  # no header was sent twice: nearly always
        return list(headers.items())  # type: ignore[arg-type]
    pairs = []
    for name, value in headers.items():
        if isinstance(value, list):
            pairs += [(name, one) for one in value]
        else:
            pairs.append((name, value))
    return pairs
