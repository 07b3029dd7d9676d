"""Validation on read: every file ghostrun uses is checked against its schema first.

One loader, `load`, for the five kinds of versioned file: cassettes
(``<cassette_dir>/<key>.json``), judge verdicts (``judge/<key>.json``), run logs
(``runs/<name>.json``), trajectories (``trajectories/<test>.json``) and the
calibration summary (``calibration/judges.json``). It returns the parsed
document as its type in `_formats` (`CassetteFile` or `WebSocketFile`,
`VerdictFile`, `RunLogFile`, `TrajectoryFile`, `CalibrationSummaryFile`: what
the checks below hold it to), or ``None`` when the file does not exist, and
raises `CassetteError` naming the file and the field for anything else: not
JSON, ``null``, a wrong shape or type, a value out of range, an unknown format
version, a ``key`` that is not the file's name. A file that failed to load is
never treated as absent, so nothing ever overwrites it (DESIGN §3, "Safe").

The checks are small functions over plain JSON values; a failure names the
field the way the file spells it: ``responses[0].body.sse: expected a list of
strings, got str``. Body encodings are a table, `BODY_KINDS`, from the name of
the body's one encoding key to the check of its value, and `BODY_MODIFIERS` the
keys a body may carry beside it: a new encoding or modifier is one line. A
format version is read when it is in `READABLE_VERSIONS`.

``ghostrun prune`` deletes a file only once `load` accepted it (valid, right
version, key = name). ``ghostrun show``, which learns a file's kind from its
content, reads it with `read` and checks it with `check`: a file of a newer
format raises `NewerFormat`, so show can print it as raw JSON with a warning.
"""

from __future__ import annotations

import base64
import binascii
import operator
import os
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, Literal, cast, overload

import orjson

from .._core._exceptions import CassetteError
from .._core._files import read_bytes
from .._core._safe_text import terminal
from .._wire._bodies import JSON_FORMATS, STREAM_KINDS
from .._wire._eventstream import decode_chunks
from ._formats import (
    CalibrationSummaryFile,
    CassetteFile,
    McpStdioFile,
    RunLogFile,
    TrajectoryFile,
    VerdictFile,
    WebSocketFile,
)
from ._limits import LIMITS, header_problem, headers_replayable, json_depth, limit_message
from ._mcpcassette import parse_document as parse_mcp_document
from ._wscassette import parse_document

__all__ = [
    "BODY_KINDS",
    "BODY_MODIFIERS",
    "FORMAT_VERSIONS",
    "READABLE_VERSIONS",
    "Document",
    "Invalid",
    "Kind",
    "NewerFormat",
    "check",
    "load",
    "read",
    "valid_reason",
]

Kind = Literal["cassette", "verdict", "run log", "trajectory", "calibration summary"]
FORMAT_VERSIONS: dict[Kind, int] = {
    "cassette": 2,
    "verdict": 1,
    "run log": 1,
    "trajectory": 1,
    "calibration summary": 1,
}
"""The version each kind of file is written with."""
READABLE_VERSIONS: dict[Kind, tuple[int, ...]] = {
    "cassette": (1, 2),  # version 1 is version 2 without body modifiers (`_cassette`)
    "verdict": (1,),
    "run log": (1,),
    "trajectory": (1,),
    "calibration summary": (1,),
}
"""The versions read (a newer ghostrun may still read an older format)."""
Document = (
    CassetteFile
    | WebSocketFile
    | McpStdioFile
    | VerdictFile
    | RunLogFile
    | TrajectoryFile
    | CalibrationSummaryFile
)
"""What `load` returns, by kind (`_formats`): a "cassette" is HTTP or WebSocket (its ``kind``)."""
_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")
_VERDICTS = ("PASS", "FAIL")
_FIX: dict[Kind, str] = {
    "cassette": "Delete it and re-record with GHOSTRUN_MODE=record.",
    "verdict": "Delete it and re-grade with GHOSTRUN_MODE=record.",
    "run log": "Delete it and run the tests again.",
    "trajectory": "Delete it and re-record its test with GHOSTRUN_MODE=record.",
    "calibration summary": "Delete it and run `ghostrun calibrate` again.",
}
_UPGRADE: dict[Kind, str] = {
    "cassette": "upgrade ghostrun, or delete the file and re-record with GHOSTRUN_MODE=record",
    "verdict": "upgrade ghostrun, or delete the file and re-grade with GHOSTRUN_MODE=record",
    "run log": "upgrade ghostrun, or run the tests again",
    "trajectory": "upgrade ghostrun, or delete the file and re-record its test",
    "calibration summary": "upgrade ghostrun, or delete the file and run `ghostrun calibrate`",
}


class Invalid(Exception):
    """A field that breaks its file's schema: where (as the file spells it) and why."""

    def __init__(self, where: str, problem: str) -> None:
        where = terminal(where)  # a field's name comes from the file: no escape sequence in it
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where, self.problem = where, problem


class _Version(Exception):
    """An integer format version this ghostrun does not read."""


class NewerFormat(CassetteError):
    """A file of a format version this ghostrun does not read; ``document`` is it, unchecked."""

    def __init__(self, message: str, document: Any, version: int) -> None:
        super().__init__(message)
        self.document, self.version = document, version


@overload
def load(
    path: str | os.PathLike[str], kind: Literal["cassette"]
) -> CassetteFile | WebSocketFile | McpStdioFile | None: ...
@overload
def load(path: str | os.PathLike[str], kind: Literal["verdict"]) -> VerdictFile | None: ...
@overload
def load(path: str | os.PathLike[str], kind: Literal["run log"]) -> RunLogFile | None: ...
@overload
def load(path: str | os.PathLike[str], kind: Literal["trajectory"]) -> TrajectoryFile | None: ...
@overload
def load(
    path: str | os.PathLike[str], kind: Literal["calibration summary"]
) -> CalibrationSummaryFile | None: ...
@overload
def load(path: str | os.PathLike[str], kind: Kind) -> Document | None: ...
def load(path: str | os.PathLike[str], kind: Kind) -> Document | None:
    """The checked document at ``path``, typed by its kind; None only if there is no file."""
    data = read_bytes(path)
    if data is None:
        return None
    return _check(_parse(data, path, kind), path, kind, data)


def read(path: str | os.PathLike[str], kind: Kind) -> Any:
    """The JSON value at ``path``, not yet checked (None if there is no file); `load` without
    `check`, for a reader that learns the kind from the content. ``kind`` names the fix."""
    data = read_bytes(path)
    return None if data is None else _parse(data, path, kind)


def _parse(data: bytes, path: str | os.PathLike[str], kind: Kind) -> Any:
    if len(data) > LIMITS["file_bytes"].value:
        raise CassetteError(
            f"{kind} {path}: {limit_message('file_bytes', len(data))}. {_FIX[kind]}"
        )
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(f"corrupt file {path}: not valid JSON ({exc}). {_FIX[kind]}") from exc
    return document


def check(
    document: Any, path: str | os.PathLike[str], kind: Kind, *, may_be_deep: bool = True
) -> Document:
    """``document`` if it is a valid file of ``kind`` named ``path``, else a CassetteError.

    ``document`` is any parsed JSON (a true boundary); what it returns is typed (`Document`).
    ``may_be_deep=False``: the caller knows it nests within the limit.
    """
    return _check(document, path, kind, None if may_be_deep else b"")


def _check(document: Any, path: str | os.PathLike[str], kind: Kind, data: bytes | None) -> Document:
    """`check`, ``data`` the file's bytes (None: not known), whose brackets bound its depth.

    Nesting deeper than the limit needs more brackets than it: counted at C speed, so
    nearly every file is spared the walk. An everyday cassette is not even counted:
    its own levels are fixed, so its JSON bodies alone can nest (`_plain_depth_within`),
    and a streamed one, whose events hold brackets inside their strings, would be
    counted for nothing (it walked anyway).
    """
    stem = _stem(path)
    plain = kind == "cassette" and _plain_cassette(document, stem)
    if plain and _plain_depth_within(document):
        return cast(CassetteFile, document)  # checked just now
    limit = LIMITS["json_depth"].value
    if data is None or data.count(b"{") + data.count(b"[") > limit:
        depth = json_depth(document, limit)
        if depth > limit:
            message = limit_message("json_depth", f"at least {depth}")
            raise CassetteError(f"{kind} {path}: {message}. {_FIX[kind]}")
    if plain:
        return cast(CassetteFile, document)
    if kind == "trajectory" and _plain_trajectory(document):
        return cast(TrajectoryFile, document)  # checked just now
    try:
        _CHECKS[kind](document, stem)
    except _Version as exc:
        raise NewerFormat(
            f"{kind} {path} has format version {exc}, but this ghostrun reads version "
            f"{_readable(kind)}: {_UPGRADE[kind]}",
            document,
            exc.args[0],
        ) from None
    except Invalid as exc:
        raise CassetteError(f"corrupt {kind} {path}: {exc}. {_FIX[kind]}") from None
    return cast(Document, document)  # checked: of the format `_CHECKS[kind]` holds it to


def _readable(kind: Kind) -> str:
    return " or ".join(map(str, READABLE_VERSIONS[kind]))


def _stem(path: str | os.PathLike[str]) -> str:
    name = os.path.basename(os.fspath(path))
    return name[:-5] if name.endswith(".json") else Path(name).stem


# -- the replay hot path: the common shape, checked without building a field path ----------


def _plain_cassette(document: Any, stem: str) -> bool:
    """True only for a valid cassette of the everyday shape; anything else gets `_cassette`.

    As strict as `_cassette` on what it accepts (never looser), and about twice
    as fast, since nearly every replay reads a file of this shape (measured in
    place: about 1 % of a replay).
    """
    if type(document) is not dict or document.get("key") != stem:
        return False
    version = document.get("version")
    if type(version) is not int or version not in READABLE_VERSIONS["cassette"]:
        return False
    request, responses = document.get("request"), document.get("responses")
    if type(request) is not dict or type(responses) is not list or not responses:
        return False
    if len(responses) > LIMITS["responses"].value:
        return False
    if type(request.get("method")) is not str or type(request.get("url")) is not str:
        return False
    if not _plain_headers(request.get("headers", {})) or not _plain_body(request, "body"):
        return False
    return all(map(_plain_response, responses))


_STR = frozenset({str})
_PLAIN_KEYS = frozenset({"version", "key", "request", "responses"})
_PLAIN_REQUEST_KEYS = frozenset({"method", "url", "headers", "body"})
_PLAIN_RESPONSE_KEYS = frozenset({"status", "headers", "body", "session", "recorded_on"})
_PLAIN_LEVELS = 5  # the file, responses, a response, its body, a stream's list of chunks


def _plain_depth_within(document: dict[str, Any]) -> bool:
    """Whether a cassette `_plain_cassette` accepted nests no deeper than the limit.

    Its own levels are fixed (`_PLAIN_LEVELS` at most), so only its JSON bodies are
    walked, never a stream's chunks: a stream's events hold brackets inside their
    strings, which send nearly every streamed cassette to the walk. False (walk the
    whole file, as `json_depth` names the depth) for a key of another field, whose
    value no plain check looked at.
    """
    limit = LIMITS["json_depth"].value
    if limit < _PLAIN_LEVELS or not document.keys() <= _PLAIN_KEYS:
        return False
    request = document["request"]
    if not request.keys() <= _PLAIN_REQUEST_KEYS or not _body_within(request, 3, limit):
        return False
    for response in document["responses"]:
        if not (response.keys() <= _PLAIN_RESPONSE_KEYS and _body_within(response, 4, limit)):
            return False
    return True


def _body_within(holder: dict[str, Any], above: int, limit: int) -> bool:
    """A plain body's JSON value, ``above`` levels down the file, ends within the limit.

    Its brackets, written out at C speed, bound its depth: the walk is left to the
    value with more brackets than room (or too deep for orjson to write out).
    """
    body = holder.get("body")
    if type(body) is not dict or "json" not in body:
        return True  # text, or a stream's list of strings: fixed levels
    value, room = body["json"], limit - above
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:  # nested past orjson's own limit (254 levels)
        return False
    return text.count(b"{") + text.count(b"[") <= room or json_depth(value, limit) <= room


def _plain_response(response: Any) -> bool:
    if type(response) is not dict or "stream_error" in response or "reason" in response:
        return False  # a break, or a phrase of the provider's own: `_response` checks them
    status = response.get("status")
    if type(status) is not int or not 100 <= status <= 599:
        return False
    session = response.get("session", "")
    return (
        type(session) is str
        and _plain_day(response.get("recorded_on", "2026-01-01"))
        and _plain_response_headers(response.get("headers", {}))
        and (_plain_body(response, "body"))
    )


def _plain_day(day: Any) -> bool:
    """Looks like ``YYYY-MM-DD`` (anything else is checked in full, and named)."""
    return type(day) is str and len(day) == 10


def _plain_headers(headers: Any) -> bool:
    return type(headers) is dict and set(map(type, headers.values())) <= _STR


def _plain_response_headers(headers: Any) -> bool:
    """Replayed headers: each one as `_limits.header_problem` allows, as the slow path checks."""
    return (
        _plain_headers(headers)
        and len(headers) <= LIMITS["headers"].value  # all strings here: one value per name
        and (
            headers_replayable(headers)
            or all(header_problem(name, value) is None for name, value in headers.items())
        )
    )


def _plain_body(holder: dict[str, Any], name: str) -> bool:
    if name not in holder:
        return True
    body = holder[name]
    if type(body) is dict and len(body) == 2 and "json" in body:  # a JSON body's format
        spelling = body.get("format")
        return type(spelling) is str and spelling in JSON_FORMATS
    if type(body) is not dict or len(body) != 1:
        return False
    ((kind, value),) = body.items()
    if kind == "json":
        return True
    if kind == "text":
        return type(value) is str
    return (
        kind in _PLAIN_STREAMS
        and type(value) is list
        and len(value) <= LIMITS["chunks"].value
        and set(map(type, value)) <= _STR  # each chunk a string, at C speed
    )


def _plain_trajectory(document: Any) -> bool:
    """True only for a valid trajectory of model and answer steps; else `_trajectory` checks it.

    As strict as `_trajectory` on what it accepts: a replayed test reads its trajectory
    when it closes (its unplayed steps), and the full check builds each field's path
    as it goes, a few dozen calls a step.
    """
    if type(document) is not dict or type(document.get("test")) is not str:
        return False
    version, steps = document.get("version"), document.get("steps")
    if type(version) is not int or version not in READABLE_VERSIONS["trajectory"]:
        return False
    return type(steps) is list and all(map(_plain_step, steps))


def _plain_step(step: Any) -> bool:
    if type(step) is not dict:
        return False
    session = step.get("session")
    if type(session) is not int or session < 0:
        return False
    kind = step.get("kind", "model")
    if kind == "answer":
        return type(step.get("text")) is str
    if kind != "model" or "changed" in step or "rebased_from" in step:
        return False  # a tool step, a rebased one: the full check
    try:  # the fields a model step must have, in one call (a replayed test reads them all)
        method, endpoint, key, prompt, response, calls, tokens = _MODEL_STEP_FIELDS(step)
    except KeyError:
        return False  # one is missing: the full check names it
    model = step.get("model")
    return (
        type(method) is str
        and type(endpoint) is str
        and type(key) is str
        and type(prompt) is str
        and type(response) is int
        and response >= 0
        and (model is None or type(model) is str)
        and type(calls) is list
        and (not calls or all(type(c) is dict and type(c.get("name")) is str for c in calls))
        and (tokens is None or _plain_tokens(tokens))
    )


_MODEL_STEP_FIELDS = operator.itemgetter(
    "method", "endpoint", "key", "prompt", "response", "tool_calls", "tokens"
)


def _plain_tokens(tokens: Any) -> bool:
    if type(tokens) is not dict:
        return False
    used_in, used_out = tokens.get("in"), tokens.get("out")
    return type(used_in) is int and used_in >= 0 and type(used_out) is int and used_out >= 0


# -- the pieces ------------------------------------------------------------------------------


def _got(value: Any) -> str:
    """How a message names the type (and, for a scalar, the value) it found."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"bool {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return "str" if len(value) > 40 else f"str {value!r}"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict) else type(value).__name__


def _child(where: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{where}[{name}]"
    return f"{where}.{name}" if where else name


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Invalid(where, f"expected an object, got {_got(value)}")
    return value


def _list(value: Any, where: str, *, non_empty: bool = False) -> list[Any]:
    if not isinstance(value, list):
        raise Invalid(where, f"expected a list, got {_got(value)}")
    if non_empty and not value:
        raise Invalid(where, "expected a non-empty list, got []")
    return value


def _str(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise Invalid(where, f"expected a string, got {_got(value)}")


def _opt_str(value: Any, where: str) -> None:
    if value is not None:
        _str(value, where)


def _int(value: Any, where: str, low: int | None = None, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(where, f"expected an integer, got {_got(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f">= {low}"
        raise Invalid(where, f"expected an integer in {span}, got {value}")


def _number(value: Any, where: str, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(where, f"expected a number, got {_got(value)}")
    if not low <= value <= high:
        raise Invalid(where, f"expected a number in {low}..{high}, got {value}")


def _one_of(value: Any, where: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed or not isinstance(value, str):
        raise Invalid(where, f"expected one of {', '.join(allowed)}, got {_got(value)}")


def _str_list(value: Any, where: str) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        shown = _got(value) if not isinstance(value, list) else "a list holding other values"
        raise Invalid(where, f"expected a list of strings, got {shown}")


def _at_most(value: list[Any] | dict[str, Any], where: str, limit: str) -> None:
    if len(value) > LIMITS[limit].value:
        raise Invalid(where, limit_message(limit, len(value)))


def _chunks(value: Any, where: str) -> None:
    _str_list(value, where)
    _at_most(value, where, "chunks")


def _optional(document: dict[str, Any], name: str, where: str, test: _Check) -> None:
    if name in document:
        test(document[name], _child(where, name))


def _required(document: dict[str, Any], name: str, where: str) -> Any:
    if name not in document:
        raise Invalid(_child(where, name), "missing")
    return document[name]


def _version(document: Any, kind: Kind) -> dict[str, Any]:
    found = _object(document, "")
    if "version" not in found:
        raise Invalid("", f'not a ghostrun {kind} (no "version")')
    version = found["version"]
    _int(version, "version")
    if version not in READABLE_VERSIONS[kind]:
        raise _Version(version)
    return found


def _key(document: dict[str, Any], stem: str) -> None:
    key = _required(document, "key", "")
    _str(key, "key")
    if key != stem:
        raise Invalid("key", f"{key!r} is not the file's name ({stem!r}): a renamed or copied file")


_Check = Callable[[Any, str], None]


# -- bodies: one line per encoding -------------------------------------------------------------


def _any_json(value: Any, where: str) -> None:
    """Any JSON value (a JSON body is stored as the value itself)."""


def _base64(value: Any, where: str) -> None:
    _str(value, where)
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise Invalid(where, "not valid base64") from None


def _base64_list(value: Any, where: str) -> None:
    _chunks(value, where)
    for index, item in enumerate(value):
        _base64(item, _child(where, index))


def _eventstream(value: Any, where: str) -> None:
    """AWS event-stream chunks: every frame is checked by writing it (``_eventstream``)."""
    try:
        decode_chunks(value)
    except ValueError as exc:
        raise Invalid(where, str(exc)) from None


BODY_KINDS: dict[str, _Check] = {
    "json": _any_json,
    "text": _str,
    "base64": _base64,
    "sse": _chunks,
    "ndjson": _chunks,
    "chunks": _chunks,
    "chunks_base64": _base64_list,
    "eventstream": _eventstream,
}
"""Each body encoding (the body's one key) and the check of its value."""
_PLAIN_STREAMS = frozenset(kind for kind, test in BODY_KINDS.items() if test is _chunks)
"""The encodings whose value is a list of strings: the replay fast path's streams."""


def _json_format(value: Any, where: str) -> None:
    _str(value, where)
    if value not in JSON_FORMATS:
        raise Invalid(where, f"unknown JSON format (known: {', '.join(JSON_FORMATS)})")


def _carry(value: Any, where: str) -> None:
    _list(value, where)
    for index, item in enumerate(value):
        pair = type(item) is list and len(item) == 2 and all(type(n) is int for n in item)
        if not pair or item[0] < 0 or not 1 <= item[1] <= 3:
            raise Invalid(_child(where, index), "expected [chunk index, 1 to 3 bytes]")


BODY_MODIFIERS: dict[str, _Check] = {"format": _json_format, "carry": _carry}
"""Keys a body may carry beside its encoding key, and the check of each value (`_bodies`)."""
_MODIFIED: dict[str, tuple[str, ...]] = {"format": ("json",), "carry": STREAM_KINDS}
"""The encodings each modifier goes with."""


def _body(value: Any, where: str) -> None:
    body = _object(value, where)
    kinds = [name for name in body if name not in BODY_MODIFIERS]
    if len(kinds) != 1:
        raise Invalid(where, f"expected exactly one encoding key, got {sorted(kinds) or 'none'}")
    for name, content in body.items():
        if name in _MODIFIED and kinds[0] not in _MODIFIED[name]:
            raise Invalid(_child(where, name), f"not a modifier of a {kinds[0]!r} body")
        test = BODY_KINDS.get(name) or BODY_MODIFIERS.get(name)
        if test is None:
            known = ", ".join(BODY_KINDS)
            raise Invalid(_child(where, name), f"unknown body encoding (known: {known})")
        test(content, _child(where, name))


def _headers(value: Any, where: str) -> None:
    for name, header in _object(value, where).items():
        if isinstance(header, list):
            _str_list(header, _child(where, name))
        elif not isinstance(header, str):
            raise Invalid(
                _child(where, name), f"expected a string or a list of strings, got {_got(header)}"
            )


def _replayed_headers(value: Any, where: str) -> None:
    """Headers replay hands the client: none ghostrun never writes, none past a limit."""
    _headers(value, where)
    values = sum(len(v) if isinstance(v, list) else 1 for v in value.values())
    if values > LIMITS["headers"].value:
        raise Invalid(where, limit_message("headers", values))
    for name, header in value.items():
        for one in header if isinstance(header, list) else [header]:
            problem = header_problem(name, one)
            if problem is not None:
                raise Invalid(_child(where, name), problem)


# -- cassettes -------------------------------------------------------------------------------


def _cassette(document: Any, stem: str) -> None:
    found = _version(document, "cassette")
    _key(found, stem)
    if found.get("kind") == "websocket":  # a WebSocket conversation, checked by its own module
        _websocket(found)
        return
    if found.get("kind") == "mcp-stdio":  # MCP stdio connections, likewise
        _mcp_stdio(found)
        return
    _request(_required(found, "request", ""), "request")
    responses = _list(_required(found, "responses", ""), "responses", non_empty=True)
    _at_most(responses, "responses", "responses")
    for index, response in enumerate(responses):
        _response(response, f"responses[{index}]")


def _websocket(document: dict[str, Any]) -> None:
    try:
        conversations = parse_document(document, "")
    except (TypeError, ValueError) as exc:
        raise Invalid("", str(exc)) from None
    _at_most(conversations, "conversations", "conversations")
    for index, conversation in enumerate(conversations):
        where = f"conversations[{index}]"
        _at_most(conversation.events, f"{where}.frames", "frames")
        headers = f"{where}.handshake.response_headers"
        for name, value in conversation.response_headers.items():
            _str(value, _child(headers, name))
        _replayed_headers(conversation.response_headers, headers)
        _opt_subprotocol(conversation.subprotocol, f"{where}.handshake.subprotocol")


def _mcp_stdio(document: dict[str, Any]) -> None:
    try:
        connections = parse_mcp_document(document, "")
    except (TypeError, ValueError) as exc:
        raise Invalid("", str(exc)) from None
    _at_most(connections, "connections", "conversations")
    for index, connection in enumerate(connections):
        _at_most(connection.events, f"connections[{index}].messages", "frames")


def _opt_subprotocol(value: str | None, where: str) -> None:
    """The subprotocol replay says the server chose: a header value's token, if any."""
    if value is not None and header_problem("sec-websocket-protocol", value) is not None:
        raise Invalid(where, "not a valid subprotocol (a header value without line breaks)")


def _request(value: Any, where: str) -> None:
    request = _object(value, where)
    _str(_required(request, "method", where), _child(where, "method"))
    _str(_required(request, "url", where), _child(where, "url"))
    _optional(request, "headers", where, _headers)
    _optional(request, "body", where, _body)


def _response(value: Any, where: str) -> None:
    response = _object(value, where)
    _int(_required(response, "status", where), _child(where, "status"), 100, 599)
    _optional(response, "headers", where, _replayed_headers)
    _optional(response, "body", where, _body)
    _optional(response, "stream_error", where, _stream_error)
    _optional(response, "session", where, _str)
    _optional(response, "reason", where, _reason)
    _optional(response, "recorded_on", where, _day)


_REASON = re.compile(r"[\t\x20-\x7e\x80-\xff]{0,512}")
"""A reason phrase as HTTP/1.1 allows it (RFC 9112: tab, space, visible and obs-text
characters), never a line break: replay writes it into a status line."""


def valid_reason(value: str) -> bool:
    """Whether a cassette may hold ``value`` as a reason phrase (the writer asks too)."""
    return _REASON.fullmatch(value) is not None


def _reason(value: Any, where: str) -> None:
    _str(value, where)
    if not valid_reason(value):
        raise Invalid(where, "not a reason phrase (one line, at most 512 Latin-1 characters)")


def _day(value: Any, where: str) -> None:
    """The day a response was recorded: ``YYYY-MM-DD``."""
    _str(value, where)
    try:
        date.fromisoformat(value)
    except ValueError:
        raise Invalid(where, f"expected a day like 2026-12-02, got {_got(value)}") from None


def _stream_error(value: Any, where: str) -> None:
    error = _object(value, where)
    _str(_required(error, "type", where), _child(where, "type"))
    _str(_required(error, "message", where), _child(where, "message"))


# -- verdicts --------------------------------------------------------------------------------


def _verdict(document: Any, stem: str) -> None:
    found = _version(document, "verdict")
    _one_of(_required(found, "verdict", ""), "verdict", _VERDICTS)
    _str(_required(found, "reason", ""), "reason")
    _str(_required(found, "judge", ""), "judge")
    for name in ("criterion", "text"):
        _optional(found, name, "", _str)
    _optional(found, "votes", "", lambda v, where: _int(v, where, 1))
    _optional(found, "flip_rate", "", lambda v, where: _number(v, where, 0.0, 1.0))
    _optional(found, "prompt_template_version", "", _int)
    _optional(found, "draws", "", _draws)
    _key(found, stem)


def _draws(value: Any, where: str) -> None:
    for index, item in enumerate(_list(value, where)):
        at = _child(where, index)
        draw = _object(item, at)
        _one_of(_required(draw, "verdict", at), _child(at, "verdict"), _VERDICTS)
        _optional(draw, "reason", at, _str)
        _optional(draw, "seed", at, lambda v, w: None if v is None else _int(v, w))
        _optional(draw, "temperature", at, lambda v, w: _number(v, w, 0.0, 2.0))


# -- run logs --------------------------------------------------------------------------------


def _run_log(document: Any, stem: str) -> None:
    found = _version(document, "run log")
    for name in ("name", "run_id", "finished"):
        _optional(found, name, "", _str)
    tests = _object(_required(found, "tests", ""), "tests")
    for name, test in tests.items():
        _test(test, f"tests[{orjson.dumps(name).decode()}]")
    _optional(found, "cassettes_used", "", _str_list)
    _optional(
        found, "verdicts_used", "", lambda v, where: None if v is None else _str_list(v, where)
    )
    _optional(found, "misses", "", _misses)
    _optional(found, "previous", "", _previous)
    _optional(found, "selection", "", _selection)


def _test(value: Any, where: str) -> None:
    test = _object(value, where)
    _optional(test, "outcome", where, lambda v, w: None if v is None else _one_of(v, w, _OUTCOMES))
    _optional(test, "failure", where, _str)
    outputs = _required(test, "outputs", where)
    _str_list(outputs, _child(where, "outputs"))
    for index, item in enumerate(
        _list(_required(test, "assertions", where), _child(where, "assertions"))
    ):
        _assertion(item, f"{where}.assertions[{index}]", len(outputs))
    _optional(test, "requests", where, _counts)


def _assertion(value: Any, where: str, outputs: int) -> None:
    assertion = _object(value, where)
    for name in ("kind", "criterion", "reason"):
        _str(_required(assertion, name, where), _child(where, name))
    _one_of(_required(assertion, "verdict", where), _child(where, "verdict"), _VERDICTS)
    _optional(assertion, "judge", where, _opt_str)
    _int(_required(assertion, "output", where), _child(where, "output"), 0, outputs - 1)


def _counts(value: Any, where: str) -> None:
    for name, count in _object(value, where).items():
        _int(count, _child(where, name), 0)


def _misses(value: Any, where: str) -> None:
    for index, item in enumerate(_list(value, where)):
        miss = _object(item, _child(where, index))
        _str(_required(miss, "test", _child(where, index)), f"{where}[{index}].test")
        _str(_required(miss, "message", _child(where, index)), f"{where}[{index}].message")


def _previous(value: Any, where: str) -> None:
    previous = _object(value, where)
    _int(_required(previous, "tests", where), _child(where, "tests"), 0)
    _optional(previous, "finished", where, _str)


def _selection(value: Any, where: str) -> None:
    selection = _object(value, where)
    _optional(selection, "limited_by", where, _str_list)


# -- trajectories -----------------------------------------------------------------------------


def _trajectory(document: Any, stem: str) -> None:
    found = _version(document, "trajectory")
    _str(_required(found, "test", ""), "test")
    for index, item in enumerate(_list(_required(found, "steps", ""), "steps")):
        _step(item, f"steps[{index}]")


_STEP_KINDS = ("model", "tool", "answer")
_TRANSPORTS = ("mcp-stdio", "mcp-http", "http")


def _step(value: Any, where: str) -> None:
    """A step of one of the three kinds (no ``kind``: a model call, as files before them)."""
    step = _object(value, where)
    kind = step.get("kind", "model")
    _one_of(kind, _child(where, "kind"), _STEP_KINDS)
    _int(_required(step, "session", where), _child(where, "session"), 0)
    if kind == "tool":
        _tool_step(step, where)
    elif kind == "answer":
        _str(_required(step, "text", where), _child(where, "text"))
    else:
        _model_step(step, where)


def _tool_step(step: dict[str, Any], where: str) -> None:
    _one_of(_required(step, "transport", where), _child(where, "transport"), _TRANSPORTS)
    for name in ("server", "tool", "result", "key"):
        _str(_required(step, name, where), _child(where, name))
    _required(step, "arguments", where)
    _int(_required(step, "response", where), _child(where, "response"), 0)


def _model_step(step: dict[str, Any], where: str) -> None:
    for name in ("method", "endpoint", "key", "prompt"):
        _str(_required(step, name, where), _child(where, name))
    for name in ("session", "response"):
        _int(_required(step, name, where), _child(where, name), 0)
    calls = _list(_required(step, "tool_calls", where), _child(where, "tool_calls"))
    for index, call in enumerate(calls):
        at = _child(_child(where, "tool_calls"), index)
        _str(_required(_object(call, at), "name", at), _child(at, "name"))
    _optional(step, "model", where, _opt_str)
    _optional(step, "rebased_from", where, _str)
    for index, change in enumerate(_list(step.get("changed", []), _child(where, "changed"))):
        at = _child(_child(where, "changed"), index)
        _str(_required(_object(change, at), "path", at), _child(at, "path"))
    tokens = _required(step, "tokens", where)
    if tokens is not None:
        at = _child(where, "tokens")
        for name in ("in", "out"):
            _int(_required(_object(tokens, at), name, at), _child(at, name), 0)


# -- the calibration summary ------------------------------------------------------------------


def _calibration_summary(document: Any, stem: str) -> None:
    """``{"version": 1, "judges": {judge: {votes: figures}}}`` (`_judging._calibration`)."""
    found = _version(document, "calibration summary")
    judges = _object(_required(found, "judges", ""), "judges")
    for judge, by_votes in judges.items():
        for votes, figures in _object(by_votes, _child("judges", judge)).items():
            _object(figures, _child(_child("judges", judge), votes))


_CHECKS: dict[Kind, Callable[[Any, str], None]] = {
    "cassette": _cassette,
    "verdict": _verdict,
    "run log": _run_log,
    "trajectory": _trajectory,
    "calibration summary": _calibration_summary,
}
