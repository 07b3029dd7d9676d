"""The simulator speaks each provider's wire format well enough for the REAL SDKs.

No ghostrun here: if these pass, a failure elsewhere in the suite is ghostrun's,
not the fake provider's. Every client is closed, so the module stays clean
under ``-W error`` (an SDK client collected with pooled sockets warns).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import botocore.config
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
ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
OPENAI_TOOLS: Any = [
    {"type": "function", "function": {"name": "search_orders", "parameters": ORDER_SCHEMA}}
]
ANTHROPIC_TOOLS: Any = [{"name": "search_orders", "input_schema": ORDER_SCHEMA}]


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def openai_client(provider: ProviderSimulator, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test-key", base_url=provider.url("/v1"), max_retries=max_retries
    )


def gemini_client(provider: ProviderSimulator, api_version: str | None = None) -> genai.Client:
    options = genai_types.HttpOptions(base_url=provider.base_url, api_version=api_version)
    return genai.Client(api_key="AIza-test-key", http_options=options)


@pytest.fixture
def oai(provider: ProviderSimulator) -> Iterator[openai.OpenAI]:
    with openai_client(provider) as client:
        yield client


@pytest.fixture
def claude(provider: ProviderSimulator) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        api_key="sk-ant-test", base_url=provider.base_url, max_retries=0
    ) as client:
        yield client


@pytest.fixture
def llama(provider: ProviderSimulator) -> Iterator[ollama.Client]:
    with ollama.Client(host=provider.base_url) as client:
        yield client


@pytest.fixture
def gemini(provider: ProviderSimulator) -> Iterator[genai.Client]:
    with gemini_client(provider) as client:  # a collected Client closes its pool: keep it
        yield client


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """One raw client for the module: building one costs ~30 ms of TLS setup."""
    with httpx.Client() as client:
        yield client


# -- OpenAI chat completions ------------------------------------------------------------


def test_openai_chat(provider: ProviderSimulator, oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=user(PROMPT))

    assert completion.choices[0].message.content == ECHO
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens == 5
    assert completion._request_id == "req_sim0001"
    sent = provider.last_request
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.json["messages"] == user(PROMPT)


def test_openai_chat_stream_with_usage(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
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


def test_openai_tool_call(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(
        model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS
    )

    call: Any = (completion.choices[0].message.tool_calls or [])[0]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "search_orders"
    assert json.loads(call.function.arguments) == {"order_id": "A123"}


def test_openai_tool_call_streamed(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS, stream=True
    )
    calls = [call for chunk in stream for call in chunk.choices[0].delta.tool_calls or []]

    assert calls[0].function is not None and calls[0].function.name == "search_orders"
    arguments = "".join(c.function.arguments or "" for c in calls if c.function)
    assert json.loads(arguments) == {"order_id": "A123"}


def test_tool_result_gets_a_text_answer(oai: openai.OpenAI) -> None:
    """An agent loop must end: after a tool result the model answers in text."""
    call = {"id": "c1", "type": "function", "function": {"name": "search_orders", "arguments": ""}}
    messages: Any = [
        *user(ORDER_PROMPT),
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    ]
    completion = oai.chat.completions.create(model="m", messages=messages, tools=OPENAI_TOOLS)

    message = completion.choices[0].message
    assert (message.content, message.tool_calls) == ("Echo: shipped", None)


@pytest.mark.anyio
async def test_openai_async(provider: ProviderSimulator) -> None:
    async with openai.AsyncOpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        completion = await client.chat.completions.create(model="m", messages=user(PROMPT))
        stream = await client.chat.completions.create(model="m", messages=user(PROMPT), stream=True)
        pieces = [c.choices[0].delta.content or "" async for c in stream]

    assert completion.choices[0].message.content == ECHO
    assert "".join(pieces) == ECHO


def test_openai_responses(oai: openai.OpenAI) -> None:
    response = oai.responses.create(model="gpt-4o-mini", input=PROMPT)
    tools: Any = [{"type": "function", "name": "search_orders", "parameters": ORDER_SCHEMA}]
    called = oai.responses.create(model="gpt-4o-mini", input=ORDER_PROMPT, tools=tools)

    assert response.output_text == ECHO
    item = called.output[0]
    assert item.type == "function_call"
    assert (item.name, json.loads(item.arguments)) == ("search_orders", {"order_id": "A123"})


def test_openai_audio_speech_is_binary(oai: openai.OpenAI) -> None:
    audio = oai.audio.speech.create(model="tts-1", voice="alloy", input="hi")
    other = oai.audio.speech.create(model="tts-1", voice="alloy", input="yo")

    assert audio.response.headers["content-type"] == "audio/mpeg"
    assert audio.content.startswith(bytes(range(256)))
    with pytest.raises(UnicodeDecodeError):
        audio.content.decode()
    assert other.content != audio.content


# -- Groq (the OpenAI wire format under /openai/v1) ---------------------------------------


def test_groq(provider: ProviderSimulator) -> None:
    with groq.Groq(api_key="gsk_test", base_url=provider.base_url) as client:
        completion = client.chat.completions.create(model="llama3-8b", messages=user(PROMPT))
        stream = client.chat.completions.create(
            model="llama3-8b", messages=user(PROMPT), stream=True
        )
        pieces = [c.choices[0].delta.content or "" for c in stream]

    assert completion.choices[0].message.content == ECHO
    assert "".join(pieces) == ECHO
    assert provider.last_request.path == "/openai/v1/chat/completions"


@pytest.mark.anyio
async def test_groq_async_tool_call(provider: ProviderSimulator) -> None:
    async with groq.AsyncGroq(api_key="gsk_test", base_url=provider.base_url) as client:
        completion = await client.chat.completions.create(
            model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS
        )

    calls = completion.choices[0].message.tool_calls or []
    assert calls[0].function.name == "search_orders"


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic(provider: ProviderSimulator, claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=user(PROMPT)
    )

    assert message.content[0].type == "text" and message.content[0].text == ECHO
    assert message.stop_reason == "end_turn"
    # anthropic 2.x sends the API key as a bearer token, not as x-api-key.
    assert provider.last_request.headers["authorization"] == "Bearer sk-ant-test"


def test_anthropic_stream(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(model="m", max_tokens=100, messages=user(PROMPT)) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()

    assert "".join(pieces) == ECHO and len(pieces) == 5
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 5


@pytest.mark.parametrize("streamed", [False, True])
def test_anthropic_tool_use(claude: anthropic.Anthropic, streamed: bool) -> None:
    kwargs: Any = {"model": "m", "max_tokens": 100, "messages": user(ORDER_PROMPT)}
    if streamed:
        with claude.messages.stream(**kwargs, tools=ANTHROPIC_TOOLS) as stream:
            message: Any = stream.get_final_message()
    else:
        message = claude.messages.create(**kwargs, tools=ANTHROPIC_TOOLS)

    block = message.content[0]
    assert block.type == "tool_use" and message.stop_reason == "tool_use"
    assert (block.name, block.input) == ("search_orders", {"order_id": "A123"})


@pytest.mark.anyio
async def test_anthropic_async(provider: ProviderSimulator) -> None:
    kwargs: Any = {"model": "m", "max_tokens": 10, "messages": user(PROMPT)}
    async with anthropic.AsyncAnthropic(api_key="k", base_url=provider.base_url) as client:
        message = await client.messages.create(**kwargs)
        async with client.messages.stream(**kwargs) as stream:
            pieces = [text async for text in stream.text_stream]

    assert message.content[0].type == "text" and message.content[0].text == ECHO
    assert "".join(pieces) == ECHO


# -- Ollama -------------------------------------------------------------------------------


def test_ollama(llama: ollama.Client) -> None:
    response = llama.chat(model="llama3.2:3b", messages=user(PROMPT))
    parts = list(llama.chat(model="llama3.2", messages=user(PROMPT), stream=True))

    assert response.message.content == ECHO
    assert response.done and response.done_reason == "stop" and response.eval_count == 5
    assert "".join(p.message.content or "" for p in parts) == ECHO
    assert [p.done for p in parts] == [False] * 5 + [True]
    assert {m.model for m in llama.list().models} == {"llama3.2:3b", "llama3.2:latest"}


def test_ollama_streams_unless_told_not_to(provider: ProviderSimulator, http: httpx.Client) -> None:
    """Real Ollama streams NDJSON when the request has no ``stream`` field."""
    body = {"model": "llama3.2", "messages": user(PROMPT)}
    response = http.post(provider.url("/api/chat"), json=body)
    lines = [json.loads(line) for line in response.text.splitlines()]

    assert response.headers["content-type"] == "application/x-ndjson"
    assert [line["done"] for line in lines] == [False] * 5 + [True]


def test_ollama_tool_call_and_missing_model(llama: ollama.Client) -> None:
    response = llama.chat(model="llama3.2", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS)

    function = (response.message.tool_calls or [])[0].function
    assert (function.name, function.arguments) == ("search_orders", {"order_id": "A123"})
    with pytest.raises(ollama.ResponseError) as info:
        llama.chat(model="mistral", messages=user(PROMPT))
    assert info.value.status_code == 404
    assert info.value.error == 'model "mistral" not found, try pulling it first'


@pytest.mark.anyio
async def test_ollama_async(provider: ProviderSimulator) -> None:
    async with ollama.AsyncClient(host=provider.base_url) as client:
        response = await client.chat(model="llama3.2:3b", messages=user(PROMPT))
        stream = await client.chat(model="llama3.2:3b", messages=user(PROMPT), stream=True)
        pieces = [part.message.content or "" async for part in stream]

    assert response.message.content == ECHO
    assert "".join(pieces) == ECHO


def test_judge_hook(
    provider: ProviderSimulator,
    llama: ollama.Client,
    oai: openai.OpenAI,
    claude: anthropic.Anthropic,
) -> None:
    verdicts = {1: "PASS", 2: "FAIL"}
    provider.judge_reply = lambda request: json.dumps(
        {"verdict": verdicts[request["options"]["seed"]], "reason": "seeded"}
    )
    replies = [
        llama.chat("llama3.2:3b", user("grade"), options={"seed": seed}).message.content or ""
        for seed in (1, 2)
    ]
    assert [json.loads(reply)["verdict"] for reply in replies] == ["PASS", "FAIL"]

    provider.judge_reply = lambda request: "PASS\nlooks fine"
    completion = oai.chat.completions.create(model="m", messages=user("x"))
    assert completion.choices[0].message.content == "PASS\nlooks fine"
    # The hook serves judge endpoints only; other providers still echo.
    message = claude.messages.create(model="m", max_tokens=5, messages=user(PROMPT))
    assert message.content[0].type == "text" and message.content[0].text == ECHO


# -- Gemini -------------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", [None, "v1beta"])
def test_gemini(provider: ProviderSimulator, api_version: str | None) -> None:
    model = "gemini-2.5-flash"
    with gemini_client(provider, api_version) as client:
        response = client.models.generate_content(model=model, contents=PROMPT)
        stream = client.models.generate_content_stream(model=model, contents=PROMPT)
        pieces = [chunk.text or "" for chunk in stream]

    assert response.text == ECHO
    assert response.usage_metadata is not None
    assert response.usage_metadata.candidates_token_count == 5
    assert "".join(pieces) == ECHO and len(pieces) == 5
    sent = provider.last_request
    assert sent.path == f"/{api_version or 'v1'}/models/{model}:streamGenerateContent"
    assert sent.query == {"alt": "sse"}
    assert sent.headers["x-goog-api-key"] == "AIza-test-key"


def test_gemini_function_call(gemini: genai.Client) -> None:
    declaration = genai_types.FunctionDeclaration(name="search_orders", description="Find")
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=[declaration])]
    )
    response = gemini.models.generate_content(
        model="gemini-2.5-flash", contents=ORDER_PROMPT, config=config
    )

    calls = response.function_calls or []
    assert (calls[0].name, calls[0].args) == ("search_orders", {"order_id": "A123"})


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # google-genai async uses aiohttp
@pytest.mark.anyio
async def test_gemini_async(provider: ProviderSimulator) -> None:
    model = "gemini-2.5-flash"
    async with gemini_client(provider).aio as client:
        response = await client.models.generate_content(model=model, contents=PROMPT)
        stream = await client.models.generate_content_stream(model=model, contents=PROMPT)
        pieces = [chunk.text or "" async for chunk in stream]

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


def test_replies_depend_on_the_prompt_and_ids_on_the_order(
    provider: ProviderSimulator, oai: openai.OpenAI
) -> None:
    first, second, other = (
        oai.chat.completions.create(model="m", messages=user(text))
        for text in (PROMPT, PROMPT, "Hi")
    )

    assert first.choices[0].message.content == second.choices[0].message.content == ECHO
    assert other.choices[0].message.content == "Echo: Hi"
    assert [first.id, second.id] == ["chatcmpl-sim0001", "chatcmpl-sim0002"]
    assert provider.served == 3


def test_reply_override_and_echo_auth(provider: ProviderSimulator, oai: openai.OpenAI) -> None:
    def reply() -> str | None:
        completion = oai.chat.completions.create(model="m", messages=user(PROMPT))
        return completion.choices[0].message.content

    provider.reply = "Sorry about that."
    assert reply() == "Sorry about that."
    provider.reply = lambda request: request["model"].upper()
    assert reply() == "M"
    provider.reply = None
    provider.echo_auth = True
    assert reply() == f"{ECHO} (auth: Bearer sk-test-key)"


def test_tool_call_switch(provider: ProviderSimulator, oai: openai.OpenAI) -> None:
    provider.tool_call = True
    provider.tool_args = {"order_id": "Z9", "verbose": True}
    forced = oai.chat.completions.create(model="m", messages=user("hi"), tools=OPENAI_TOOLS)
    provider.tool_call = False
    never = oai.chat.completions.create(model="m", messages=user(ORDER_PROMPT), tools=OPENAI_TOOLS)

    call: Any = (forced.choices[0].message.tool_calls or [])[0]
    assert json.loads(call.function.arguments) == {"order_id": "Z9", "verbose": True}
    assert never.choices[0].message.content == f"Echo: {ORDER_PROMPT}"


def test_headers_gzip_and_delay(
    provider: ProviderSimulator, http: httpx.Client, oai: openai.OpenAI
) -> None:
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
    completion = oai.chat.completions.create(model="m", messages=user("Hi"))
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


# -- Bedrock (bedrock-runtime over botocore) ------------------------------------------------


@pytest.fixture
def bedrock(provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """boto3's bedrock-runtime client on the simulator, with no user AWS config in the way."""
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=provider.base_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=botocore.config.Config(retries={"total_max_attempts": 1}),
    )
    yield client
    client.close()


BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
BEDROCK_TOOLS = {
    "tools": [{"toolSpec": {"name": "search_orders", "inputSchema": {"json": ORDER_SCHEMA}}}]
}


def bedrock_user(text: str) -> Any:
    return [{"role": "user", "content": [{"text": text}]}]


def test_bedrock_converse(provider: ProviderSimulator, bedrock: Any) -> None:
    reply = bedrock.converse(modelId=BEDROCK_MODEL, messages=bedrock_user(PROMPT))
    assert reply["output"]["message"] == {"role": "assistant", "content": [{"text": ECHO}]}
    assert reply["stopReason"] == "end_turn" and reply["usage"]["totalTokens"] > 0
    assert provider.last_request.path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    assert provider.last_request.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")


def test_bedrock_converse_stream_is_an_aws_event_stream(
    provider: ProviderSimulator, bedrock: Any
) -> None:
    reply = bedrock.converse_stream(modelId=BEDROCK_MODEL, messages=bedrock_user(PROMPT))
    events = list(reply["stream"])  # botocore checks every frame's CRCs
    assert [next(iter(e)) for e in events] == [
        "messageStart",
        *["contentBlockDelta"] * 5,
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events[1:6]) == ECHO
    assert events[-1]["metadata"]["usage"]["totalTokens"] > 0


@pytest.mark.parametrize("streamed", [False, True])
def test_bedrock_tool_use(bedrock: Any, streamed: bool) -> None:
    messages, tools = bedrock_user(ORDER_PROMPT), BEDROCK_TOOLS
    if not streamed:
        reply = bedrock.converse(modelId=BEDROCK_MODEL, messages=messages, toolConfig=tools)
        (block,) = reply["output"]["message"]["content"]
        assert block["toolUse"]["name"] == "search_orders"
        assert block["toolUse"]["input"] == {"order_id": "A123"}
        assert reply["stopReason"] == "tool_use"
        return
    stream = bedrock.converse_stream(modelId=BEDROCK_MODEL, messages=messages, toolConfig=tools)
    events = list(stream["stream"])
    start = next(e["contentBlockStart"]["start"] for e in events if "contentBlockStart" in e)
    pieces = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events[2:-3]]
    assert start["toolUse"]["name"] == "search_orders"
    assert json.loads("".join(pieces)) == {"order_id": "A123"}


def test_bedrock_tool_result_gets_a_text_answer(bedrock: Any) -> None:
    result = {"toolResult": {"toolUseId": "t1", "content": [{"text": "shipped"}]}}
    messages = [
        *bedrock_user(ORDER_PROMPT),
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "search_orders", "input": {}}}],
        },
        {"role": "user", "content": [result]},
    ]
    reply = bedrock.converse(modelId=BEDROCK_MODEL, messages=messages, toolConfig=BEDROCK_TOOLS)
    assert reply["output"]["message"]["content"] == [{"text": "Echo: shipped"}]


def test_bedrock_invoke_model_speaks_anthropic(bedrock: Any) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": user(PROMPT)}
    reply = bedrock.invoke_model(modelId=BEDROCK_MODEL, body=json.dumps(body))
    answer = json.loads(reply["body"].read())
    assert answer["content"] == [{"type": "text", "text": ECHO}]


def test_bedrock_invoke_model_with_response_stream_speaks_anthropic(bedrock: Any) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": user(PROMPT)}
    reply = bedrock.invoke_model_with_response_stream(modelId=BEDROCK_MODEL, body=json.dumps(body))
    events = [json.loads(e["chunk"]["bytes"]) for e in reply["body"]]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(deltas) == ECHO


def test_bedrock_errors_are_typed_botocore_errors(
    provider: ProviderSimulator, bedrock: Any
) -> None:
    provider.fail_next(429)
    with pytest.raises(bedrock.exceptions.ThrottlingException, match="simulated 429"):
        bedrock.converse(modelId=BEDROCK_MODEL, messages=bedrock_user(PROMPT))
    provider.fail_next(400)
    with pytest.raises(bedrock.exceptions.ValidationException):
        bedrock.converse_stream(modelId=BEDROCK_MODEL, messages=bedrock_user(PROMPT))


# -- faults ---------------------------------------------------------------------------------


def test_fail_next_raises_typed_sdk_errors(
    provider: ProviderSimulator,
    oai: openai.OpenAI,
    claude: anthropic.Anthropic,
    llama: ollama.Client,
) -> None:
    provider.fail_next(429)
    provider.fail_next(500)
    provider.fail_next(503, body={"error": "busy"})
    with pytest.raises(openai.RateLimitError) as limited:
        oai.chat.completions.create(model="m", messages=user("x"))
    with pytest.raises(anthropic.InternalServerError):
        claude.messages.create(model="m", max_tokens=5, messages=user("x"))
    with pytest.raises(ollama.ResponseError) as busy:
        llama.chat("llama3.2", user("x"))

    assert limited.value.response.headers["retry-after-ms"] == "1"
    assert limited.value.body == {
        "message": "simulated 429 error",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert (busy.value.status_code, busy.value.error) == (503, "busy")


def test_sdk_retries_past_transient_failures_at_once(provider: ProviderSimulator) -> None:
    provider.fail_next(429, count=2)
    started = time.monotonic()
    with openai_client(provider, max_retries=2) as client:
        completion = client.chat.completions.create(model="m", messages=user(PROMPT))

    assert completion.choices[0].message.content == ECHO
    assert provider.served == 3
    assert time.monotonic() - started < 0.5


def test_break_stream_after(provider: ProviderSimulator, oai: openai.OpenAI) -> None:
    provider.break_stream_after(3)
    stream = oai.chat.completions.create(model="m", messages=user(PROMPT), stream=True)
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            received.append(chunk)

    assert len(received) == 3
    # Only the next stream breaks.
    again = oai.chat.completions.create(model="m", messages=user(PROMPT), stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in again) == ECHO


def test_break_ndjson_stream(provider: ProviderSimulator, llama: ollama.Client) -> None:
    provider.break_stream_after(2)
    with pytest.raises(httpx.RemoteProtocolError):
        list(llama.chat("llama3.2", user(PROMPT), stream=True))


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
            client.get(simulator.url("/plain"))
    with openai_client(simulator) as sdk, pytest.raises(openai.APIConnectionError):
        sdk.chat.completions.create(model="m", messages=user(PROMPT))

    simulator.start()  # comes back on the same port
    try:
        assert httpx.get(simulator.url("/plain")).status_code == 200
    finally:
        simulator.stop()


def test_stop_cuts_a_stream_in_flight(http: httpx.Client) -> None:
    with ProviderSimulator() as simulator:
        simulator.stream_delay = 0.1
        body = {"messages": user(PROMPT), "stream": True}
        with http.stream("POST", simulator.url("/v1/chat/completions"), json=body) as response:
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
