"""The MCP-over-stdio road: an agent's tool server recorded once, replayed with no process.

Through the real clients: ``mcp``'s ``ClientSession`` over ``stdio_client``, pydantic-ai's
``MCPToolset`` (fastmcp's stdio transport) and openai-agents' ``MCPServerStdio``, each
launching ``tests/mcp_orders_server.py`` with ``sys.executable``. The server appends its pid
to a file at every start, so each test counts the processes started; in replay the script is
deleted first, so a server that would start could not.

``mcp.client.stdio`` is imported with this module: ``stdio_client`` takes the ``sys.stderr``
of the moment it is imported as its default log, and one imported later inside a test that
captures output (``ghostrun doctor``'s, under ``capsys``) would hand servers a stream with no
file descriptor.
"""

from __future__ import annotations

import re
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp.client.stdio  # now: its stdio_client binds sys.stderr as it imports
import orjson
import pytest
from fresh import run_fresh
from helpers import ROOT, cassettes
from mcp_agents import agents_answer, pydantic_ai_answer
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory

pytestmark = pytest.mark.anyio

SERVER = ROOT / "tests" / "mcp_orders_server.py"
TOKEN = "sk-" + "orders0123456789abcdefXYZ"  # fake, assembled at run time


class Server:
    """A copy of the orders server in a temporary directory, and the processes it started."""

    def __init__(self, directory: Path) -> None:
        self.script = directory / "orders_server.py"
        self.starts = directory / "starts.txt"
        directory.mkdir(parents=True)
        shutil.copy(SERVER, self.script)

    @property
    def started(self) -> int:
        return len(self.starts.read_text().split()) if self.starts.exists() else 0

    @property
    def env(self) -> dict[str, str]:
        return {"ORDERS_SERVER_STARTS": str(self.starts), "ORDERS_API_TOKEN": TOKEN}

    def remove(self) -> None:
        """The executable is gone: a replay that started it would fail."""
        self.script.unlink()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Server:
    return Server(tmp_path / "server")


async def lookup(
    server: Server, order_id: str = "A123", *, launch: tuple[str, ...] = (), tool: str = ""
) -> list[Any]:
    """The mcp client's own way: what it was told, in the order it was told."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    seen: list[Any] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(("progress", done, message))

    async def logged(params: Any) -> None:
        seen.append(("log", params.data))

    args = [str(server.script), *launch]
    params = StdioServerParameters(command=sys.executable, args=args, env=server.env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=logged) as client:
            await client.initialize()
            result = await client.call_tool(
                "lookup_order", {"order_id": order_id}, progress_callback=progress
            )
            seen.append(("result", result.content[0].text))  # type: ignore[union-attr]
            if tool:
                extra = await client.call_tool(tool, {})
                seen.append(("result", extra.content[0].text))  # type: ignore[union-attr]
    return seen


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_mcp_client_replays_with_no_process(server: Server, cassette_dir: Path) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir) as recording:
        live = await lookup(server)
    assert server.started == 1
    assert recording.recorded == 1
    server.remove()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as replay:
        replayed = await lookup(server)
    assert replayed == live  # the log line and the progress, then the result, in order
    assert [kind for kind, *_ in live] == ["log", "progress", "result"]
    assert "Order A123: shipped" in live[-1][1]
    assert server.started == 1  # none started in replay
    assert (replay.replayed, replay.recorded) == (1, 0)


async def _as_mcp_1_drives_it(server: Server) -> Any:
    """mcp 1.x's ``stdio_client`` opens the server's process as ``async with process:`` and
    reads, writes and closes inside; 2.x closes it itself. Both go through the hook."""
    create = mcp.client.stdio._create_platform_compatible_process  # type: ignore[attr-defined]
    process = await create(sys.executable, [str(server.script)], env=server.env)
    async with process:
        hello = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcp-1", "version": "1"},
            },
        }
        await process.stdin.send(orjson.dumps(hello) + b"\n")
        answer = orjson.loads(await process.stdout.receive())
    return process, answer


async def test_the_process_opens_and_closes_as_a_context_manager_as_mcp_1_drives_it(
    server: Server, cassette_dir: Path
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir) as recording:
        _taped, live = await _as_mcp_1_drives_it(server)
    assert live["result"]["serverInfo"]["name"] == "orders"
    assert (server.started, recording.recorded) == (1, 1)  # closed by ``async with``: written
    server.remove()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as replay:
        played, answer = await _as_mcp_1_drives_it(server)
    assert answer == live
    assert played.returncode == 0  # ended by the close, as a server's process ends
    assert (server.started, replay.replayed) == (1, 1)


async def test_the_cassette_holds_the_launch_and_no_secret(
    server: Server, cassette_dir: Path
) -> None:
    launch = ("--api-key", TOKEN)  # a key in the arguments too
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, name="secrets") as recording:
        live = await lookup(server, launch=launch, tool="account")
    assert live[-1] == ("result", f"account token {TOKEN}")  # what the test itself sees
    (cassette,) = cassettes(cassette_dir)
    assert cassette["kind"] == "mcp-stdio"
    (connection,) = cassette["connections"]
    assert connection["launch"] == {
        "command": "python",
        "args": ["orders_server.py", "--api-key", "[REDACTED]"],
        "env": ["ORDERS_API_TOKEN", "ORDERS_SERVER_STARTS"],
        "cwd": None,
    }
    assert recording.recorded == 1
    methods = [next(iter(m.values()))["json"].get("method") for m in connection["messages"]]
    assert methods[:3] == ["initialize", None, "notifications/initialized"]
    assert "tools/call" in methods and "notifications/progress" in methods
    (call,) = [m["client"]["json"] for m in connection["messages"] if "client" in m][2:3]
    assert call["params"]["_meta"] == {"progressToken": call["id"]}  # a label, not a secret
    written = list(cassette_dir.rglob("*.json"))
    assert {p.parent.name for p in written} == {"cassettes", "trajectories"}
    assert TOKEN not in "".join(p.read_text() for p in written)  # nor where the server echoed it
    assert "account token [REDACTED]" in "".join(p.read_text() for p in written)


async def test_a_changed_argument_is_a_miss_naming_the_tool(
    server: Server, cassette_dir: Path
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir):
        await lookup(server, "A123")
    server.remove()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            await lookup(server, "B456")
    message = str(caught.value)
    assert "tools/call of 'lookup_order'" in message
    assert '-params.arguments.order_id: "A123"' in message
    assert '+params.arguments.order_id: "B456"' in message
    assert "+++ this message" in message
    assert server.started == 1


async def test_normalize_makes_a_fresh_id_in_a_tools_arguments_match(
    server: Server, cassette_dir: Path
) -> None:
    """An agent passes a tool an id it minted this run: ``normalize=["uuid"]`` matches the
    recorded call, as it matches a request body; without it, the call misses."""
    recorded_id, todays_id = str(uuid.uuid4()), str(uuid.uuid4())
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, normalize=["uuid"]):
        live = await lookup(server, f"A123-{recorded_id}")
    server.remove()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, normalize=["uuid"]) as replay:
        replayed = await lookup(server, f"A123-{todays_id}")
    assert replayed == live  # the recorded answer, which names the recorded id
    assert live[-1] == ("result", f"No order A123-{recorded_id}.")
    assert (replay.replayed, server.started) == (1, 1)
    with pytest.raises(ghostrun.CacheMiss, match="tools/call of 'lookup_order'"):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            await lookup(server, f"A123-{todays_id}")


async def test_replay_without_a_recording_starts_nothing(
    server: Server, cassette_dir: Path
) -> None:
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            await lookup(server)
    assert "no recorded MCP stdio connection for `python orders_server.py`" in str(caught.value)
    assert "the server was not started" in str(caught.value)
    assert server.started == 0


def test_a_client_imported_after_the_session_opened_is_refused_too(tmp_path: Path) -> None:
    """The road waits for ``mcp``: imported inside the session, its stdio client is hooked."""
    server = Server(tmp_path / "server")
    code = f"""
import json, sys
import anyio
import ghostrun

async def launch():
    from mcp import StdioServerParameters, stdio_client  # imported now, inside the session

    params = StdioServerParameters(command=sys.executable, args=[{str(server.script)!r}],
                                   env={server.env!r})
    async with stdio_client(params):
        pass

try:
    with ghostrun.session(mode="replay", cassette_dir={str(tmp_path / "cassettes")!r}):
        anyio.run(launch)
except ghostrun.CacheMiss as miss:
    print(json.dumps({{"refused": "no recorded MCP stdio connection" in str(miss)}}))
"""
    assert run_fresh(code) == {"refused": True}
    assert server.started == 0


async def test_auto_records_then_replays_each_connection_in_order(
    server: Server, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir):
        first = await lookup(server, "A123")
        second = await lookup(server, "B456")
    assert server.started == 2
    server.remove()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as replay:
        assert await lookup(server, "A123") == first
        assert await lookup(server, "B456") == second
    assert replay.replayed == 2
    assert server.started == 2


async def summarize(server: Server) -> list[str]:
    """A tool whose server asks the client's model: the sampling request and the reply."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import CreateMessageResult, TextContent

    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        text = TextContent(type="text", text=f"short: {len(asked)} order")
        return CreateMessageResult(role="assistant", content=text, model="client-model")

    command, args = sys.executable, [str(server.script)]
    params = StdioServerParameters(command=command, args=args, env=server.env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=sampling) as client:
            await client.initialize()
            result = await client.call_tool("summarize_order", {"order_id": "B456"})
    return [*asked, result.content[0].text]  # type: ignore[union-attr]


async def test_a_server_request_replays_and_the_clients_reply_is_matched(
    server: Server, cassette_dir: Path
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir):
        live = await summarize(server)
    assert live == ["Order B456: refunded on 2026-11-28.", "summary: short: 1 order"]
    server.remove()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
        assert await summarize(server) == live  # the client's model was asked again
    assert server.started == 1


@pytest.fixture
def next_run() -> Iterator[None]:
    """Each test's sessions counted afresh from here, as the next run's process counts them."""
    saved = _trajectory.swap(_trajectory.Tracker())
    yield
    _trajectory.swap(saved)


async def test_a_tool_call_left_unplayed_fails_the_replay(
    server: Server, cassette_dir: Path, next_run: None
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, name="two calls"):
        await lookup(server)
        await lookup(server, "B456")
    server.remove()
    _trajectory.swap(_trajectory.Tracker())  # the replay is the next run's
    with pytest.raises(ghostrun.UnplayedSteps) as caught:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="two calls"):
            await lookup(server)
    message = str(caught.value)
    assert "used 1 of the 2 steps" in message
    assert "step 2: tool lookup_order (mcp-stdio python orders_server.py)" in message


async def test_a_launch_that_fails_writes_nothing(cassette_dir: Path, tmp_path: Path) -> None:
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(tmp_path / "no-such-server"))
    with ghostrun.session(mode="record", cassette_dir=cassette_dir) as recording:
        with pytest.raises(OSError):
            async with stdio_client(params):
                pass
    assert recording.recorded == 0
    assert not list(cassette_dir.glob("*.json"))


async def test_without_its_hook_a_server_is_refused_not_run_live(
    server: Server, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An mcp that moved the function ghostrun replaces: the road is unhooked, and a launch
    inside a session raises UnsupportedLibrary, in every mode, before any process starts."""
    from ghostrun._intercept import _mcp_stdio, _patch

    monkeypatch.setattr(_mcp_stdio, "HOOK", "_a_function_this_mcp_lacks")
    _patch.forget_plan()
    try:
        for mode in ("record", "replay"):
            with pytest.raises(ghostrun.UnsupportedLibrary, match=r"has no mcp\.client\.stdio"):
                with ghostrun.session(mode=mode, cassette_dir=cassette_dir):
                    await lookup(server)
    finally:
        _patch.forget_plan()
    assert server.started == 0
    assert (await lookup(server))[-1][0] == "result"  # outside a session: the server runs
    assert server.started == 1


# -- the frameworks -------------------------------------------------------------------------


async def pydantic_ai_run(provider: ProviderSimulator, server: Server) -> str:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    transport = StdioTransport(sys.executable, [str(server.script)], env=server.env)
    return await pydantic_ai_answer(provider, MCPToolset(transport))


async def agents_run(provider: ProviderSimulator, server: Server) -> str:
    from agents.mcp import MCPServerStdio

    params = {"command": sys.executable, "args": [str(server.script)], "env": server.env}
    return await agents_answer(provider, MCPServerStdio(params=params, name="orders"))  # type: ignore[arg-type]


Run = Callable[[ProviderSimulator, Server], Any]


async def record_then_replay(
    run: Run, provider: ProviderSimulator, server: Server, cassette_dir: Path
) -> tuple[str, str]:
    provider.tool_plan = ["lookup_order"]
    hosts = [provider.base_url]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts, name=run.__name__):
        live = await run(provider, server)
    assert server.started >= 1
    started, served = server.started, provider.served
    server.remove()
    provider.stop()
    with ghostrun.session(
        mode="replay", cassette_dir=cassette_dir, hosts=hosts, name=run.__name__
    ) as replay:
        replayed = await run(provider, server)
        ghostrun.expect_trajectory(replay).at_most_steps(2)  # model calls only: 1 tool call too
    assert server.started == started  # no process in replay
    assert provider.served == served  # no connection either
    return live, replayed


@pytest.mark.pydantic_ai
async def test_pydantic_ai_stdio_toolset_replays(
    provider: ProviderSimulator, server: Server, cassette_dir: Path
) -> None:
    live, replayed = await record_then_replay(pydantic_ai_run, provider, server, cassette_dir)
    assert replayed == live
    assert "Order A123: shipped" in live  # the tool's answer reached the model
    kinds = {c.get("kind") for c in cassettes(cassette_dir)}
    assert "mcp-stdio" in kinds
    assert_trajectory_tells_the_run(cassette_dir)


def assert_trajectory_tells_the_run(cassette_dir: Path) -> None:
    """Model call, the tool call the MCP server answered, model call (the final answer step
    is the trajectory's own, not the road's)."""
    (path,) = (cassette_dir / "trajectories").glob("*.json")
    steps = [s for s in orjson.loads(path.read_bytes())["steps"] if s["session"] == 0]
    assert [s.get("kind", "model") for s in steps if s.get("kind") != "answer"] == [
        "model",
        "tool",
        "model",
    ]
    tool = steps[1]
    (mcp_cassette,) = [c for c in cassettes(cassette_dir) if c.get("kind") == "mcp-stdio"]
    assert tool == {
        "kind": "tool",
        "session": 0,
        "transport": "mcp-stdio",
        "server": "python orders_server.py",
        "tool": "lookup_order",
        "arguments": {"order_id": "A123"},
        "result": "Order A123: shipped on 2026-11-30, 2 items, carrier …",
        "key": mcp_cassette["key"],
        "response": 0,
    }
    assert steps[0]["tool_calls"] == [{"name": "lookup_order", "arguments": {"order_id": "A123"}}]


@pytest.mark.openai_agents
async def test_openai_agents_mcp_server_stdio_replays(
    provider: ProviderSimulator, server: Server, cassette_dir: Path
) -> None:
    live, replayed = await record_then_replay(agents_run, provider, server, cassette_dir)
    assert replayed == live
    assert "Order A123: shipped" in live
    assert_trajectory_tells_the_run(cassette_dir)


def test_doctor_lists_the_road() -> None:
    from ghostrun._intercept import _mcp_stdio
    from ghostrun._intercept._patch import ROADS

    assert "_mcp_stdio" in ROADS  # what ``ghostrun doctor`` surveys
    (adapter,) = _mcp_stdio.adapters()
    assert (adapter.road, adapter.distribution) == ("mcp-stdio", "mcp")
    assert adapter.check()


def test_an_mcp_without_the_hook_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:

    from ghostrun._intercept import _mcp_stdio

    monkeypatch.delattr(mcp.client.stdio, _mcp_stdio.HOOK)
    with pytest.raises(ghostrun.UnsupportedLibrary, match=r"mcp \d+\.\d+\.\d+ has no"):
        _mcp_stdio.McpStdioAdapter().check()


def test_show_reads_an_mcp_cassette(tmp_path: Path) -> None:
    import anyio

    server = Server(tmp_path / "server")
    directory = tmp_path / "cassettes"

    async def record() -> None:
        with ghostrun.session(mode="record", cassette_dir=directory):
            await lookup(server)

    anyio.run(record)
    (path,) = directory.glob("*.json")
    from ghostrun._store._validate import load
    from ghostrun._tools._show import render_file

    shown = render_file(path, load(path, "cassette"))  # type: ignore[arg-type]
    assert "mcp stdio cassette" in shown
    assert "LAUNCH python orders_server.py" in shown
    assert re.search(r'-> client  \{"id":\d+,"jsonrpc":"2.0","method":"tools/call"', shown)
    assert orjson.loads(path.read_bytes())["kind"] == "mcp-stdio"
