"""The same conversation through each real SDK, sync, async and streamed.

Each function returns what the application would see (parsed text, chunk
lists, tool calls), so a test can compare a recorded run with its replay.
"""

from __future__ import annotations

from typing import Any

import anthropic
import groq
import ollama
import openai

KEY = "sk-" + "test-0123456789abcdefghijklmnop"  # fake, assembled at run time


def openai_client(base_url: str, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, **kwargs)


def openai_chat(base_url: str, prompt: str = "hello there", **kwargs: Any) -> str | None:
    client = openai_client(base_url, **kwargs)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content


def openai_stream(base_url: str, prompt: str = "stream please") -> list[str | None]:
    client = openai_client(base_url)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=True
    )
    return [chunk.choices[0].delta.content for chunk in stream if chunk.choices]


async def openai_async(base_url: str, prompt: str = "hello async") -> tuple[str | None, list[str]]:
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=KEY)
    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt + "!"}], stream=True
    )
    chunks = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    await client.close()
    return reply.choices[0].message.content, chunks


def anthropic_client(base_url: str, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key="sk-ant-" + KEY, **kwargs)


def anthropic_chat(base_url: str, prompt: str = "hello claude", **kwargs: Any) -> str:
    message = anthropic_client(base_url, **kwargs).messages.create(
        model="claude-opus-4-7", max_tokens=64, messages=[{"role": "user", "content": prompt}]
    )
    return "".join(block.text for block in message.content if block.type == "text")


def anthropic_stream(base_url: str, prompt: str = "stream claude") -> list[str]:
    with anthropic_client(base_url).messages.stream(
        model="claude-opus-4-7", max_tokens=64, messages=[{"role": "user", "content": prompt}]
    ) as stream:
        return list(stream.text_stream)


async def anthropic_async(base_url: str, prompt: str = "async claude") -> str:
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-" + KEY)
    message = await client.messages.create(
        model="claude-opus-4-7", max_tokens=64, messages=[{"role": "user", "content": prompt}]
    )
    await client.close()
    return "".join(block.text for block in message.content if block.type == "text")


def groq_chat(base_url: str, prompt: str = "hello groq", **kwargs: Any) -> str | None:
    client = groq.Groq(base_url=base_url, api_key="gsk_" + KEY, **kwargs)
    reply = client.chat.completions.create(
        model="llama-3.3-70b-versatile", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content


def ollama_chat(base_url: str, prompt: str = "hello llama") -> str | None:
    reply = ollama.Client(host=base_url).chat(
        model="llama3.2:3b", messages=[{"role": "user", "content": prompt}]
    )
    return reply.message.content


def ollama_stream(base_url: str, prompt: str = "stream llama") -> list[str | None]:
    parts = ollama.Client(host=base_url).chat(
        model="llama3.2:3b", messages=[{"role": "user", "content": prompt}], stream=True
    )
    return [part.message.content for part in parts]


async def ollama_async(base_url: str, prompt: str = "async llama") -> str | None:
    reply = await ollama.AsyncClient(host=base_url).chat(
        model="llama3.2:3b", messages=[{"role": "user", "content": prompt}]
    )
    return reply.message.content


SYNC_CALLS = {
    "openai": openai_chat,
    "openai-stream": openai_stream,
    "anthropic": anthropic_chat,
    "anthropic-stream": anthropic_stream,
    "groq": groq_chat,
    "ollama": ollama_chat,
    "ollama-stream": ollama_stream,
}
