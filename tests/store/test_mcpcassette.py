"""The MCP stdio cassette's I/O-free core: the launch as stored, its key, the client's own ids,
tool calls paired with their answers, reading; and the trajectory's step kinds, checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ghostrun
from ghostrun._store._mcpcassette import (
    IdMap,
    Launch,
    ToolCalls,
    canonical_message,
    connection_key,
    launch_of,
    launch_secrets,
    parse_document,
    server_name,
)
from ghostrun._store._trajectory import load_trajectory

ROOT = "/work/project"
KEY = "sk-" + "launch0123456789abcdefXYZ"  # fake, assembled at run time


@pytest.mark.parametrize(
    ("command", "args", "stored"),
    [
        ("/usr/bin/python3.11", ["/work/project/tests/srv.py"], ("python", ["tests/srv.py"])),
        ("C:\\Python\\python.exe", ["srv.py"], ("python", ["srv.py"])),
        (
            "uvx",
            ["mcp-server-git", "--repository", "."],
            ("uvx", ["mcp-server-git", "--repository", "."]),
        ),
        ("node", ["/elsewhere/lib/server.js"], ("node", ["server.js"])),  # outside: its name
        ("npx", ["-y", "@scope/server", "/work/project"], ("npx", ["-y", "@scope/server", "."])),
        ("srv", ["--api-key", KEY], ("srv", ["--api-key", "[REDACTED]"])),
        ("srv", [f"--token={KEY}"], ("srv", ["--token=[REDACTED]"])),
        ("srv", [f"key {KEY}"], ("srv", ["key [REDACTED]"])),  # a key's shape anywhere
        ("srv", ["--max-tokens", "12"], ("srv", ["--max-tokens", "12"])),  # not a credential
    ],
)
def test_the_launch_is_stored_portable_and_without_credentials(
    command: str, args: list[str], stored: tuple[str, list[str]]
) -> None:
    launch = launch_of(command, args, [], None, ROOT)
    assert (launch.command, list(launch.args)) == stored
    assert KEY not in json.dumps(launch.to_json())


def test_the_environment_is_stored_by_name_and_its_secrets_known() -> None:
    env = {"GITHUB_TOKEN": "ghp_" + "a1B2c3D4e5F6g7H8", "REGION": "eu-west-1"}
    launch = launch_of("srv", [], list(env), "/work/project/sub", ROOT)
    assert launch.to_json() == {
        "command": "srv",
        "args": [],
        "env": ["GITHUB_TOKEN", "REGION"],
        "cwd": "sub",
    }
    assert launch_secrets([], env) == {env["GITHUB_TOKEN"]}
    assert launch_secrets(["--api-key", KEY], {}) == {KEY}


def test_the_key_is_the_launch_and_not_where_it_ran_nor_its_secrets() -> None:
    here = launch_of("/venv/bin/python", ["/work/project/srv.py"], ["A"], None, ROOT)
    there = launch_of("/usr/bin/python3", ["/ci/checkout/srv.py"], [], "/tmp", "/ci/checkout")
    assert connection_key(here) == connection_key(there)
    other = launch_of("python", ["srv.py", "--verbose"], [], None, ROOT)
    assert connection_key(other) != connection_key(here)
    with_key = launch_of("srv", ["--api-key", KEY], [], None, ROOT)
    rotated = launch_of("srv", ["--api-key", KEY.upper()], [], None, ROOT)
    assert connection_key(with_key) == connection_key(rotated)


@pytest.mark.parametrize(
    ("launch", "name"),
    [
        (Launch("python", ("tests/orders_server.py",)), "python orders_server.py"),
        (Launch("uvx", ("--from", "x", "mcp-server-git")), "uvx x"),
        (Launch("server", ()), "server"),
    ],
)
def test_the_server_is_named_by_command_and_first_argument(launch: Launch, name: str) -> None:
    assert server_name(launch) == name


def _json(value: Any) -> dict[str, Any]:
    return {"json": value}


@pytest.mark.parametrize(
    ("recorded", "sent", "equal"),
    [
        ({"id": 1, "method": "tools/list"}, {"id": 7, "method": "tools/list"}, True),
        ({"id": "a-1", "method": "ping"}, {"id": "b-2", "method": "ping"}, True),
        (
            {"id": 2, "method": "tools/call", "params": {"_meta": {"progressToken": 2}}},
            {"id": 5, "method": "tools/call", "params": {"_meta": {"progressToken": "t5"}}},
            True,
        ),
        (
            {"method": "initialize", "params": {"clientInfo": {"name": "mcp", "version": "1"}}},
            {"method": "initialize", "params": {"clientInfo": {"name": "mcp", "version": "2"}}},
            True,  # the client's own name and version: an upgrade changes them
        ),
        (
            {"method": "notifications/cancelled", "params": {"requestId": 3}},
            {"method": "notifications/cancelled", "params": {"requestId": 9}},
            True,
        ),
        (
            {"id": 2, "method": "tools/call", "params": {"arguments": {"order_id": "A"}}},
            {"id": 2, "method": "tools/call", "params": {"arguments": {"order_id": "B"}}},
            False,
        ),
        ({"id": 1, "method": "tools/list"}, {"id": 1, "method": "prompts/list"}, False),
        ({"method": "a", "params": {"id": 1}}, {"method": "a", "params": {"id": 2}}, False),
    ],
)
def test_client_messages_match_with_the_clients_own_ids_lenient(
    recorded: dict[str, Any], sent: dict[str, Any], equal: bool
) -> None:
    assert (canonical_message(_json(recorded)) == canonical_message(_json(sent))) is equal


def test_answers_carry_the_ids_the_client_used_this_time() -> None:
    ids = IdMap()
    ids.learn(
        _json({"id": 2, "method": "tools/call", "params": {"_meta": {"progressToken": 2}}}),
        _json({"id": 8, "method": "tools/call", "params": {"_meta": {"progressToken": "p8"}}}),
    )
    progress = {"method": "notifications/progress", "params": {"progressToken": 2}}
    assert json.loads(ids.answer(_json(progress)))["params"]["progressToken"] == "p8"
    assert json.loads(ids.answer(_json({"id": 2, "result": {}})))["id"] == 8
    sampling = {"id": 2, "method": "sampling/createMessage"}  # the server's own id: kept
    assert json.loads(ids.answer(_json(sampling)))["id"] == 2
    assert ids.answer({"text": "not json"}) == b"not json\n"


def test_a_tool_call_is_paired_with_its_answer() -> None:
    calls = ToolCalls()
    call = {"id": 4, "method": "tools/call", "params": {"name": "lookup", "arguments": {"a": 1}}}
    calls.sent(_json(call))
    calls.sent(_json({"id": 5, "method": "tools/list"}))
    assert calls.answered(_json({"id": 5, "result": {"tools": []}})) is None
    answer = {"id": 4, "result": {"content": [{"type": "text", "text": "found it"}]}}
    assert calls.answered(_json(answer)) == ("lookup", {"a": 1}, "found it", 0)
    calls.sent(_json({**call, "id": 6}))
    failed = {"id": 6, "error": {"code": -32602, "message": "no such order"}}
    assert calls.answered(_json(failed)) == ("lookup", {"a": 1}, "no such order", 1)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"kind": "websocket", "version": 1}, "not an MCP stdio cassette"),
        ({"kind": "mcp-stdio", "version": 9, "connections": []}, "format version 9"),
        ({"kind": "mcp-stdio", "version": 1}, '"connections" missing'),
        ({"kind": "mcp-stdio", "version": 1, "connections": [{}]}, 'needs a "launch"'),
        (
            {"kind": "mcp-stdio", "version": 1, "connections": [{"launch": {"command": 1}}]},
            '"launch.command"',
        ),
        (
            {
                "kind": "mcp-stdio",
                "version": 1,
                "connections": [{"launch": {"command": "x", "args": [], "env": [1]}}],
            },
            '"launch.env"',
        ),
        (
            {
                "kind": "mcp-stdio",
                "version": 1,
                "connections": [
                    {"launch": {"command": "x", "args": []}, "messages": [{"close": {}}]}
                ],
            },
            "messages[0]: unknown entry 'close'",
        ),
        (
            {
                "kind": "mcp-stdio",
                "version": 1,
                "connections": [
                    {"launch": {"command": "x", "args": []}, "messages": [{"client": {"b": 1}}]}
                ],
            },
            "messages[0].client: expected one of json, text",
        ),
    ],
)
def test_a_malformed_cassette_names_the_field(document: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match="connections\\[0\\]|" + problem) as caught:
        parse_document(document, "x.json")
    assert problem in str(caught.value)


TOOL_STEP = {
    "kind": "tool",
    "session": 0,
    "transport": "mcp-stdio",
    "server": "python orders_server.py",
    "tool": "lookup_order",
    "arguments": {"order_id": "A123"},
    "result": "Order A123: shipped",
    "key": "0" * 32,
    "response": 0,
}


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({**TOOL_STEP, "kind": "robot"}, "steps[0].kind"),
        ({**TOOL_STEP, "transport": "carrier-pigeon"}, "steps[0].transport"),
        ({k: v for k, v in TOOL_STEP.items() if k != "tool"}, "steps[0].tool: missing"),
        ({**TOOL_STEP, "response": -1}, "steps[0].response"),
        ({"kind": "answer", "session": 0}, "steps[0].text: missing"),
        ({"kind": "answer", "session": 0, "text": 3}, "steps[0].text"),
    ],
)
def test_a_bad_step_of_any_kind_is_named(tmp_path: Path, step: Any, field: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 1, "test": "t", "steps": [step]}))
    with pytest.raises(ghostrun.CassetteError) as caught:
        load_trajectory(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_the_three_kinds_of_step_read_back(tmp_path: Path) -> None:
    model = {
        "session": 0,
        "method": "POST",
        "endpoint": "https://api.openai.com/v1/chat/completions",
        "key": "1" * 32,
        "response": 0,
        "prompt": "Where is A123?",
        "model": "gpt-4o-mini",
        "tool_calls": [],
        "tokens": None,
    }
    steps = [model, TOOL_STEP, {"kind": "answer", "session": 0, "text": "It shipped."}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 1, "test": "t", "steps": steps}))
    found = load_trajectory(path)
    assert found is not None and found["steps"] == steps
