"""Read the reply text out of whatever an LLM SDK returned.

``expect()`` accepts a string or a provider response, so tests can assert on
``client.chat.completions.create(...)`` directly. The SDKs are never
imported: their responses are pydantic models, read here by duck typing
(attribute access), and their dict forms (wire JSON, ``model_dump()``) are
read by the same code through :func:`field`.

The text is the model's visible reply: thinking/reasoning is left out, and a
reply that is only a refusal reads as the refusal message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["extract_text", "field", "is_record", "type_name"]

# Stream event types whose text lives in a ``delta`` (OpenAI Responses, Anthropic).
_RESPONSES_TEXT_DELTA = "response.output_text.delta"
_ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_TEXT_PART_TYPES = frozenset({"text", "output_text"})


def is_record(value: object) -> bool:
    """True for the shapes we read: mappings and pydantic-style SDK models."""
    return isinstance(value, Mapping) or callable(getattr(value, "model_dump", None))


def field(record: Any, *names: str) -> Any:
    """The first of ``names`` present on a mapping or model, else ``None``.

    Several names cover wire JSON and SDK spellings (``functionCall`` /
    ``function_call``).
    """
    for name in names:
        value = record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)
        if value is not None:
            return value
    return None


def type_name(value: object) -> str:
    """A type's qualified name for error messages: ``openai...ChatCompletion``."""
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def extract_text(value: object) -> str:
    """The reply text of a string, an SDK response or its dict form.

    Raises ``TypeError`` naming the type when the value is none of the shapes
    we know, rather than asserting on ``str(value)``.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return _stream_text(value)
    if is_record(value):
        text = _record_text(value)
        if text is not None:
            return text
    raise TypeError(
        f"cannot read reply text from {type_name(value)}: expected a str, an OpenAI, "
        "Anthropic, Gemini or Ollama response (SDK object or dict), or a list of stream chunks"
    )


def _record_text(record: Any) -> str | None:
    """The text of a whole response or message; ``None`` if the shape is unknown."""
    return _first_text(_READERS, record)


def _first_text(readers: Iterable[Callable[[Any], str | None]], value: Any) -> str | None:
    """What the first reader that knows ``value``'s shape reads; ``None`` if none does."""
    for reader in readers:
        text = reader(value)
        if text is not None:
            return text
    return None


def _chat_completion(record: Any) -> str | None:
    """OpenAI-style chat completion (also Groq, Mistral, vLLM...): first choice."""
    choices = field(record, "choices")
    if not isinstance(choices, (list, tuple)):
        return None
    if not choices:
        raise TypeError(f"cannot read reply text from {type_name(record)}: it has no choices")
    choice = choices[0]
    message = field(choice, "message", "delta")
    if message is not None:
        return _message_text(message)
    text = field(choice, "text")  # legacy completions
    return text if isinstance(text, str) else ""


def _responses(record: Any) -> str | None:
    """OpenAI Responses API: ``output_text``, or the output messages' text."""
    output = field(record, "output")
    if not isinstance(output, (list, tuple)):
        return None
    text = field(record, "output_text")
    if isinstance(text, str) and text:
        return text
    messages = [item for item in output if field(item, "type") == "message"]
    return "".join(_parts_text(field(m, "content") or []) for m in messages)


def _gemini(record: Any) -> str | None:
    """Gemini ``GenerateContentResponse``: the first candidate's text parts."""
    candidates = field(record, "candidates")
    if not isinstance(candidates, (list, tuple)):
        return None
    if not candidates:
        return ""  # blocked prompt: the model said nothing
    parts = field(field(candidates[0], "content"), "parts") or []
    return _parts_text(parts)


def _message(record: Any) -> str | None:
    """A message with a role: OpenAI/Ollama message, Anthropic ``Message``."""
    if field(record, "role") is None:
        return None
    return _message_text(record)


def _ollama_chat(record: Any) -> str | None:
    """Ollama ``ChatResponse`` (and Cohere v2): ``message.content``."""
    message = field(record, "message")
    return _message_text(message) if is_record(message) else None


def _ollama_generate(record: Any) -> str | None:
    """Ollama ``GenerateResponse``: ``response``."""
    text = field(record, "response")
    return text if isinstance(text, str) else None


def _text_part(record: Any) -> str | None:
    """A single content block or part, e.g. ``message.content[0]``."""
    if field(record, "thought") is True:
        return None
    text = field(record, "text")
    return text if isinstance(text, str) else None


_READERS: tuple[Callable[[Any], str | None], ...] = (
    _chat_completion,
    _responses,
    _gemini,
    _message,
    _ollama_chat,
    _ollama_generate,
    _text_part,
)


def _message_text(message: Any) -> str:
    """A message's ``content`` (string or parts), else its refusal, else ``""``."""
    content = field(message, "content")
    if isinstance(content, str) and content:
        return content
    if isinstance(content, (list, tuple)):
        text = _parts_text(content)
        if text:
            return text
    parts = field(message, "parts")  # Gemini Content
    if isinstance(parts, (list, tuple)):
        return _parts_text(parts)
    refusal = field(message, "refusal")
    return refusal if isinstance(refusal, str) else ""


def _parts_text(parts: Any) -> str:
    """Join text parts; skip thinking, tool calls, and refusals unless only they exist."""
    texts = [_part_text(p) for p in parts]
    text = "".join(t for t in texts if t)
    if text:
        return text
    refusals = [field(p, "refusal") for p in parts if field(p, "type") == "refusal"]
    return "".join(r for r in refusals if isinstance(r, str))


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    kind = field(part, "type")
    if kind is not None and kind not in _TEXT_PART_TYPES:
        return None  # thinking, tool_use, images...
    if field(part, "thought") is True:
        return None  # Gemini thought summary
    text = field(part, "text")
    return text if isinstance(text, str) else None


# -- streams -------------------------------------------------------------------------------


def _stream_text(chunks: list[Any] | tuple[Any, ...]) -> str:
    """Join a list of stream chunks (or of text deltas) collected by the caller."""
    if not chunks:
        raise TypeError("cannot read reply text from an empty list")
    return "".join(_chunk_text(chunk, index) for index, chunk in enumerate(chunks))


def _chunk_text(chunk: Any, index: int) -> str:
    if isinstance(chunk, str):
        return chunk
    if is_record(chunk):
        text = _first_text(_CHUNK_READERS, chunk)
        if text is not None:
            return text
    raise TypeError(
        f"cannot read reply text from a list: item {index} is {type_name(chunk)}, "
        "not a stream chunk or a str (pass a single response, not a list of them)"
    )


def _openai_chunk(chunk: Any) -> str | None:
    """``ChatCompletionChunk``: the delta of choice 0 (a usage-only chunk has none)."""
    if field(chunk, "object") != "chat.completion.chunk":
        return None
    choices = field(chunk, "choices") or []
    deltas = [field(c, "delta") for c in choices if field(c, "index") in (0, None)]
    return "".join(_message_text(d) for d in deltas if d is not None)


def _event(event: Any) -> str | None:
    """Text carried by one Anthropic or OpenAI Responses stream event."""
    kind = field(event, "type")
    if not isinstance(kind, str):
        return None
    if kind == _RESPONSES_TEXT_DELTA:
        return str(field(event, "delta") or "")
    if kind.startswith("response."):
        return ""
    if kind not in _ANTHROPIC_EVENTS:
        return None
    block = field(event, "delta", "content_block")
    if block is not None and field(block, "type") in ("text_delta", "text"):
        return str(field(block, "text") or "")
    return ""


def _ollama_or_gemini_chunk(chunk: Any) -> str | None:
    """Ollama and Gemini stream chunks have the shape of whole responses."""
    if field(chunk, "done") is None and field(chunk, "candidates") is None:
        return None
    return _record_text(chunk)


_CHUNK_READERS: tuple[Callable[[Any], str | None], ...] = (
    _openai_chunk,
    _event,
    _ollama_or_gemini_chunk,
)
