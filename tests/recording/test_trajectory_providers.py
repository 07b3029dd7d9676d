"""A step's tool calls and tokens, read from every provider's shape (DESIGN §3, §7).

Each SDK asks the loopback model about an order with one tool offered; the
model calls it. The trajectory written, and ``expect_trajectory``, must see
the call (name and arguments) and the tokens, whole or streamed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import boto3
import botocore.config
import ollama
import openai
import orjson
import pytest
from google import genai
from google.genai import types as gtypes
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory

PROMPT = "Where is order A123?"
TOOL = "lookup_order"
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
KEY = "sk-" + "test-providers-0123456789abcdef"


def openai_stream(url: str) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    tools = [{"type": "function", "function": {"name": TOOL, "parameters": SCHEMA}}]
    stream = client.chat.completions.create(
        model="gpt-sim",
        messages=[{"role": "user", "content": PROMPT}],
        tools=tools,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    list(stream)


def openai_responses(url: str) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    tools = [{"type": "function", "name": TOOL, "parameters": SCHEMA, "strict": False}]
    client.responses.create(model="gpt-sim", input=PROMPT, tools=tools)  # type: ignore[arg-type]


def _anthropic(url: str, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-" + KEY, max_retries=0)
    arguments: dict[str, Any] = {
        "model": "claude-opus-4-7",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": [{"name": TOOL, "input_schema": SCHEMA}],
    }
    if stream:
        with client.messages.stream(**arguments) as events:
            events.until_done()
    else:
        client.messages.create(**arguments)


def _gemini(url: str, stream: bool) -> None:
    options = gtypes.HttpOptions(base_url=url)
    declaration = gtypes.FunctionDeclaration(name=TOOL, parameters_json_schema=SCHEMA)
    config = gtypes.GenerateContentConfig(tools=[gtypes.Tool(function_declarations=[declaration])])
    with genai.Client(api_key="AIza-test", http_options=options) as client:
        if stream:
            list(
                client.models.generate_content_stream(
                    model="gemini-2.5-flash", contents=PROMPT, config=config
                )
            )
        else:
            client.models.generate_content(model="gemini-2.5-flash", contents=PROMPT, config=config)


def _ollama(url: str, stream: bool) -> None:
    tools = [{"type": "function", "function": {"name": TOOL, "parameters": SCHEMA}}]
    reply = ollama.Client(host=url).chat(
        "llama3.2", [{"role": "user", "content": PROMPT}], tools=tools, stream=stream
    )
    if stream:
        list(reply)  # type: ignore[arg-type]


def bedrock_converse(url: str) -> None:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIA" + "ABCDEFGHIJKLMNOP",
        aws_secret_access_key="secret" + "0123456789abcdefghijklmnopqrstuvwxyz",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )
    spec = {"name": TOOL, "inputSchema": {"json": SCHEMA}}
    client.converse(
        modelId="anthropic.claude-3-haiku",
        messages=[{"role": "user", "content": [{"text": PROMPT}]}],
        toolConfig={"tools": [{"toolSpec": spec}]},
    )


CALLS: dict[str, Callable[[str], None]] = {
    "openai-stream": openai_stream,
    "openai-responses": openai_responses,
    "anthropic": lambda url: _anthropic(url, False),
    "anthropic-stream": lambda url: _anthropic(url, True),
    "gemini": lambda url: _gemini(url, False),
    "gemini-stream": lambda url: _gemini(url, True),
    "ollama": lambda url: _ollama(url, False),
    "ollama-stream": lambda url: _ollama(url, True),
    "bedrock-converse": bedrock_converse,
}


@pytest.fixture(autouse=True)
def _fresh_tracker() -> Iterator[None]:
    saved = _trajectory.swap(_trajectory.Tracker())
    yield
    _trajectory.swap(saved)


@pytest.mark.parametrize("sdk", sorted(CALLS))
def test_every_provider_shape_gives_the_tool_call_and_the_tokens(
    provider: ProviderSimulator,
    cassette_dir: Path,
    sdk: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    provider.tool_call = True
    hosts = [provider.base_url]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts, name=sdk) as s:
        CALLS[sdk](provider.base_url)
    found = ghostrun.expect_trajectory(s).tool_order([TOOL]).at_most_steps(1)
    assert found.tool_calls == [{"name": TOOL, "arguments": {"order_id": "A123"}}]
    assert found.tokens["in"] > 0 and found.tokens["out"] > 0
    (path,) = (cassette_dir / "trajectories").glob("*.json")
    step, answer = orjson.loads(path.read_bytes())["steps"]
    assert answer == {"kind": "answer", "session": 0, "text": ""}  # it only called a tool
    assert step["tool_calls"] == found.tool_calls
    assert step["tokens"] == found.tokens
    assert step["model"]
