"""What one step of an agent did, read from the bytes it sent and received (DESIGN §3, §7).

A *step* is one model call of a test: the request it sent and the response it
got. From those bytes this module reads what a trajectory keeps and what the
trajectory assertions check: the tool calls the model asked for (as
``{"name", "arguments"}``), the tokens it used (``{"in", "out"}``), the text it
answered, the first words of what was sent, and the messages a request added
since the one before.

It knows the response shapes of OpenAI (chat and Responses), Anthropic,
Gemini, Ollama and Bedrock ``converse``, whole or streamed (SSE, NDJSON, AWS
event-stream). It is I/O-free and lighter than the assertions' normaliser
(``_assertions._tool_calls``), which works on SDK objects: sessions (this
layer) cannot import the assertions, and a step is only ever bytes.
Everything is read lazily: a session keeps each step's request and response
by reference, and nothing here runs on the replay path.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from .._store._cassette import Recording
from .._store._formats import ChangedField, TokensRecord, ToolCallRecord
from .._store._mcpcassette import result_text
from .._wire._eventstream import read_frames
from ._pushed import is_push_stream

__all__ = [
    "Step",
    "Tokens",
    "ToolCall",
    "ToolUse",
    "answer_text",
    "endpoint",
    "first_words",
    "mcp_http_call",
    "mcp_plumbing",
    "model_name",
    "new_messages",
    "prompt_words",
    "push_streams",
    "request_messages",
    "settled",
    "tokens_used",
    "tool_arguments",
    "tool_calls",
    "tool_name",
    "tool_result",
]

ToolCall = ToolCallRecord  # {"name": str, "arguments": Any}, as the trajectory file keeps it
Tokens = TokensRecord  # {"in": int, "out": int}

_PROMPT_WORDS = 8
_IN = ("prompt_tokens", "input_tokens", "promptTokenCount", "inputTokens", "prompt_eval_count")
_OUT = ("completion_tokens", "output_tokens", "candidatesTokenCount", "outputTokens", "eval_count")
_USAGE_HOLDERS = ("usage", "usageMetadata")
_NESTED = ("response", "message", "metadata")
_MESSAGE_LISTS = ("messages", "input", "contents")
_MODEL_IN_URL = re.compile(r"/models?/([^/:]+)")  # Gemini's models/NAME:…, Bedrock's model/ID/…


@dataclass(slots=True)
class Step:
    """One model call (or a tool host's exchange), as a session saw it: kept by reference.

    ``tool``: the host is a declared tool host (``tool_hosts=``), so the trajectory keeps
    the exchange as a tool step and the model-call counts leave it out.
    """

    method: str
    url: str
    key: str
    index: int  # the response's place in its cassette's run
    body: bytes  # the request as sent
    recording: Recording  # the response
    recorded: bool = False  # sent for real and written (else replayed)
    tool: bool = False  # a tool host's exchange, not a model call
    # rebase: written under its new key from the recorded step (its key, the fields changed)
    rebased: tuple[str, list[ChangedField]] | None = None

    def documents(self) -> list[Any]:
        return response_documents(self.recording)

    def request_json(self) -> Any:
        return _loads(self.body)


@dataclass(slots=True)
class ToolUse:
    """One tool call answered by an MCP server, as a session saw it: a tool step (DESIGN §3).

    ``after``: how many model calls the session had made before it (`Deck.tool_used` sets
    it), which places it among them in the trajectory.
    """

    transport: str  # "mcp-stdio", "mcp-http", "http"
    server: str
    tool: str
    arguments: Any
    result: str  # the result's whole text; the trajectory keeps its first words
    key: str
    index: int  # its place among the calls of its connection (MCP) or its cassette's run
    recorded: bool
    after: int = 0


def mcp_http_call(step: Step, pushed: Sequence[Step] = ()) -> ToolUse | None:
    """A step that is a ``tools/call`` over MCP's HTTP, as the tool call it is.

    Its request is a JSON-RPC ``tools/call``; its answer the response (JSON, or an SSE
    event of the stream) with the request's id, or over MCP's SSE transport the event
    with that id on the server's push stream to the same host (``pushed``:
    `push_streams`). The server is the URL's host and port.
    """
    request = step.request_json()
    if not _tool_call(request) or not _json_rpc(request):
        return None
    params = request.get("params")
    if not isinstance(params, dict):
        params = {}
    host = urlsplit(step.url).netloc
    answer = next(
        (
            document
            for source in (step, *(p for p in pushed if urlsplit(p.url).netloc == host))
            for document in source.documents()
            if isinstance(document, dict)
            and "method" not in document
            and document.get("id") == request.get("id")
        ),
        None,
    )
    return ToolUse(
        "mcp-http",
        host,
        str(params.get("name")),
        params.get("arguments"),
        "" if answer is None else result_text(answer),
        step.key,
        step.index,
        step.recorded,
    )


def model_name(body: Any, url: str) -> str | None:
    """The model a request asked for: its ``model`` field, else the one its URL names."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])
    found = _MODEL_IN_URL.search(urlsplit(url).path)
    return unquote(found.group(1)) if found else None


def settled(steps: list[Step]) -> list[Step]:
    """The steps a session counts: without the transient failures (429, 5xx) an SDK retried
    past, and without MCP's session plumbing over HTTP (`mcp_plumbing`).

    The cassette drops such a response when its retry is written (DESIGN §3), so
    neither replay nor the trajectory counts it as a step.
    """
    plumbing = mcp_plumbing(steps)
    return [
        step
        for index, step in enumerate(steps)
        if not (step.recording.transient and any(s.key == step.key for s in steps[index + 1 :]))
        and id(step) not in plumbing
    ]


def mcp_plumbing(steps: list[Step]) -> set[int]:
    """The steps (by ``id``) that keep an MCP session over streamable HTTP, not calls.

    An agent's MCP client says ``initialize``, lists tools, answers the server,
    opens a GET listener and closes with a DELETE at the server's endpoint: none
    is a model call, nor a tool call (a ``tools/call`` is: `mcp_http_call`), so a
    trajectory keeps none of them, as the stdio road keeps only its calls. They
    are JSON-RPC posts (no provider API speaks JSON-RPC), the GET or DELETE with
    no body at an endpoint that took one, and the GET that opened a push stream
    (MCP's SSE transport: `push_streams`).
    """
    sent = [(s, s.request_json()) for s in steps if b'"jsonrpc"' in s.body]
    rpc = [(s, message) for s, message in sent if _json_rpc(message)]
    if not rpc:
        return set()
    endpoints = {endpoint(s.url) for s, _ in rpc}
    return {id(s) for s, message in rpc if not _tool_call(message)} | {
        id(s)
        for s in steps
        if s.method in ("GET", "DELETE")
        and not s.body
        and (endpoint(s.url) in endpoints or is_push_stream(s.method, s.recording.chunks))
    }


def push_streams(steps: Sequence[Step]) -> list[Step]:
    """The server push streams among ``steps`` (MCP over SSE, a GET listener: `_pushed`),
    where a ``tools/call`` posted elsewhere finds its answer."""
    return [s for s in steps if is_push_stream(s.method, s.recording.chunks)]


def _json_rpc(message: Any) -> bool:
    """A JSON-RPC 2.0 message, or a batch of them."""
    if isinstance(message, list):
        return bool(message) and all(map(_json_rpc, message))
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


def _tool_call(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "tools/call"


def endpoint(url: str) -> str:
    """scheme://host/path: a step's address without its query."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


# -- the response: its JSON documents -------------------------------------------------------


def response_documents(recording: Recording) -> list[Any]:
    """The JSON values a response carried: its body, or each event of its stream."""
    if recording.chunks is None:
        found = _loads(recording.body)
        return [] if found is None else [found]
    data = b"".join(recording.chunks)
    if data[:1] not in (b"{", b"[", b"d", b"e", b":", b"\n", b"\r", b" ", b"i", b"r"):
        frames = read_frames(data)  # AWS event-stream (Bedrock)
        return [f["json"] for f in frames or [] if "json" in f]
    return list(_stream_documents(data.decode("utf-8", "replace")))


def _stream_documents(text: str) -> Iterator[Any]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        elif not line.startswith("{"):
            continue
        found = _loads(line.encode())
        if found is not None:
            yield found


def _loads(data: bytes) -> Any:
    if data[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


# -- tokens -----------------------------------------------------------------------------------


def tokens_used(documents: list[Any]) -> Tokens | None:
    """Tokens in and out, from the usage fields of any provider we know; None if none said.

    Streams report usage cumulatively (Anthropic's ``message_delta``, Gemini's
    last chunk), so the largest count of each is the step's.
    """
    found_in = found_out = None
    for usage in _usages(documents):
        count_in, count_out = _first_int(usage, _IN), _first_int(usage, _OUT)
        if count_in is not None:
            found_in = max(found_in or 0, count_in)
        if count_out is not None:
            found_out = max(found_out or 0, count_out)
    if found_in is None and found_out is None:
        return None
    return {"in": found_in or 0, "out": found_out or 0}


def _usages(documents: list[Any]) -> Iterator[dict[str, Any]]:
    for document in documents:
        for holder in _holders(document):
            yield holder  # Ollama counts at the top level
            for name in _USAGE_HOLDERS:
                usage = holder.get(name)
                if isinstance(usage, dict):
                    yield usage


def _holders(document: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(document, dict):
        return
    yield document
    for name in _NESTED:
        inner = document.get(name)
        if isinstance(inner, dict):
            yield inner


def _first_int(usage: dict[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


# -- tool calls and text ---------------------------------------------------------------------


def tool_calls(documents: list[Any]) -> list[ToolCall]:
    """The tool calls a response asked for, in order, each ``{"name", "arguments"}``."""
    calls: list[ToolCall] = []
    streamed: dict[tuple[str, int], dict[str, Any]] = {}
    for document in documents:
        if isinstance(document, dict):
            calls.extend(_whole_calls(document))
            _stream_calls(document, streamed)
    calls.extend(_finished(piece) for piece in streamed.values() if piece.get("name"))
    return calls


def _whole_calls(document: dict[str, Any]) -> Iterator[ToolCall]:
    if document.get("type") in ("response.completed", "response.done"):
        document = document.get("response") or {}
    for choice in _list(document.get("choices")):
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            yield from _openai_calls(message.get("tool_calls"))
    if isinstance(document.get("message"), dict):  # Ollama (and Bedrock's output.message)
        yield from _openai_calls(document["message"].get("tool_calls"))
    for item in _list(document.get("output")):  # OpenAI Responses
        if isinstance(item, dict) and item.get("type") == "function_call":
            yield _call(item.get("name"), item.get("arguments"))
    if document.get("type") == "message" or document.get("role") == "assistant":
        yield from _blocks(document.get("content"))  # Anthropic
    for candidate in _list(document.get("candidates")):  # Gemini
        content = candidate.get("content") if isinstance(candidate, dict) else None
        for part in _list(content.get("parts") if isinstance(content, dict) else None):
            if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                yield _call(call.get("name"), call.get("args"))
    output = document.get("output")
    if isinstance(output, dict) and isinstance(output.get("message"), dict):  # Bedrock
        for block in _list(output["message"].get("content")):
            if isinstance(block, dict) and isinstance(block.get("toolUse"), dict):
                yield _call(block["toolUse"].get("name"), block["toolUse"].get("input"))


def _openai_calls(value: Any) -> Iterator[ToolCall]:
    for call in _list(value):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            yield _call(function.get("name"), function.get("arguments"))


def _blocks(content: Any) -> Iterator[ToolCall]:
    for block in _list(content):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            yield _call(block.get("name"), block.get("input"))


def _stream_calls(
    document: dict[str, Any], streamed: dict[tuple[str, int], dict[str, Any]]
) -> None:
    """Pieces of streamed calls: OpenAI chat deltas, Anthropic blocks and input deltas."""
    for choice in _list(document.get("choices")):
        delta = choice.get("delta") if isinstance(choice, dict) else None
        for call in _list(delta.get("tool_calls") if isinstance(delta, dict) else None):
            if not isinstance(call, dict):
                continue
            piece = streamed.setdefault(("openai", int(call.get("index") or 0)), {"args": ""})
            function = call.get("function") or {}
            if function.get("name"):
                piece["name"] = function["name"]
            piece["args"] += function.get("arguments") or ""
    kind, index = document.get("type"), document.get("index")
    if kind == "content_block_start" and isinstance(index, int):
        block = document.get("content_block") or {}
        if block.get("type") == "tool_use":
            streamed[("anthropic", index)] = {"name": block.get("name"), "args": ""}
    elif kind == "content_block_delta" and ("anthropic", index) in streamed:
        delta = document.get("delta") or {}
        streamed[("anthropic", index)]["args"] += delta.get("partial_json") or ""  # type: ignore[index]


def _finished(piece: dict[str, Any]) -> ToolCall:
    return _call(piece.get("name"), piece.get("args") or "{}")


def _call(name: Any, arguments: Any) -> ToolCall:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # else kept as the model wrote it
            arguments = json.loads(arguments) if arguments.strip() else {}
    return {"name": str(name), "arguments": {} if arguments is None else arguments}


def answer_text(documents: list[Any]) -> str:
    """The text a response answered (streamed pieces joined); empty if it only called tools."""
    return "".join(_texts(documents))


def _texts(documents: list[Any]) -> Iterator[str]:
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("type") in ("response.completed", "response.done"):
            document = document.get("response") or {}
        for choice in _list(document.get("choices")):
            if isinstance(choice, dict):
                for part in (choice.get("message"), choice.get("delta")):
                    if isinstance(part, dict) and isinstance(part.get("content"), str):
                        yield part["content"]
        message = document.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            yield message["content"]  # Ollama
        for item in _list(document.get("output")):
            if isinstance(item, dict) and item.get("type") == "message":
                yield from _block_texts(item.get("content"))
        if document.get("type") == "message" or document.get("role") == "assistant":
            yield from _block_texts(document.get("content"))
        delta = document.get("delta")
        if document.get("type") == "content_block_delta" and isinstance(delta, dict):
            yield str(delta.get("text") or "")
        for candidate in _list(document.get("candidates")):
            content = candidate.get("content") if isinstance(candidate, dict) else None
            yield from _block_texts(content.get("parts") if isinstance(content, dict) else None)
        output = document.get("output")
        if isinstance(output, dict) and isinstance(output.get("message"), dict):
            yield from _block_texts(output["message"].get("content"))


def _block_texts(blocks: Any) -> Iterator[str]:
    for block in _list(blocks):
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            yield block["text"]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- the request: its messages -----------------------------------------------------------------


def request_messages(body: Any) -> list[Any] | None:
    """The conversation a request carries (messages, Responses input, Gemini contents)."""
    if not isinstance(body, dict):
        return None
    for name in _MESSAGE_LISTS:
        value = body.get(name)
        if isinstance(value, list):
            return value
    return None


def prompt_words(body: Any, count: int = _PROMPT_WORDS) -> str:
    """The first words of the newest message a request sent (the user's turn, a tool result)."""
    messages = request_messages(body)
    if messages:
        text = _plain_text(messages[-1])
    elif isinstance(body, dict) and isinstance(body.get("input"), str):
        text = body["input"]
    elif isinstance(body, dict) and isinstance(body.get("prompt"), str):
        text = body["prompt"]
    else:
        text = ""
    return first_words(text, count)


def first_words(text: str, count: int = _PROMPT_WORDS) -> str:
    """The first ``count`` words of ``text``, with `` …`` when there were more."""
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")


# -- a tool host's exchange: what the trajectory's tool step says ---------------------------


def tool_name(method: str, url: str) -> str:
    """A tool host's call by its method and path: ``GET /tracking/A123``."""
    return f"{method} {urlsplit(url).path or '/'}"


def tool_arguments(url: str, body: Any) -> Any:
    """What a tool host was asked: its query parameters, and its JSON body's fields."""
    found: dict[str, Any] = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    if isinstance(body, dict):
        found.update(body)
    elif body is not None:
        found["body"] = body
    return found


def tool_result(recording: Recording) -> str:
    """The text a tool host answered (a stream's chunks joined), as far as it is text."""
    data = recording.body if recording.chunks is None else b"".join(recording.chunks)
    return data.decode("utf-8", "replace")


def _plain_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(t for t in (_plain_text(v) for v in value) if t)
    if isinstance(value, dict):
        for name in ("content", "text", "output", "parts", "functionResponse", "response"):
            if name in value:
                return _plain_text(value[name])
    return ""


def new_messages(earlier: Any, later: Any) -> list[Any] | None:
    """The messages ``later`` added after ``earlier``'s, if it starts with all of them unchanged.

    None when the earlier history changed too (or either is not a conversation):
    then only a whole diff tells what differs.
    """
    before, after = request_messages(earlier), request_messages(later)
    if before is None or after is None or len(after) < len(before):
        return None
    if after[: len(before)] != before:
        return None
    return after[len(before) :]
