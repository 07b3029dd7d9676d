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
    MCP stdio cassette  McpStdioFile: McpConnectionRecord, LaunchRecord, FrameEvent
    trajectory          TrajectoryFile: StepRecord (model), ToolStep, AnswerStep,
                        ToolCallRecord, TokensRecord, ChangedField
    verdict             VerdictFile: DrawRecord
    run log             RunLogFile: RunLogEntry, AssertionRecord, UsedRecord, ...
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, final

from .._wire._bodies import Body

__all__ = [
    "AnswerStep",
    "AnyStep",
    "AssertionRecord",
    "Body",
    "CalibrationSummaryFile",
    "CassetteFile",
    "ChangedField",
    "CloseRecord",
    "ConversationRecord",
    "DrawRecord",
    "Frame",
    "FrameEvent",
    "HandshakeRecord",
    "Headers",
    "LaunchRecord",
    "McpConnectionRecord",
    "McpStdioFile",
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
    "ToolStep",
    "ToolTransport",
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


# -- MCP stdio cassette (`_mcpcassette`) ----------------------------------------------------


class LaunchRecord(TypedDict):
    """How the client launched the server: environment names, never values."""

    command: str
    args: list[str]
    env: list[str]
    cwd: str | None


class McpConnectionRecord(TypedDict):
    launch: LaunchRecord
    messages: list[FrameEvent]  # each {"client": FRAME} or {"server": FRAME}, json or text


@final
class McpStdioFile(TypedDict):
    """An MCP-over-stdio cassette: one server launch, its connections in order."""

    version: int
    kind: Literal["mcp-stdio"]
    key: str
    connections: list[McpConnectionRecord]


# -- trajectory (`_trajectory`) ------------------------------------------------------------


class ToolCallRecord(TypedDict):
    name: str
    arguments: Any  # whatever JSON the model sent


TokensRecord = TypedDict("TokensRecord", {"in": int, "out": int})


class ChangedField(TypedDict):
    """A field a rebased step's request changed: its path, and both values in short
    (a side that lacked the field has no value)."""

    path: str
    before: NotRequired[Any]
    after: NotRequired[Any]


class StepRecord(TypedDict):
    """A model call as the file stores it (a step without ``kind`` is one too)."""

    kind: NotRequired[Literal["model"]]
    session: int
    method: str
    endpoint: str
    key: str
    response: int
    prompt: str
    model: str | None
    tool_calls: list[ToolCallRecord]
    tokens: TokensRecord | None
    rebased_from: NotRequired[str]  # rebase: the key whose recorded answer this step replays
    changed: NotRequired[list[ChangedField]]  # rebase: the fields outside the conversation


ToolTransport = Literal["mcp-stdio", "mcp-http", "http"]


class ToolStep(TypedDict):
    """A tool call answered by an MCP server or a declared tool host (``tool_hosts=``)."""

    kind: Literal["tool"]
    session: int
    transport: ToolTransport
    server: str  # MCP stdio: "python orders_server.py"; HTTP: the host (":port" if not default)
    tool: str  # the MCP tool's name, or for a tool host "GET /tracking/A123" (method and path)
    arguments: Any  # the MCP tools/call arguments, or the HTTP query and JSON body
    result: str  # the first words of the tool's result text, scrubbed
    key: str  # the exchange's cassette key
    response: int  # its index (MCP: the tools/call's position in its connection)


class AnswerStep(TypedDict):
    """The run's final answer: the first words of its last model step's text, one a session."""

    kind: Literal["answer"]
    session: int
    text: str


AnyStep = StepRecord | ToolStep | AnswerStep
"""A step of any kind, as a trajectory file lists them."""


@final
class TrajectoryFile(TypedDict):
    """``trajectories/<test>.json``: a test's steps in order."""

    version: int
    test: str
    steps: list[AnyStep]


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
