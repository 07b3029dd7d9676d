"""The agent frameworks the MCP tests run, each given its MCP server as its users give it.

pydantic-ai takes a toolset (an ``MCPToolset`` of a transport or a URL), openai-agents an
MCP server object (stdio, SSE or streamable HTTP); both talk to the loopback provider's
OpenAI chat API, through an ``AsyncOpenAI`` closed in the test's own event loop.
"""

from __future__ import annotations

from typing import Any

from simulator import ProviderSimulator

QUESTION = "Where is order A123?"


def openai_client(provider: ProviderSimulator) -> Any:
    import openai

    return openai.AsyncOpenAI(base_url=provider.url("/v1"), api_key="sk-test", max_retries=0)


async def pydantic_ai_answer(provider: ProviderSimulator, toolset: Any) -> str:
    """pydantic-ai's answer, with ``toolset`` (its ``MCPToolset``)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async with openai_client(provider) as client:  # closed in this test's event loop
        model = OpenAIChatModel("gpt-sim", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, instructions="Use the tools.", toolsets=[toolset])
        async with agent:
            result = await agent.run(QUESTION)
    return str(result.output)


async def agents_answer(provider: ProviderSimulator, mcp_server: Any) -> str:
    """openai-agents' answer, with ``mcp_server`` (an ``agents.mcp`` server, not entered)."""
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    async with openai_client(provider) as client:  # closed in this test's event loop
        model = OpenAIChatCompletionsModel(model="gpt-sim", openai_client=client)
        async with mcp_server:
            agent = Agent(
                name="support", instructions="Use the tools.", model=model, mcp_servers=[mcp_server]
            )
            untraced = RunConfig(tracing_disabled=True)  # this run's, not the process's
            result = await Runner.run(agent, QUESTION, run_config=untraced)
    return str(result.final_output)
