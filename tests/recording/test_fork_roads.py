"""A fork in process, through the real SDKs: OpenAI Responses and Anthropic messages.

A two-step tool loop is recorded in a session, its branch seeded as ``ghostrun
fork`` seeds it, then run again under the fork plan (`GHOSTRUN_FORK`) from step 2
onto another model: step 1 replays from the branch, step 2 alone reaches the
simulator, with the new model and a field set by path; the recording is not
written to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording._fork import ENV, ForkPlan
from ghostrun._tools._branches import fresh_branch, seed

TEST = "tests/test_app.py::test_loop"
KEY = "sk-" + "forkroad" * 4


def responses_loop(url: str) -> str:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    tools = [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}]
    items: list[Any] = [{"role": "user", "content": "Where is order A123?"}]
    while True:
        reply = client.responses.create(model="gpt-big", input=items, tools=tools)
        calls = [item for item in reply.output if item.type == "function_call"]
        if not calls:
            return reply.output_text
        items += [c.model_dump(exclude_none=True) for c in calls]
        items += [
            {"type": "function_call_output", "call_id": c.call_id, "output": "shipped"}
            for c in calls
        ]


def anthropic_loop(url: str) -> str:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-" + KEY, max_retries=0)
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    messages: list[Any] = [{"role": "user", "content": "Where is order A123?"}]
    while True:
        reply = client.messages.create(
            model="gpt-big",
            max_tokens=100,
            messages=messages,
            tools=tools,  # type: ignore[arg-type]
        )
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": [u.model_dump() for u in uses]})
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": "shipped"} for u in uses]
        messages.append({"role": "user", "content": results})


def files(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "branches" not in p.parts
    }


@pytest.mark.parametrize("loop", [responses_loop, anthropic_loop], ids=["responses", "anthropic"])
def test_a_fork_at_step_2_sends_only_step_2_with_the_new_model(
    loop: Callable[[str], str],
    provider: ProviderSimulator,
    cassette_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider.tool_plan = ["lookup_order"]
    provider.model_replies = {"gpt-big": "It shipped.", "gpt-small": "On its way."}
    hosts = [provider.base_url]
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=hosts, name=TEST):
        assert loop(provider.base_url) == "It shipped."
    recorded = files(cassette_dir)
    provider.reset()

    branch = fresh_branch(cassette_dir, "small")
    assert seed(cassette_dir, branch, TEST, 2) == 2
    plan = ForkPlan(branch, 2, "gpt-small", sets=[("metadata", {"fork": "small"})])
    monkeypatch.setenv(ENV, plan.to_env())
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts, name=TEST) as s:
        assert loop(provider.base_url) == "On its way."

    assert (s.replayed, s.recorded) == (1, 1)
    (sent,) = provider.requests
    assert (sent.json["model"], sent.json["metadata"]) == ("gpt-small", {"fork": "small"})
    assert files(cassette_dir) == recorded
    assert len(list(branch.glob("*.json"))) == 2  # step 1's copy, step 2's new cassette
