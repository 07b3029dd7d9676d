"""Telemetry on provider hosts (DESIGN §1): never recorded, answered locally unless recording.

openai-agents uploads its traces (on by default) to
``api.openai.com/v1/traces/ingest`` from its own httpx2 client. Here the
exporter is pointed at the loopback provider, so that a trace upload that
escaped would be counted there, never sent to the internet.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner
from agents.tracing import get_trace_provider
from agents.tracing.processors import default_exporter
from openai import AsyncOpenAI
from simulator import ProviderSimulator

import ghostrun

pytestmark = pytest.mark.openai_agents

LOOPBACK = ("127.0.0.1",)
KEY = "sk-" + "test-agents-0123456789abcdefghij"  # fake, assembled at run time
TRACES = "/v1/traces/ingest"


@pytest.fixture
def exporter(provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> Any:
    """openai-agents' trace exporter, with a key and sending to the loopback provider."""
    exporter = default_exporter()
    monkeypatch.setattr(exporter, "endpoint", provider.url(TRACES))
    monkeypatch.setattr(exporter, "_api_key", KEY)
    monkeypatch.delenv("OPENAI_AGENTS_DISABLE_TRACING", raising=False)
    return exporter


def run_agent(provider: ProviderSimulator) -> str:
    async def run() -> Any:
        # Closed in the loop it connected in: left to the garbage collector, the client would
        # close its connections from whichever test's event loop runs then, and fail that test.
        async with AsyncOpenAI(base_url=provider.url("/v1"), api_key=KEY) as client:
            model = OpenAIChatCompletionsModel(model="gpt-sim", openai_client=client)
            agent = Agent(name="support", instructions="Answer briefly.", model=model)
            return await Runner.run(agent, "Where is my refund?")

    result = asyncio.run(run())
    get_trace_provider().force_flush()  # upload the traces now, inside the session
    return str(result.final_output)


def trace_uploads(provider: ProviderSimulator) -> int:
    return sum(request.path == TRACES for request in provider.requests)


def urls_recorded(cassette_dir: Path) -> list[str]:
    return [orjson.loads(p.read_bytes())["request"]["url"] for p in cassette_dir.glob("*.json")]


def test_an_agent_run_records_and_replays_without_its_trace_upload(
    provider: ProviderSimulator, cassette_dir: Path, exporter: Any
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as rec:
        live = run_agent(provider)
    assert trace_uploads(provider) >= 1  # record mode sends it for real ...
    assert rec.recorded == 1  # ... but only the model call is written
    assert [url.endswith("/v1/chat/completions") for url in urls_recorded(cassette_dir)] == [True]

    provider.reset()
    for mode in ("replay", "auto"):
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
            assert run_agent(provider) == live
        assert rep.replayed == 1 and rep.misses == [] and rep.recorded == 0
    assert provider.served == 0  # neither the model call nor a trace upload reached a server
    assert len(urls_recorded(cassette_dir)) == 1


def test_the_default_trace_endpoint_is_answered_locally_in_replay(
    provider: ProviderSimulator,
    cassette_dir: Path,
    exporter: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = run_agent(provider)
    assert trace_uploads(provider) == 0  # auto mode leaves the network alone for telemetry
    monkeypatch.setattr(exporter, "endpoint", "https://api.openai.com" + TRACES)
    looked_up: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def spy(host: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(str(host))
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", spy)
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        assert run_agent(provider) == live
    assert rep.misses == [] and "api.openai.com" not in looked_up


def test_users_extend_the_list_with_ignore_urls(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    beacon = provider.url("/echo-json")
    for ignore in (
        ["/echo-json"],
        [f"127.0.0.1:{provider.port}/echo-*"],
        ["http://127.0.0.1/echo-json"],
    ):
        with ghostrun.session(
            mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_urls=ignore
        ) as s:
            reply = httpx2.get(beacon, params={"event": "started"})
        assert reply.status_code == 200 and reply.json() == {}, ignore
        assert s.misses == [] and provider.served == 0
    ghostrun.configure(ignore_urls=["/echo-json"])
    try:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
            assert httpx2.get(beacon).json() == {}
    finally:
        ghostrun.configure(ignore_urls=None)
    with pytest.raises(ValueError, match="names no path"):
        ghostrun.session(ignore_urls=["api.example.com"])
    with pytest.raises(ValueError, match="names no path"):
        ghostrun.configure(ignore_urls=["https://api.example.com"])


@pytest.mark.parametrize("mode", ["replay", "auto"])
def test_the_trace_upload_is_answered_as_openai_answers_it_204_no_body(
    provider: ProviderSimulator, cassette_dir: Path, exporter: Any, mode: str
) -> None:
    """What the exporter's own client receives: the real endpoint's 204 No Content."""
    answers: list[tuple[int, str, bytes, str | None]] = []

    def seen(response: httpx2.Response) -> None:
        if response.url.path == TRACES:
            response.read()
            kind = response.headers.get("content-type")
            answers.append((response.status_code, response.reason_phrase, response.content, kind))

    exporter._client.event_hooks["response"].append(seen)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        run_agent(provider)
    provider.stop()
    answers.clear()
    with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        run_agent(provider)
    assert rep.misses == [] and answers
    assert set(answers) == {(204, "No Content", b"", None)}


# -- the flush at exit, after the last session closed ----------------------------------------

AT_EXIT = """
import sys, time
sys.path.insert(0, sys.argv[4])
from agents.tracing.processors import default_exporter
from agents_under_test import agents_runner
import ghostrun

default_exporter().endpoint = sys.argv[1]
with ghostrun.session(mode="replay", cassette_dir=sys.argv[2], hosts=["127.0.0.1"], name="t"):
    print(agents_runner(sys.argv[3]))
print("session closed", flush=True)
"""


def test_a_trace_flushed_at_exit_after_a_replay_is_answered_locally(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    """The child replays an agent and exits; openai-agents' atexit flush never goes out."""
    from agents_under_test import PLAN, agents_runner
    from helpers import ROOT, run_python
    from tool_api import ToolApi

    provider.tool_plan = list(PLAN)
    cassettes = tmp_path / "cassettes"
    with ghostrun.session(mode="record", cassette_dir=cassettes, hosts=LOOPBACK, name="t"):
        answer = agents_runner(provider.base_url)  # no key here: nothing is exported
    provider.stop()
    with ToolApi() as traces:  # a loopback stand-in for the trace endpoint, counting
        child = run_python(
            "-c",
            AT_EXIT,
            traces.url(TRACES),
            str(cassettes),
            provider.base_url,
            str(ROOT / "tests"),
            OPENAI_API_KEY=KEY,  # the exporter exports only with a key
        )
        assert child.returncode == 0, child.stderr
        assert child.stdout.splitlines() == [answer, "session closed"]
        assert traces.served == 0  # not a single upload, nor a retry
    assert "Tracing" not in child.stderr, child.stderr  # no failed export, no retries logged
