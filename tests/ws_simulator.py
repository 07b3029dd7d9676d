"""The loopback provider's WebSocket side: Realtime, Responses over WebSocket, and an echo.

A companion of `simulator.ProviderSimulator` (whose HTTP server cannot take
an upgrade): a ``websockets.sync.server`` on 127.0.0.1 with an ephemeral
port, one thread per connection, stopped by the test. It counts the
connections it accepted and keeps every frame it received, so a test can
prove that a replay never connected.

Routes (by path):

- ``/v1/realtime``: the Realtime API's event shapes. ``session.created`` on
  connect, ``session.updated``,
  ``conversation.item.created``, and for ``response.create`` the text deltas
  (``response.output_text.delta``) or, when the session asks for audio, base64
  audio deltas (``response.output_audio.delta``, with their transcript), then
  ``response.done``. The reply is ``"Echo: <last user text>"``.
- ``/v1/responses``: Responses over WebSocket, as openai-agents sends it: a
  ``response.create`` frame answered by the Responses streaming events up to
  ``response.completed``; a function call when tools are offered and the user
  text mentions an order, then a text answer once the tool's output comes back.
- ``...BidiGenerateContent``: Gemini Live (JSON in binary frames): ``setupComplete``
  for the ``setup`` frame, then the reply in ``serverContent`` pieces and ``turnComplete``.
- ``/text``: answers each text frame with ``"you said <it>"`` in plain text frames (cut
  by ``pieces``), then ``"[end]"``.
- ``/echo``: echoes text frames as ``{"echo": ...}`` JSON, binary frames
  reversed; the text ``"close"`` makes the server close with 1000 ``"bye"``.

With ``echo_auth`` set, the Realtime greeting repeats the credential the
handshake carried (as a misbehaving provider might) and hands out an
ephemeral client secret (``ek_…``), to test masking.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator import Served
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

__all__ = ["WebSocketSimulator"]

JSON = dict[str, Any]
AUDIO = bytes(range(256)) * 8  # 2 KiB of "audio", deterministic


@dataclass
class WebSocketSimulator(Served):
    """A started WebSocket provider on 127.0.0.1 (use as a context manager)."""

    echo_auth: bool = False
    tls: bool = False  # wss with a self-signed certificate for 127.0.0.1 (`client_ssl` trusts it)
    connections: int = 0
    received: list[Any] = field(default_factory=list)
    handshakes: list[JSON] = field(default_factory=list)
    pieces: Callable[[str], list[str]] = field(default=lambda text: _pieces(text))  # the deltas

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = 0
        self._server: Any = None
        self._port = 0
        self._thread: threading.Thread | None = None

    def start(self) -> WebSocketSimulator:
        self.client_ssl: ssl.SSLContext | None = None
        server_ssl = None
        if self.tls:
            server_ssl, self.client_ssl = _self_signed()
        self._server = serve(
            self._handle,
            "127.0.0.1",
            0,
            ssl=server_ssl,
            select_subprotocol=lambda _conn, offered: offered[0] if offered else None,
        )
        self._port = int(self._server.socket.getsockname()[1])  # kept once stopped, for replay
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    @property
    def port(self) -> int:
        return self._port

    def url(self, path: str = "") -> str:
        return f"{'wss' if self.tls else 'ws'}://127.0.0.1:{self.port}{path}"

    def _next(self, prefix: str) -> str:
        with self._lock:
            self._seq += 1
            return f"{prefix}_sim{self._seq:04d}"

    # -- connections --------------------------------------------------------------

    def _handle(self, ws: ServerConnection) -> None:
        request = ws.request
        path = request.path if request is not None else "/"
        headers = dict(request.headers.raw_items()) if request is not None else {}
        with self._lock:
            self.connections += 1
            self.handshakes.append({"path": path, "headers": headers})
        route = path.split("?")[0]
        try:
            if route.endswith("/realtime"):
                _Realtime(self, ws, headers).run()
            elif route.endswith("/responses"):
                self._responses(ws)
            elif route.endswith("BidiGenerateContent"):
                self._gemini_live(ws)
            elif route.endswith("/text"):
                self._text(ws)
            else:
                self._echo(ws)
        except ConnectionClosed:
            pass

    def _frames(self, ws: ServerConnection) -> Any:
        for message in ws:
            with self._lock:
                self.received.append(message)
            yield message

    def _echo(self, ws: ServerConnection) -> None:
        for message in self._frames(ws):
            if message == "close":
                ws.close(1000, "bye")
                return
            if isinstance(message, bytes):
                ws.send(message[::-1])
            else:
                ws.send(json.dumps({"echo": message}))

    def _text(self, ws: ServerConnection) -> None:
        """A server that streams its answer as plain text frames, cut by ``pieces``."""
        for message in self._frames(ws):
            for piece in self.pieces(f"you said {message}"):
                ws.send(piece)
            ws.send("[end]")

    # -- Gemini Live ---------------------------------------------------------------------

    def _gemini_live(self, ws: ServerConnection) -> None:
        """Gemini's Live API: JSON in binary frames, a setup handshake, then turns."""
        for message in self._frames(ws):
            event = json.loads(message)
            if "setup" in event:
                ws.send(json.dumps({"setupComplete": {}}).encode())
                continue
            content = event.get("clientContent") or event.get("client_content") or {}
            turns = content.get("turns") or []
            parts = turns[-1].get("parts") if turns else []
            text = " ".join(str(p.get("text", "")) for p in parts or [])
            for piece in _pieces(f"Echo: {text}"):
                content = {"modelTurn": {"role": "model", "parts": [{"text": piece}]}}
                ws.send(json.dumps({"serverContent": content}).encode())
            ws.send(json.dumps({"serverContent": {"turnComplete": True}}).encode())

    # -- Responses over WebSocket -------------------------------------------------------

    def _responses(self, ws: ServerConnection) -> None:
        for message in self._frames(ws):
            event = json.loads(message)
            if event.get("type") != "response.create":
                ws.send(json.dumps({"type": "error", "error": {"message": "unknown event"}}))
                continue
            for out in self._response_events(event):
                ws.send(json.dumps(out))

    def _response_events(self, request: JSON) -> list[JSON]:
        items = request.get("input")
        items = items if isinstance(items, list) else [{"role": "user", "content": items}]
        last = items[-1] if items else {}
        tools = [t.get("name") for t in request.get("tools") or []]
        after_tool = last.get("type") == "function_call_output"
        text = str(last.get("output") if after_tool else _text(last.get("content")))
        response_id = self._next("resp")
        if tools and not after_tool and "order" in text.lower():
            item: JSON = {
                "type": "function_call",
                "id": self._next("fc"),
                "call_id": self._next("call"),
                "name": tools[0],
                "arguments": json.dumps({"order_id": "A123"}),
                "status": "completed",
            }
            deltas: list[JSON] = []
        else:
            answer = f"Echo: {text}"
            content = {"type": "output_text", "text": answer, "annotations": [], "logprobs": []}
            item = {
                "type": "message",
                "id": self._next("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [content],
            }
            deltas = [
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                    "sequence_number": 0,
                }
                for piece in self.pieces(answer)
            ]
        response = _response(response_id, request, [])
        done = _response(response_id, request, [item])
        events: list[JSON] = [
            {"type": "response.created", "response": response},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            *deltas,
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]
        for number, event in enumerate(events):
            event["sequence_number"] = number
        return events


class _Realtime:
    """One Realtime session: its state, and the events it answers with."""

    def __init__(self, sim: WebSocketSimulator, ws: ServerConnection, headers: JSON) -> None:
        self.sim, self.ws, self.headers = sim, ws, headers
        self.session: JSON = {
            "id": sim._next("sess"),
            "object": "realtime.session",
            "type": "realtime",
            "model": "gpt-realtime",
            "output_modalities": ["text"],
            "instructions": "",
        }
        self.last_text = ""

    def send(self, event: JSON) -> None:
        event.setdefault("event_id", self.sim._next("event"))
        self.ws.send(json.dumps(event))

    def run(self) -> None:
        greeting: JSON = {"type": "session.created", "session": dict(self.session)}
        if self.sim.echo_auth:  # and an ephemeral client secret: both must be masked
            secret = {"value": "ek_sim0123456789abcdef", "expires_at": 0}
            greeting["session"]["client_secret"] = secret
            greeting["session"]["instructions"] = f"auth: {self.headers.get('Authorization')}"
        self.send(greeting)
        for message in self.sim._frames(self.ws):
            event = json.loads(message)
            kind = event.get("type")
            if kind == "session.update":
                self.session.update(event.get("session") or {})
                self.send({"type": "session.updated", "session": dict(self.session)})
            elif kind == "conversation.item.create":
                item = dict(event.get("item") or {})
                item.setdefault("id", self.sim._next("item"))
                self.last_text = _text(item.get("content"))
                self.send({"type": "conversation.item.created", "item": item})
            elif kind == "response.create":
                self.respond()
            else:
                self.send({"type": "error", "error": {"type": "invalid_request_error"}})

    def respond(self) -> None:
        response_id = self.sim._next("resp")
        item_id = self.sim._next("item")
        answer = f"Echo: {self.last_text}"
        audio = "audio" in (self.session.get("output_modalities") or [])
        self.send(
            {"type": "response.created", "response": {"id": response_id, "status": "in_progress"}}
        )
        if audio:
            for chunk in (AUDIO[:1024], AUDIO[1024:]):
                self.send(
                    {
                        "type": "response.output_audio.delta",
                        "response_id": response_id,
                        "item_id": item_id,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": base64.b64encode(chunk).decode("ascii"),
                    }
                )
            kind, done = "response.output_audio_transcript.delta", "output_audio"
        else:
            kind, done = "response.output_text.delta", "output_text"
        for piece in self.sim.pieces(answer):
            self.send(
                {
                    "type": kind,
                    "response_id": response_id,
                    "item_id": item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                }
            )
        content = {"type": done, ("transcript" if audio else "text"): answer}
        output = [{"id": item_id, "type": "message", "role": "assistant", "content": [content]}]
        self.send(
            {
                "type": "response.done",
                "response": {"id": response_id, "status": "completed", "output": output},
            }
        )


def _self_signed() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a fresh certificate for 127.0.0.1, and a client context trusting it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with tempfile.TemporaryDirectory() as folder:
        cert_path, key_path = f"{folder}/cert.pem", f"{folder}/key.pem"
        with open(cert_path, "wb") as out:
            out.write(pem)
        with open(key_path, "wb") as out:
            out.write(key_pem)
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cadata=pem.decode("ascii"))
    return server, client


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word if i == 0 else " " + word for i, word in enumerate(words)]


def _response(response_id: str, request: JSON, output: list[JSON]) -> JSON:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": "completed" if output else "in_progress",
        "model": request.get("model", "gpt-sim"),
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 8,
        },
    }
