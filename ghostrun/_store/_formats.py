"""The files ghostrun writes, as types: what writers build, `_validate` checks, readers read.

One ``TypedDict`` per JSON object of each versioned file (DESIGN §3); a field a
file may lack is ``NotRequired``. The files' own types are ``final``, so that a
type checker tells an HTTP cassette from a WebSocket one by a key only one has
(``"request" in document``). `_validate.load` returns these types once it
has checked a document, so a reader never handles ``dict[str, Any]``. ``Any``
is left only where a file holds any JSON value: a JSON body, a frame's JSON,
a tool call's arguments. Each module that writes a format documents it for
readers of the file (`_cassette`, `_wscassette`, `_trajectory`,
``_judging._verdicts``, ``_recording._runlog``); this module is the one
definition their code shares.

    cassette            CassetteFile: RequestRecord, ResponseRecord (BODY: `_bodies.Body`)
    WebSocket cassette  WebSocketFile: ConversationRecord, HandshakeRecord, FrameEvent
    trajectory          TrajectoryFile: StepRecord, ToolCallRecord, TokensRecord
    verdict             VerdictFile: DrawRecord
    run log             RunLogFile: RunLogEntry, AssertionRecord, UsedRecord, ...
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, final

from .._wire._bodies import Body

__all__ = [
    "AssertionRecord",
    "Body",
    "CalibrationSummaryFile",
    "CassetteFile",
    "CloseRecord",
    "ConversationRecord",
    "DrawRecord",
    "Frame",
    "FrameEvent",
    "HandshakeRecord",
    "Headers",
    "MissRecord",
    "PreviousRecord",
    "RequestRecord",
    "ResponseRecord",
    "RunLogEntry",
    "RunLogFile",
    "SelectionRecord",
    "StepRecord",
    "StreamErrorRecord",
    "TokensRecord",
    "ToolCallRecord",
    "TrajectoryFile",
    "UsedRecord",
    "VerdictFile",
    "VerdictWord",
    "WebSocketFile",
]

VerdictWord = Literal["PASS", "FAIL"]
Headers = dict[str, str | list[str]]
"""Headers as a file stores them: a header sent twice keeps its values in a list."""


# -- cassette (`_cassette`) ----------------------------------------------------------------


class RequestRecord(TypedDict):
    method: str
    url: str
    headers: NotRequired[Headers]
    body: NotRequired[Body]


class StreamErrorRecord(TypedDict):
    """How a stream broke: the exception's type and message."""

    type: str
    message: str


class ResponseRecord(TypedDict):
    status: int
    headers: NotRequired[Headers]
    body: NotRequired[Body]
    stream_error: NotRequired[StreamErrorRecord]
    session: NotRequired[str]  # the run it belongs to (`_cassette.RUN_FIELD`)
    reason: NotRequired[str]  # the status line's phrase, when not the standard one
    recorded_on: NotRequired[str]  # YYYY-MM-DD


@final
class CassetteFile(TypedDict):
    """``<cassette_dir>/<key>.json``: one request, its responses in runs."""

    version: int
    key: str
    request: RequestRecord
    responses: list[ResponseRecord]


# -- WebSocket cassette (`_wscassette`) ----------------------------------------------------


class Frame(TypedDict, total=False):
    """One frame: exactly one of its encodings."""

    json: Any  # a text frame holding a JSON object or array
    binary_json: Any  # a binary frame holding one
    text: str
    base64: str


class CloseRecord(TypedDict):
    by: str  # "client" or "server"
    code: int | None
    reason: str


class FrameEvent(TypedDict, total=False):
    """One entry of ``frames``: exactly one of client, server, close."""

    client: Frame
    server: Frame
    close: CloseRecord


class HandshakeRecord(TypedDict):
    url: str
    headers: dict[str, str]
    subprotocol: str | None
    response_headers: dict[str, str]


class ConversationRecord(TypedDict):
    handshake: HandshakeRecord
    frames: list[FrameEvent]


@final
class WebSocketFile(TypedDict):
    """A WebSocket cassette: ``kind`` tells it from an HTTP cassette."""

    version: int
    kind: Literal["websocket"]
    key: str
    conversations: list[ConversationRecord]


# -- trajectory (`_trajectory`) ------------------------------------------------------------


class ToolCallRecord(TypedDict):
    name: str
    arguments: Any  # whatever JSON the model sent


TokensRecord = TypedDict("TokensRecord", {"in": int, "out": int})


class StepRecord(TypedDict):
    """One step as the file stores it."""

    session: int
    method: str
    endpoint: str
    key: str
    response: int
    prompt: str
    model: str | None
    tool_calls: list[ToolCallRecord]
    tokens: TokensRecord | None


@final
class TrajectoryFile(TypedDict):
    """``trajectories/<test>.json``: a test's steps in order."""

    version: int
    test: str
    steps: list[StepRecord]


# -- verdict (``_judging._verdicts``) -------------------------------------------------------


class DrawRecord(TypedDict):
    """One of the votes."""

    verdict: VerdictWord
    reason: NotRequired[str]
    seed: NotRequired[int | None]
    temperature: NotRequired[float]


@final
class VerdictFile(TypedDict):
    """``judge/<key>.json``: a cached verdict and how it was reached."""

    version: int
    key: str
    judge: str
    verdict: VerdictWord
    reason: str
    prompt_template_version: NotRequired[int]
    criterion: NotRequired[str]
    text: NotRequired[str]
    votes: NotRequired[int]
    flip_rate: NotRequired[float]
    draws: NotRequired[list[DrawRecord]]


# -- run log (``_recording._runlog``) -------------------------------------------------------


class AssertionRecord(TypedDict):
    kind: str
    criterion: str
    verdict: VerdictWord
    reason: str
    judge: NotRequired[str | None]
    output: int  # its text's index in ``outputs``


class UsedRecord(TypedDict):
    """A cassette or verdict a test used, and how: replayed, recorded, cached, graded, missed."""

    key: str
    how: str


class RunLogEntry(TypedDict):
    """One test of a run."""

    outcome: NotRequired[str | None]  # passed, failed, error, skipped, xfailed; None: not reported
    failure: NotRequired[str]  # a failed test's message, its first lines
    outputs: list[str]
    assertions: list[AssertionRecord]
    requests: NotRequired[dict[str, int]]  # replayed, recorded, misses
    cassettes: NotRequired[list[UsedRecord]]
    verdicts: NotRequired[list[UsedRecord]]
    ignore_fields: NotRequired[list[str]]
    normalize: NotRequired[list[str]]  # the sessions' normalize: names and regex sources


class MissRecord(TypedDict):
    test: str
    message: str


class PreviousRecord(TypedDict):
    tests: int
    finished: NotRequired[str]


class SelectionRecord(TypedDict, total=False):
    limited_by: list[str]


@final
class RunLogFile(TypedDict):
    """``runs/<name>.json``: what each test of a run produced and used."""

    version: int
    name: NotRequired[str]
    run_id: NotRequired[str]
    finished: NotRequired[str]
    tests: dict[str, RunLogEntry]
    cassettes_used: NotRequired[list[str]]
    verdicts_used: NotRequired[list[str] | None]
    misses: NotRequired[list[MissRecord]]
    previous: NotRequired[PreviousRecord]
    selection: NotRequired[SelectionRecord]


@final
class CalibrationSummaryFile(TypedDict):
    """``calibration/judges.json``: each judge's agreement figures, by vote count."""

    version: int
    judges: dict[str, dict[str, dict[str, Any]]]
