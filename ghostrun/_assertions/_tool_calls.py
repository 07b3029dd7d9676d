"""Tool calls from every SDK, normalised, and the assertions on them.

Each provider spells a tool call differently (OpenAI chat: a JSON string in
``function.arguments``; Responses: ``function_call`` items; Anthropic:
``tool_use`` blocks with an ``input`` dict; Gemini: ``function_call`` parts
with ``args``; Ollama: ``function.arguments`` already a dict). Tests should
not care, so all become :class:`ToolCall`. Arguments that are not valid JSON
are kept with ``error`` set, never replaced by ``{}``: an app would crash on
them, so the assertions report them.

The agent frameworks hand back their own objects, read here too:
openai-agents' ``result.to_input_list()`` (Responses input items; a
``function_call_output`` is a tool's result, not a call), ``result.new_items``
(run items: their ``raw_item``) and ``result.raw_responses`` (each one's
``output``); pydantic-ai's ``result.all_messages()`` (``ToolCallPart`` parts);
LangChain's ``AIMessage.tool_calls`` (``{name, args, id}``); and a ghostrun
session: the tool calls its model steps asked for. Anything else raises
`UnreadableToolCalls`, an ``AssertionError`` (and a ``TypeError``) that lists
what can be read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._core._public import public
from .._recording._session import Session
from .._recording._steps import settled, tool_calls
from ._extract import field, is_record, type_name
from ._outcome import check, failure_message
from ._schema import json_equal

__all__ = ["ToolCall", "ToolCallExpectation", "UnreadableToolCalls", "normalize_tool_calls"]

# A failed expectation's traceback ends in the test, not in these frames: unittest
# leaves out modules that set ``__unittest``, pytest those that set ``__tracebackhide__``.
__unittest = True
__tracebackhide__ = True

# Call items named by their ``type``; the value says where the arguments are.
_TYPED_CALLS = {
    "function_call": "arguments",  # OpenAI Responses
    "tool_use": "input",  # Anthropic
    "server_tool_use": "input",  # Anthropic server tools (web search...)
}
# Free-form ("custom") tools take text, not JSON: it becomes arguments["input"].
_CUSTOM_CALLS = frozenset({"custom_tool_call"})


@public
@dataclass(frozen=True)
class ToolCall:
    """One tool call: ``arguments`` parsed to a dict, or ``error`` saying why not.

    ``raw_arguments`` is the JSON string the provider sent, when it sent one.
    """

    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    error: str | None = None

    def __str__(self) -> str:
        if self.error is not None:
            return f"{self.name}(<{self.error}>: {self.raw_arguments!r})"
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False, default=repr)})"


class UnreadableToolCalls(AssertionError, TypeError):
    """A value ``expect_tool_calls`` cannot read tool calls from; the message lists what it can.

    An ``AssertionError``, so a test reports it as a failure; a ``TypeError`` as well, as
    it was before frameworks' objects were read.
    """


_READS = (
    "it reads tool calls (OpenAI chat and Responses, Anthropic tool_use, Gemini "
    "function_call, Ollama, {name, arguments} dicts), lists of them, whole responses and "
    "messages, openai-agents' result.to_input_list(), result.new_items and "
    "result.raw_responses, pydantic-ai's result.all_messages(), LangChain's AIMessage "
    "(.tool_calls), and a ghostrun session"
)


def normalize_tool_calls(value: object) -> list[ToolCall]:
    """The tool calls in ``value``, in order: calls, lists of them, or whole responses.

    Raises `UnreadableToolCalls` naming the type when ``value`` is no shape we know.
    """
    if isinstance(value, ToolCall):
        return [value]
    if isinstance(value, Session):
        return _from_session(value)
    if isinstance(value, (list, tuple)):
        return _from_items(value)
    calls = _from_record(value) if is_record(value) else _from_framework(value)
    if calls is not None:
        return calls
    raise UnreadableToolCalls(f"cannot read tool calls from {type_name(value)}: {_READS}")


def _from_items(items: list[Any] | tuple[Any, ...]) -> list[ToolCall]:
    """Items of a list or container; non-call items (text blocks...) are skipped."""
    calls: list[ToolCall] = []
    for item in items:
        if isinstance(item, (ToolCall, list, tuple, Session)):
            calls += normalize_tool_calls(item)
            continue
        found = _from_record(item) if is_record(item) else _from_framework(item)
        if found is None and not is_record(item):
            raise UnreadableToolCalls(
                f"cannot read tool calls from a list item of type {type_name(item)}: {_READS}"
            )
        calls += found or []
    return calls


def _from_session(session: Session) -> list[ToolCall]:
    """The calls a session's model steps asked for, in order (tool hosts' steps are none)."""
    found = [
        call
        for step in settled(list(session._deck.steps))
        if not step.tool
        for call in tool_calls(step.documents())
    ]
    return _from_items(found)


def _from_framework(value: Any) -> list[ToolCall] | None:
    """Calls in an agent framework's own objects (dataclasses, not SDK models); None if none.

    pydantic-ai: a message's ``parts``, a ``ToolCallPart`` (``part_kind="tool-call"``:
    ``tool_name``, ``args``); openai-agents: a run item's ``raw_item``, a model
    response's ``output``; LangChain-shaped objects: ``tool_calls``.
    """
    kind = getattr(value, "part_kind", None)
    if isinstance(kind, str):
        if kind != "tool-call":
            return []  # a text, a prompt or a tool's return
        name, args = getattr(value, "tool_name", None), getattr(value, "args", None)
        return [_call({"name": name, "arguments": args}, "arguments")]
    for attribute in ("raw_item", "tool_calls", "parts", "output"):
        inner = getattr(value, attribute, None)
        if inner is not None and attribute == "raw_item":
            return normalize_tool_calls(inner)
        if isinstance(inner, (list, tuple)):
            return _from_items(inner)
    return None


def _from_record(record: Any) -> list[ToolCall] | None:
    """Calls in one mapping or model; ``None`` when it is no shape we know."""
    if field(record, "role") is not None:
        return _from_message(record)
    kind = field(record, "type")
    if kind in _CUSTOM_CALLS:
        return [_custom_call(record)]
    if isinstance(field(record, "name"), str):
        return [_call(record, _TYPED_CALLS.get(kind))]
    for key, read in _CONTAINERS:
        inner = field(record, *key)
        if inner is not None:
            return read(inner)
    return None


def _from_message(message: Any) -> list[ToolCall]:
    """A message (OpenAI, Ollama, Anthropic, Responses item, Gemini Content)."""
    calls = _from_items(field(message, "tool_calls") or [])
    legacy = field(message, "function_call")  # OpenAI's pre-tools function calling
    if legacy is not None:
        calls.append(_call(legacy, "arguments"))
    for key in ("content", "parts"):
        inner = field(message, key)
        if isinstance(inner, (list, tuple)):
            calls += _from_items(inner)
    return calls


def _first(candidates: Any) -> list[ToolCall]:
    """Only the first choice or candidate counts, as for the reply text."""
    return normalize_tool_calls(candidates[0]) if candidates else []


def _any(value: Any) -> list[ToolCall]:
    return normalize_tool_calls(value)


def _openai_function(function: Any) -> list[ToolCall]:
    return [_call(function, "arguments")]


def _openai_custom(custom: Any) -> list[ToolCall]:
    return [_custom_call(custom)]


# Keys that hold calls or containers of calls, in the order they are tried.
def _nothing(_item: Any) -> list[ToolCall]:
    return []


def _listed(value: Any) -> list[ToolCall]:
    """A list of items; anything else (a ``function_call_output``'s text) holds no call."""
    return _from_items(value) if isinstance(value, (list, tuple)) else []


_CONTAINERS: tuple[tuple[tuple[str, ...], Callable[[Any], list[ToolCall]]], ...] = (
    (("tool_calls",), _listed),  # LangChain's AIMessage: [{name, args, id, type}]
    (("function",), _openai_function),  # OpenAI chat tool call, Ollama tool call
    (("custom",), _openai_custom),  # OpenAI chat custom tool call
    (("function_call", "functionCall"), _any),  # Gemini Part
    (("choices",), _first),  # chat completion
    (("candidates",), _first),  # Gemini response
    (("message",), _any),  # Ollama ChatResponse, Cohere
    (("output",), _listed),  # Responses API; a function_call_output's text holds none
    (("content",), _any),  # Gemini Candidate
    (("parts",), _from_items),  # Gemini Content without a role
    (("type",), _nothing),  # any other typed item: text, reasoning, web search...
    (("text",), _nothing),  # a Gemini text part
)


def _call(record: Any, where: str | None) -> ToolCall:
    """A call from ``{name, arguments | args | input}``, parsing string arguments."""
    name = _name(record)
    keys = (where,) if where else ("arguments", "args", "input")
    raw = field(record, *keys)
    if raw is None:
        return ToolCall(name, {})  # Gemini omits args for parameterless functions
    if isinstance(raw, str):
        return _parsed(name, raw)
    if isinstance(raw, Mapping):
        return ToolCall(name, dict(raw))
    return ToolCall(name, {}, None, f"arguments are {type_name(raw)}, not an object")


def _parsed(name: str, raw: str) -> ToolCall:
    try:
        arguments = json.loads(raw)
    except ValueError as exc:
        return ToolCall(name, {}, raw, f"invalid JSON arguments: {exc}")
    if not isinstance(arguments, dict):
        return ToolCall(name, {}, raw, "arguments are JSON but not an object")
    return ToolCall(name, arguments, raw)


def _custom_call(record: Any) -> ToolCall:
    text = field(record, "input")
    raw = text if isinstance(text, str) else None
    return ToolCall(_name(record), {"input": text}, raw)


def _name(record: Any) -> str:
    name = field(record, "name")
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"a tool call in {type_name(record)} has no name: a streamed delta? "
            "Pass the accumulated message or final response instead"
        )
    return name


# -- assertions ----------------------------------------------------------------------------


@public
class ToolCallExpectation:
    """Assertions on the tool calls a model made; each returns ``self`` to chain.

    A failure raises ``ghostrun.ExpectationFailed`` (an ``AssertionError``)
    that lists every call made. A call whose arguments are malformed fails
    every positive assertion about its tool: the app could not have run it.
    """

    def __init__(self, value: object) -> None:
        self._calls = normalize_tool_calls(value)

    @property
    def calls(self) -> list[ToolCall]:
        """The normalised calls, in the order the model made them."""
        return list(self._calls)

    def __repr__(self) -> str:
        return f"ToolCallExpectation({self._calls!r})"

    def called(self, name: str) -> ToolCallExpectation:
        """At least one call to ``name``."""
        found = self._named(name)
        return self._check(
            "called", f"a call to {name!r}", bool(found), f"no call to {name!r}", name
        )

    def did_not_call(self, name: str) -> ToolCallExpectation:
        """No call to ``name`` at all (malformed or not)."""
        count = len(self._named(name))
        reason = f"{name!r} was called {_times(count)}"
        return self._check("did_not_call", f"no call to {name!r}", count == 0, reason)

    def called_once(self, name: str) -> ToolCallExpectation:
        """Exactly one call to ``name``."""
        count = len(self._named(name))
        reason = f"{name!r} was called {_times(count)}"
        return self._check("called_once", f"exactly one call to {name!r}", count == 1, reason, name)

    def call_count(self, name: str | None, n: int) -> ToolCallExpectation:
        """Exactly ``n`` calls to ``name``; ``name=None`` counts every call.

        ``call_count("search", 2)``; ``call_count(None, 0)`` for "no tool calls".
        """
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"call_count(name, n): n must be an int, got {n!r}")
        count = len(self._calls if name is None else self._named(name))
        what = "tool calls" if name is None else f"calls to {name!r}"
        reason = f"{count} {what}"
        names = () if name is None else (name,)
        return self._check("call_count", f"exactly {n} {what}", count == n, reason, *names)

    def called_with(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **subset: Any
    ) -> ToolCallExpectation:
        """Some call to ``name`` has these arguments; others are ignored.

        Nested values are compared exactly (JSON equality: ``True`` is not
        ``1``). Keys that are not identifiers go in the ``arguments`` dict.
        """
        wanted = {**(arguments or {}), **subset}
        criterion = f"a call to {name!r} with arguments including {_json_text(wanted)}"
        calls = self._named(name)
        mismatches = [_mismatch(call, wanted) for call in calls]
        passed = any(m is None for m in mismatches)
        reason = _with_reason(name, calls, mismatches)
        return self._check("called_with", criterion, passed, reason, name)

    def called_in_order(self, *names: str) -> ToolCallExpectation:
        """``names`` were called in this order; other calls may come between."""
        order = [call.name for call in self._calls]
        position = 0
        for call_name in order:
            if position < len(names) and call_name == names[position]:
                position += 1
        passed = position == len(names)
        reason = f"calls were made in the order {order}"
        if not passed:
            reason += f"; nothing matched {names[position]!r} after {list(names[:position])}"
        return self._check(
            "called_in_order", f"calls in the order {list(names)}", passed, reason, *names
        )

    # -- internals -------------------------------------------------------------------------

    def _named(self, name: str) -> list[ToolCall]:
        return [call for call in self._calls if call.name == name]

    def _check(
        self, kind: str, criterion: str, passed: bool, reason: str, *strict: str
    ) -> ToolCallExpectation:
        """Report the outcome; calls to the ``strict`` names must have valid arguments."""
        broken = [c for c in self._calls if c.name in strict and c.error is not None]
        if passed and broken:
            passed = False
            reason = "malformed arguments: " + "; ".join(f"{c.name}: {c.error}" for c in broken)
        check(
            kind=kind,
            criterion=criterion,
            text=_render(self._calls),
            passed=passed,
            reason=reason,
            message=failure_message(criterion, "found", reason, _listing(self._calls)),
        )
        return self


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)


def _render(calls: list[ToolCall]) -> str:
    """The calls one a line, as the run log and messages show them."""
    return "\n".join(str(call) for call in calls)


def _listing(calls: list[ToolCall]) -> str:
    if not calls:
        return "no tool calls were made"
    lines = [f"  #{i} {call}" for i, call in enumerate(calls, 1)]
    return "calls made:\n" + "\n".join(lines)


def _mismatch(call: ToolCall, wanted: Mapping[str, Any]) -> str | None:
    """Why ``call`` does not match ``wanted``; ``None`` when it does."""
    if call.error is not None:
        return call.error
    problems = []
    for key, expected in wanted.items():
        if key not in call.arguments:
            problems.append(f"{key}: missing")
        elif not json_equal(call.arguments[key], expected):
            problems.append(
                f"{key}: expected {_json_text(expected)}, got {_json_text(call.arguments[key])}"
            )
    return "; ".join(problems) or None


def _with_reason(name: str, calls: list[ToolCall], mismatches: list[str | None]) -> str:
    if not calls:
        return f"no call to {name!r}"
    if any(m is None for m in mismatches):
        return f"a call to {name!r} matched"
    lines = [f"  {name} call {i}: {m}" for i, m in enumerate(mismatches, 1)]
    return f"no call to {name!r} matched:\n" + "\n".join(lines)
