"""Three real agents that look up an order and refund it, for the trajectory tests.

Each runs against the loopback provider (`simulator.ProviderSimulator` with
``tool_plan = ["lookup_order", "refund"]``): the model calls ``lookup_order``,
then ``refund``, then answers in text, so a run is three model calls. The
knobs are the changes a developer makes to an agent: stop after fewer steps,
or have a tool return something else.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import openai

KEY = "sk-" + "test-trajectory-0123456789abcdef"  # fake, assembled at run time
QUESTION = "Where is my refund for order A123?"
PLAN = ["lookup_order", "refund"]

ToolResults = Callable[[str, dict[str, Any]], str]


def default_results(name: str, arguments: dict[str, Any]) -> str:
    if name == "lookup_order":
        return f"order {arguments.get('order_id')}: returned on Monday, paid 40 EUR"
    return "refund issued: 40 EUR"


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} by its id",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    for name in PLAN
]


SYSTEM = "You are a support agent. Use the tools."


def tool_loop(
    base_url: str,
    *,
    max_steps: int = 5,
    results: ToolResults = default_results,
    system: str = SYSTEM,
) -> str | None:
    """A hand-written openai tool loop: call the model, run its tools, until it answers."""
    client = openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(max_steps):
        reply = client.chat.completions.create(model="gpt-sim", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
            output = results(call.function.name, arguments)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return None


def agents_runner(
    base_url: str,
    *,
    max_steps: int = 5,
    results: ToolResults = default_results,
    whole: bool = False,
) -> Any:
    """openai-agents: an `Agent` with two function tools, run by `Runner`.

    ``whole``: return the `RunResult` itself, not its final output's text.
    """
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from agents.exceptions import MaxTurnsExceeded

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        return results("lookup_order", {"order_id": order_id})

    @function_tool
    def refund(order_id: str) -> str:
        """Refund an order by its id."""
        return results("refund", {"order_id": order_id})

    async def run() -> Any:
        # Closed in the loop it connected in: left to the garbage collector, the client would
        # close its connections from whichever later test's event loop runs then, failing it.
        async with openai.AsyncOpenAI(
            base_url=base_url + "/v1", api_key=KEY, max_retries=0
        ) as client:
            model = OpenAIChatCompletionsModel(model="gpt-sim", openai_client=client)
            tools = [lookup_order, refund]
            agent = Agent(name="support", instructions="Use the tools.", model=model, tools=tools)
            return await Runner.run(agent, QUESTION, max_turns=max_steps)

    try:
        result = asyncio.run(run())
    except MaxTurnsExceeded:
        return None
    return result if whole else str(result.final_output)


def pydantic_ai_agent(
    base_url: str,
    *,
    max_steps: int = 5,
    results: ToolResults = default_results,
    whole: bool = False,
) -> Any:
    """pydantic-ai: an `Agent` on an OpenAI chat model, with its tools.

    ``whole``: return the `AgentRunResult` itself, not its output's text.
    """
    from pydantic_ai import Agent, UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0)
    model = OpenAIChatModel("gpt-sim", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions="Use the tools.")

    async def run() -> Any:
        async with client:  # closed in the loop it connected in (see `agents_runner`)
            return await agent.run(QUESTION, usage_limits=UsageLimits(request_limit=max_steps))

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        return results("lookup_order", {"order_id": order_id})

    @agent.tool_plain
    def refund(order_id: str) -> str:
        """Refund an order by its id."""
        return results("refund", {"order_id": order_id})

    try:
        result = asyncio.run(run())
    except UsageLimitExceeded:
        return None
    return result if whole else str(result.output)


AGENTS = {"tool_loop": tool_loop, "agents_runner": agents_runner, "pydantic_ai": pydantic_ai_agent}
