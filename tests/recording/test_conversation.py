"""What counts as the conversation, per provider format: the table ``rebase`` reads (I/O-free).

Tables of ``(format, recorded request, this request, expected)``: the fields
that make the two different questions, or none (the recorded answer stands).
"""

from __future__ import annotations

from typing import Any

import pytest

from ghostrun._recording._conversation import MISSING, FieldChange, compare, format_of
from ghostrun._store._keys import split_field_paths

CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2/converse"
OLLAMA = "http://localhost:11434/api/chat"
GENERATE = "http://localhost:11434/api/generate"
OTHER = "https://api.cohere.com/v2/rerank"

ASK = [{"role": "user", "content": "Where is my refund?"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": ASK, **fields}


def anthropic(**fields: Any) -> dict[str, Any]:
    return {"model": "claude-opus-4-7", "max_tokens": 8192, "messages": ASK, **fields}


def gemini(**fields: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": "Where?"}]}], **fields}


# (url, recorded body, this body, the conversation fields that differ)
CASES: list[tuple[str, Any, Any, list[str]]] = [
    # OpenAI chat: the SDK's new or renamed fields rebase; the messages, model, tools do not
    (CHAT, chat(), chat(parallel_tool_calls=True), []),
    (CHAT, chat(max_tokens=8192), chat(max_completion_tokens=8192), []),
    (CHAT, chat(temperature=0), chat(temperature=0.7, seed=1, user="u1"), []),
    (CHAT, chat(), chat(stream_options={"include_usage": True}, store=False), []),
    (CHAT, chat(), chat(metadata={"trace": "abc"}, service_tier="auto"), []),
    (CHAT, chat(), chat(reasoning_effort="low"), []),
    (
        CHAT,
        chat(),
        chat(messages=[{"role": "user", "content": "Where is my order?"}]),
        ["messages[0].content"],
    ),
    (CHAT, chat(), chat(messages=[*ASK, {"role": "user", "content": "and?"}]), ["messages"]),
    (CHAT, chat(), chat(model="gpt-4o"), ["model"]),
    (CHAT, chat(tools=TOOLS), chat(tools=[]), ["tools"]),
    (CHAT, chat(), chat(tool_choice="required"), ["tool_choice"]),
    (CHAT, chat(), chat(response_format={"type": "json_object"}), ["response_format"]),
    (CHAT, chat(), chat(stream=True), ["stream"]),
    (CHAT, chat(), chat(n=2), ["n"]),
    (CHAT, chat(), chat(stop=["\n"]), ["stop"]),
    # OpenAI Responses
    (RESPONSES, {"model": "m", "input": "hi"}, {"model": "m", "input": "hi", "store": True}, []),
    (
        RESPONSES,
        {"model": "m", "input": "hi"},
        {"model": "m", "input": "hi", "reasoning": {"summary": "auto"}},
        [],
    ),
    (
        RESPONSES,
        {"model": "m", "input": "hi", "text": {"verbosity": "low"}},
        {"model": "m", "input": "hi", "text": {"verbosity": "high"}},
        [],
    ),
    (
        RESPONSES,
        {"model": "m", "input": "hi"},
        {"model": "m", "input": "hi", "text": {"format": {"type": "json_object"}}},
        ["text"],
    ),
    (RESPONSES, {"model": "m", "input": "hi"}, {"model": "m", "input": "ho"}, ["input"]),
    (
        RESPONSES,
        {"model": "m", "input": "hi", "instructions": "Be brief."},
        {"model": "m", "input": "hi", "instructions": "Be kind."},
        ["instructions"],
    ),
    # Anthropic: the default max_tokens moving 8192 -> 64000 is the SDK upgrade to rebase
    (ANTHROPIC, anthropic(), anthropic(max_tokens=64000), []),
    (ANTHROPIC, anthropic(), anthropic(thinking={"type": "enabled", "budget_tokens": 1024}), []),
    (ANTHROPIC, anthropic(), anthropic(system="Be brief."), ["system"]),
    (ANTHROPIC, anthropic(), anthropic(stop_sequences=["END"]), ["stop_sequences"]),
    # Gemini: the model is in the path; generationConfig is sampling, but for the output's shape
    (
        GEMINI,
        gemini(),
        gemini(generationConfig={"thinkingConfig": {"includeThoughts": True}}),
        [],
    ),
    (
        GEMINI,
        gemini(generationConfig={"temperature": 0}),
        gemini(generationConfig={"temperature": 1, "maxOutputTokens": 64000}),
        [],
    ),
    (
        GEMINI,
        gemini(),
        gemini(generationConfig={"responseMimeType": "application/json"}),
        ["generationConfig"],
    ),
    (
        GEMINI,
        gemini(generationConfig={"temperature": 0}),
        gemini(generationConfig={"temperature": 0, "responseSchema": {"type": "OBJECT"}}),
        ["generationConfig.responseSchema"],
    ),
    (GEMINI, gemini(), gemini(systemInstruction={"parts": [{"text": "x"}]}), ["systemInstruction"]),
    # Bedrock converse
    (
        BEDROCK,
        {"messages": [], "inferenceConfig": {"maxTokens": 512}},
        {"messages": [], "inferenceConfig": {"maxTokens": 4096, "temperature": 0.5}},
        [],
    ),
    (BEDROCK, {"messages": []}, {"messages": [], "system": [{"text": "x"}]}, ["system"]),
    # Ollama
    (OLLAMA, {"model": "l", "messages": ASK}, {"model": "l", "messages": ASK, "keep_alive": 5}, []),
    (
        OLLAMA,
        {"model": "l", "messages": ASK, "options": {"temperature": 0}},
        {"model": "l", "messages": ASK, "options": {"temperature": 0, "stop": ["x"]}},
        ["options.stop"],
    ),
    (GENERATE, {"model": "l", "prompt": "a"}, {"model": "l", "prompt": "b"}, ["prompt"]),
    (GENERATE, {"model": "l", "prompt": "a"}, {"model": "l", "prompt": "a", "think": False}, []),
    # any other format: when in doubt, a miss: only differences that hold no text rebase
    (OTHER, {"query": "q", "top_n": 3}, {"query": "q", "top_n": 5, "fast": True}, []),
    (OTHER, {"query": "q"}, {"query": "q", "mode": "fast"}, ["mode"]),
    (OTHER, {"query": "q"}, {"query": "r"}, ["query"]),
    (OTHER, {"query": "q"}, {"query": "q", "stream": True}, ["stream"]),
]


@pytest.mark.parametrize(("url", "recorded", "request_body", "expected"), CASES)
def test_the_conversation_fields_of_each_format(
    url: str, recorded: Any, request_body: Any, expected: list[str]
) -> None:
    found = compare(("POST", url, recorded), ("POST", url, request_body))
    assert list(found.conversation) == expected
    assert found.same_question is (not expected)
    assert found.changed  # every case changes something


@pytest.mark.parametrize(
    ("url", "name"),
    [
        (CHAT, "OpenAI chat"),
        ("https://x.openai.azure.com/openai/deployments/d/chat/completions", "OpenAI chat"),
        ("https://api.groq.com/openai/v1/chat/completions", "OpenAI chat"),
        ("https://api.openai.com/v1/completions", "OpenAI completions"),
        (RESPONSES, "OpenAI Responses"),
        (ANTHROPIC, "Anthropic messages"),
        (GEMINI, "Gemini generateContent"),
        (GEMINI.replace(":generateContent", ":streamGenerateContent"), "Gemini generateContent"),
        (BEDROCK, "Bedrock converse"),
        (BEDROCK + "-stream", "Bedrock converse"),
        (OLLAMA, "Ollama chat"),
        (GENERATE, "Ollama generate"),
        (OTHER, "unknown format"),
    ],
)
def test_each_format_is_recognised_by_its_path(url: str, name: str) -> None:
    assert format_of("POST", url).name == name
    assert format_of("GET", url).name == "unknown format"


def test_the_changed_fields_say_both_values_and_which_side_lacked_the_field() -> None:
    found = compare(
        ("POST", CHAT, chat(max_tokens=8192, temperature=0)),
        ("POST", CHAT, chat(max_tokens=64000, parallel_tool_calls=True)),
    )
    assert found.changed == (
        FieldChange("max_tokens", 8192, 64000),
        FieldChange("temperature", 0, MISSING),
        FieldChange("parallel_tool_calls", MISSING, True),
    )
    assert found.same_question and found.format == "OpenAI chat"


def test_a_limit_lowered_below_the_recorded_answer_is_a_conversation_change() -> None:
    recorded, lowered = (
        ("POST", ANTHROPIC, anthropic()),
        ("POST", ANTHROPIC, anthropic(max_tokens=16)),
    )
    assert compare(recorded, lowered, answer_tokens=12).same_question
    found = compare(recorded, lowered, answer_tokens=40)
    assert found.conversation == (
        "max_tokens (the recorded answer used 40 tokens, more than 16 allows)",
    )


def test_the_users_conversation_fields_join_the_formats() -> None:
    recorded, warmer = ("POST", CHAT, chat(temperature=0)), ("POST", CHAT, chat(temperature=1))
    assert compare(recorded, warmer).same_question
    extra = split_field_paths(["temperature", "metadata.*"])
    assert compare(recorded, warmer, extra).conversation == ("temperature",)
    tagged = ("POST", CHAT, chat(metadata={"tenant": "b"}))
    assert compare(("POST", CHAT, chat(metadata={"tenant": "a"})), tagged, extra).conversation == (
        "metadata.tenant",
    )


def test_the_url_must_be_the_same_but_for_azures_api_version() -> None:
    azure = "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version="
    body = chat()
    assert compare(
        ("POST", azure + "2024-10-21", body), ("POST", azure + "2025-01-01", body)
    ).same_question
    other = compare(("POST", CHAT + "?beta=true", body), ("POST", CHAT, body))
    assert other.conversation == ("the URL's query",)
    model = compare(("POST", GEMINI, gemini()), ("POST", GEMINI.replace("2.5", "3"), gemini()))
    assert model.conversation == ("the URL",)  # Gemini's model is in its path
    assert compare(("POST", OTHER, None), ("POST", OTHER, None)).same_question
    assert compare(("POST", OTHER, None), ("POST", OTHER, {"a": 1})).conversation == ("body",)
