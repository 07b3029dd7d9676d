"""WebSocket cassettes (DESIGN §3) through the real clients: websockets (sync and asyncio),
openai Realtime (sync and async), openai-agents' Responses WebSocket transport.

Each records against the loopback WebSocket provider, then replays with the
provider stopped: the count of accepted connections proves replay never
connected.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import websockets.asyncio.client as aio_client
import websockets.sync.client as sync_client
from helpers import ROOT, cassettes
from websockets.exceptions import ConnectionClosedOK
from ws_simulator import AUDIO, WebSocketSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)
API_KEY = "sk-" + "proj-wsSECRET0123456789abcdef"  # assembled: no key shape is committed


@pytest.fixture
def ws_provider() -> Iterator[WebSocketSimulator]:
    with WebSocketSimulator() as simulator:
        yield simulator


def _session(cassette_dir: Path, mode: str) -> ghostrun.Session:
    return ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode=mode)


# -- a raw websockets client ---------------------------------------------------------


def _raw_sync(url: str) -> list[Any]:
    seen: list[Any] = []
    with sync_client.connect(url, subprotocols=["chat"]) as ws:
        seen.append(ws.subprotocol)
        ws.send("hello")
        seen.append(json.loads(ws.recv()))
        ws.send(b"\x01\x02\x03")
        seen.append(ws.recv())
        ws.send("close")
        with pytest.raises(ConnectionClosedOK) as closed:
            ws.recv()
        seen.append((closed.value.rcvd.code, closed.value.rcvd.reason))
    return seen


async def _raw_async(url: str) -> list[Any]:
    seen: list[Any] = []
    async with aio_client.connect(url) as ws:
        await ws.send("hello")
        seen.append(json.loads(await ws.recv()))
        await ws.send(b"\x01\x02\x03")
        seen.append(await ws.recv(decode=False))
        await ws.send("close")
        seen.extend([json.loads(m) if isinstance(m, str) else m async for m in ws])
        seen.append((ws.close_code, ws.close_reason))
    return seen


def test_raw_sync_client_records_then_replays_without_connecting(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")
    with _session(cassette_dir, "auto") as recording:
        live = _raw_sync(url)
    assert live == ["chat", {"echo": "hello"}, b"\x03\x02\x01", (1000, "bye")]
    assert (recording.recorded, ws_provider.connections) == (1, 1)
    ws_provider.stop()
    with _session(cassette_dir, "replay") as replay:
        assert _raw_sync(url) == live
    assert (replay.replayed, ws_provider.connections) == (1, 1)


def test_raw_asyncio_client_records_then_replays_without_connecting(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")

    async def both() -> tuple[list[Any], list[Any]]:
        async with _session(cassette_dir, "auto"):
            live = await _raw_async(url)
        ws_provider.stop()
        async with _session(cassette_dir, "replay") as replay:
            replayed = await _raw_async(url)
        assert replay.replayed == 1
        return live, replayed

    live, replayed = asyncio.run(both())
    assert live == [{"echo": "hello"}, b"\x03\x02\x01", (1000, "bye")]
    assert replayed == live
    assert ws_provider.connections == 1


def test_the_cassette_is_readable_json_text_and_base64_with_the_close(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, "auto"):
        _raw_sync(ws_provider.url("/echo?key=AIzaQueryKEY0123456789"))
    (document,) = cassettes(cassette_dir)
    assert (document["kind"], document["version"]) == ("websocket", 1)
    (conversation,) = document["conversations"]
    assert conversation["handshake"]["url"] == ws_provider.url("/echo")  # key= dropped
    assert conversation["handshake"]["subprotocol"] == "chat"
    assert conversation["frames"] == [
        {"client": {"text": "hello"}},
        {"server": {"json": {"echo": "hello"}}},
        {"client": {"base64": base64.b64encode(b"\x01\x02\x03").decode()}},
        {"server": {"base64": base64.b64encode(b"\x03\x02\x01").decode()}},
        {"client": {"text": "close"}},
        {"close": {"by": "server", "code": 1000, "reason": "bye"}},
    ]


@pytest.mark.parametrize("closes", [True, False], ids=["then-closes", "left-open"])
def test_recv_timeout_in_replay_raises_timeout_error_when_nothing_more_comes(
    ws_provider: WebSocketSimulator, cassette_dir: Path, closes: bool
) -> None:
    """Whether the recording goes on (the client's close) or simply ends (left open)."""
    url = ws_provider.url("/echo")

    def talk() -> None:
        ws = sync_client.connect(url)
        ws.send("ping?")
        assert json.loads(ws.recv(timeout=5)) == {"echo": "ping?"}
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.2)
        if closes:
            ws.close()

    with _session(cassette_dir, "auto"):
        talk()
    ws_provider.stop()
    with _session(cassette_dir, "replay") as replay:
        talk()
    assert replay.replayed == 1


def test_a_changed_client_frame_is_a_miss_whose_diff_shows_the_change(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")
    with _session(cassette_dir, "auto"):
        with sync_client.connect(url) as ws:
            ws.send(json.dumps({"type": "greet", "text": "hello"}))
            ws.recv()
            ws.send(json.dumps({"type": "ask", "text": "Where is my refund?"}))
            ws.recv()
    ws_provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as missed:
        with _session(cassette_dir, "replay") as replay:
            with sync_client.connect(url) as ws:
                ws.send(json.dumps({"type": "greet", "text": "hello"}))
                ws.recv()
                ws.send(json.dumps({"type": "ask", "text": "Where is my parcel?"}))
    message = str(missed.value)
    assert "differs from the recording" in message
    assert '-text: "Where is my refund?"' in message
    assert '+text: "Where is my parcel?"' in message
    assert len(replay.misses) == 1
    assert ws_provider.connections == 1


def test_replay_without_any_recording_is_a_miss_before_connecting(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    with pytest.raises(ghostrun.CacheMiss, match="no recorded WebSocket conversation"):
        with _session(cassette_dir, "replay"):
            sync_client.connect(ws_provider.url("/echo"))
    assert ws_provider.connections == 0


def test_the_same_conversation_twice_replays_in_order_and_auto_records_past_the_end(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/v1/realtime")  # each session greets with its own id

    def greeting() -> str:
        with sync_client.connect(url) as ws:
            ws.send(json.dumps({"type": "session.update", "session": {}}))
            return str(json.loads(ws.recv())["session"]["id"])

    with _session(cassette_dir, "auto"):
        first, second = greeting(), greeting()
    assert first != second and ws_provider.connections == 2
    with _session(cassette_dir, "auto") as again:
        replayed_two, third = [greeting(), greeting()], greeting()
    assert replayed_two == [first, second] and third not in (first, second)
    assert (again.replayed, again.recorded, ws_provider.connections) == (2, 1, 3)
    ws_provider.stop()
    with _session(cassette_dir, "replay"):
        assert [greeting() for _ in range(4)] == [first, second, third, third]  # then the last


def _update(instructions: str) -> str:
    return json.dumps({"type": "session.update", "session": {"instructions": instructions}})


def _greeted_sync(url: str, instructions: str) -> tuple[str, str]:
    """The greeting's type, then the instructions the server took (it speaks first)."""
    with sync_client.connect(url) as ws:
        greeting = json.loads(ws.recv())["type"]
        ws.send(_update(instructions))
        return greeting, json.loads(ws.recv())["session"]["instructions"]


async def _greeted_asyncio(url: str, instructions: str) -> tuple[str, str]:
    async with aio_client.connect(url) as ws:
        greeting = json.loads(await ws.recv())["type"]
        await ws.send(_update(instructions))
        return greeting, json.loads(await ws.recv())["session"]["instructions"]


async def _greeted_aiohttp(url: str, instructions: str) -> tuple[str, str]:
    import aiohttp

    async with aiohttp.ClientSession() as client, client.ws_connect(url) as ws:
        greeting = (await ws.receive_json())["type"]
        await ws.send_str(_update(instructions))
        return greeting, (await ws.receive_json())["session"]["instructions"]


GREETED = {
    "sync": _greeted_sync,
    "asyncio": lambda url, text: asyncio.run(_greeted_asyncio(url, text)),
    "aiohttp": lambda url, text: asyncio.run(_greeted_aiohttp(url, text)),
}


@pytest.mark.parametrize("client", sorted(GREETED))
def test_auto_goes_live_after_a_replayed_greeting_when_the_first_frame_is_new(
    client: str, ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url, greeted = ws_provider.url("/v1/realtime"), GREETED[client]

    def talk(instructions: str) -> tuple[str, str]:
        result: tuple[str, str] = greeted(url, instructions)
        return result

    with _session(cassette_dir, "auto"):
        assert talk("be brief") == ("session.created", "be brief")
    with _session(cassette_dir, "auto") as again:
        assert talk("be kind") == ("session.created", "be kind")  # live: not the recording's
    assert (again.replayed, again.recorded, ws_provider.connections) == (0, 1, 2)
    ws_provider.stop()
    with _session(cassette_dir, "replay"):
        assert talk("be kind") == ("session.created", "be kind")
        assert talk("be brief") == ("session.created", "be brief")


def test_a_connection_that_fails_writes_no_cassette(cassette_dir: Path) -> None:
    from simulator import closed_port_url

    url = closed_port_url().replace("http://", "ws://") + "/echo"
    with _session(cassette_dir, "record") as recording:
        with pytest.raises(OSError):
            sync_client.connect(url, open_timeout=5)
    assert recording.recorded == 0
    assert not list(cassette_dir.glob("*.json"))


def test_client_generated_event_ids_are_matched_leniently(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")
    ids = iter(["evt_Ab3dE5gH7jK9mN1p", "evt_Zy8xW6vU4tS2rQ0o"])

    def talk() -> Any:
        with sync_client.connect(url) as ws:
            event_id = next(ids)  # each run generates its own
            ws.send(json.dumps({"type": "ping", "event_id": event_id, "text": "hi"}))
            return json.loads(ws.recv())["echo"]

    with _session(cassette_dir, "auto"):
        first = talk()
    ws_provider.stop()
    with _session(cassette_dir, "replay") as replay:
        assert talk() == first  # recorded frame, recorded answer, whatever the new id
    assert replay.replayed == 1


def test_ignore_fields_apply_to_client_frames(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")

    def talk(trace: str, **session: Any) -> Any:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, **session):
            with sync_client.connect(url) as ws:
                ws.send(json.dumps({"type": "ask", "metadata": {"trace_id": trace}}))
                return json.loads(ws.recv())

    ignoring = ["metadata.trace_id"]  # as for HTTP, the same at record and at replay
    first = talk("trace-1", mode="auto", ignore_fields=ignoring)
    ws_provider.stop()
    assert talk("trace-2", mode="replay", ignore_fields=ignoring) == first
    with pytest.raises(ghostrun.CacheMiss, match="starts with this frame") as missed:
        talk("trace-2", mode="replay")
    assert '-metadata.trace_id: "trace-1"' in str(missed.value)
    assert '+metadata.trace_id: "trace-2"' in str(missed.value)


def test_normalize_applies_to_client_frames_and_the_conversations_key(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    """A timestamp the app writes into its frames, the first one (the key) and a later one,
    matches under ``normalize=``, as in a request body; without it, the first frame misses."""
    url = ws_provider.url("/echo")

    def talk(day: str, **session: Any) -> Any:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, **session):
            with sync_client.connect(url) as ws:
                ws.send(json.dumps({"type": "hello", "at": f"{day}T09:00:00Z"}))
                ws.recv()
                ws.send(json.dumps({"type": "ask", "at": f"{day}T09:00:05Z"}))
                return json.loads(ws.recv())

    first = talk("2026-12-06", mode="auto", normalize=["iso_datetime"])
    ws_provider.stop()
    assert talk("2026-12-07", mode="replay", normalize=["iso_datetime"]) == first
    with pytest.raises(ghostrun.CacheMiss, match="starts with this frame"):
        talk("2026-12-07", mode="replay")


# -- aiohttp ws_connect ----------------------------------------------------------------------


async def _aiohttp_talk(url: str) -> list[Any]:
    import aiohttp

    seen: list[Any] = []
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.ws_connect(url, protocols=["chat"]) as ws:
            seen.append(ws.protocol)
            await ws.send_json({"type": "hello", "n": 1})
            seen.append(await ws.receive_json(timeout=5))
            await ws.send_bytes(b"\x01\x02")
            seen.append(await ws.receive_bytes())
            await ws.send_str("close")
            seen.extend([(msg.type.name, msg.data) async for msg in ws])
            seen.append((ws.closed, ws.close_code))
    return seen


def test_aiohttp_ws_connect_records_then_replays_without_connecting(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    url = ws_provider.url("/echo")

    async def both() -> tuple[list[Any], list[Any]]:
        async with _session(cassette_dir, "auto") as recording:
            live = await _aiohttp_talk(url)
        assert recording.recorded == 1
        ws_provider.stop()
        async with _session(cassette_dir, "replay") as replay:
            replayed = await _aiohttp_talk(url)
        assert replay.replayed == 1
        return live, replayed

    live, replayed = asyncio.run(both())
    assert live == ["chat", {"echo": '{"type": "hello", "n": 1}'}, b"\x02\x01", (True, 1000)]
    assert replayed == live
    assert ws_provider.connections == 1
    assert API_KEY.encode() not in b"".join(p.read_bytes() for p in cassette_dir.glob("*.json"))


# -- openai Realtime --------------------------------------------------------------------


def _realtime_client(ws: WebSocketSimulator, cls: Any = openai.OpenAI) -> Any:
    return cls(api_key=API_KEY, base_url="http://127.0.0.1:9/v1", websocket_base_url=ws.url("/v1"))


def _user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _realtime_sync(ws: WebSocketSimulator, modalities: list[str], text: str) -> list[Any]:
    events = []
    with _realtime_client(ws).realtime.connect(model="gpt-realtime") as conn:
        conn.session.update(session={"type": "realtime", "output_modalities": modalities})
        conn.conversation.item.create(item=_user_item(text))
        conn.response.create()
        for event in conn:
            events.append(event.to_dict())
            if event.type == "response.done":
                break
    return events


async def _realtime_async(ws: WebSocketSimulator, modalities: list[str], text: str) -> list[Any]:
    events = []
    client = _realtime_client(ws, openai.AsyncOpenAI)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        await conn.session.update(session={"type": "realtime", "output_modalities": modalities})
        await conn.conversation.item.create(item=_user_item(text))
        await conn.response.create()
        async for event in conn:
            events.append(event.to_dict())
            if event.type == "response.done":
                break
    return events


def _text_and_audio(events: list[Any]) -> tuple[str, bytes]:
    text = "".join(e["delta"] for e in events if e["type"].endswith("text.delta"))
    text += "".join(e["delta"] for e in events if e["type"].endswith("transcript.delta"))
    audio = b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"
    )
    return text, audio


def test_openai_realtime_sync_text_and_audio_replay_identically(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, "auto") as recording:
        text = _realtime_sync(ws_provider, ["text"], "Hello there")
        audio = _realtime_sync(ws_provider, ["audio"], "Say it aloud")
    assert recording.recorded == 2 and ws_provider.connections == 2
    assert _text_and_audio(text) == ("Echo: Hello there", b"")
    assert _text_and_audio(audio) == ("Echo: Say it aloud", AUDIO)
    ws_provider.stop()
    with _session(cassette_dir, "replay") as replay:
        assert _realtime_sync(ws_provider, ["audio"], "Say it aloud") == audio
        assert _realtime_sync(ws_provider, ["text"], "Hello there") == text
    assert replay.replayed == 2 and ws_provider.connections == 2


def test_openai_realtime_async_replays_identically(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    async def both() -> None:
        async with _session(cassette_dir, "auto"):
            live = await _realtime_async(ws_provider, ["audio"], "Hello there")
        assert _text_and_audio(live) == ("Echo: Hello there", AUDIO)
        ws_provider.stop()
        async with _session(cassette_dir, "replay") as replay:
            assert await _realtime_async(ws_provider, ["audio"], "Hello there") == live
        assert replay.replayed == 1

    asyncio.run(both())
    assert ws_provider.connections == 1


def test_a_changed_realtime_event_is_a_miss_with_its_diff(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, "auto"):
        _realtime_sync(ws_provider, ["text"], "Hello there")
    ws_provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as missed:
        with _session(cassette_dir, "replay"):
            _realtime_sync(ws_provider, ["text"], "Hello world")
    assert '-item.content[0].text: "Hello there"' in str(missed.value)
    assert '+item.content[0].text: "Hello world"' in str(missed.value)


def test_the_readme_shows_the_websocket_miss_as_printed(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    readme = (ROOT / "docs" / "websockets.md").read_text(encoding="utf-8")
    shown = readme.split("```text\nghostrun: a WebSocket frame to ")[1].split("```")[0]
    with _session(cassette_dir, "auto"):
        _realtime_sync(ws_provider, ["text"], "Hello there")
    ws_provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as missed:
        with _session(cassette_dir, "replay"):
            _realtime_sync(ws_provider, ["text"], "Hello world")
    printed = str(missed.value).split("ghostrun: a WebSocket frame to ")[1]
    url = ws_provider.url("/v1/realtime?model=gpt-realtime")
    printed = printed.replace(url, "wss://api.openai.com/v1/realtime?model=gpt-realtime")
    printed = printed.replace(str(cassette_dir), "/home/me/app/tests/cassettes")
    printed = re.sub(r" \(session [^)]*\)", "", printed)  # the test's id
    printed = re.sub(r"[0-9a-f]{32}", "d2992f526ee6e6581c2070d6b4dce770", printed)  # the port's
    assert printed == shown.rstrip("\n")


# -- openai-agents over the Responses WebSocket transport ------------------------------------


@pytest.mark.openai_agents
def test_agent_run_with_a_tool_over_the_websocket_transport_replays_identically(
    ws_provider: WebSocketSimulator, cassette_dir: Path
) -> None:
    from agents import Agent, OpenAIResponsesWSModel, RunConfig, Runner, function_tool

    calls: list[str] = []

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        calls.append(order_id)
        return f"order {order_id}: shipped"

    async def run() -> tuple[Any, list[str]]:
        client = _realtime_client(ws_provider, openai.AsyncOpenAI)
        model = OpenAIResponsesWSModel("gpt-sim", client)  # its connection is never closed
        agent = Agent(name="support", instructions="Help.", tools=[lookup_order], model=model)
        untraced = RunConfig(tracing_disabled=True)  # this run's, not the process's
        result = await Runner.run(agent, "Where is my order A123?", run_config=untraced)
        return result.final_output, [type(item).__name__ for item in result.new_items]

    async def both() -> None:
        async with _session(cassette_dir, "auto") as recording:
            live = await run()
        assert live == (
            "Echo: order A123: shipped",
            ["ToolCallItem", "ToolCallOutputItem", "MessageOutputItem"],
        )
        assert recording.recorded == 1  # one conversation, two model turns
        ws_provider.stop()
        async with _session(cassette_dir, "replay") as replay:
            assert await run() == live
        assert replay.replayed == 1

    asyncio.run(both())
    assert calls == ["A123", "A123"]
    assert ws_provider.connections == 1
    (document,) = cassettes(cassette_dir)
    frames = document["conversations"][0]["frames"]
    sent = [f["client"]["json"]["type"] for f in frames if "client" in f]
    assert sent == ["response.create", "response.create"]


# -- Gemini Live (google-genai, through the websockets asyncio client) ----------------------------


def test_gemini_live_replays_identically(cassette_dir: Path) -> None:
    from google import genai

    ws_provider = WebSocketSimulator(tls=True).start()  # the SDK always dials wss://

    async def talk() -> str:
        base = ws_provider.url("").replace("wss://", "https://")
        key = "AI" + "zaLiveKEY0123456789abcdefghijklmnopq"
        client = genai.Client(api_key=key, http_options={"base_url": base})
        client._api_client._websocket_ssl_ctx = {"ssl": ws_provider.client_ssl}  # trust it
        config = {"response_modalities": ["TEXT"]}
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(
                turns={"role": "user", "parts": [{"text": "Hello Gemini"}]}, turn_complete=True
            )
            return "".join([m.text async for m in live.receive() if m.text])

    async def both() -> None:
        async with _session(cassette_dir, "auto"):
            live = await talk()
        assert live == "Echo: Hello Gemini"
        ws_provider.stop()
        async with _session(cassette_dir, "replay") as replay:
            assert await talk() == live
        assert replay.replayed == 1

    try:
        asyncio.run(both())
    finally:
        ws_provider.stop()
    assert ws_provider.connections == 1
    (document,) = cassettes(cassette_dir)
    frames = document["conversations"][0]["frames"]
    assert {"server": {"binary_json": {"setupComplete": {}}}} in frames
    assert b"AIzaLiveKEY" not in (cassette_dir / f"{document['key']}.json").read_bytes()


# -- secrets --------------------------------------------------------------------------------


def test_no_credential_reaches_the_cassette(cassette_dir: Path) -> None:
    with WebSocketSimulator(echo_auth=True) as ws:
        with _session(cassette_dir, "auto"):
            _realtime_sync(ws, ["text"], f"my key is {API_KEY}, keep it")
            with sync_client.connect(
                ws.url("/echo?key=AI" + "zaQueryKEY0123456789abcdefghijklmn"),
                additional_headers={"api-key": "azureKEY0123456789"},
            ) as raw:
                raw.send(json.dumps({"type": "auth", "api_key": "fieldKEY0123456789"}))
                raw.recv()
                raw.send("again: azureKEY0123456789 and fieldKEY0123456789")
                raw.recv()
                raw.send("a session token: ek_embedded0123456789ab, in a sentence")
                raw.recv()
        handshake = ws.handshakes[0]["headers"]
        assert handshake["Authorization"] == f"Bearer {API_KEY}"  # it was sent
    files = list(cassette_dir.glob("*.json"))
    assert len(files) == 2
    secrets = [API_KEY, "AIzaQueryKEY", "azureKEY0123456789", "fieldKEY0123456789", "ek_"]
    for path in files:
        data = path.read_bytes()
        for frame in _base64_values(json.loads(data)):
            data += base64.b64decode(frame)
        for secret in secrets:
            assert secret.encode() not in data, (secret, path)
    assert "[REDACTED]" in "".join(p.read_text() for p in files)


@pytest.mark.parametrize("how", ["websockets URI user:password", "aiohttp auth="])
def test_basic_auth_the_library_adds_to_the_handshake_is_masked(
    how: str, cassette_dir: Path
) -> None:
    """websockets turns a URI's ``user:password`` into an Authorization header, and
    aiohttp its ``auth=`` (or the session's, or the URL's): neither is in the headers the
    caller passed, yet the server may echo it (the Realtime greeting here does)."""
    import aiohttp

    password = "p4ss-" + "Zq81xW0vK2mN7rT"  # assembled: no credential is committed
    token = base64.b64encode(f"svc:{password}".encode()).decode()

    def greeting(url: str, mode: str) -> Any:
        with _session(cassette_dir, mode):
            if how.startswith("websockets"):
                with sync_client.connect(url.replace("ws://", f"ws://svc:{password}@")) as ws:
                    return json.loads(ws.recv())

            async def talk() -> Any:
                auth = aiohttp.BasicAuth("svc", password)
                async with aiohttp.ClientSession() as http, http.ws_connect(url, auth=auth) as ws:
                    return await ws.receive_json()

            return asyncio.run(talk())

    with WebSocketSimulator(echo_auth=True) as ws:
        live = greeting(ws.url("/v1/realtime"), "record")
    assert live["session"]["instructions"] == f"auth: Basic {token}"  # it was echoed
    data = b"".join(p.read_bytes() for p in cassette_dir.glob("*.json"))
    for secret in (password, token, token[8:20]):
        assert secret.encode() not in data, secret
    replayed = greeting(ws.url("/v1/realtime"), "replay")
    assert replayed["session"]["instructions"] == "auth: [REDACTED]"


def test_a_key_the_model_spells_over_two_delta_events_is_masked(cassette_dir: Path) -> None:
    """Each side's JSON frames are masked together, as a stream's SSE events are: a model
    may spell a key over two ``response.output_text.delta`` events."""

    def cut(text: str) -> list[str]:
        at = text.index(API_KEY) + 9
        return [text[:at], text[at:]]

    with WebSocketSimulator(pieces=cut) as ws, _session(cassette_dir, "record") as recording:
        live = _realtime_sync(ws, ["text"], f"my key is {API_KEY}, keep it")
    deltas = [e["delta"] for e in live if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 2 and API_KEY not in deltas[0] and API_KEY in "".join(deltas)
    assert recording.recorded == 1
    data = b"".join(p.read_bytes() for p in cassette_dir.glob("*.json"))
    for piece in (API_KEY[:9], API_KEY[9:]):
        assert piece.encode() not in data, piece
    with _session(cassette_dir, "replay") as replay:
        again = _realtime_sync(ws, ["text"], f"my key is {API_KEY}, keep it")
    assert replay.replayed == 1
    assert "".join(e["delta"] for e in again if e["type"] == "response.output_text.delta") == (
        "Echo: my key is [REDACTED], keep it"
    )


def test_a_key_shape_the_client_sent_is_masked_where_the_server_echoes_it(
    cassette_dir: Path,
) -> None:
    """A secret-shaped value in a client frame (a key pasted into a prompt) is masked there,
    and also where the server repeats it, as an HTTP response's echo of its prompt is."""
    with WebSocketSimulator() as ws, _session(cassette_dir, "record"):
        with sync_client.connect(ws.url("/text")) as conn:
            conn.send(f"my key is {API_KEY}")
            assert "".join(iter(conn.recv, "[end]")) == f"you said my key is {API_KEY}"
    data = b"".join(p.read_bytes() for p in cassette_dir.glob("*.json"))
    assert API_KEY[:12].encode() not in data and b"[REDACTED]" in data


def test_a_key_spelled_over_two_plain_text_frames_is_masked(cassette_dir: Path) -> None:
    """A server may stream its answer as plain text frames; they are masked together too."""

    def cut(text: str) -> list[str]:
        at = text.index(API_KEY) + 9
        return [text[:at], text[at:]]

    def said(ws: WebSocketSimulator, mode: str) -> str:
        with _session(cassette_dir, mode), sync_client.connect(ws.url("/text")) as conn:
            conn.send(f"my key is {API_KEY}")
            return "".join(iter(conn.recv, "[end]"))

    with WebSocketSimulator(pieces=cut) as ws:
        assert said(ws, "record") == f"you said my key is {API_KEY}"
    data = b"".join(p.read_bytes() for p in cassette_dir.glob("*.json"))
    for piece in (API_KEY[:9], API_KEY[9:]):
        assert piece.encode() not in data, piece
    assert said(ws, "replay") == "you said my key is [REDACTED]"


@pytest.mark.usefixtures("forget_new_secrets")  # restores what the process remembered
def test_what_a_test_asserts_on_before_the_connection_closes_is_scrubbed_from_the_run_log(
    cassette_dir: Path,
) -> None:
    """A conversation's cassette is written when it closes, but a test asserts on its
    frames while it is open: the handshake's key, a client frame's credential field and
    the ephemeral secret the greeting hands out are scrubbed from the run log all the same."""
    from ghostrun._recording import _runlog
    from ghostrun._secrets._memory import MEMORY

    field_key = "fieldKEY" + "0123456789xyz"
    header_key = "0123456789abcdef" + "fedcba9876543210"  # no key shape: only remembering
    MEMORY.reset()
    log = _runlog.RunLog()
    with _runlog.PROCESS.collecting(log):
        with WebSocketSimulator(echo_auth=True) as ws, _session(cassette_dir, "record"):
            echo_url = ws.url("/echo")
            with sync_client.connect(echo_url, additional_headers={"api-key": header_key}) as conn:
                conn.send(json.dumps({"type": "auth", "api_key": field_key}))
                ghostrun.expect(conn.recv()).contains("echo")
                ghostrun.expect(f"sent with {header_key}").contains("sent")
            bearer = {"Authorization": f"Bearer {header_key}"}
            with sync_client.connect(ws.url("/v1/realtime"), additional_headers=bearer) as conn:
                ghostrun.expect(conn.recv()).contains("session.created")
    text = json.dumps(list(log.documents().values()))
    assert "session.created" in text and "sent with" in text
    for secret in (field_key, header_key, "ek_sim0123"):
        assert secret not in text, secret


def _base64_values(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "base64" and isinstance(item, str):
                yield item
            else:
                yield from _base64_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _base64_values(item)


# -- the command line ---------------------------------------------------------------------


def test_show_and_check_read_a_websocket_cassette(
    ws_provider: WebSocketSimulator, cassette_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ghostrun._recording import _runlog
    from ghostrun._tools import _cli

    url = ws_provider.url("/echo")
    with _session(cassette_dir, "auto"):
        _raw_sync(url)
    (path,) = cassette_dir.glob("*.json")
    assert _cli.main(["show", path.stem[:12], "--cassette-dir", str(cassette_dir)]) == 0
    shown = capsys.readouterr().out
    assert f"CONVERSATION 1 of 1  {url}  (subprotocol chat)" in shown
    assert '  -> client  hello\n  <- server  {"echo":"hello"}\n' in shown
    assert "  <- server  3 bytes of binary data\n" in shown
    assert "  x closed by server: 1000 'bye'" in shown

    def run(talks: bool) -> None:
        with _runlog.PROCESS.collecting(_runlog.RunLog()):
            with _session(cassette_dir, "replay"):
                if talks:
                    _raw_sync(url)
            _runlog.write_run()

    run(talks=True)
    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 0  # the replay used it
    capsys.readouterr()
    run(talks=False)  # now no test used it
    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 1
    assert f"{path.name}  WEBSOCKET {url}" in capsys.readouterr().out
