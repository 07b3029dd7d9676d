"""Tool-call normalisation for every SDK shape, and ``expect_tool_calls`` assertions.

Inputs are REAL SDK objects, built by the SDKs' own types from wire JSON (and,
at the end, returned by the SDKs from the loopback simulator), plus the dict
forms users hold (wire JSON, ``model_dump()``).
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import groq
import ollama
import openai
import pytest
from anthropic.types import Message as AnthropicMessage
from google import genai
from google.genai import types as gtypes
from groq.types.chat import ChatCompletion as GroqChatCompletion
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.responses import Response
from simulator import ProviderSimulator
from wire import responses

from ghostrun._assertions._expect import ExpectationFailed, expect_tool_calls
from ghostrun._assertions._tool_calls import ToolCall, ToolCallExpectation, normalize_tool_calls


@pytest.fixture(autouse=True)
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Outcomes sent to the run log, kept here instead (no run log files from this suite)."""
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "ghostrun._recording._runlog.record_assertion", lambda **kw: seen.append(kw)
    )
    return seen


SEARCH = ("search_orders", {"order_id": "A123"})
REFUND = ("refund", {"order_id": "A123", "amount": 12.5, "items": [{"sku": "x", "qty": 1}]})

# -- wire JSON, as each provider sends it -----------------------------------------------------

OPENAI_TOOL_CALLS = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_orders", "arguments": '{"order_id": "A123"}'},
    },
    {
        "id": "call_2",
        "type": "function",
        "function": {
            "name": "refund",
            "arguments": '{"order_id":"A123","amount":12.5,"items":[{"sku":"x","qty":1}]}',
        },
    },
]
OPENAI_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini",
    "system_fingerprint": "fp_1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": OPENAI_TOOL_CALLS,
            },
        }
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
}
RESPONSES = responses(
    [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "search_orders",
            "arguments": '{"order_id":"A123"}',
            "status": "completed",
        },
    ]
)
ANTHROPIC = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "The user wants an order.", "signature": "sig"},
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "toolu_01", "name": "search_orders", "input": SEARCH[1]},
        {"type": "tool_use", "id": "toolu_02", "name": "refund", "input": REFUND[1]},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 30, "output_tokens": 12},
}
GEMINI = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Looking it up."},
                    {"functionCall": {"name": "search_orders", "args": SEARCH[1]}},
                    {"functionCall": {"name": "list_stores"}},  # Gemini omits empty args
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "resp-g1",
}
OLLAMA = {
    "model": "llama3.2:3b",
    "created_at": "2025-01-01T00:00:00.000000Z",
    "message": {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "search_orders", "arguments": SEARCH[1]}}],
    },
    "done": True,
    "done_reason": "stop",
}

# -- the same, built by the SDKs ---------------------------------------------------------------

OPENAI_OBJ = ChatCompletion.model_validate(OPENAI_CHAT)
RESPONSES_OBJ = Response.model_validate(RESPONSES)
ANTHROPIC_OBJ = AnthropicMessage.model_validate(ANTHROPIC)
GEMINI_OBJ = gtypes.GenerateContentResponse.model_validate(GEMINI)
OLLAMA_OBJ = ollama.ChatResponse.model_validate(OLLAMA)
GROQ_OBJ = GroqChatCompletion.model_validate(OPENAI_CHAT)

LIST_STORES = ("list_stores", {})


def pairs(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # OpenAI chat: whole completion, message, tool_calls list, one call; SDK and dict
        pytest.param(OPENAI_OBJ, [SEARCH, REFUND], id="openai-completion"),
        pytest.param(OPENAI_CHAT, [SEARCH, REFUND], id="openai-completion-dict"),
        pytest.param(OPENAI_OBJ.choices[0].message, [SEARCH, REFUND], id="openai-message"),
        pytest.param(OPENAI_OBJ.choices[0].message.tool_calls, [SEARCH, REFUND], id="openai-list"),
        pytest.param(OPENAI_TOOL_CALLS[0], [SEARCH], id="openai-call-dict"),
        pytest.param(OPENAI_OBJ.model_dump(), [SEARCH, REFUND], id="openai-model-dump"),
        pytest.param(GROQ_OBJ, [SEARCH, REFUND], id="groq-completion"),
        pytest.param(
            ChatCompletionMessage.model_validate(
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "search_orders", "arguments": '{"order_id":"A123"}'},
                }
            ),
            [SEARCH],
            id="openai-legacy-function-call",
        ),
        pytest.param(
            {"id": "c", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}},
            [("run_sql", {"input": "SELECT 1"})],
            id="openai-custom-tool",
        ),
        # OpenAI Responses
        pytest.param(RESPONSES_OBJ, [SEARCH], id="responses"),
        pytest.param(RESPONSES, [SEARCH], id="responses-dict"),
        pytest.param(RESPONSES_OBJ.output[2], [SEARCH], id="responses-item"),
        pytest.param(RESPONSES_OBJ.output, [SEARCH], id="responses-output-list"),
        pytest.param(
            {"type": "custom_tool_call", "call_id": "c", "name": "run_sql", "input": "SELECT 1"},
            [("run_sql", {"input": "SELECT 1"})],
            id="responses-custom-tool",
        ),
        # Anthropic
        pytest.param(ANTHROPIC_OBJ, [SEARCH, REFUND], id="anthropic-message"),
        pytest.param(ANTHROPIC, [SEARCH, REFUND], id="anthropic-dict"),
        pytest.param(ANTHROPIC_OBJ.content, [SEARCH, REFUND], id="anthropic-content"),
        pytest.param(ANTHROPIC_OBJ.content[2], [SEARCH], id="anthropic-block"),
        # Gemini
        pytest.param(GEMINI_OBJ, [SEARCH, LIST_STORES], id="gemini-response"),
        pytest.param(GEMINI, [SEARCH, LIST_STORES], id="gemini-camel-dict"),
        pytest.param(GEMINI_OBJ.model_dump(), [SEARCH, LIST_STORES], id="gemini-snake-dict"),
        pytest.param(GEMINI_OBJ.function_calls, [SEARCH, LIST_STORES], id="gemini-function-calls"),
        pytest.param(GEMINI_OBJ.candidates[0], [SEARCH, LIST_STORES], id="gemini-candidate"),  # type: ignore[index]
        pytest.param(
            GEMINI_OBJ.candidates[0].content.parts[1],  # type: ignore[index, union-attr]
            [SEARCH],
            id="gemini-part",
        ),
        pytest.param(
            gtypes.Content(
                role="model",
                parts=[gtypes.Part.from_function_call(name="search_orders", args=SEARCH[1])],
            ),
            [SEARCH],
            id="gemini-content",
        ),
        # Ollama
        pytest.param(OLLAMA_OBJ, [SEARCH], id="ollama-response"),
        pytest.param(OLLAMA, [SEARCH], id="ollama-dict"),
        pytest.param(OLLAMA_OBJ.message, [SEARCH], id="ollama-message"),
        pytest.param(OLLAMA_OBJ.message.tool_calls, [SEARCH], id="ollama-list"),
        # plain dicts, mixtures, ToolCall itself, nothing
        pytest.param({"name": "search_orders", "arguments": SEARCH[1]}, [SEARCH], id="plain"),
        pytest.param(
            {"name": "search_orders", "arguments": '{"order_id": "A123"}'}, [SEARCH], id="plain-str"
        ),
        pytest.param({"name": "list_stores"}, [LIST_STORES], id="plain-no-arguments"),
        pytest.param(
            [OPENAI_TOOL_CALLS[1], ANTHROPIC_OBJ.content[2], ToolCall(*LIST_STORES)],
            [REFUND, SEARCH, LIST_STORES],
            id="mixed-list",
        ),
        pytest.param(ToolCall(*SEARCH), [SEARCH], id="toolcall"),
        pytest.param([], [], id="empty-list"),
        pytest.param(
            ChatCompletion.model_validate(
                {
                    **OPENAI_CHAT,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "Hello"},
                        }
                    ],
                }
            ),
            [],
            id="openai-text-only",
        ),
    ],
)
def test_normalize(value: Any, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert pairs(normalize_tool_calls(value)) == expected
    assert pairs(expect_tool_calls(value).calls) == expected


def test_string_arguments_keep_their_raw_json() -> None:
    call = normalize_tool_calls(OPENAI_OBJ)[0]

    assert call == ToolCall("search_orders", {"order_id": "A123"}, '{"order_id": "A123"}', None)
    assert normalize_tool_calls(ANTHROPIC_OBJ)[0].raw_arguments is None  # sent as a dict


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ('{"order_id": "A1', "invalid JSON arguments: Unterminated string"),
        ("", "invalid JSON arguments: Expecting value"),
        ("[1, 2]", "arguments are JSON but not an object"),
        ('"A123"', "arguments are JSON but not an object"),
        ([1, 2], "arguments are list, not an object"),
    ],
)
def test_malformed_arguments_are_kept_with_an_error(arguments: Any, error: str) -> None:
    raw = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}

    (call,) = normalize_tool_calls(raw)

    assert call.name == "f" and call.arguments == {}
    assert call.error is not None and call.error.startswith(error)
    assert call.raw_arguments == (arguments if isinstance(arguments, str) else None)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "cannot read tool calls from int"),
        ("search_orders", "cannot read tool calls from str"),
        (object(), "cannot read tool calls from object"),
        ({"unrelated": 1}, "cannot read tool calls from dict"),
        ([OPENAI_TOOL_CALLS[0], 3], "cannot read tool calls from a list item of type int"),
        (
            {"index": 0, "function": {"arguments": '"A12'}},  # a later stream delta
            "a tool call in dict has no name: a streamed delta?",
        ),
    ],
)
def test_unreadable_values_are_a_type_error(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        normalize_tool_calls(value)


# -- assertions ----------------------------------------------------------------------------------

AGENT = [
    ToolCall("search_orders", {"order_id": "A123", "verbose": True}),
    ToolCall("refund", {"order_id": "A123", "amount": 12.5, "meta": {"reason": "late"}}),
    ToolCall("search_orders", {"order_id": "B456"}),
    ToolCall("notify", {"channel": "email"}),
]


@pytest.mark.parametrize(
    ("check"),
    [
        pytest.param(lambda e: e.called("refund"), id="called"),
        pytest.param(lambda e: e.did_not_call("delete_account"), id="did_not_call"),
        pytest.param(lambda e: e.called_once("refund"), id="called_once"),
        pytest.param(lambda e: e.call_count("search_orders", 2), id="call_count"),
        pytest.param(lambda e: e.call_count(None, 4), id="call_count-all"),
        pytest.param(lambda e: e.call_count("delete_account", 0), id="call_count-zero"),
        pytest.param(lambda e: e.called_with("search_orders", order_id="B456"), id="with-any"),
        pytest.param(lambda e: e.called_with("search_orders", order_id="A123"), id="with-subset"),
        pytest.param(lambda e: e.called_with("refund", meta={"reason": "late"}), id="with-nested"),
        pytest.param(lambda e: e.called_with("refund", amount=12.5, order_id="A123"), id="with-2"),
        pytest.param(lambda e: e.called_with("refund", {"order_id": "A123"}), id="with-dict"),
        pytest.param(lambda e: e.called_with("notify"), id="with-nothing"),
        pytest.param(lambda e: e.called_in_order("search_orders", "notify"), id="order-subseq"),
        pytest.param(lambda e: e.called_in_order("refund", "search_orders"), id="order-repeat"),
        pytest.param(lambda e: e.called_in_order(), id="order-empty"),
    ],
)
def test_assertions_pass_and_chain(check: Any) -> None:
    expectation = expect_tool_calls(AGENT)

    assert check(expectation) is expectation


@pytest.mark.parametrize(
    ("check", "lines"),
    [
        pytest.param(
            lambda e: e.called("cancel"),
            ["expected: a call to 'cancel'", "found:    no call to 'cancel'"],
            id="called",
        ),
        pytest.param(
            lambda e: e.did_not_call("search_orders"),
            [
                "expected: no call to 'search_orders'",
                "found:    'search_orders' was called 2 times",
            ],
            id="did_not_call",
        ),
        pytest.param(
            lambda e: e.called_once("search_orders"),
            ["expected: exactly one call to 'search_orders'"],
            id="called_once",
        ),
        pytest.param(
            lambda e: e.call_count("refund", 2),
            ["expected: exactly 2 calls to 'refund'", "found:    1 calls to 'refund'"],
            id="call_count",
        ),
        pytest.param(
            lambda e: e.call_count(None, 0),
            ["expected: exactly 0 tool calls", "found:    4 tool calls"],
            id="call_count-all",
        ),
        pytest.param(
            lambda e: e.called_with("search_orders", order_id="C789", verbose=True),
            [
                "expected: a call to 'search_orders' with arguments including "
                '{"order_id": "C789", "verbose": true}',
                "found:    no call to 'search_orders' matched:",
                '            search_orders call 1: order_id: expected "C789", got "A123"',
                '            search_orders call 2: order_id: expected "C789", got "B456"; '
                "verbose: missing",
            ],
            id="called_with",
        ),
        pytest.param(
            lambda e: e.called_with("refund", meta={"reason": "late", "x": 1}),
            ['refund call 1: meta: expected {"reason": "late", "x": 1}, got {"reason": "late"}'],
            id="called_with-nested-exact",
        ),
        pytest.param(
            lambda e: e.called_with("search_orders", verbose=1),
            ["search_orders call 1: verbose: expected 1, got true"],
            id="called_with-bool-is-not-int",
        ),
        pytest.param(
            lambda e: e.called_with("cancel", order_id="A123"),
            ["found:    no call to 'cancel'"],
            id="called_with-no-call",
        ),
        pytest.param(
            lambda e: e.called_in_order("notify", "refund"),
            [
                "expected: calls in the order ['notify', 'refund']",
                "found:    calls were made in the order ['search_orders', 'refund', "
                "'search_orders', 'notify']; nothing matched 'refund' after ['notify']",
            ],
            id="called_in_order",
        ),
    ],
)
def test_assertions_fail_with_the_calls_listed(check: Any, lines: list[str]) -> None:
    with pytest.raises(ExpectationFailed) as info:
        check(expect_tool_calls(AGENT))

    message = str(info.value)
    for line in lines:
        assert line in message
    assert message.endswith(
        "calls made:\n"
        '  #1 search_orders({"order_id": "A123", "verbose": true})\n'
        '  #2 refund({"order_id": "A123", "amount": 12.5, "meta": {"reason": "late"}})\n'
        '  #3 search_orders({"order_id": "B456"})\n'
        '  #4 notify({"channel": "email"})'
    )
    assert isinstance(info.value, AssertionError)
    assert info.value.judge is None and info.value.reason.splitlines()[0] in message


def test_failure_with_no_calls_says_so() -> None:
    with pytest.raises(ExpectationFailed, match="no tool calls were made"):
        expect_tool_calls(ANTHROPIC_OBJ.content[:2]).called("search_orders")


MALFORMED = [
    ToolCall("search_orders", {}, '{"order_id": "A1', "invalid JSON arguments: Unterminated"),
    ToolCall("notify", {"channel": "sms"}),
]


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(lambda e: e.called("search_orders"), id="called"),
        pytest.param(lambda e: e.called_once("search_orders"), id="called_once"),
        pytest.param(lambda e: e.call_count("search_orders", 1), id="call_count"),
        pytest.param(lambda e: e.called_with("search_orders"), id="called_with"),
        pytest.param(lambda e: e.called_in_order("search_orders", "notify"), id="in_order"),
    ],
)
def test_malformed_arguments_fail_every_positive_assertion(check: Any) -> None:
    with pytest.raises(ExpectationFailed) as info:
        check(expect_tool_calls(MALFORMED))

    message = str(info.value)
    assert "invalid JSON arguments: Unterminated" in message
    assert """#1 search_orders(<invalid JSON arguments: Unterminated>: '{"order_id": "A1')""" in (
        message
    )


def test_malformed_arguments_of_other_tools_do_not_matter() -> None:
    expect_tool_calls(MALFORMED).called_once("notify").called_with("notify", channel="sms")
    expect_tool_calls(MALFORMED).did_not_call("refund").call_count(None, 2)


def test_call_count_rejects_a_swapped_signature() -> None:
    with pytest.raises(TypeError, match=re.escape("call_count(name, n): n must be an int")):
        expect_tool_calls(AGENT).call_count(4, "search_orders")  # type: ignore[arg-type]


def test_an_argument_called_name_does_not_collide() -> None:
    calls = [ToolCall("create_user", {"name": "Ada", "arguments": "x"})]

    expect_tool_calls(calls).called_with("create_user", name="Ada", arguments="x")


def test_outcomes_are_reported_to_the_run_log(recorded: list[dict[str, Any]]) -> None:
    seen = recorded
    expect_tool_calls(AGENT).called("refund")
    with pytest.raises(ExpectationFailed):
        expect_tool_calls(AGENT).called("cancel")

    assert [(s["kind"], s["criterion"], s["passed"], s["judge"]) for s in seen] == [
        ("called", "a call to 'refund'", True, None),
        ("called", "a call to 'cancel'", False, None),
    ]
    assert seen[1]["reason"] == "no call to 'cancel'"
    assert seen[1]["text"].splitlines()[0] == (
        'search_orders({"order_id": "A123", "verbose": true})'
    )


def test_calls_is_a_copy() -> None:
    expectation = ToolCallExpectation(AGENT)
    expectation.calls.clear()

    assert len(expectation.calls) == 4


# -- from the real SDKs, through the loopback simulator ----------------------------------------

ORDER_PROMPT = [{"role": "user", "content": "Where is my order A123?"}]
CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "search_orders",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _openai_chat(provider: ProviderSimulator) -> Any:
    with openai.OpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        return client.chat.completions.create(model="m", messages=ORDER_PROMPT, tools=CHAT_TOOLS)


def _openai_responses(provider: ProviderSimulator) -> Any:
    with openai.OpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        tools: Any = [{"type": "function", "name": "search_orders", "parameters": {}}]
        return client.responses.create(model="m", input=ORDER_PROMPT[0]["content"], tools=tools)


def _groq(provider: ProviderSimulator) -> Any:
    with groq.Groq(api_key="gsk_test", base_url=provider.base_url) as client:
        return client.chat.completions.create(model="m", messages=ORDER_PROMPT, tools=CHAT_TOOLS)


def _anthropic(provider: ProviderSimulator) -> Any:
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.base_url) as client:
        tools: Any = [{"name": "search_orders", "input_schema": {"type": "object"}}]
        return client.messages.create(model="m", max_tokens=50, messages=ORDER_PROMPT, tools=tools)


def _anthropic_stream(provider: ProviderSimulator) -> Any:
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.base_url) as client:
        tools: Any = [{"name": "search_orders", "input_schema": {"type": "object"}}]
        with client.messages.stream(
            model="m", max_tokens=50, messages=ORDER_PROMPT, tools=tools
        ) as stream:
            return stream.get_final_message()


def _ollama(provider: ProviderSimulator) -> Any:
    with ollama.Client(host=provider.base_url) as client:
        return client.chat(model="llama3.2", messages=ORDER_PROMPT, tools=CHAT_TOOLS)


def _gemini(provider: ProviderSimulator) -> Any:
    options = gtypes.HttpOptions(base_url=provider.base_url)
    with genai.Client(api_key="AIza-test", http_options=options) as client:
        declaration = gtypes.FunctionDeclaration(name="search_orders", description="Find")
        config = gtypes.GenerateContentConfig(
            tools=[gtypes.Tool(function_declarations=[declaration])]
        )
        return client.models.generate_content(
            model="gemini-2.5-flash", contents=ORDER_PROMPT[0]["content"], config=config
        )


@pytest.mark.parametrize(
    "call",
    [_openai_chat, _openai_responses, _groq, _anthropic, _anthropic_stream, _ollama, _gemini],
)
def test_real_sdk_responses_from_the_simulator(provider: ProviderSimulator, call: Any) -> None:
    response = call(provider)

    expect_tool_calls(response).called_once("search_orders").called_with(
        "search_orders", order_id="A123"
    ).did_not_call("refund")
    with pytest.raises(ExpectationFailed, match='expected "B456", got "A123"'):
        expect_tool_calls(response).called_with("search_orders", order_id="B456")
