"""A request and its answers as a reviewer reads them, and their diffs.

The request diff is drawn in the miss diff's notation (``messages[0].content:
...``, ignored fields left out); the answer diff on the text ``expect()`` would
read, with tool calls and their arguments, so a re-record that only changed a
response id shows nothing. Every diff line is scrubbed of secret shapes once more.

Values the provider mints afresh on every recording are no change a reviewer
made: tool-call ids (``call_…``, ``fc_…``, ``toolu_…``), response and message
ids, copied by the agent into its next request, show as ``<id>``; the suite's
own ``normalize`` shapes show as the key sees them (``<uuid>``), and its
``ignore_fields`` are left out.
"""

from __future__ import annotations

import difflib
import re
from typing import Any
from urllib.parse import urlsplit

from ..._assertions._extract import extract_text
from ..._assertions._tool_calls import normalize_tool_calls
from ..._core._normalize import Normalizer
from ..._secrets._scrub import scrub_text
from ..._store._keys import without_fields
from ..._store._render import render_body
from ..._wire._bodies import MODIFIERS
from .._show import stream_calls, stream_text

__all__ = ["answer_diff", "answer_lines", "changed_lines", "endpoint_of", "request_diff"]

_MAX_DIFF_LINES = 40
# Ids a provider mints per recording, as providers write them: a prefix, then letters and
# digits, a digit among them (OpenAI's call_/fc_/resp_/msg_/rs_/chatcmpl-, Anthropic's
# toolu_/msg_/srvtoolu_): words of a prompt ("step-by-step") are not ids.
_MINTED_ID = re.compile(
    r"\b(?:(?:call|fc|toolu|srvtoolu|resp|msg|rs|ws)_|chatcmpl-)(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{6,}"
)


def endpoint_of(cassette: dict[str, Any]) -> str:
    request = cassette.get("request") or {}
    parts = urlsplit(str(request.get("url", "")))
    return f"{request.get('method', '?')} {parts.scheme}://{parts.netloc}{parts.path}"


def request_diff(
    old: dict[str, Any], new: dict[str, Any], ignore: Any, shapes: Normalizer | None = None
) -> list[str]:
    before = _request_lines(old, ignore, shapes)
    after = _request_lines(new, ignore, shapes)
    return _unified(before, after, "before", "after")


def _request_lines(cassette: dict[str, Any], ignore: Any, shapes: Normalizer | None) -> list[str]:
    request = cassette["request"]
    body = request.get("body") or {}
    if isinstance(body, dict) and "json" in body and ignore:
        body = {"json": without_fields(body["json"], ignore)}
    lines = [f"{request.get('method')} {request.get('url')}", *render_body(body)]
    if shapes is not None:
        lines = [shapes.text(line) for line in lines]
    return [_MINTED_ID.sub("<id>", line) for line in lines]


def changed_lines(diff: list[str]) -> frozenset[str]:
    """A diff's removed and added lines: what two diffs must share to be one change."""
    return frozenset(
        line for line in diff if line[:1] in "+-" and not line.startswith(("---", "+++"))
    )


def answer_diff(old: dict[str, Any], new: dict[str, Any], *, last: bool = False) -> list[str]:
    """The answers' diff: all of a cassette's responses, or (``last``) its last one only."""
    olds, news = old.get("responses") or [], new.get("responses") or []
    if last:
        olds, news = olds[-1:], news[-1:]
    before = [_MINTED_ID.sub("<id>", line) for r in olds for line in answer_lines(r)]
    after = [_MINTED_ID.sub("<id>", line) for r in news for line in answer_lines(r)]
    return _unified(before, after, "answer before", "answer after")


def answer_lines(response: Any) -> list[str]:
    """A recorded response as the lines a reviewer reads: its text and its tool calls."""
    if not isinstance(response, dict):
        return []
    body = response.get("body") or {}
    status = response.get("status")
    head = [] if status in (200, None) else [f"(status {status})"]
    # A body's modifiers (a JSON format, a stream's carries) do not change its text.
    kinds = [name for name in body if name not in MODIFIERS] if isinstance(body, dict) else []
    if len(kinds) != 1:
        return head
    kind, value = kinds[0], body[kinds[0]]
    if kind == "json":
        return head + _json_answer(value)
    if kind in ("sse", "ndjson") and isinstance(value, list):
        chunks = [str(chunk) for chunk in value]
        text, calls = stream_text(kind, chunks), stream_calls(kind, chunks)
        return head + (text.splitlines() if text else []) + [f"tool call: {c}" for c in calls]
    if kind == "text":
        return head + str(value).splitlines()
    return [*head, f"({kind} body)"]


def _json_answer(value: Any) -> list[str]:
    lines = []
    try:
        lines = extract_text(value).splitlines()
    except (TypeError, ValueError):
        lines = render_body({"json": value})
    try:
        calls = normalize_tool_calls(value)
    except (TypeError, ValueError):
        calls = []
    return lines + [f"tool call: {call}" for call in calls]


def _unified(before: list[str], after: list[str], a: str, b: str) -> list[str]:
    diff = list(difflib.unified_diff(before, after, a, b, lineterm="", n=1))
    diff = [scrub_text(line) for line in diff]
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"... ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    return diff
