"""The MCP-over-stdio road (DESIGN §1): an MCP client's connections to servers it launches.

The hook is ``mcp.client.stdio._create_platform_compatible_process``, the
module function ``stdio_client`` calls, at run time, to start the server: every
stdio client goes through it (``mcp``'s own ``stdio_client``; fastmcp's
``StdioTransport``, which pydantic-ai's ``MCPToolset`` uses; openai-agents'
``MCPServerStdio``), even one that imported ``stdio_client`` by name before the
session opened. What it returns is the process whose stdin and stdout carry
the newline-delimited JSON-RPC messages; under a session it returns one of:

- `TapedProcess` (record, and ``auto`` without a recording): the real process,
  every line both ways taped; the connection is written (`_store._mcpcassette`)
  when the client closes the server's stdout, or when the session closes;
- `PlayedProcess` (replay, and ``auto`` with a recording): no process at all.
  Each line the client writes is matched with the recorded client message at
  its place; the server messages recorded after it are read back at once, with
  the client's own ids (`_mcpcassette.IdMap`). A message that differs is a
  `CacheMiss` with a diff, in any mode (half a connection cannot go on live):
  booked, so the session raises it as it exits, and answered, when the message
  is a request, with a JSON-RPC error that carries the same text, so the client's
  call fails at once instead of waiting for an answer that will never come.

In ``replay`` a launch with no recording is refused (`CacheMiss`) before any
process starts, naming the command. Outside a session, and inside
``bypass_interception``, the server starts as usual. An mcp without `HOOK`
leaves the road unhooked, and then mcp starting a server inside a session
raises `UnsupportedLibrary` (`McpStdioAdapter.refuse`).

Which connection replays: the cassette key is the launch (`_mcpcassette`:
command base name and arguments); the n-th connection with one launch in a
session replays the n-th recorded one; past the last, ``replay`` repeats the
last and ``auto`` records another.

Each ``tools/call`` answered, taped or played, is told to the deck
(`Deck.tool_used`): a tool step of the test's trajectory.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from .._core import _project
from .._core._exceptions import CacheMiss, CassetteError, UnsupportedLibrary
from .._core._files import dump_json, ensure_dir, write_atomic
from .._core._lock import cassette_lock
from .._core._modes import Mode
from .._recording._deck import Deck
from .._recording._session import current_deck, passing_through
from .._recording._steps import ToolUse
from .._secrets._memory import remember_secrets
from .._store import _validate
from .._store._formats import Frame, FrameEvent
from .._store._mcpcassette import (
    Connection,
    IdMap,
    Launch,
    ToolCalls,
    canonical_message,
    connection_key,
    document,
    launch_of,
    launch_secrets,
    parse_document,
    server_name,
    tool_called,
)
from .._store._wscassette import Script, encode_frame, frame_diff
from .._store._wsredact import redact_event, redact_events, secrets_of
from ._patch import Footprint, Restore, library, replace
from ._wslink import hooked

__all__ = ["HOOK", "McpStdioAdapter", "PlayedProcess", "TapedProcess", "adapters"]

HOOK = "_create_platform_compatible_process"
_NO_PID = 2**31 - 1  # no process: a pid no signal can reach, should anything send one


def adapters() -> list[McpStdioAdapter]:
    """This road's adapter, for `_patch.ROADS`."""
    return [McpStdioAdapter()]


class McpStdioAdapter:
    """Replaces `HOOK` in ``mcp.client.stdio``; waits for the ``mcp`` package, whose
    ``__init__`` imports the stdio client."""

    waits_for = distribution = "mcp"
    road = "mcp-stdio"
    footprint = Footprint(("mcp.client.stdio",))

    def __init__(self) -> None:
        self.stdio: ModuleType | None = None

    def check(self) -> bool:
        if library("mcp") is None:
            return False
        self.stdio = importlib.import_module("mcp.client.stdio")
        if not callable(self.stdio.__dict__.get(HOOK)):
            from importlib import metadata  # only here: an unsupported release, said once

            raise UnsupportedLibrary(
                f"mcp {metadata.version('mcp')} has no mcp.client.stdio.{HOOK}, the function "
                "its stdio client starts a server with, which ghostrun replaces to record and "
                "replay MCP servers over stdio. Install an mcp ghostrun supports "
                "(docs/roads.md): pip install 'mcp>=1.21.2,<3'."
            )
        return True

    def refuse(self, error: UnsupportedLibrary) -> Restore:
        """The hook is missing: inside a session, mcp starting a server raises ``error``.

        Installed on ``anyio.open_process``, which mcp's stdio client starts every
        server with (a module attribute, looked up at each call), for calls from
        mcp's own modules: never a server run live and unrecorded (DESIGN §1).
        """
        anyio = importlib.import_module("anyio")
        return replace((anyio, "open_process", _refusing(anyio.open_process, str(error))))

    def install(self) -> Restore:
        stdio = self.stdio or importlib.import_module("mcp.client.stdio")
        # mcp asserts the anyio Process type before it kills a process tree.
        process_type = importlib.import_module("anyio.abc").Process
        process_type.register(TapedProcess)
        process_type.register(PlayedProcess)
        return replace((stdio, HOOK, _hook(stdio.__dict__[HOOK], stdio)))


def _hook(original: Callable[..., Any], stdio: ModuleType) -> Callable[..., Any]:
    signature = inspect.signature(original)

    async def create_process(*args: Any, **kwargs: Any) -> Any:
        deck = None if passing_through() else current_deck()
        if deck is None:
            return await original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        link = open_connection(deck, given, _inherited(stdio))
        if isinstance(link, Player):
            return PlayedProcess(link, importlib.import_module("anyio"))
        return TapedProcess(await original(*args, **kwargs), link)

    create_process.__wrapped__ = original  # type: ignore[attr-defined]
    return create_process


def _refusing(original: Callable[..., Any], message: str) -> Callable[..., Any]:
    async def open_process(*args: Any, **kwargs: Any) -> Any:
        caller = str(sys._getframe(1).f_globals.get("__name__", ""))
        if caller.partition(".")[0] == "mcp" and not passing_through() and current_deck():
            raise UnsupportedLibrary(message)
        return await original(*args, **kwargs)

    open_process.__wrapped__ = original  # type: ignore[attr-defined]
    return open_process


def _inherited(stdio: ModuleType) -> frozenset[str]:
    """The variables every server inherits (``PATH``, ``HOME``...): not the caller's to name."""
    return frozenset(getattr(stdio, "DEFAULT_INHERITED_ENV_VARS", ()))


def open_connection(
    deck: Deck, given: dict[str, Any], inherited: frozenset[str]
) -> Player | Recorder:
    """What to do with this launch: play a recording, or start the server and tape it.

    Raises `CacheMiss` in ``replay`` when the launch was never recorded, before
    any process starts.
    """
    command, args = str(given.get("command")), [str(a) for a in given.get("args") or ()]
    env = {str(k): str(v) for k, v in (given.get("env") or {}).items()}
    root = str(_project.current().root or os.getcwd())
    names = [name for name in env if name not in inherited]
    launch = launch_of(command, args, names, given.get("cwd"), root)
    secrets = launch_secrets(args, env)
    remember_secrets(secrets)  # the run log scrubs what the test saw of them
    key = connection_key(launch)
    if deck.mode is not Mode.RECORD:
        connections = _recorded(deck, key)
        if connections:
            index = deck.next_index(key)
            if index < len(connections) or deck.mode is Mode.REPLAY:
                chosen = connections[min(index, len(connections) - 1)]
                return Player(deck, launch, key, chosen, secrets, min(index, len(connections) - 1))
            return Recorder(deck, launch, key, secrets)
        if deck.mode is Mode.REPLAY:
            deck.next_index(key)
            raise deck.book(_no_recording(deck, launch, key))
    deck.next_index(key)
    return Recorder(deck, launch, key, secrets)


def _recorded(deck: Deck, key: str) -> list[Connection]:
    try:
        return read_connections(deck.cassette_dir / f"{key}.json")
    except CassetteError as exc:  # raised in the client's connect: a miss's treatment
        raise deck.damaged(exc) from exc


def read_connections(path: Path) -> list[Connection]:
    """The connections of a cassette ([] if there is none); CassetteError naming the field."""
    data = _validate.load(path, "cassette")
    if data is None:
        return []
    try:
        return parse_document(data, str(path))
    except ValueError as exc:  # another kind of cassette under this key
        raise CassetteError(f"corrupt MCP stdio cassette {path}: {exc}") from exc


def _where(deck: Deck) -> list[str]:
    named = f" (session {deck.name})" if deck.name else ""
    return [f"  mode:         {deck.mode.value}{named}", f"  cassette dir: {deck.cassette_dir}"]


_RECORD_IT = (
    "  To record it, run once with GHOSTRUN_MODE=record (or pytest --ghostrun-record) "
    "with the server's command available."
)


def _no_recording(deck: Deck, launch: Launch, key: str) -> CacheMiss:
    return CacheMiss(
        "\n".join(
            [
                f"ghostrun: no recorded MCP stdio connection for `{launch.shown}`: "
                "the server was not started",
                *_where(deck),
                f"  expected:     {key}.json",
                _RECORD_IT,
            ]
        )
    )


def _url(launch: Launch) -> str:
    """The connection's address for the ``redact=`` hook, which sees messages as bodies."""
    return f"mcp-stdio://{server_name(launch)}"


def _stored(deck: Deck, launch: Launch, event: FrameEvent, secrets: frozenset[str]) -> FrameEvent:
    """One message as its cassette would hold it: masked, then as the user's hook leaves it."""
    return hooked(deck, _url(launch), redact_event(event, secrets), secrets)


def _tool_step(
    deck: Deck, launch: Launch, key: str, calls: ToolCalls, frame: Frame, recorded: bool
) -> None:
    """A server message that answers a ``tools/call``: a tool step of the trajectory."""
    answered = calls.answered(frame)
    if answered is not None:
        tool, arguments, result, index = answered
        server = server_name(launch)
        use = ToolUse("mcp-stdio", server, tool, arguments, result, key, index, recorded)
        deck.tool_used(use)


class _Lines:
    """Bytes as they come, cut into lines (a message may span reads, a read hold several)."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[str]:
        *lines, self.pending = (self.pending + bytes(data)).split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines if line.strip()]


# -- replay -------------------------------------------------------------------------------------


class Player:
    """One recorded connection played back: what the server would have written, line by line."""

    def __init__(
        self,
        deck: Deck,
        launch: Launch,
        key: str,
        connection: Connection,
        secrets: frozenset[str],
        index: int,
    ) -> None:
        self.deck, self.launch, self.key, self.secrets = deck, launch, key, secrets
        self.index = index
        self.script = Script(connection, deck.ignore, canonical_message, deck.normalizer)
        self.ids = IdMap()
        self.calls = ToolCalls()
        self.sent = 0
        self.broken = False  # a message differed: requests answered with an error from then on
        self.lock = threading.Lock()
        deck.count_replayed(1)

    def greeting(self) -> list[bytes]:
        """What the server said before the client's first message."""
        with self.lock:
            return self._due()

    def client(self, line: str) -> list[bytes]:
        """Match one client message; the lines the server answers it with."""
        event = _stored(self.deck, self.launch, {"client": encode_frame(line)}, self.secrets)
        frame = event["client"]
        with self.lock:
            self.sent += 1
            if not self.broken:
                result = self.script.match(frame)
                if result is True:
                    recorded = self.script.events[self.script.position - 1]["client"]
                    self.ids.learn(recorded, frame)
                    self.calls.sent(recorded)
                    return self._due()
                self.broken = True
                miss = self.deck.book(self._differs(result or None, frame))
                return _error_reply(frame, str(miss))
            return _error_reply(frame, "ghostrun: this MCP connection no longer replays")

    def _due(self) -> list[bytes]:
        out: list[bytes] = []
        while True:
            try:
                event = self.script.next_server_event()
            except EOFError:
                return out
            if event is None or "server" not in event:
                return out
            _tool_step(self.deck, self.launch, self.key, self.calls, event["server"], False)
            out.append(self.ids.answer(event["server"]))

    def _differs(self, recorded: Frame | None, sent: Frame) -> CacheMiss:
        called = tool_called(sent) or tool_called(recorded)
        what = f" (tools/call of {called[0]!r})" if called else ""
        lines = [
            f"ghostrun: an MCP message to `{self.launch.shown}` differs from the recording{what}",
            *_where(self.deck),
            f"  cassette:     {self.key}.json, connection {self.index + 1}, "
            f"client message {self.sent}",
            "  A connection cannot be half replayed: re-record it with GHOSTRUN_MODE=record "
            "(or pytest --ghostrun-record) with the server's command available.",
            *frame_diff(recorded, sent, f"{self.key}.json", "message"),
        ]
        return CacheMiss("\n".join(lines))


def _error_reply(frame: Frame, message: str) -> list[bytes]:
    """A JSON-RPC error answering a request (nothing for a notification or a reply)."""
    sent = frame.get("json")
    if not isinstance(sent, dict) or "method" not in sent or "id" not in sent:
        return []
    error = {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32603, "message": message}}
    return [orjson.dumps(error) + b"\n"]


class PlayedProcess:
    """Stands in for the server's process in replay: its stdin checks, its stdout plays.

    Shaped like anyio's ``Process`` (registered as one), which ``stdio_client``
    drives: closing stdin ends it with exit code 0, as a well-behaved server does.
    """

    def __init__(self, player: Player, anyio: ModuleType) -> None:
        send, receive = anyio.create_memory_object_stream(math.inf)
        self.stdin = _PlayedStdin(self, player, send)
        self.stdout = _PlayedStdout(receive, anyio)
        self.stderr = None
        self.pid = _NO_PID
        self.returncode: int | None = None
        for line in player.greeting():
            send.send_nowait(line)

    async def wait(self) -> int:
        return self.returncode or 0

    def terminate(self) -> None:
        self.returncode = self.returncode if self.returncode is not None else 0

    kill = terminate

    def send_signal(self, signal: object) -> None:
        self.terminate()

    async def aclose(self) -> None:
        await self.stdin.aclose()
        await self.stdout.aclose()

    async def __aenter__(self) -> PlayedProcess:  # mcp 1.x opens it as ``async with process``
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _PlayedStdin:
    def __init__(self, process: PlayedProcess, player: Player, stdout: Any) -> None:
        self.process, self.player, self.stdout = process, player, stdout
        self.lines = _Lines()

    async def send(self, item: bytes) -> None:
        for line in self.lines.feed(item):
            for answer in self.player.client(line):
                self.stdout.send_nowait(answer)

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.stdout.close()
        self.process.terminate()


class _PlayedStdout:
    def __init__(self, receive: Any, anyio: ModuleType) -> None:
        self.receive_stream, self.anyio = receive, anyio

    async def receive(self, max_bytes: int = 65536) -> bytes:
        anyio = self.anyio
        try:
            data: bytes = await self.receive_stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None
        return data

    async def aclose(self) -> None:
        self.receive_stream.close()


# -- record -------------------------------------------------------------------------------------


class Recorder:
    """Tapes one live connection and writes it once, however it ends."""

    def __init__(self, deck: Deck, launch: Launch, key: str, secrets: frozenset[str]) -> None:
        self.deck, self.key, self.secrets = deck, key, secrets
        self.connection = Connection(launch)
        self.calls = ToolCalls()
        self.lines = {"client": _Lines(), "server": _Lines()}
        self.lock = threading.Lock()
        self.done = True  # until the server started: a launch that failed writes nothing

    def started(self) -> None:
        self.done = False
        self.deck.on_close(self.finish)  # a connection the client never closed

    def taped(self, side: str, data: bytes) -> None:
        with self.lock:
            for line in self.lines[side].feed(data):
                frame = encode_frame(line)
                self.connection.events.append({side: frame})  # type: ignore[misc]
                if side == "client":
                    self.calls.sent(frame)
                else:
                    launch = self.connection.launch
                    _tool_step(self.deck, launch, self.key, self.calls, frame, True)

    def finish(self) -> None:
        """Write the connection (once); lines taped after this are not kept."""
        with self.lock:
            if self.done:
                return
            self.done = True
            launch = self.connection.launch
            found = secrets_of((), (), self.connection.events) | self.secrets
            events = redact_events(self.connection.events, found)
        deck = self.deck
        events = [hooked(deck, _url(launch), e, found) for e in events]
        connection = Connection(launch, events)
        path = deck.cassette_dir / f"{self.key}.json"
        with deck.writing(self.key) as fresh:
            ensure_dir(deck.cassette_dir)
            with cassette_lock(str(path)):  # read again under the lock: keep another's append
                kept = [] if fresh else read_connections(path)
                write_atomic(path, dump_json(document(self.key, [*kept, connection])))


class TapedProcess:
    """The live server's process, its stdin and stdout taped; everything else is its own."""

    def __init__(self, process: Any, recorder: Recorder) -> None:
        self._inner, self._recorder = process, recorder
        self.stdin = _TapedStdin(process.stdin, recorder)
        self.stdout = _TapedStdout(process.stdout, recorder)
        recorder.started()

    def __getattr__(self, name: str) -> Any:  # stderr, pid, returncode, wait, kill, _process...
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._recorder.finish()

    async def __aenter__(self) -> TapedProcess:  # mcp 1.x: ``async with process``, as anyio's
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _TapedStdin:
    def __init__(self, stream: Any, recorder: Recorder) -> None:
        self.stream, self.recorder = stream, recorder

    async def send(self, item: bytes) -> None:
        self.recorder.taped("client", item)
        await self.stream.send(item)

    def __getattr__(self, name: str) -> Any:  # aclose, send_eof...
        return getattr(self.stream, name)


class _TapedStdout:
    def __init__(self, stream: Any, recorder: Recorder) -> None:
        self.stream, self.recorder = stream, recorder

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data: bytes = await self.stream.receive(max_bytes)
        self.recorder.taped("server", data)
        return data

    async def aclose(self) -> None:
        await self.stream.aclose()
        self.recorder.finish()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
