"""``ghostrun show``: a cassette or a verdict file as a person reads it.

A WebSocket or MCP stdio cassette shows its handshake or launch, then one line
per frame or JSON-RPC message, client and server.

The request and each response, JSON pretty-printed, and a stream reassembled
into the text it carried (OpenAI, Anthropic and Gemini SSE, Ollama NDJSON); a
stream we cannot read is shown as its raw chunks.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import orjson

from .._assertions._extract import extract_text
from .._core import _safe_text as safe
from .._core._files import parse_json
from .._core._words import plural
from .._recording._steps import tool_calls
from .._store._formats import CassetteFile, Headers, McpStdioFile, VerdictFile, WebSocketFile
from .._store._validate import Document, Kind
from .._wire._bodies import MODIFIERS

__all__ = ["kind_of", "raw", "render_file", "stream_calls", "stream_text"]

_INDENT = "    "
_STREAM_KINDS = ("sse", "ndjson", "chunks", "chunks_base64")
_KEY_NAME = re.compile(r"[0-9a-f]{32}\.json")


def kind_of(path: Path, document: Any) -> Kind | None:
    """Which kind of ghostrun file ``path`` claims to be, by its content, else its place."""
    if isinstance(document, dict) and ("responses" in document or "request" in document):
        return "cassette"
    if isinstance(document, dict) and ("criterion" in document or "verdict" in document):
        return "verdict"
    if path.parent.name == "judge":
        return "verdict"
    return "cassette" if _KEY_NAME.fullmatch(path.name) else None


def render_file(path: Path, document: Document) -> str:
    """A checked cassette (HTTP or WebSocket) or judge verdict (`ghostrun._store._validate`),
    its control characters shown as escapes (`_safe_text.terminal`)."""
    found: Mapping[str, Any] = document  # which format it is: by its content, as `kind_of` says
    if found.get("kind") == "websocket":
        return safe.terminal(render_websocket(path, cast(WebSocketFile, document)))
    if found.get("kind") == "mcp-stdio":
        return safe.terminal(render_mcp(path, cast(McpStdioFile, document)))
    if kind_of(path, document) == "verdict":
        return safe.terminal(render_verdict(path, cast(VerdictFile, document)))
    return safe.terminal(render_cassette(path, cast(CassetteFile, document)))


def raw(document: Any) -> str:
    """Any JSON document, pretty-printed (a file of a format this ghostrun cannot read)."""
    return _pretty(document)


def render_cassette(path: Path, cassette: CassetteFile) -> str:
    request = cassette.get("request") or {}
    responses = cassette.get("responses") or []
    lines = [
        f"cassette {cassette.get('key', path.stem)}  ({path})",
        "",
        f"REQUEST  {request.get('method', '?')} {request.get('url', '?')}",
        *_headers(request.get("headers") or {}),
        *_body(request.get("body")),
    ]
    for index, response in enumerate(responses, 1):
        reason = f" reason {response['reason']!r}" if "reason" in response else ""
        lines += [
            "",
            f"RESPONSE {index} of {len(responses)}  status {response.get('status', '?')}{reason}",
            *_headers(response.get("headers") or {}),
            *_body(response.get("body")),
        ]
        error = response.get("stream_error")
        if error:
            lines.append(f"  stream broke: {error.get('type')}: {error.get('message')}")
    return "\n".join(lines) + "\n"


def render_websocket(path: Path, cassette: WebSocketFile) -> str:
    """A WebSocket cassette: each conversation's handshake, then one line per frame."""
    conversations = cassette.get("conversations") or []
    lines = [f"websocket cassette {cassette.get('key', path.stem)}  ({path})"]
    for index, conversation in enumerate(conversations, 1):
        handshake = conversation.get("handshake") or {}
        subprotocol = handshake.get("subprotocol")
        lines += [
            "",
            f"CONVERSATION {index} of {len(conversations)}  {handshake.get('url', '?')}"
            + (f"  (subprotocol {subprotocol})" if subprotocol else ""),
            *_headers(handshake.get("headers") or {}),
        ]
        lines += [_frame_line(event) for event in conversation.get("frames") or []]
    return "\n".join(lines) + "\n"


def render_mcp(path: Path, cassette: McpStdioFile) -> str:
    """An MCP stdio cassette: each connection's launch, then one line per JSON-RPC message."""
    connections = cassette.get("connections") or []
    lines = [f"mcp stdio cassette {cassette.get('key', path.stem)}  ({path})"]
    for index, connection in enumerate(connections, 1):
        launch = connection.get("launch") or {}
        command = " ".join([str(launch.get("command", "?")), *map(str, launch.get("args") or [])])
        lines += ["", f"CONNECTION {index} of {len(connections)}", f"LAUNCH {command}"]
        if launch.get("env"):
            lines.append(f"  env (names only): {', '.join(map(str, launch['env']))}")
        if launch.get("cwd"):
            lines.append(f"  cwd: {launch['cwd']}")
        lines += [_frame_line(event) for event in connection.get("messages") or []]
    return "\n".join(lines) + "\n"


def _frame_line(event: Any) -> str:
    if not isinstance(event, dict) or len(event) != 1:
        return f"  ? {event!r}"
    ((side, body),) = event.items()
    if side == "close":
        close = body if isinstance(body, dict) else {}
        return f"  x closed by {close.get('by')}: {close.get('code')} {close.get('reason')!r}"
    arrow = "->" if side == "client" else "<-"
    kind, value = next(iter(body.items())) if isinstance(body, dict) and body else ("?", body)
    if kind == "base64":
        return f"  {arrow} {side}  {len(str(value)) * 3 // 4} bytes of binary data"
    text = orjson.dumps(value).decode() if kind in ("json", "binary_json") else str(value)
    return f"  {arrow} {side}  {text if len(text) <= 160 else text[:157] + '...'}"


def render_verdict(path: Path, verdict: VerdictFile) -> str:
    votes = verdict.get("votes", 1)
    flips = f", flip rate {verdict.get('flip_rate', 0.0):.0%}" if votes != 1 else ""
    lines = [
        f"judge verdict {verdict.get('key', path.stem)}  ({path})",
        "",
        f"VERDICT   {verdict.get('verdict')}  ({plural(votes, 'vote')}{flips})",
        f"judge     {verdict.get('judge')}",
        f"reason    {verdict.get('reason')}",
        "criterion:",
        _indented(str(verdict.get("criterion", ""))),
        "text:",
        _indented(str(verdict.get("text", ""))),
    ]
    return "\n".join(lines) + "\n"


def _headers(headers: Headers | dict[str, str]) -> list[str]:
    out = []
    for name in sorted(headers):
        values = headers[name]
        for value in values if isinstance(values, list) else [values]:
            out.append(f"  {name}: {value}")
    return out


def _body(body: Any) -> list[str]:
    kinds = [key for key in body if key not in MODIFIERS] if isinstance(body, dict) else []
    if len(kinds) != 1:
        return ["  body: (none)"] if not body else ["  body:", _indented(repr(body))]
    kind, value = kinds[0], body[kinds[0]]
    if kind == "json":
        spelling = f", {body['format']}" if "format" in body else ""
        lines = [f"  body (json{spelling}):", _indented(_pretty(value))]
        text = _reply_text(value)
        if text:
            lines += ["  text:", _indented(text)]
        return lines
    if kind == "text":
        return ["  body (text):", _indented(str(value)) if value else _INDENT + "(empty)"]
    if kind == "base64":
        return [f"  body: {len(str(value)) * 3 // 4} bytes of binary data (base64 in the file)"]
    if kind in _STREAM_KINDS and isinstance(value, list):
        return _stream(kind, [str(chunk) for chunk in value])
    return [f"  body ({kind}):", _indented(_pretty(value))]


def _stream(kind: str, chunks: list[str]) -> list[str]:
    head = f"  stream ({plural(len(chunks), f'{kind} chunk')})"
    text, calls = stream_text(kind, chunks), stream_calls(kind, chunks)
    if text is None and not calls:
        return [head + ":", *(_indented(repr(chunk)) for chunk in chunks)]
    lines = [head + ", reassembled text:", _indented(text) if text else _INDENT + "(empty)"]
    if calls:
        lines += ["  tool calls:", *(_indented(call) for call in calls)]
    return lines


def stream_calls(kind: str, chunks: list[str]) -> list[str]:
    """The tool calls a recorded stream made, its pieces joined: ``name({arguments})``."""
    return [
        f"{call['name']}({json.dumps(call['arguments'], ensure_ascii=False, default=repr)})"
        for call in tool_calls(_events(kind, chunks))
    ]


def _events(kind: str, chunks: list[str]) -> list[Any]:
    if kind == "sse":
        events = _sse_events("".join(chunks))
    elif kind == "ndjson":
        events = [parse_json(line) for line in "".join(chunks).splitlines() if line.strip()]
    else:
        return []
    return [event for event in events if event is not None]


def stream_text(kind: str, chunks: list[str]) -> str | None:
    """The text a recorded stream carried, or None when its events are not ones we read."""
    events = _events(kind, chunks)
    if not events:
        return None
    try:
        return extract_text(events)
    except (TypeError, ValueError):
        return None


def _sse_events(stream: str) -> list[Any]:
    """The JSON ``data`` of each server-sent event (``[DONE]`` and non-JSON skipped)."""
    events = []
    for block in stream.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        )
        if data and data.strip() != "[DONE]":
            events.append(parse_json(data))
    return events


def _reply_text(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    try:
        return extract_text(value) or None
    except (TypeError, ValueError):
        return None


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def _indented(text: str) -> str:
    return textwrap.indent(text, _INDENT, lambda line: True)
