"""The simulator speaks each provider's wire format well enough for the REAL SDKs.

No ghostrun here: if these pass, a failure elsewhere in the suite is ghostrun's,
not the fake provider's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import groq
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from simulator import ProviderSimulator

PROMPT = "Where is my refund?"
ORDER_PROMPT = "Where is my order A123?"
ECHO = f"Echo: {PROMPT}"
OPENAI_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "search_orders",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS: Any = [
    {
        "name": "search_orders",
        "description": "Find an order",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def openai_client(provider: ProviderSimulator, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-key", base_url=provider.url("/v1"), **kwargs)


def anthropic_client(provider: ProviderSimulator, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.base_url, **kwargs)


def gemini_client(provider: ProviderSimulator, api_version: str | None = None) -> genai.Client:
    options = genai_types.HttpOptions(base_url=provider.base_url, api_version=api_version)
    return genai.Client(api_key="AIza-test-key", http_options=options)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """One raw client for the module: building one costs ~30 ms of TLS setup."""
    with httpx.Client() as client:
        yield client


# -- OpenAI chat completions ------------------------------------------------------------


def test_openai_chat(provider: ProviderSimulator) -> None:
    completion = openai_client(provider).chat.completions.create(
        model="gpt-4o-mini", messages=user(PROMPT)
    )

    assert completion.choices[0].message.content == ECHO
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens == 5
    assert completion._request_id == "req_sim0001"
    sent = provider.last_request
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.json["messages"] == user(PROMPT)


def test_openai_chat_stream_with_usage(provider: ProviderSimulator) -> None:
    stream = openai_client(provider).chat.completions.create(
        model="gpt-4o-mini",
        messages=user(PROMPT),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ECHO
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 5
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_openai_tool_call(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    message = (
        client.chat.completions.create(model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS)
        .choices[0]
        .message
    )

    assert message.tool_calls is not None
    function = message.tool_calls[0].function  # type: ignore[union-attr]
    assert function.name == "search_orders"
    assert json.loads(function.arguments) == {"order_id": "A123"}


def test_openai_tool_call_streamed(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    stream = client.chat.completions.create(
        model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS, stream=True
    )
    deltas = [c.choices[0].delta for c in stream]

    calls = [call for d in deltas for call in d.tool_calls or []]
    assert calls[0].function is not None and calls[0].function.name == "search_orders"
    arguments = "".join(c.function.arguments or "" for c in calls if c.function)
    assert json.loads(arguments) == {"order_id": "A123"}


def test_tool_result_gets_a_text_answer(provider: ProviderSimulator) -> None:
    """An agent loop must end: after a tool result the model answers in text."""
    messages: Any = [
        *user(ORDER_PROMPT),
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search_orders", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    ]
    message = (
        openai_client(provider)
        .chat.completions.create(model="m", messages=messages, tools=OPENAI_TOOLS)
        .choices[0]
        .message
    )
    assert (message.content, message.tool_calls) == ("Echo: shipped", None)


@pytest.mark.anyio
async def test_openai_async(provider: ProviderSimulator) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=provider.url("/v1"))
    completion = await client.chat.completions.create(model="m", messages=user(PROMPT))
    stream = await client.chat.completions.create(model="m", messages=user(PROMPT), stream=True)
    pieces = [c.choices[0].delta.content or "" async for c in stream]
    await client.close()

    assert completion.choices[0].message.content == ECHO
    assert "".join(pieces) == ECHO


def test_openai_responses(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    response = client.responses.create(model="gpt-4o-mini", input=PROMPT)
    tools: Any = [{"type": "function", "name": "search_orders", "parameters": {}}]
    called = client.responses.create(model="gpt-4o-mini", input=ORDER_PROMPT, tools=tools)

    assert response.output_text == ECHO
    item = called.output[0]
    assert item.type == "function_call"
    assert (item.name, json.loads(item.arguments)) == ("search_orders", {"order_id": "A123"})


def test_openai_audio_speech_is_binary(provider: ProviderSimulator) -> None:
    audio = openai_client(provider).audio.speech.create(model="tts-1", voice="alloy", input="hi")

    assert audio.response.headers["content-type"] == "audio/mpeg"
    assert audio.content.startswith(bytes(range(256)))
    with pytest.raises(UnicodeDecodeError):
        audio.content.decode()
    other = openai_client(provider).audio.speech.create(model="tts-1", voice="alloy", input="yo")
    assert other.content != audio.content


# -- Groq (OpenAI wire format under /openai/v1) ---------------------------------------


def test_groq(provider: ProviderSimulator) -> None:
    client = groq.Groq(api_key="gsk_test", base_url=provider.base_url)
    completion = client.chat.completions.create(model="llama3-8b", messages=user(PROMPT))
    stream = client.chat.completions.create(model="llama3-8b", messages=user(PROMPT), stream=True)
    pieces = [c.choices[0].delta.content or "" for c in stream]

    assert completion.choices[0].message.content == ECHO
    assert "".join(pieces) == ECHO
    assert provider.last_request.path == "/openai/v1/chat/completions"


@pytest.mark.anyio
async def test_groq_async_tool_call(provider: ProviderSimulator) -> None:
    client = groq.AsyncGroq(api_key="gsk_test", base_url=provider.base_url)
    completion = await client.chat.completions.create(
        model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS
    )
    await client.close()

    calls = completion.choices[0].message.tool_calls or []
    assert calls[0].function.name == "search_orders"


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic(provider: ProviderSimulator) -> None:
    message = anthropic_client(provider).messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=user(PROMPT)
    )

    assert message.content[0].type == "text" and message.content[0].text == ECHO
    assert message.stop_reason == "end_turn"
    # anthropic 2.x sends the API key as a bearer token, not as x-api-key.
    assert provider.last_request.headers["authorization"] == "Bearer sk-ant-test"


def test_anthropic_stream(provider: ProviderSimulator) -> None:
    client = anthropic_client(provider)
    with client.messages.stream(model="m", max_tokens=100, messages=user(PROMPT)) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()

    assert "".join(pieces) == ECHO and len(pieces) == 5
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 5


@pytest.mark.parametrize("streamed", [False, True])
def test_anthropic_tool_use(provider: ProviderSimulator, streamed: bool) -> None:
    client = anthropic_client(provider)
    kwargs: Any = {"model": "m", "max_tokens": 100, "messages": user(ORDER_PROMPT)}
    if streamed:
        with client.messages.stream(**kwargs, tools=ANTHROPIC_TOOLS) as stream:
            message: Any = stream.get_final_message()
    else:
        message = client.messages.create(**kwargs, tools=ANTHROPIC_TOOLS)

    block = message.content[0]
    assert block.type == "tool_use" and message.stop_reason == "tool_use"
    assert (block.name, block.input) == ("search_orders", {"order_id": "A123"})


@pytest.mark.anyio
async def test_anthropic_async(provider: ProviderSimulator) -> None:
    client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=provider.base_url)
    message = await client.messages.create(model="m", max_tokens=10, messages=user(PROMPT))
    async with client.messages.stream(model="m", max_tokens=10, messages=user(PROMPT)) as s:
        pieces = [text async for text in s.text_stream]
    await client.close()

    assert message.content[0].type == "text" and message.content[0].text == ECHO
    assert "".join(pieces) == ECHO


# -- Ollama -------------------------------------------------------------------------------


def test_ollama(provider: ProviderSimulator) -> None:
    client = ollama.Client(host=provider.base_url)
    response = client.chat(model="llama3.2:3b", messages=user(PROMPT))
    pieces = [part.message.content for part in client.chat("llama3.2", user(PROMPT), stream=True)]

    assert response.message.content == ECHO
    assert response.done and response.done_reason == "stop" and response.eval_count == 5
    assert "".join(p or "" for p in pieces) == ECHO and len(pieces) == 6  # 5 pieces + done
    assert {m.model for m in client.list().models} == {"llama3.2:3b", "llama3.2:latest"}


def test_ollama_streams_unless_told_not_to(provider: ProviderSimulator, http: httpx.Client) -> None:
    """Real Ollama streams NDJSON when the request has no ``stream`` field."""
    response = http.post(
        provider.url("/api/chat"), json={"model": "llama3.2", "messages": user(PROMPT)}
    )
    lines = [json.loads(line) for line in response.text.splitlines()]

    assert response.headers["content-type"] == "application/x-ndjson"
    assert [line["done"] for line in lines] == [False] * 5 + [True]


def test_ollama_tool_call_and_missing_model(provider: ProviderSimulator) -> None:
    client = ollama.Client(host=provider.base_url)
    tools: Any = OPENAI_TOOLS
    response = client.chat(model="llama3.2", messages=user(ORDER_PROMPT), tools=tools)

    calls = response.message.tool_calls or []
    assert (calls[0].function.name, calls[0].function.arguments) == (
        "search_orders",
        {"order_id": "A123"},
    )
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="mistral", messages=user(PROMPT))
    assert info.value.status_code == 404
    assert info.value.error == 'model "mistral" not found, try pulling it first'


@pytest.mark.anyio
async def test_ollama_async(provider: ProviderSimulator) -> None:
    client = ollama.AsyncClient(host=provider.base_url)
    response = await client.chat(model="llama3.2:3b", messages=user(PROMPT))
    stream = await client.chat(model="llama3.2:3b", messages=user(PROMPT), stream=True)
    pieces = [part.message.content or "" async for part in stream]

    assert response.message.content == ECHO
    assert "".join(pieces) == ECHO


def test_judge_hook_answers_ollama_and_openai_chat(provider: ProviderSimulator) -> None:
    verdicts = {1: "PASS", 2: "FAIL"}
    provider.judge_reply = lambda request: json.dumps(
        {"verdict": verdicts[request["options"]["seed"]], "reason": "seeded"}
    )
    client = ollama.Client(host=provider.base_url)
    replies = [
        client.chat("llama3.2:3b", user("grade"), options={"seed": seed}).message.content
        for seed in (1, 2)
    ]

    assert [json.loads(r or "")["verdict"] for r in replies] == ["PASS", "FAIL"]
    provider.judge_reply = lambda request: "PASS\nlooks fine"
    completion = openai_client(provider).chat.completions.create(model="m", messages=user("x"))
    assert completion.choices[0].message.content == "PASS\nlooks fine"
    # The judge hook is for judge endpoints only; other providers still echo.
    message = anthropic_client(provider).messages.create(
        model="m", max_tokens=5, messages=user(PROMPT)
    )
    assert message.content[0].type == "text" and message.content[0].text == ECHO


# -- Gemini -------------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", [None, "v1beta"])
def test_gemini(provider: ProviderSimulator, api_version: str | None) -> None:
    client = gemini_client(provider, api_version)
    response = client.models.generate_content(model="gemini-2.5-flash", contents=PROMPT)
    stream = client.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT)
    pieces = [chunk.text or "" for chunk in stream]

    assert response.text == ECHO
    assert response.usage_metadata is not None
    assert response.usage_metadata.candidates_token_count == 5
    assert "".join(pieces) == ECHO and len(pieces) == 5
    sent = provider.last_request
    assert sent.path == f"/{api_version or 'v1'}/models/gemini-2.5-flash:streamGenerateContent"
    assert sent.query == {"alt": "sse"}
    assert sent.headers["x-goog-api-key"] == "AIza-test-key"


def test_gemini_function_call(provider: ProviderSimulator) -> None:
    declaration = genai_types.FunctionDeclaration(name="search_orders", description="Find")
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=[declaration])]
    )
    client = gemini_client(provider)  # keep a reference: a collected Client closes its pool
    response = client.models.generate_content(
        model="gemini-2.5-flash", contents=ORDER_PROMPT, config=config
    )

    calls = response.function_calls or []
    assert (calls[0].name, calls[0].args) == ("search_orders", {"order_id": "A123"})


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # google-genai async uses aiohttp
@pytest.mark.anyio
async def test_gemini_async(provider: ProviderSimulator) -> None:
    client = gemini_client(provider)
    response = await client.aio.models.generate_content(model="gemini-2.5-flash", contents=PROMPT)
    stream = await client.aio.models.generate_content_stream(
        model="gemini-2.5-flash", contents=PROMPT
    )
    pieces = [chunk.text or "" async for chunk in stream]
    await client.aio.aclose()

    assert response.text == ECHO
    assert "".join(pieces) == ECHO


def test_gemini_key_in_query(provider: ProviderSimulator, http: httpx.Client) -> None:
    provider.echo_auth = True
    url = provider.url("/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-query")
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    reply = http.post(url, json=body).json()

    assert reply["candidates"][0]["content"]["parts"][0]["text"] == "Echo: hi (auth: AIza-query)"
    assert provider.last_request.query == {"key": "AIza-query"}


# -- behaviour switches -------------------------------------------------------------------


def test_replies_depend_on_the_prompt_and_ids_on_the_order(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    first, second, other = (
        client.chat.completions.create(model="m", messages=user(text))
        for text in (PROMPT, PROMPT, "Hi")
    )

    assert first.choices[0].message.content == second.choices[0].message.content == ECHO
    assert other.choices[0].message.content == "Echo: Hi"
    assert [first.id, second.id] == ["chatcmpl-sim0001", "chatcmpl-sim0002"]
    assert provider.served == 3


def test_reply_override_and_echo_auth(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    provider.reply = "Sorry about that."
    assert client.chat.completions.create(model="m", messages=user(PROMPT)).choices[
        0
    ].message.content == ("Sorry about that.")
    provider.reply = None
    provider.echo_auth = True
    content = client.chat.completions.create(model="m", messages=user(PROMPT)).choices[0]
    assert content.message.content == f"{ECHO} (auth: Bearer sk-test-key)"


def test_tool_call_switch(provider: ProviderSimulator) -> None:
    client = openai_client(provider)
    provider.tool_call = True
    provider.tool_args = {"order_id": "Z9", "verbose": True}
    forced = client.chat.completions.create(model="m", messages=user("hi"), tools=OPENAI_TOOLS)
    provider.tool_call = False
    never = client.chat.completions.create(
        model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS
    )

    calls = forced.choices[0].message.tool_calls or []
    assert json.loads(calls[0].function.arguments) == {"order_id": "Z9", "verbose": True}  # type: ignore[union-attr]
    assert never.choices[0].message.content == f"Echo: {ORDER_PROMPT}"


def test_headers_gzip_and_delay(provider: ProviderSimulator, http: httpx.Client) -> None:
    provider.gzip = True
    provider.delay = 0.1
    provider.extra_response_headers = {"set-cookie": "session=abc", "x-custom": "1"}
    started = time.monotonic()
    raw = http.post(provider.url("/v1/chat/completions"), json={"messages": user(PROMPT)})

    assert time.monotonic() - started >= 0.1
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.headers["set-cookie"] == "session=abc"
    assert raw.headers["x-request-id"] == "req_sim0001"
    assert raw.headers["openai-processing-ms"] and raw.headers["x-ratelimit-limit-requests"]
    assert raw.json()["choices"][0]["message"]["content"] == ECHO
    provider.delay = 0
    completion = openai_client(provider).chat.completions.create(model="m", messages=user("Hi"))
    assert completion.choices[0].message.content == "Echo: Hi"


def test_plain_and_echo_json(provider: ProviderSimulator, http: httpx.Client) -> None:
    plain = http.get(provider.url("/plain"))
    echoed = http.get(provider.url("/echo-json"), params={"a": "1", "b": "two"})

    assert plain.headers["content-type"] == "text/plain"
    assert plain.text == "plain text from the simulator\n"
    assert echoed.json() == {"a": "1", "b": "two"}
    assert http.get(provider.url("/nowhere")).status_code == 404


def test_streams_arrive_event_by_event(provider: ProviderSimulator, http: httpx.Client) -> None:
    provider.stream_delay = 0.02
    body = {"messages": user(PROMPT), "stream": True}
    arrivals = []
    with http.stream("POST", provider.url("/v1/chat/completions"), json=body) as response:
        assert response.headers["transfer-encoding"] == "chunked"
        for _ in response.iter_raw():
            arrivals.append(time.monotonic())

    assert len(arrivals) == 8  # role, 5 pieces, finish, [DONE]
    assert arrivals[-1] - arrivals[0] >= 0.1


# -- faults ---------------------------------------------------------------------------------


def test_fail_next_raises_typed_sdk_errors(provider: ProviderSimulator) -> None:
    provider.fail_next(429)
    provider.fail_next(500)
    with pytest.raises(openai.RateLimitError) as limited:
        openai_client(provider, max_retries=0).chat.completions.create(
            model="m", messages=user("x")
        )
    with pytest.raises(anthropic.InternalServerError):
        anthropic_client(provider, max_retries=0).messages.create(
            model="m", max_tokens=5, messages=user("x")
        )

    assert limited.value.response.headers["retry-after"] == "0"
    assert limited.value.body == {
        "message": "simulated 429 error",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    provider.fail_next(503, body={"error": "busy"})
    with pytest.raises(ollama.ResponseError) as busy:
        ollama.Client(host=provider.base_url).chat("llama3.2", user("x"))
    assert (busy.value.status_code, busy.value.error) == (503, "busy")


def test_sdk_retries_past_transient_failures_at_once(provider: ProviderSimulator) -> None:
    provider.fail_next(429, count=2)
    started = time.monotonic()
    completion = openai_client(provider, max_retries=2).chat.completions.create(
        model="m", messages=user(PROMPT)
    )

    assert completion.choices[0].message.content == ECHO
    assert provider.served == 3
    assert time.monotonic() - started < 0.5


def test_break_stream_after(provider: ProviderSimulator) -> None:
    provider.break_stream_after(3)
    stream = openai_client(provider).chat.completions.create(
        model="m", messages=user(PROMPT), stream=True
    )
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            received.append(chunk)

    assert len(received) == 3
    # Only the next stream breaks.
    again = openai_client(provider).chat.completions.create(
        model="m", messages=user(PROMPT), stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in again) == ECHO


def test_break_ndjson_stream(provider: ProviderSimulator) -> None:
    provider.break_stream_after(2)
    parts = ollama.Client(host=provider.base_url).chat("llama3.2", user(PROMPT), stream=True)
    with pytest.raises(httpx.RemoteProtocolError):
        list(parts)


# -- lifecycle ------------------------------------------------------------------------------


def test_stop_refuses_new_and_kept_alive_connections() -> None:
    simulator = ProviderSimulator().start()
    with httpx.Client() as client:
        assert client.get(simulator.url("/plain")).status_code == 200  # connection now pooled
        started = time.monotonic()
        simulator.stop()
        assert time.monotonic() - started < 0.5
        with pytest.raises(httpx.TransportError):
            client.get(simulator.url("/plain"))
    with pytest.raises(httpx.ConnectError):
        httpx.get(simulator.url("/plain"))
    with pytest.raises(openai.APIConnectionError):
        openai_client(simulator, max_retries=0).chat.completions.create(model="m", messages=[])

    simulator.start()  # comes back on the same port
    try:
        assert httpx.get(simulator.url("/plain")).status_code == 200
    finally:
        simulator.stop()


def test_stop_cuts_a_stream_in_flight() -> None:
    with ProviderSimulator() as simulator:
        simulator.stream_delay = 0.1
        body = {"messages": user(PROMPT), "stream": True}
        with httpx.stream("POST", simulator.url("/v1/chat/completions"), json=body) as response:
            events = response.iter_raw()
            next(events)
            simulator.stop()
            with pytest.raises(httpx.RemoteProtocolError):
                list(events)


def test_reset_forgets_requests_and_faults(provider: ProviderSimulator, http: httpx.Client) -> None:
    provider.fail_next(500, count=5)
    http.get(provider.url("/plain"))
    provider.reset()

    assert provider.served == 0 and provider.requests == []
    assert http.get(provider.url("/plain")).status_code == 200
    assert provider.requests[0].path == "/plain"
    assert provider.requests[0].json is None and provider.requests[0].body == b""
