"""A loopback tool API: what an agent's HTTP tool calls, with the volatile values real APIs have.

``GET /tracking/<order id>`` answers JSON with the shipment's status and a fresh
``checked_at`` (the time now) and ``request_id`` (a new uuid) on every call, as a
real shipment API does: a tool result that changes on each run, so the next model
request changes too. ``POST /refunds`` answers likewise from its JSON body. It
counts the requests it served, so a test can say that a replay reached it 0 times.
It listens on 127.0.0.1 only and stops at once (`Served`).
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from simulator import Served

__all__ = ["ToolApi"]


class ToolApi(Served):
    """The shipment API an agent's tool calls: counted, fresh values in every answer."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    def start(self) -> Self:
        """Listen on an ephemeral port (the same one again after a ``stop()``)."""
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", self._port or 0), _handler(self))
            self._server.daemon_threads = True
            self._port = self._server.server_address[1]
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("ToolApi was never started")
        return self._port

    @property
    def host(self) -> str:
        """The host as ``tool_hosts=`` names it: ``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    @property
    def served(self) -> int:
        with self._lock:
            return len(self.paths)

    def answer(self, method: str, target: str, body: bytes) -> dict[str, Any]:
        with self._lock:
            self.paths.append(f"{method} {target}")
        parts = urlsplit(target)
        fresh = {"checked_at": datetime.now(UTC).isoformat(), "request_id": str(uuid.uuid4())}
        if parts.path.startswith("/tracking/"):
            order = parts.path.rsplit("/", 1)[1]
            query = dict(parse_qsl(parts.query))
            return {"order": order, "status": "in transit", "carrier": "DHL", **query, **fresh}
        request = json.loads(body or b"{}")
        return {"refund": request.get("order_id"), "status": "issued", **fresh}


def _handler(api: ToolApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            data = json.dumps(api.answer(self.command, self.path, body)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the suite's output is the tests'."""

    return Handler
