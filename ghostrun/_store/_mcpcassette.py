"""MCP-over-stdio cassettes: the connection format, its key and replay's id matching (no I/O).

One connection of an MCP client to a server it launched over stdio is one
conversation of its cassette (DESIGN §1, §3)::

    {
      "version": 1,
      "kind": "mcp-stdio",
      "key": "<32 hex digits>",
      "connections": [
        {"launch": {"command": "python", "args": ["tests/orders_server.py"],
                    "env": ["ORDERS_TOKEN"], "cwd": null},
         "messages": [{"client": {"json": {"id": 1, "method": "initialize", ...}}},
                      {"server": {"json": {"id": 1, "result": {...}}}}, ...]}
      ]
    }

The launch. ``command`` is the executable's base name (``python3.11`` and
``python.exe`` read as ``python``, so a recording replays from another
interpreter path); ``args`` the arguments, a path inside the project made
relative to it and one outside it cut to its base name, secret-shaped values and
the value of a credential option (``--api-key VALUE``) masked; ``env`` the
*names* of the variables the client set for the server, never their values;
``cwd`` relative to the project when inside it, else its base name.

The messages are every newline-delimited JSON-RPC message of the connection,
both ways, in the order the client saw them (a server message follows every
client message sent before the client read it), stored as WebSocket frames are
(`_wscassette`: ``json``, or ``text`` for a line that is not JSON): requests,
responses, server requests (sampling, elicitation, roots) and the client's
replies, notifications (progress, logging, list changes).

The key is the launch: ``sha256`` of the command's base name and the
arguments as stored. Connections with the same launch in one session replay
the recorded connections in order (the test's order), as repeated HTTP
requests do; environment values and the working directory are not part of it,
so a recording made with one token replays with another.

Matching. Each message the client sends is compared with the recorded client
message at its position, canonical JSON (sorted keys, ``ignore_fields`` and
credential fields removed), with the ids the client makes up itself made equal:
a message's ``id``, its ``params._meta.progressToken``, a cancellation's
``params.requestId``, and the client's own ``params.clientInfo`` (its name and
version, which an upgrade changes). `IdMap` then answers the client with its own
ids: a recorded response to the recorded id 7 is handed on with the id the
client sent this time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath
from typing import Any, Final

import orjson

from .._core._normalize import Normalizer
from .._secrets._credentials import SECRET_SHAPES, could_be_credential, is_credential_param
from .._secrets._mask import MASK
from ._formats import Frame, FrameEvent, LaunchRecord, McpConnectionRecord, McpStdioFile
from ._keys import canonical_body, match_key
from ._wscassette import ID_PLACEHOLDER, decode_frame, parse_items

__all__ = [
    "FORMAT_VERSION",
    "KIND",
    "Connection",
    "IdMap",
    "Launch",
    "ToolCalls",
    "canonical_message",
    "connection_key",
    "document",
    "launch_of",
    "launch_secrets",
    "message_of",
    "parse_document",
    "result_text",
    "server_name",
    "tool_called",
]

FORMAT_VERSION = 1
KIND: Final = "mcp-stdio"
_INTERPRETER = re.compile(r"(python|pypy)[0-9.]*", re.IGNORECASE)
_OPTION = re.compile(r"(-{1,2}[A-Za-z0-9][\w-]*)=(.*)", re.DOTALL)


@dataclass(frozen=True)
class Launch:
    """How a server was launched, as stored: no environment value, no credential."""

    command: str
    args: tuple[str, ...]
    env: tuple[str, ...] = ()
    cwd: str | None = None

    def to_json(self) -> LaunchRecord:
        return {
            "command": self.command,
            "args": list(self.args),
            "env": list(self.env),
            "cwd": self.cwd,
        }

    @property
    def shown(self) -> str:
        """The command line as messages show it: ``python tests/orders_server.py``."""
        return " ".join((self.command, *self.args))


def launch_of(
    command: str,
    args: list[str],
    env_names: list[str],
    cwd: str | os.PathLike[str] | None,
    root: str,
) -> Launch:
    """The stored launch of a server (see the module docstring); ``root``: the project."""
    return Launch(
        _base(command),
        tuple(_stored_args(args, root)),
        tuple(sorted(set(env_names))),
        None if cwd is None else _place(str(cwd), root),
    )


def _base(command: str) -> str:
    name = PurePath(command.replace("\\", "/")).name or command
    if name.lower().endswith(".exe"):
        name = name[:-4]
    return "python" if _INTERPRETER.fullmatch(name) and "pypy" not in name.lower() else name


def _stored_args(args: list[str], root: str) -> list[str]:
    out: list[str] = []
    secret_next = False
    for arg in args:
        if secret_next:
            out.append(MASK)
            secret_next = False
            continue
        option = _OPTION.fullmatch(arg)
        if option is not None and is_credential_param(option.group(1).lstrip("-")):
            out.append(f"{option.group(1)}={MASK}")
            continue
        if arg.startswith("-") and is_credential_param(arg.lstrip("-")):
            secret_next = True
            out.append(arg)
            continue
        out.append(SECRET_SHAPES.sub(MASK, _place(arg, root)))
    return out


def launch_secrets(args: list[str], env: dict[str, str]) -> frozenset[str]:
    """The credentials a launch carried: credential-named variables' values, secret shapes in
    any value, the value of a credential option. Never written; masked where a message shows
    one (a server may echo its token)."""
    found = {v for n, v in env.items() if is_credential_param(n) and could_be_credential(v)}
    for value in (*args, *env.values()):
        found.update(m.group(0) for m in SECRET_SHAPES.finditer(value))
    for before, arg in zip(["", *args], args, strict=False):
        option = _OPTION.fullmatch(arg)
        if option is not None and is_credential_param(option.group(1).lstrip("-")):
            found.add(option.group(2))
        elif before.startswith("-") and is_credential_param(before.lstrip("-")):
            found.add(arg)
    return frozenset(v for v in found if could_be_credential(v))


def _place(value: str, root: str) -> str:
    """An absolute path: relative to the project inside it, its base name outside it."""
    if not os.path.isabs(value):
        return value
    try:
        relative = os.path.relpath(value, root)
    except ValueError:  # another drive (Windows)
        return PurePath(value).name
    if relative == os.curdir:
        return "."
    if relative.startswith(os.pardir):
        return PurePath(value).name
    return PurePosixPath(*PurePath(relative).parts).as_posix()


def connection_key(launch: Launch) -> str:
    """The cassette key of every connection with this launch."""
    body = orjson.dumps([launch.command, list(launch.args)])
    return match_key("MCP-STDIO", f"mcp-stdio://{launch.command}", body)


def server_name(launch: Launch) -> str:
    """``python orders_server.py``: the command and its first non-option argument's base name."""
    first = next((a for a in launch.args if not a.startswith("-")), None)
    return launch.command if first is None else f"{launch.command} {PurePosixPath(first).name}"


@dataclass
class Connection:
    """One recorded connection: its launch, then its messages in the client's order."""

    launch: Launch
    events: list[FrameEvent] = field(default_factory=list)

    def to_json(self) -> McpConnectionRecord:
        return {"launch": self.launch.to_json(), "messages": self.events}


def message_of(frame: Frame) -> Any:
    """A stored message as JSON (None for a line that is not JSON)."""
    return frame.get("json") if "json" in frame else None


# -- matching ---------------------------------------------------------------------------------


def canonical_message(
    frame: Frame, ignore: Sequence[tuple[str, ...]] = (), normalize: Normalizer | None = None
) -> bytes:
    """A client message as matching sees it: the client's own ids made equal, and the shapes
    the session's ``normalize=`` names (a date or a uuid in a tool's arguments)."""
    if "json" not in frame:
        text = str(frame.get("text", ""))
        return b"text:" + (text if normalize is None else normalize.text(text)).encode("utf-8")
    value = orjson.dumps(_lenient(frame["json"]))
    return b"json:" + canonical_body(value, "application/json", ignore, normalize)


def _lenient(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out = dict(message)
    if "id" in out:
        out["id"] = ID_PLACEHOLDER
    params = out.get("params")
    if isinstance(params, dict):
        params = dict(params)
        for name in ("requestId", "clientInfo"):
            if name in params:
                params[name] = ID_PLACEHOLDER
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            params["_meta"] = {**meta, "progressToken": ID_PLACEHOLDER}
        out["params"] = params
    return out


class IdMap:
    """The client's ids this time for the ids it used when recorded, to answer with its own."""

    def __init__(self) -> None:
        self._ids: dict[bytes, Any] = {}
        self._tokens: dict[bytes, Any] = {}

    def learn(self, recorded: Frame, sent: Frame) -> None:
        """A client message matched its recording: remember the ids it made up."""
        then, now = message_of(recorded), message_of(sent)
        if not (isinstance(then, dict) and isinstance(now, dict)):
            return
        if "method" in then and "id" in then and "id" in now:
            self._ids[orjson.dumps(then["id"])] = now["id"]
        token_then, token_now = _progress_token(then), _progress_token(now)
        if token_then is not None and token_now is not None:
            self._tokens[orjson.dumps(token_then)] = token_now

    def answer(self, frame: Frame) -> bytes:
        """A recorded server message as this client is to read it: one line, its ids mapped."""
        value = message_of(frame)
        if not isinstance(value, dict):
            data = decode_frame(frame)
            return (data if isinstance(data, bytes) else data.encode("utf-8")) + b"\n"
        value = dict(value)
        if "method" not in value and "id" in value:
            value["id"] = self._ids.get(orjson.dumps(value["id"]), value["id"])
        params = value.get("params")
        if isinstance(params, dict):
            params = dict(params)
            if "progressToken" in params:
                token = orjson.dumps(params["progressToken"])
                params["progressToken"] = self._tokens.get(token, params["progressToken"])
            if "requestId" in params:
                params["requestId"] = self._ids.get(
                    orjson.dumps(params["requestId"]), params["requestId"]
                )
            value["params"] = params
        return orjson.dumps(value) + b"\n"


def _progress_token(message: dict[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def tool_called(frame: Frame | None) -> tuple[str, Any] | None:
    """``(tool, arguments)`` if ``frame`` is a ``tools/call`` request."""
    message = None if frame is None else message_of(frame)
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    return str(params.get("name")), params.get("arguments")


class ToolCalls:
    """The ``tools/call`` requests of one connection, paired with their answers as they pass.

    Each answered call is ``(tool, arguments, result text, its place among the connection's
    calls)``: a tool step of the trajectory (DESIGN §3).
    """

    def __init__(self) -> None:
        self.pending: dict[bytes, tuple[str, Any, int]] = {}
        self.count = 0

    def sent(self, frame: Frame) -> None:
        called, message = tool_called(frame), message_of(frame)
        if called is not None and isinstance(message, dict) and "id" in message:
            self.pending[orjson.dumps(message["id"])] = (*called, self.count)
            self.count += 1

    def answered(self, frame: Frame) -> tuple[str, Any, str, int] | None:
        message = message_of(frame)
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return None
        found = self.pending.pop(orjson.dumps(message["id"]), None)
        if found is None:
            return None
        tool, arguments, index = found
        return tool, arguments, result_text(message), index


def result_text(message: dict[str, Any]) -> str:
    """What a ``tools/call`` answer says: its text content joined, or its error's message."""
    error = message.get("error")
    if isinstance(error, dict):
        return str(error.get("message", ""))
    result = message.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    texts = [
        str(part["text"])
        for part in content or []
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return " ".join(texts)


# -- the file ---------------------------------------------------------------------------------


def document(key: str, connections: list[Connection]) -> McpStdioFile:
    return {
        "version": FORMAT_VERSION,
        "kind": KIND,
        "key": key,
        "connections": [c.to_json() for c in connections],
    }


def parse_document(data: Any, path: str) -> list[Connection]:
    """The connections of an MCP cassette; ValueError naming the field if malformed."""
    kind = (KIND, FORMAT_VERSION, "an MCP stdio cassette")
    return parse_items(data, path, kind, "connections", _connection)


def _connection(raw: Any) -> Connection:
    if not isinstance(raw, dict) or not isinstance(raw.get("launch"), dict):
        raise ValueError('a connection needs a "launch" object')
    launch, messages = raw["launch"], raw.get("messages")
    command, args, env = launch.get("command"), launch.get("args"), launch.get("env", [])
    if not isinstance(command, str):
        raise ValueError('"launch.command": expected a string')
    for name, value in (("args", args), ("env", env)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'"launch.{name}": expected a list of strings')
    cwd = launch.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError('"launch.cwd": expected a string or null')
    if not isinstance(messages, list):
        raise ValueError('"messages": expected a list')
    for index, event in enumerate(messages):
        _check_message(event, index)
    return Connection(Launch(command, tuple(args), tuple(env), cwd), list(messages))


def _check_message(event: Any, index: int) -> None:
    if not isinstance(event, dict) or len(event) != 1:
        raise ValueError(f"messages[{index}] must have exactly one of client, server")
    ((side, frame),) = event.items()
    if side not in ("client", "server"):
        raise ValueError(f"messages[{index}]: unknown entry {side!r}")
    if not isinstance(frame, dict) or len(frame) != 1 or not ("json" in frame or "text" in frame):
        raise ValueError(f"messages[{index}].{side}: expected one of json, text")
    if "text" in frame and not isinstance(frame["text"], str):
        raise ValueError(f"messages[{index}].{side}.text: expected a string")
