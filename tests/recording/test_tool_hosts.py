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

pytest_plugins = ["pytester"]

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
    words = live.split()
    shown = " ".join(words[:8]) + (" …" if len(words) > 8 else "")  # its first eight words
    assert steps[-1] == {"kind": "answer", "session": 0, "text": shown}

    _trajectory.swap(_trajectory.Tracker())  # the next run, with both still up, in auto:
    again, _ = run_agent(framework, provider, tool_api, cassette_dir, "auto")
    assert again.recorded == 0 and again.misses == []  # the tool's fresh values replay too
    provider.stop()
    tool_api.stop()
    _trajectory.swap(_trajectory.Tracker())
    replaying, replayed = run_agent(framework, provider, tool_api, cassette_dir, "replay")
    assert replayed == live
    assert (provider.served, tool_api.served) == (3, 2)  # nothing reached either
    assert replaying.replayed == 5 and replaying.misses == []
    ghostrun.expect_trajectory(replaying).at_most_steps(3)
    with pytest.raises(ghostrun.ExpectationFailed, match="3 model calls") as caught:
        ghostrun.expect_trajectory(replaying).at_most_steps(2)
    story = str(caught.value)  # the run step by step, tool steps included
    assert f"step 2: tool GET /tracking/A123 on {tool_api.host} -> " in story, story
    assert "step 4: tool POST /refunds on " in story and "final answer: " in story


# -- every road, every way to declare one ---------------------------------------------------


def _httpx(url: str) -> str:
    return httpx.get(url).text


def _httpx2(url: str) -> str:
    import httpx2

    return httpx2.get(url).text


def _aiohttp(url: str) -> str:
    import asyncio

    import aiohttp

    async def get() -> str:
        async with aiohttp.ClientSession() as client, client.get(url) as response:
            return await response.text()

    return asyncio.run(get())


def _urllib3(url: str) -> str:
    import urllib3

    with urllib3.PoolManager() as pool:
        return pool.request("GET", url).data.decode()


ROADS = {"httpx": _httpx, "httpx2": _httpx2, "aiohttp": _aiohttp, "urllib3": _urllib3}


@pytest.mark.parametrize("road", sorted(ROADS))
def test_every_road_records_a_tool_host_as_a_tool_step_and_replays_it(
    road: str, tool_api: ToolApi, cassette_dir: Path
) -> None:
    get = ROADS[road]
    url = tool_api.url("/tracking/B7?fields=eta")
    kwargs: dict[str, Any] = {"cassette_dir": cassette_dir, "name": TEST}
    with ghostrun.session(mode="record", tool_hosts=[tool_api.host], **kwargs) as recording:
        live = get(url)
    assert recording.recorded == 1 and tool_api.served == 1
    (step,) = trajectory(cassette_dir)  # a tool step, and no answer: no model was called
    assert step["kind"] == "tool" and step["tool"] == "GET /tracking/B7"
    assert step["arguments"] == {"fields": "eta"} and step["server"] == tool_api.host
    tool_api.stop()
    _trajectory.swap(_trajectory.Tracker())
    with ghostrun.session(mode="replay", tool_hosts=[tool_api.host], **kwargs) as replaying:
        assert get(url) == live  # its fresh checked_at and request_id, as recorded
    assert replaying.replayed == 1 and tool_api.served == 1
    assert ghostrun.expect_trajectory(replaying).steps == 0  # no model call


def test_tool_hosts_from_the_environment_and_the_project_table(
    tool_api: ToolApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ghostrun._core import _project

    monkeypatch.setenv("GHOSTRUN_TOOL_HOSTS", f" other.example.com , {tool_api.host}")
    with ghostrun.session(mode="record", cassette_dir=tmp_path / "env") as session:
        httpx.get(tool_api.url("/tracking/C1"))
    assert session.recorded == 1 and session.passed_through == 0
    monkeypatch.delenv("GHOSTRUN_TOOL_HOSTS")

    (tmp_path / "pyproject.toml").write_text(f'[tool.ghostrun]\ntool_hosts = ["{tool_api.host}"]\n')
    monkeypatch.chdir(tmp_path)
    _project.forget()
    try:
        with ghostrun.session(mode="record", cassette_dir=tmp_path / "table") as session:
            httpx.get(tool_api.url("/tracking/C1"))
        assert session.recorded == 1
        (tmp_path / "pyproject.toml").write_text('[tool.ghostrun]\ntool_hosts = "one"\n')
        _project.forget()
        with pytest.raises(ValueError, match="tool_hosts: hosts that serve tools"):
            ghostrun.session(mode="record").__enter__()
    finally:
        _project.forget()
    for directory in ("env", "table"):
        (path,) = (tmp_path / directory / "trajectories").glob("*.json")
        (step,) = orjson.loads(path.read_bytes())["steps"]
        assert step["kind"] == "tool"


MARKED = """
import httpx, pytest, ghostrun

@pytest.mark.ghostrun(tool_hosts=["{host}"], cassette_dir="cassettes")
def test_ships(ghostrun_session):
    httpx.get("{url}")
    assert ghostrun_session.tool_hosts == ("{host}",)
"""


def test_the_marker_takes_tool_hosts(pytester: pytest.Pytester, tool_api: ToolApi) -> None:
    pytester.makepyfile(MARKED.format(host=tool_api.host, url=tool_api.url("/tracking/D4")))
    pytester.runpytest_subprocess("--ghostrun-record").assert_outcomes(passed=1)
    tool_api.stop()
    pytester.runpytest_subprocess("--ghostrun-replay").assert_outcomes(passed=1)
    assert tool_api.served == 1
    (path,) = (pytester.path / "cassettes" / "trajectories").glob("*.json")
    (step,) = orjson.loads(path.read_bytes())["steps"]
    assert step["kind"] == "tool" and step["tool"] == "GET /tracking/D4"


def test_a_replay_that_skips_a_recorded_tool_call_leaves_it_unplayed(
    provider: ProviderSimulator, tool_api: ToolApi, cassette_dir: Path
) -> None:
    kwargs: dict[str, Any] = {"cassette_dir": cassette_dir, "name": TEST}
    with ghostrun.session(mode="record", tool_hosts=[tool_api.host], **kwargs):
        httpx.get(tool_api.url("/tracking/A1"))
        httpx.get(tool_api.url("/tracking/A2"))
    tool_api.stop()
    _trajectory.swap(_trajectory.Tracker())
    with pytest.raises(ghostrun.UnplayedSteps) as caught:
        with ghostrun.session(mode="replay", tool_hosts=[tool_api.host], **kwargs):
            httpx.get(tool_api.url("/tracking/A1"))
    message = str(caught.value)
    assert "used 1 of the 2 steps" in message
    assert f'step 2: tool GET /tracking/A2 (http {tool_api.host}) -> \'{{"order": "A2"' in message


def test_a_tool_step_holds_no_credential(tool_api: ToolApi, cassette_dir: Path) -> None:
    secrets = ("qwertyuiop123456", "abc-some-secret-value-123", "zzz-secret-bearer-999")
    with ghostrun.session(
        mode="record", cassette_dir=cassette_dir, tool_hosts=[tool_api.host], name=TEST
    ):
        httpx.post(
            tool_api.url(f"/refunds?token={secrets[0]}&order=A1"),
            json={"order_id": "A1", "api_key": secrets[1]},
            headers={"authorization": f"Bearer {secrets[2]}"},
        )
    (step,) = trajectory(cassette_dir)
    assert step["arguments"] == {"order": "A1", "order_id": "A1", "api_key": "[REDACTED]"}
    for path in cassette_dir.rglob("*.json"):
        assert not any(secret in path.read_text() for secret in secrets), path
