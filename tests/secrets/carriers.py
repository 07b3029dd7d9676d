"""What the secrets tests share: the request they send, the calls that send it with a
credential, and how a stream is cut.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import openai
from hypothesis import strategies as st
from simulator import ProviderSimulator

from ghostrun._secrets._credentials import could_be_credential

PROMPT = "Summarise my account, please."
MESSAGES: Any = [{"role": "user", "content": PROMPT}]
GEMINI_PATH = "/v1beta/models/gemini-2.0-flash:generateContent"
GEMINI_BODY = {"contents": [{"parts": [{"text": PROMPT}], "role": "user"}]}
HOSTS = ("127.0.0.1",)


def openai_chat(provider: ProviderSimulator, key: str | None) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key or "unused", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=MESSAGES,
        extra_headers=None if key else {"Authorization": openai.omit},
    )
    return reply.choices[0].message.content or ""


def raw_chat(
    provider: ProviderSimulator,
    headers: dict[str, str],
    path: str = "/v1/chat/completions",
    params: dict[str, str] | None = None,
    auth: Any = None,
) -> str:
    with httpx.Client() as client:
        response = client.post(
            provider.url(path),
            params=params,
            headers=headers,
            auth=auth,
            json={"model": "gpt-4o-mini", "messages": MESSAGES},
        )
    return str(response.json()["choices"][0]["message"]["content"])


def anthropic_x_api_key(provider: ProviderSimulator, key: str | None) -> str:
    headers: Any = {"x-api-key": key} if key else {"Authorization": anthropic.omit}
    client = anthropic.Anthropic(base_url=provider.base_url, default_headers=headers, max_retries=0)
    message = client.messages.create(model="claude-opus-4-7", max_tokens=64, messages=MESSAGES)
    return "".join(block.text for block in message.content if block.type == "text")


def echo(leaks: list[str]) -> Callable[[Any], str]:
    """A reply repeating each bare secret, as a careless upstream (or model) might."""
    return lambda body: "I saw " + " and ".join(leaks)


ANY_SECRET = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="[]")
    | st.characters(min_codepoint=0xA1, max_codepoint=0x2FFF, categories=["L", "N", "S", "P"])
    | st.sampled_from(["😀", "€", "é", "ß", "\u00e9"]),
    min_size=12,
    max_size=40,
).filter(could_be_credential)


@dataclass(frozen=True)
class Cuts:
    """Where a stream is cut: TCP chunk boundaries, and delta events of the reply."""

    chunks: list[float]  # fractions of the stream's bytes
    deltas: list[float]  # fractions of the reply text

    def rechunk(self, events: list[bytes]) -> list[bytes]:
        data = b"".join(events)
        at = sorted({0, *(int(f * len(data)) for f in self.chunks), len(data)})
        return [data[a:b] for a, b in itertools.pairwise(at) if b > a]

    def pieces(self, text: str) -> list[str]:
        at = sorted({0, *(int(f * len(text)) for f in self.deltas), len(text)})
        return [text[a:b] for a, b in itertools.pairwise(at) if b > a]


FRACTIONS = st.lists(st.floats(min_value=0, max_value=1), max_size=6)


def run_log_text(log: Any) -> str:
    return json.dumps(list(log.documents().values()), ensure_ascii=False)
