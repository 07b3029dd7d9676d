"""``expect_tool_calls`` on what agent frameworks hand back (DESIGN §6), from real runs.

Each framework's agent runs against the loopback model, which calls
``lookup_order`` then ``refund`` (both with ``order_id="A123"``), then answers.
Its own result objects are passed as they come: openai-agents'
``to_input_list()``, ``new_items`` and ``raw_responses``; pydantic-ai's
``all_messages()``; LangChain's ``AIMessage`` (langchain is not a test
dependency: built here with its fields, as LangChain builds it); and the
ghostrun session the run was recorded in. Anything else fails naming what can
be read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest
from agents_under_test import AGENTS
from simulator import ProviderSimulator

import ghostrun

CALLS = [("lookup_order", {"order_id": "A123"}), ("refund", {"order_id": "A123"})]


def run(framework: str, provider: ProviderSimulator, cassette_dir: Path) -> tuple[Any, Any]:
    provider.tool_plan, provider.tool_args = ["lookup_order", "refund"], {"order_id": "A123"}
    with ghostrun.session(
        mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]
    ) as session:
        result = AGENTS[framework](provider.base_url, whole=True)
    return result, session


def read(value: object) -> list[tuple[str, dict[str, Any]]]:
    found = ghostrun.expect_tool_calls(value)
    found.called_in_order("lookup_order", "refund").called_with("refund", order_id="A123")
    return [(call.name, call.arguments) for call in found.calls]


AGENTS_VIEWS: dict[str, Callable[[Any], object]] = {
    "to_input_list()": lambda result: result.to_input_list(),
    "new_items": lambda result: result.new_items,
    "raw_responses": lambda result: result.raw_responses,
}


@pytest.mark.openai_agents
@pytest.mark.parametrize("view", sorted(AGENTS_VIEWS))
def test_openai_agents_results(provider: ProviderSimulator, cassette_dir: Path, view: str) -> None:
    result, session = run("agents_runner", provider, cassette_dir)
    assert read(AGENTS_VIEWS[view](result)) == CALLS
    assert read(session) == CALLS


def test_pydantic_ai_messages(provider: ProviderSimulator, cassette_dir: Path) -> None:
    result, session = run("pydantic_ai", provider, cassette_dir)
    assert read(result.all_messages()) == CALLS
    assert read(result.new_messages()) == CALLS
    assert read(session) == CALLS


class LangChainToolCall(pydantic.BaseModel):
    """Not needed by LangChain (its calls are TypedDicts), here to show objects are read too."""

    name: str
    args: dict[str, Any]
    id: str | None
    type: Literal["tool_call"] = "tool_call"


class AIMessage(pydantic.BaseModel):
    """langchain_core.messages.AIMessage's fields: a pydantic model, calls as plain dicts."""

    content: str | list[Any]
    tool_calls: list[Any] = []
    additional_kwargs: dict[str, Any] = {}
    type: Literal["ai"] = "ai"
    name: str | None = None
    id: str | None = None


def test_langchain_ai_messages() -> None:
    message = AIMessage(
        content="",
        tool_calls=[
            {"name": "lookup_order", "args": {"order_id": "A123"}, "id": "c1", "type": "tool_call"},
            LangChainToolCall(name="refund", args={"order_id": "A123"}, id="c2"),
        ],
        additional_kwargs={"tool_calls": [{"function": {"name": "lookup_order"}}]},
    )
    assert read(message) == CALLS
    assert read([message, AIMessage(content="Refunded.")]) == CALLS


@pytest.mark.parametrize(
    "value",
    [42, "lookup_order", object(), {"unrelated": 1}, [{"name": "f"}, 3.5]],
)
def test_anything_else_is_an_assertion_error_listing_what_can_be_read(value: object) -> None:
    with pytest.raises(AssertionError) as caught:
        ghostrun.expect_tool_calls(value)
    message = str(caught.value)
    assert "cannot read tool calls from" in message
    for shape in ("to_input_list()", "new_items", "all_messages()", "AIMessage", "session"):
        assert shape in message, message
    assert isinstance(caught.value, TypeError)
