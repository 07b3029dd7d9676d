"""What counts as a request's conversation, per provider format: the table ``rebase`` reads.

I/O-free. ``rebase`` (DESIGN §2) replays a recorded answer for a request that
differs from the recorded one, but only when the two ask the model the same
question: the same *conversation*. The conversation is

- what the model is told: the messages or input, the system prompt, the tool
  definitions and the tool results (they are messages);
- which model answers (in the body, or in the URL's path for Gemini and Bedrock:
  the method and path must be the same, so a model named there is compared too);
- what the answer must be: its format (a JSON schema, a forced tool, how many
  choices, whether it is streamed, where it stops, log-probabilities).

Everything else may differ and the recorded answer stands: sampling
(``temperature``, ``top_p``, ``seed``), the length limit (``max_tokens``, unless
the recorded answer is longer than the new limit allows), reasoning effort and
thinking budgets, bookkeeping (``metadata``, ``user``, ``store``,
``service_tier``), stream options, ``parallel_tool_calls``. Those change how an
answer is drawn, not what was asked, and they are what SDK upgrades change
(anthropic's default ``max_tokens`` 8192 → 64000, ``reasoning.summary``,
``thinkingConfig.includeThoughts``).

`FORMATS` is the table: each format by the path its requests are POSTed to
(``…/chat/completions``, ``…/completions``, ``…/responses``, ``…/messages``,
Gemini's ``…:generateContent``, Bedrock's ``/model/ID/converse``, Ollama's
``/api/chat`` and ``/api/generate``), and its conversation fields; the docs
(docs/evolving-a-suite.md) show it as a table, with why each choice was made.

``stream`` is part of every format's conversation (a streamed answer cannot
answer a request for a whole one), and so are the user's own
``conversation_fields``. The query string may differ only in ``api-version``.

Any other format: a difference counts as the conversation unless neither side
holds any text (numbers, booleans, null, absent): when in doubt, it misses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from .._store._keys import split_field_paths

__all__ = ["FORMATS", "UNKNOWN", "Comparison", "FieldChange", "Format", "compare", "format_of"]

Path = tuple[str, ...]


class _Missing:
    """A field one side lacks."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING: Final = _Missing()
_FREE_QUERY = frozenset({"api-version"})  # Azure's: SDKs move it on every release


@dataclass(frozen=True)
class Format:
    """A provider's request format: which paths are its conversation, which limit length."""

    name: str
    conversation: tuple[Path, ...]
    limits: tuple[Path, ...] = ()  # the answer's length limit, in tokens
    known: bool = True  # False: any difference holding text counts as the conversation


def _format(name: str, conversation: Sequence[str], limits: Sequence[str] = ()) -> Format:
    return Format(name, split_field_paths(("stream", *conversation)), split_field_paths(limits))


_CHAT = _format(
    "OpenAI chat",
    (
        "messages",
        "model",
        "tools",
        "functions",
        "tool_choice",
        "function_call",
        "response_format",
        "n",
        "stop",
        "logprobs",
        "top_logprobs",
        "modalities",
        "audio",
        "web_search_options",
    ),
    ("max_tokens", "max_completion_tokens"),
)
_COMPLETIONS = _format(
    "OpenAI completions",
    ("prompt", "suffix", "model", "n", "stop", "echo", "best_of", "logprobs"),
    ("max_tokens",),
)
_RESPONSES = _format(
    "OpenAI Responses",
    (
        "input",
        "instructions",
        "model",
        "tools",
        "tool_choice",
        "previous_response_id",
        "conversation",
        "prompt",
        "text.format",
        "truncation",
        "top_logprobs",
    ),
    ("max_output_tokens",),
)
_ANTHROPIC = _format(
    "Anthropic messages",
    (
        "system",
        "messages",
        "model",
        "tools",
        "tool_choice",
        "stop_sequences",
        "output_format",
        "mcp_servers",
        "container",
        "context_management",
    ),
    ("max_tokens",),
)
_GEMINI_OUTPUT = (
    "responseMimeType",
    "responseSchema",
    "responseJsonSchema",
    "_responseJsonSchema",
    "candidateCount",
    "stopSequences",
    "responseModalities",
    "responseLogprobs",
    "logprobs",
)
_GEMINI = _format(
    "Gemini generateContent",
    (
        "contents",
        "systemInstruction",
        "system_instruction",
        "tools",
        "toolConfig",
        "tool_config",
        "cachedContent",
        "cached_content",
        "safetySettings",
        "safety_settings",
        *(f"generationConfig.{name}" for name in _GEMINI_OUTPUT),
    ),
    ("generationConfig.maxOutputTokens",),
)
_BEDROCK = _format(
    "Bedrock converse",
    (
        "messages",
        "system",
        "toolConfig",
        "guardrailConfig",
        "promptVariables",
        "inferenceConfig.stopSequences",
    ),
    ("inferenceConfig.maxTokens",),
)
_OLLAMA_CHAT = _format(
    "Ollama chat",
    ("model", "messages", "tools", "format", "options.stop"),
    ("options.num_predict",),
)
_OLLAMA_GENERATE = _format(
    "Ollama generate",
    (
        "model",
        "prompt",
        "suffix",
        "system",
        "template",
        "context",
        "images",
        "raw",
        "format",
        "options.stop",
    ),
    ("options.num_predict",),
)
UNKNOWN = Format("unknown format", split_field_paths(("stream",)), known=False)

FORMATS: tuple[tuple[re.Pattern[str], Format], ...] = (
    (re.compile(r"/chat/completions$"), _CHAT),
    (re.compile(r"/completions$"), _COMPLETIONS),
    (re.compile(r"/responses$"), _RESPONSES),
    (re.compile(r"/api/chat$"), _OLLAMA_CHAT),
    (re.compile(r"/api/generate$"), _OLLAMA_GENERATE),
    (re.compile(r"/messages$"), _ANTHROPIC),
    (re.compile(r":(stream)?[gG]enerateContent$"), _GEMINI),
    (re.compile(r"/model/[^/]+/converse(-stream)?$"), _BEDROCK),
)
"""Each format by the path its requests are POSTed to, the first that matches wins."""


def format_of(method: str, url: str) -> Format:
    """The format of a request to ``url`` (`UNKNOWN` when no row of `FORMATS` matches)."""
    if method.upper() != "POST":
        return UNKNOWN
    path = urlsplit(url).path.rstrip("/")
    for pattern, found in FORMATS:
        if pattern.search(path):
            return found
    return UNKNOWN


@dataclass(frozen=True)
class FieldChange:
    """One field that differs: its path in the miss diff's notation, and both values."""

    path: str
    before: Any  # `MISSING` when the recorded request lacked it
    after: Any  # `MISSING` when this request lacks it


@dataclass(frozen=True)
class Comparison:
    """A recorded request and this one: what differs, and what of it is the conversation."""

    format: str
    changed: tuple[FieldChange, ...]  # every difference, in the order of the fields
    conversation: tuple[str, ...]  # why they are not the same question (empty: they are)

    @property
    def same_question(self) -> bool:
        return not self.conversation


def compare(
    recorded: tuple[str, str, Any],
    request: tuple[str, str, Any],
    extra: Sequence[Path] = (),
    answer_tokens: int | None = None,
) -> Comparison:
    """Compare (method, URL, body) of the recorded request with this one's.

    Bodies are parsed JSON values (None: not JSON), already without the session's
    ignored fields and with its normalized shapes replaced, as the key sees them.
    ``extra``: the user's ``conversation_fields``. ``answer_tokens``: the recorded
    answer's output tokens, which a lowered length limit must still allow.
    """
    found = format_of(recorded[0], recorded[1])
    why = _url_differences(recorded, request)
    old, new = recorded[2], request[2]
    if old is None or new is None:
        changed: list[FieldChange] = []
        if old != new:
            why.append("body")
    else:
        changed = []
        patterns = found.conversation + tuple(extra)
        for path, before, after in _differences(old, new, ()):
            changed.append(FieldChange(_shown(path), before, after))
            if _in_conversation(path, before, after, patterns) or (
                not found.known and (_holds_text(before) or _holds_text(after))
            ):
                why.append(_shown(path))
        why.extend(_limits(found, new, answer_tokens))
    return Comparison(found.name, tuple(changed), tuple(why))


def _url_differences(recorded: tuple[str, str, Any], request: tuple[str, str, Any]) -> list[str]:
    why = []
    if recorded[0].upper() != request[0].upper():
        why.append("the method")
    old, new = urlsplit(recorded[1]), urlsplit(request[1])
    if (old.scheme, old.netloc, old.path) != (new.scheme, new.netloc, new.path):
        why.append("the URL")
    elif _query(old.query) != _query(new.query):
        why.append("the URL's query")
    return why


def _query(query: str) -> list[tuple[str, str]]:
    return sorted(p for p in parse_qsl(query, keep_blank_values=True) if p[0] not in _FREE_QUERY)


def _differences(old: Any, new: Any, path: Path) -> Iterator[tuple[Path, Any, Any]]:
    """Every leaf where two JSON values differ: into objects, and lists of one length."""
    if old is new or (type(old) is type(new) and old == new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for name in [*old, *(n for n in new if n not in old)]:
            yield from _differences(old.get(name, MISSING), new.get(name, MISSING), (*path, name))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            yield from _differences(before, after, (*path, str(index)))
    else:
        yield path, old, new


def _in_conversation(path: Path, before: Any, after: Any, patterns: Sequence[Path]) -> bool:
    """Whether a difference at ``path`` touches a conversation path.

    Inside one (``messages[2].content`` under ``messages``): yes. Holding one (a
    whole ``generationConfig`` added): if the conversation path's values in it differ.
    """
    for pattern in patterns:
        shared = min(len(path), len(pattern))
        if not all(p in ("*", s) for p, s in zip(pattern[:shared], path[:shared], strict=True)):
            continue
        if len(pattern) <= len(path):
            return True
        rest = pattern[len(path) :]
        if _picked(before, rest) != _picked(after, rest):
            return True
    return False


def _picked(value: Any, path: Path) -> list[tuple[Path, Any]]:
    """The values at ``path`` (``*``: every key or index) inside ``value``, where they exist."""
    if not path:
        return [((), value)]
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        names = list(value) if head == "*" else [head] if head in value else []
        return [((n, *p), v) for n in names for p, v in _picked(value[n], rest)]
    if isinstance(value, list):
        indices = range(len(value)) if head == "*" else [int(head)] if head.isdigit() else []
        return [
            ((str(i), *p), v) for i in indices if i < len(value) for p, v in _picked(value[i], rest)
        ]
    return []


def _holds_text(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, dict):
        return any(_holds_text(k) or _holds_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_text(v) for v in value)
    return False


def _limits(found: Format, new: Any, answer_tokens: int | None) -> list[str]:
    """A length limit lowered below what the recorded answer used: that answer is impossible."""
    if answer_tokens is None:
        return []
    why = []
    for path in found.limits:
        for at, limit in _picked(new, path):
            if isinstance(limit, int) and not isinstance(limit, bool) and limit < answer_tokens:
                why.append(
                    f"{_shown(at)} (the recorded answer used {answer_tokens} tokens, "
                    f"more than {limit} allows)"
                )
    return why


def _shown(path: Path) -> str:
    """A path in the miss diff's notation: ``messages[0].content``."""
    out = ""
    for segment in path:
        out += f"[{segment}]" if segment.isdigit() else f".{segment}" if out else segment
    return out or "(the whole body)"
