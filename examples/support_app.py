"""Acme Outfitters' support backend: the application the example tests check.

Plain application code, written the way you would write it without ghostrun:
the default OpenAI client (it reads ``OPENAI_API_KEY``), chat completions,
one tool, one stream and one async call. Nothing here knows about tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI, OpenAI

MODEL = "gpt-4o-mini"

SUPPORT_STYLE = (
    "You are a support agent for Acme Outfitters, an online outdoor-gear shop. "
    "Be warm and brief: at most four sentences. Apologise when something went wrong. "
    "Never promise anything the customer did not ask for."
)

# The order database the agent's tool reads. A real app would query its own backend.
ORDERS: dict[str, dict[str, Any]] = {
    "A1234": {
        "order_id": "A1234",
        "item": "Trailblazer 2 tent",
        "status": "shipped",
        "carrier": "UPS",
        "tracking": "1Z999AA10123456784",
        "eta": "2026-03-14",
    },
    "B7781": {
        "order_id": "B7781",
        "item": "Summit 40L backpack",
        "status": "processing",
        "carrier": None,
        "tracking": None,
        "eta": "2026-03-18",
    },
}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order's status, carrier, tracking number and delivery date.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order number, e.g. A1234"}
                },
                "required": ["order_id"],
            },
        },
    }
]


def support_messages(message: str) -> list[dict[str, str]]:
    """The conversation every support reply starts from."""
    return [
        {"role": "system", "content": SUPPORT_STYLE},
        {"role": "user", "content": message},
    ]


def reply_to_customer(message: str) -> str:
    """Draft a support reply to one customer message."""
    response = OpenAI().chat.completions.create(
        model=MODEL,
        temperature=0,
        messages=support_messages(message),
    )
    return response.choices[0].message.content or ""


async def areply_to_customer(message: str) -> str:
    """The same reply from async code (a FastAPI handler, a queue worker...)."""
    async with AsyncOpenAI() as client:
        response = await client.chat.completions.create(
            model=MODEL,
            temperature=0,
            messages=support_messages(message),
        )
    return response.choices[0].message.content or ""


def stream_reply(message: str) -> Iterator[str]:
    """The reply as it is written, piece by piece, for a chat widget."""
    stream = OpenAI().chat.completions.create(
        model=MODEL,
        temperature=0,
        stream=True,
        messages=support_messages(message),
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            yield chunk.choices[0].delta.content


def answer_from_docs(question: str, documents: list[str]) -> str:
    """Answer a question from help-centre articles only (retrieval done by the caller)."""
    context = "\n\n".join(documents)
    response = OpenAI().chat.completions.create(
        model=MODEL,
        temperature=0,
        messages=[
            {
                "role": "system",
                "content": "Answer the customer's question using only the articles below. "
                "If they do not say, answer that you do not know.\n\nARTICLES:\n" + context,
            },
            {"role": "user", "content": question},
        ],
    )
    return response.choices[0].message.content or ""


def lookup_order(order_id: str) -> dict[str, Any]:
    """The tool: one order's record, or an error the model can read."""
    order = ORDERS.get(order_id.strip().upper())
    return order if order is not None else {"error": f"no order {order_id}"}


@dataclass
class AgentAnswer:
    """The agent's final text and the whole conversation, tool calls included."""

    text: str
    messages: list[Any] = field(default_factory=list)


def answer_order_question(question: str, max_turns: int = 4) -> AgentAnswer:
    """A small tool-using agent: the model may look orders up before it answers."""
    client = OpenAI()
    messages: list[Any] = [
        {"role": "system", "content": SUPPORT_STYLE},
        {"role": "user", "content": question},
    ]
    for _ in range(max_turns):
        response = client.chat.completions.create(
            model=MODEL, temperature=0, messages=messages, tools=TOOLS
        )
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return AgentAnswer(message.content or "", messages)
        for call in message.tool_calls:
            result = lookup_order(**json.loads(call.function.arguments))
            tool_message = {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            messages.append(tool_message)
    raise RuntimeError(f"no answer after {max_turns} turns")
