"""MCP over streamable HTTP on a listed host: replay makes the requests made live.

mcp 1.21.2 to 2.x (the ``mcp_oldest`` lane runs the lowest). The server
(``tests/mcp_orders_server.py --http PORT``) runs on loopback while the client
records in a child process, then is stopped by its pid; a fresh child process replays. The
client only opens its GET listener and closes with a DELETE when the server gave it an
``Mcp-Session-Id``, so the cassette must keep that header (``_secrets._headers``). Its
``tools/call`` is a tool step of the trajectory (transport ``mcp-http``), not a model call.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_python
from mcp_agents import agents_answer, pydantic_ai_answer
from simulator import ProviderSimulator

import ghostrun

SERVER = ROOT / "tests" / "mcp_orders_server.py"

CLIENT = """
import json, sys
import anyio
import ghostrun
from mcp import ClientSession
from mcp.client.sse import sse_client
try:
    from mcp.client.streamable_http import streamable_http_client
except ImportError:  # mcp before 1.2x named it so
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client

url, cassette_dir, host = sys.argv[1], sys.argv[2], sys.argv[3]
connect = sse_client if url.endswith("/sse") else streamable_http_client

async def main():
    with ghostrun.session(cassette_dir=cassette_dir, hosts=[host], name="mcp-http") as s:
        async with connect(url) as streams:  # streamable HTTP in mcp 1.x adds a third
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as client:
                await client.initialize()
                result = await client.call_tool("lookup_order", {"order_id": "A123"})
    print(json.dumps({"text": result.content[0].text, "recorded": s.recorded,
                      "replayed": s.replayed}))

anyio.run(main)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the MCP HTTP server did not start")


def _serve(transport: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The orders server over ``transport`` ("http": streamable HTTP at /mcp, "sse": the SSE
    transport at /sse): its URL, and its process (stopped by pid)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), f"--{transport}", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, process)
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}", process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from _serve("http")


@pytest.fixture
def sse_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from _serve("sse")


@pytest.fixture(params=["http", "sse"])
def mcp_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from _serve(request.param)


def _run(script: Path, url: str, cassette_dir: Path, **env: str) -> dict[str, object]:
    host = url.split("/")[2]
    done = run_python(str(script), url, str(cassette_dir), host, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_streamable_http_replays_every_request_in_a_fresh_process(
    http_server: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    url, process = http_server
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    cassette_dir = tmp_path / "cassettes"
    live = _run(script, url, cassette_dir, GHOSTRUN_MODE="record")
    assert live["recorded"] == 6  # initialize, initialized, GET listener, call, list, DELETE
    process.terminate()
    process.wait(timeout=10)
    replayed = _run(script, url, cassette_dir, GHOSTRUN_MODE="replay")
    assert replayed == {**live, "recorded": 0, "replayed": 6}  # no UnplayedSteps either
    methods = [
        json.loads(p.read_text())["request"]["method"] for p in sorted(cassette_dir.glob("*.json"))
    ]
    assert sorted(methods) == ["DELETE", "GET", "POST", "POST", "POST", "POST"]
    (trajectory,) = (cassette_dir / "trajectories").glob("*.json")
    (tool,) = [s for s in json.loads(trajectory.read_text())["steps"] if s.get("kind") == "tool"]
    assert {k: v for k, v in tool.items() if k not in ("key", "response")} == {
        "kind": "tool",
        "session": 0,
        "transport": "mcp-http",
        "server": url.split("/")[2],
        "tool": "lookup_order",
        "arguments": {"order_id": "A123"},
        "result": "Order A123: shipped on 2026-11-30, 2 items, carrier …",
    }


def test_the_sse_transport_replays_at_the_pace_of_its_requests_in_a_fresh_process(
    sse_server: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """MCP's SSE transport: one GET stream the server pushes every answer onto, the requests
    POSTed elsewhere. Replayed, each answer comes after its request and the stream stays
    open until the client leaves (handed whole, the client read the end as the server
    gone); the tools/call is a tool step answered on that stream."""
    url, process = sse_server
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    cassette_dir = tmp_path / "cassettes"
    live = _run(script, url, cassette_dir, GHOSTRUN_MODE="record")
    assert live["recorded"] == 5  # the stream, initialize, initialized, call, list
    process.terminate()
    process.wait(timeout=10)
    replayed = _run(script, url, cassette_dir, GHOSTRUN_MODE="replay")
    assert replayed == {**live, "recorded": 0, "replayed": 5}
    (trajectory,) = (cassette_dir / "trajectories").glob("*.json")
    (tool,) = json.loads(trajectory.read_text())["steps"]  # no model step, no answer
    assert (tool["transport"], tool["tool"]) == ("mcp-http", "lookup_order")
    assert tool["result"] == "Order A123: shipped on 2026-11-30, 2 items, carrier …"


# -- agents over MCP's HTTP transports, in this process ---------------------------------------


async def _pydantic_ai_run(provider: ProviderSimulator, url: str) -> str:
    from pydantic_ai.mcp import MCPToolset  # the transport picked from the URL: /sse, /mcp

    return await pydantic_ai_answer(provider, MCPToolset(url))


async def _agents_run(provider: ProviderSimulator, url: str) -> str:
    from agents.mcp import MCPServerSse, MCPServerStreamableHttp

    kind = MCPServerSse if url.endswith("/sse") else MCPServerStreamableHttp
    return await agents_answer(provider, kind(params={"url": url}, name="orders"))  # type: ignore[arg-type]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "run",
    [
        pytest.param(_pydantic_ai_run, marks=pytest.mark.pydantic_ai),
        pytest.param(_agents_run, marks=pytest.mark.openai_agents),
    ],
)
async def test_an_agents_mcp_bookkeeping_over_http_is_no_model_call(
    run: Callable[[ProviderSimulator, str], Any],
    provider: ProviderSimulator,
    mcp_server: tuple[str, subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    """Listed in ``hosts=`` (not ``tool_hosts=``), the MCP server's initialize, tools/list,
    listener GET and closing DELETE (streamable HTTP), or its push stream (SSE), are neither
    model calls nor the run's answer: the trajectory says model, tool, model, and the answer
    is the model's last words."""
    url, process = mcp_server
    provider.tool_plan = ["lookup_order"]
    hosts = [provider.base_url, url.split("/")[2]]
    cassette_dir = tmp_path / "cassettes"
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts, name="agent"):
        live = await run(provider, url)
    assert "Order A123: shipped" in live
    process.terminate()
    process.wait(timeout=10)
    provider.stop()
    with ghostrun.session(
        mode="replay", cassette_dir=cassette_dir, hosts=hosts, name="agent"
    ) as replay:
        assert await run(provider, url) == live
        ghostrun.expect_trajectory(replay).at_most_steps(2)
        assert ghostrun.expect_trajectory(replay).steps == 2
    (path,) = (cassette_dir / "trajectories").glob("*.json")
    steps = [s for s in json.loads(path.read_text())["steps"] if s["session"] == 0]
    assert [s.get("kind", "model") for s in steps] == ["model", "tool", "model", "answer"]
    answer = steps[-1]["text"].removesuffix("…").rstrip()
    assert answer and live.startswith(answer)  # the model's first words, not an MCP reply's
