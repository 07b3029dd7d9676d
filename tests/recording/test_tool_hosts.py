"""Tool hosts (DESIGN §1, §3): a host that serves tools is recorded and replayed like a provider,
but its exchanges are tool steps of the trajectory, never model calls.

The agent under test looks an order up and refunds it through an HTTP tool API
(`tool_api.ToolApi`, loopback, with a fresh ``checked_at`` and ``request_id`` in every
answer), driven by the real frameworks against the loopback provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from agents_under_test import AGENTS, PLAN
from simulator import ProviderSimulator
from tool_api import ToolApi

import ghostrun
from ghostrun._recording import _trajectory

TEST = "tests/test_agent.py::test_shipment"
FRAMEWORKS = ["pydantic_ai", pytest.param("agents_runner", marks=pytest.mark.openai_agents)]


@pytest.fixture
def tool_api() -> Iterator[ToolApi]:
    with ToolApi() as api:
        yield api


@pytest.fixture(autouse=True)
def new_process() -> Iterator[None]:
    """Each test counts its sessions from 0, as a new process would."""
    saved = _trajectory.swap(_trajectory.Tracker())
    yield
    _trajectory.swap(saved)


def http_tools(api: ToolApi) -> Callable[[str, dict[str, Any]], str]:
    """The agent's tools: plain functions that call the tool API with httpx."""

    def results(name: str, arguments: dict[str, Any]) -> str:
        if name == "lookup_order":
            order = arguments["order_id"]
            return httpx.get(api.url(f"/tracking/{order}"), params={"fields": "status"}).text
        return httpx.post(api.url("/refunds"), json=arguments).text

    return results


def run_agent(
    framework: str, provider: ProviderSimulator, api: ToolApi, cassette_dir: Path, mode: str
) -> tuple[ghostrun.Session, Any]:
    with ghostrun.session(
        mode=mode,
        cassette_dir=cassette_dir,
        name=TEST,
        hosts=[f"127.0.0.1:{provider.port}"],
        tool_hosts=[api.host],
    ) as session:
        answer = AGENTS[framework](provider.base_url, results=http_tools(api))
    return session, answer


def trajectory(cassette_dir: Path) -> list[dict[str, Any]]:
    (path,) = (cassette_dir / "trajectories").glob("*.json")
    return orjson.loads(path.read_bytes())["steps"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_agent_with_an_http_tool_replays_with_the_tool_api_down(
    framework: str, provider: ProviderSimulator, tool_api: ToolApi, cassette_dir: Path
) -> None:
    provider.tool_plan = list(PLAN)
    recorded, live = run_agent(framework, provider, tool_api, cassette_dir, "auto")
    ghostrun.expect_trajectory(recorded).at_most_steps(3)
    assert (provider.served, tool_api.served) == (3, 2)
    steps = trajectory(cassette_dir)
    assert [step.get("kind", "model") for step in steps] == [
        "model", "tool", "model", "tool", "model", "answer"
    ]  # fmt: skip
    lookup, refund = steps[1], steps[3]
    assert lookup["transport"] == "http"
    assert lookup["server"] == tool_api.host
    assert lookup["tool"] == "GET /tracking/A123"
    assert lookup["arguments"] == {"fields": "status"}
    assert lookup["result"].startswith('{"order": "A123", "status": "in transit"')
    assert refund["tool"] == "POST /refunds"
    assert refund["arguments"] == {"order_id": "A123"}
    assert steps[-1] == {
        "kind": "answer",
        "session": 0,
        "text": live.split()[0]
        + " "
        + " ".join(live.split()[1:8])
        + (" …" if len(live.split()) > 8 else ""),
    }

    provider.stop()
    tool_api.stop()
    _trajectory.swap(_trajectory.Tracker())
    replaying, replayed = run_agent(framework, provider, tool_api, cassette_dir, "replay")
    assert replayed == live
    assert (provider.served, tool_api.served) == (3, 2)  # nothing reached either
    assert replaying.replayed == 5 and replaying.misses == []
    ghostrun.expect_trajectory(replaying).at_most_steps(3)
    with pytest.raises(ghostrun.ExpectationFailed, match="3 model calls"):
        ghostrun.expect_trajectory(replaying).at_most_steps(2)
