"""A loopback LLM provider: the one fake upstream every ghostrun test talks to.

ghostrun intercepts real SDK traffic, so its tests need a server that speaks
each provider's real wire format (JSON, SSE, NDJSON, binary) closely enough
that the real SDKs parse it, and that can misbehave on demand (429s, broken
streams, gzip, delays). It listens on 127.0.0.1 only: the suite never reaches
the network.

Replies are deterministic and depend on the prompt (``"Echo: <last user
text>"``), so a test can tell which request produced which response. Ids carry
a per-server sequence number, so repeated identical requests get
distinguishable responses (needed to test ordered replay).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import hashlib
import html
import json
import re
import socket
import socketserver
import string
import struct
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = ["ProviderSimulator", "RawReply", "ReceivedRequest", "Served"]

JSON = dict[str, Any]
ReplyHook = Callable[[JSON], str]

DEFAULT_OLLAMA_MODELS = frozenset({"llama3.2:3b", "llama3.2"})
_ORDER_WORD = re.compile(r"\border", re.IGNORECASE)
_ORDER_ID = re.compile(r"\b[A-Z]{1,3}-?\d{2,}\b")
_CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
_FIXED_HEADERS = {
    "openai-processing-ms": "7",
    "openai-version": "2020-10-01",
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-reset-requests": "6ms",
    "x-ratelimit-limit-tokens": "200000",
    "x-ratelimit-remaining-tokens": "199990",
    "x-ratelimit-reset-tokens": "3ms",
}
_AWS_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_ERROR_NAMES = {
    400: ("invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "UNAUTHENTICATED"),
    404: ("not_found_error", "NOT_FOUND"),
    429: ("rate_limit_error", "RESOURCE_EXHAUSTED"),
    500: ("api_error", "INTERNAL"),
    503: ("overloaded_error", "UNAVAILABLE"),
}


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the simulator saw it, for assertions in tests."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: bytes
    json: Any | None


@dataclass
class _Fault:
    status: int
    remaining: int
    body: Any | None
    headers: dict[str, str]


@dataclass
class _Reply:
    """A response before it is written: a whole body, or events streamed one by one."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    events: list[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    break_after: int | None = None


@dataclass
class RawReply:
    """A reply written exactly as given, for the byte-for-byte fidelity tests.

    The status, then the headers in this order and spelling (no ``Server`` or
    ``Date`` of the simulator's own), then ``body`` with a content-length, or
    ``chunks`` one HTTP chunk each (transfer-encoding: chunked), so a client
    sees each chunk's boundary, even one inside a UTF-8 character.

    ``reason``: the status line's reason phrase (None: the standard one; ``""``
    sends none, as HTTP/1.1 allows). ``split_pause``: write each HTTP chunk in
    two TCP pieces, this many seconds apart, as a slow proxy does. ``gate``:
    wait for this event (set by the client) before the last chunk; if it never
    comes, the last chunk goes after `GATE_TIMEOUT` and ``gate_timed_out`` says so.
    """

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunks: list[bytes] | None = None
    reason: str | None = None
    split_pause: float = 0.0
    gate: threading.Event | None = None
    gate_timed_out: bool = False


GATE_TIMEOUT = 5.0


@dataclass(frozen=True)
class _Call:
    """A routed request: what a provider handler needs to build its reply."""

    request: ReceivedRequest
    seq: int
    params: dict[str, str]

    @property
    def body(self) -> JSON:
        if not isinstance(self.request.json, dict):
            raise _BadRequest("request body must be a JSON object")
        return self.request.json


@dataclass(frozen=True)
class _Conversation:
    """Provider-neutral view of a chat request: what the fake model reacts to."""

    text: str  # the last user text, or the last tool result
    after_tool: bool  # the conversation ends with a tool result
    tools: list[str]
    prompt_tokens: int
    tool_results: int = 0  # how many tool results the conversation holds


@dataclass(frozen=True)
class _Turn:
    """What the fake model answers: text, or a call to the first tool."""

    text: str
    tool: str | None
    args: JSON
    prompt_tokens: int

    @property
    def arguments(self) -> str:
        return json.dumps(self.args)

    @property
    def completion_tokens(self) -> int:
        return _count_tokens(self.arguments if self.tool else self.text)


class _BadRequest(Exception):
    """The request cannot be answered; becomes a provider-shaped 400."""


class Served:
    """A loopback server a test uses as a context manager: started on entry, stopped on exit.

    Subclasses supply ``start`` (returning the started server) and ``stop``.
    """

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class ProviderSimulator(Served):
    """Threaded HTTP/1.1 server imitating OpenAI, Anthropic, Groq, Ollama, Gemini and Bedrock.

    Attributes tests may set at any time:
      models: Ollama model names that exist (others get Ollama's 404).
      reply: fixed reply text, or a hook ``f(request_json) -> text``.
      model_replies: reply text by the request body's ``"model"`` (beats ``reply``), so a
        test can have two models answer differently (and use different tokens).
      judge_reply: hook ``f(request_json) -> text`` for ``/api/chat`` and
        ``/v1/chat/completions`` only, so an LLM judge can get verdicts.
      tool_call: ``None`` = call the first tool when tools are given and the
        prompt mentions an order; ``True`` = whenever tools are given; ``False``
        = never.
      tool_args: arguments of the tool call (default ``{"order_id": <id in prompt>}``).
      tool_plan: an agent's plan: when tools are given, the model calls these tools one
        a turn, in order (the n-th once the conversation holds n tool results), then
        answers in text. Beats ``tool_call``.
      gzip: gzip non-streamed JSON responses.
      delay: seconds to wait before answering.
      stream_delay: seconds to wait between streamed events.
      extra_response_headers: added to every response.
      echo_auth: append the received credential to reply texts.
      raw_replies: exact replies by name, served at ``/raw/<name>`` (see `RawReply`);
        a list of them is served one per request, in order, the last one repeated.

    Hostile settings (see "hostile echoes" below), for the secrets tests:
      delta_pieces: ``f(text) -> pieces`` splits a streamed reply into delta
        events (default: word by word), so a key can span two events.
      rechunk: ``f(events) -> chunks`` re-cuts a stream's bytes before they
        are written, as TCP may (inside an event, inside a character).
      signed_params: query parameters of the signed URL ``/hostile/redirect``
        sends its client to.
      sse_line_end: the line end of SSE streams (``"\\n"``; SSE also allows ``"\\r\\n"``
        and a lone ``"\\r"``).
      aws_padding: add the ``"p"`` padding field real Bedrock adds to each event-stream
        payload (a random-length run of letters, against length side channels).
    """

    def __init__(self, *, models: Iterable[str] = DEFAULT_OLLAMA_MODELS) -> None:
        self.models: set[str] = set(models)
        self.reply: str | ReplyHook | None = None
        self.judge_reply: ReplyHook | None = None
        self.model_replies: dict[str, str] = {}
        self.tool_call: bool | None = None
        self.tool_args: JSON | None = None
        self.tool_plan: list[str] | None = None
        self.gzip = False
        self.delay = 0.0
        self.stream_delay = 0.0
        self.extra_response_headers: dict[str, str] = {}
        self.raw_replies: dict[str, RawReply | list[RawReply]] = {}
        self._raw_served: dict[str, int] = {}
        self.echo_auth = False
        self.delta_pieces: Callable[[str], list[str]] | None = None
        self.rechunk: Callable[[list[bytes]], list[bytes]] | None = None
        self.signed_params: dict[str, str] = {}
        self.aws_padding = False
        self.sse_line_end = "\n"
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._faults: list[_Fault] = []
        self._break_after: int | None = None
        self._pads = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> ProviderSimulator:
        """Listen on an ephemeral port (the same one again after a ``stop()``)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self, self._port or 0)
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"provider-simulator:{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop at once: later connections are refused, open ones are cut.

        Tests read "simulator stopped" as "any real request now fails", so
        kept-alive connections in client pools must not survive either.
        """
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        server.cut_connections()
        thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("ProviderSimulator was never started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "") -> str:
        """``base_url`` joined with ``path`` (e.g. ``url("/v1")`` for OpenAI clients)."""
        return self.base_url + path

    # -- what was received -----------------------------------------------------

    @property
    def requests(self) -> list[ReceivedRequest]:
        """A snapshot of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def served(self) -> int:
        """How many requests reached the simulator (replayed ones never do)."""
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> ReceivedRequest:
        with self._lock:
            if not self._requests:
                raise AssertionError("the simulator received no request")
            return self._requests[-1]

    def reset(self) -> None:
        """Forget received requests and pending faults; settings are kept."""
        with self._lock:
            self._requests.clear()
            self._faults.clear()
            self._break_after = None

    # -- fault injection -------------------------------------------------------

    def fail_next(
        self,
        status: int,
        count: int = 1,
        body: Any | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next ``count`` requests with ``status`` and a provider-shaped error.

        Statuses the SDKs retry (408, 409, 429, 5xx) carry ``retry-after: 0`` and
        ``retry-after-ms: 1`` unless ``headers`` say otherwise: the OpenAI-style
        SDKs read ``retry-after: 0`` alone as "no hint" and back off for 0.5 s or
        more, while ``retry-after-ms`` makes their retries instant.
        """
        retryable = status in (408, 409, 429) or status >= 500
        defaults = {"retry-after": "0", "retry-after-ms": "1"} if retryable else {}
        with self._lock:
            self._faults.append(_Fault(status, count, body, {**defaults, **(headers or {})}))

    def break_stream_after(self, n_events: int) -> None:
        """Cut the connection of the next streamed response after ``n_events`` events."""
        with self._lock:
            self._break_after = n_events

    # -- request handling (called from server threads) -------------------------

    def _record(self, request: ReceivedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            if not self._faults:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.pop(0)
            return fault

    def _take_raw(self, name: str) -> RawReply | None:
        with self._lock:
            found = self.raw_replies.get(name)
            if not isinstance(found, list):
                return found
            index = self._raw_served.get(name, 0)
            self._raw_served[name] = index + 1
            return found[min(index, len(found) - 1)] if found else None

    def _take_stream_break(self) -> int | None:
        with self._lock:
            n, self._break_after = self._break_after, None
            return n

    def _respond(self, request: ReceivedRequest) -> _Reply | None:
        """Build the reply to one request; ``None`` means "drop the connection"."""
        seq = self._record(request)
        if self.delay and self._stopping.wait(self.delay):
            return None
        reply = self._dispatch(request, seq)
        if reply.events is not None:
            reply.break_after = self._take_stream_break()
            if self.sse_line_end != "\n" and "event-stream" in reply.content_type:
                end = self.sse_line_end.encode()  # JSON in a data line holds no raw newline
                reply.events = [event.replace(b"\n", end) for event in reply.events]
            if self.rechunk is not None:
                reply.events = self.rechunk(reply.events)
        reply.headers = {
            "x-request-id": f"req_sim{seq:04d}",
            "request-id": f"req_sim{seq:04d}",
            **_FIXED_HEADERS,
            **reply.headers,
            **self.extra_response_headers,
        }
        return reply

    def _dispatch(self, request: ReceivedRequest, seq: int) -> _Reply:
        kind = _provider_kind(request.path)
        fault = self._take_fault()
        if fault is not None:
            reply = _error(kind, fault.status, f"simulated {fault.status} error", fault.body)
            reply.headers.update(fault.headers)
            return reply
        for method, pattern, handler in _ROUTES:
            match = pattern.fullmatch(request.path)
            if match and request.method == method:
                try:
                    return handler(self, _Call(request, seq, match.groupdict()))
                except _BadRequest as exc:
                    return _error(kind, 400, str(exc))
                except Exception as exc:  # a bug here or in a test's hook: make it loud
                    traceback.print_exc()
                    return _error(kind, 500, f"simulator error: {exc!r}")
        return _error(kind, 404, f"no route for {request.method} {request.path}")

    # -- the fake model --------------------------------------------------------

    def _turn(self, call: _Call, conv: _Conversation, *, judge: bool = False) -> _Turn:
        """Decide the answer: a tool call, the judge hook, the reply override, or an echo."""
        plan = self.tool_plan
        if plan is not None and conv.tools and conv.tool_results < len(plan):
            args = self.tool_args or _default_tool_args(conv.text)
            return _Turn("", plan[conv.tool_results], args, conv.prompt_tokens)
        if plan is not None and conv.tools:
            conv = dataclasses.replace(conv, after_tool=True)  # the plan is done: answer
        if conv.tools and not conv.after_tool and self._wants_tool(conv.text):
            args = self.tool_args or _default_tool_args(conv.text)
            return _Turn("", conv.tools[0], args, conv.prompt_tokens)
        models = self.model_replies
        by_model = models.get(str(call.body.get("model"))) if models else None
        if judge and self.judge_reply is not None:
            text = self.judge_reply(call.body)
        elif by_model is not None:
            text = by_model
        elif callable(self.reply):
            text = self.reply(call.body)
        elif self.reply is not None:
            text = self.reply
        else:
            text = f"Echo: {conv.text}"
        if self.echo_auth:
            text += f" (auth: {_credential(call.request)})"
        return _Turn(text, None, {}, conv.prompt_tokens)

    def _wants_tool(self, text: str) -> bool:
        if self.tool_call is None:
            return bool(_ORDER_WORD.search(text))
        return self.tool_call

    # -- OpenAI (and Groq, which serves the same API under /openai) ------------

    def _openai_chat(self, call: _Call) -> _Reply:
        body = call.body
        turn = self._turn(call, _openai_conversation(body), judge=True)
        head = {
            "id": f"chatcmpl-sim{call.seq:04d}",
            "created": int(time.time()),
            "model": body.get("model", "gpt-sim"),
            "system_fingerprint": "fp_sim",
        }
        usage = _openai_usage(turn)
        finish = "tool_calls" if turn.tool else "stop"
        tool_call = {
            "id": f"call_sim{call.seq:04d}",
            "type": "function",
            "function": {"name": turn.tool, "arguments": turn.arguments},
        }
        with_logprobs = bool(body.get("logprobs"))
        if not body.get("stream"):
            message: JSON = {"role": "assistant", "content": turn.text, "refusal": None}
            if turn.tool:
                message.update(content=None, tool_calls=[tool_call])
            logprobs = _logprobs(turn.text) if with_logprobs and not turn.tool else None
            choice = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish}
            return _json({**head, "object": "chat.completion", "choices": [choice], "usage": usage})

        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: JSON, finish_reason: str | None = None) -> JSON:
            text = delta.get("content")
            logprobs = _logprobs(text) if with_logprobs and text else None
            choice = {
                "index": 0,
                "delta": delta,
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
            extra = {"usage": None} if with_usage else {}
            return {**head, "object": "chat.completion.chunk", "choices": [choice], **extra}

        if turn.tool:
            opening = {**tool_call, "index": 0, "function": {"name": turn.tool, "arguments": ""}}
            chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [opening]})]
            chunks += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in _pieces(turn.arguments)
            ]
        else:
            chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
            chunks += [chunk({"content": piece}) for piece in self._text_pieces(turn.text)]
        if call.request.path.startswith("/openai/"):
            chunks[0]["x_groq"] = {"id": f"req_sim{call.seq:04d}"}
        chunks.append(chunk({}, finish))
        if with_usage:
            chunks.append(
                {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}
            )
        return _sse([_sse_event(c) for c in chunks] + [b"data: [DONE]\n\n"])

    def _openai_responses(self, call: _Call) -> _Reply:
        body = call.body
        turn = self._turn(call, _responses_conversation(body))
        if turn.tool:
            item: JSON = {
                "type": "function_call",
                "id": f"fc_sim{call.seq:04d}",
                "call_id": f"call_sim{call.seq:04d}",
                "name": turn.tool,
                "arguments": turn.arguments,
                "status": "completed",
            }
        else:
            text = {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
            item = {
                "type": "message",
                "id": f"msg_sim{call.seq:04d}",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        now = int(time.time())
        return _json(
            {
                "id": f"resp_sim{call.seq:04d}",
                "object": "response",
                "created_at": now,
                "completed_at": now,
                "status": "completed",
                "model": body.get("model", "gpt-sim"),
                "output": [item],
                "error": None,
                "incomplete_details": None,
                "instructions": body.get("instructions"),
                "metadata": body.get("metadata") or {},
                "parallel_tool_calls": True,
                "temperature": 1.0,
                "top_p": 1.0,
                "tool_choice": body.get("tool_choice", "auto"),
                "tools": body.get("tools") or [],
                "text": {"format": {"type": "text"}},
                "usage": {
                    "input_tokens": turn.prompt_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": turn.completion_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": turn.prompt_tokens + turn.completion_tokens,
                },
            }
        )

    def _realtime_client_secret(self, call: _Call) -> _Reply:
        """A Realtime client secret, minted for a browser: an ephemeral key (``ek_…``)."""
        session = {"type": "realtime", "model": "gpt-realtime", **(call.body.get("session") or {})}
        value = "ek_" + hashlib.sha256(f"{call.seq}".encode()).hexdigest()[:32]
        return _json({"value": value, "expires_at": 1_900_000_000, "session": session})

    def _gemini_auth_token(self, call: _Call) -> _Reply:
        """A Gemini Live ephemeral token, minted for a browser (``auth_tokens/…``)."""
        name = "auth_tokens/" + hashlib.sha256(f"{call.seq}".encode()).hexdigest()[:40]
        return _json({"name": name, "uses": 1})

    def _gemini_upload_start(self, call: _Call) -> _Reply:
        """A resumable upload begins: the URL the bytes go to comes back in a header."""
        upload_id = hashlib.sha256(f"upload{call.seq}".encode()).hexdigest()[:24]
        url = self.url(f"/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable")
        return _Reply(
            body=b"", headers={"x-goog-upload-url": url, "x-goog-upload-status": "active"}
        )

    def _gemini_upload_bytes(self, call: _Call) -> _Reply:
        """The bytes of a resumable upload, finalized: the file's record."""
        size = len(call.request.body)
        record = {"name": f"files/sim{call.seq:04d}", "sizeBytes": str(size), "state": "ACTIVE"}
        return _Reply(
            body=json.dumps({"file": record}).encode(), headers={"x-goog-upload-status": "final"}
        )

    def _gemini_upload(self, call: _Call) -> _Reply:
        if call.request.query.get("upload_id"):
            return self._gemini_upload_bytes(call)
        return self._gemini_upload_start(call)

    def _audio_speech(self, call: _Call) -> _Reply:
        """Binary, non-UTF-8 audio that still depends on the input text."""
        text = str(call.body.get("input", ""))
        audio = bytes(range(256)) * 4 + hashlib.sha256(text.encode()).digest()
        return _Reply(body=audio, content_type="audio/mpeg")

    def _audio_transcription(self, call: _Call) -> _Reply:
        """A multipart upload (a file and form fields): the text says what arrived."""
        size = len(call.request.body)
        text = self.reply({}) if callable(self.reply) else f"Transcribed {size} bytes"
        return _json({"text": text})

    # -- Anthropic ---------------------------------------------------------------

    def _anthropic_messages(self, call: _Call) -> _Reply:
        body = call.body
        turn = self._turn(call, _anthropic_conversation(body))
        stop_reason = "tool_use" if turn.tool else "end_turn"
        tool_block = {"type": "tool_use", "id": f"toolu_sim{call.seq:04d}", "name": turn.tool}
        message: JSON = {
            "id": f"msg_sim{call.seq:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sim"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": turn.prompt_tokens,
                "output_tokens": turn.completion_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "service_tier": "standard",
            },
        }
        if not body.get("stream"):
            block = {**tool_block, "input": turn.args} if turn.tool else _text_block(turn.text)
            return _json({**message, "content": [block], "stop_reason": stop_reason})

        if turn.tool:
            start, delta_key, delta_type = (
                {**tool_block, "input": {}},
                "partial_json",
                "input_json_delta",
            )
            pieces = _pieces(turn.arguments)
        else:
            start, delta_key, delta_type = _text_block(""), "text", "text_delta"
            pieces = self._text_pieces(turn.text)
        opening = {**message, "usage": {**message["usage"], "output_tokens": 1}}
        events = [
            ("message_start", {"message": opening}),
            ("content_block_start", {"index": 0, "content_block": start}),
            ("ping", {}),
            *(
                ("content_block_delta", {"index": 0, "delta": {"type": delta_type, delta_key: p}})
                for p in pieces
            ),
            ("content_block_stop", {"index": 0}),
            (
                "message_delta",
                {
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": turn.completion_tokens},
                },
            ),
            ("message_stop", {}),
        ]
        return _sse([_sse_event({"type": name, **data}, name) for name, data in events])

    # -- Ollama ------------------------------------------------------------------

    def _ollama_chat(self, call: _Call) -> _Reply:
        body = call.body
        model = str(body.get("model", ""))
        if _ollama_name(model) not in {_ollama_name(m) for m in self.models}:
            return _error("ollama", 404, f'model "{model}" not found, try pulling it first')
        turn = self._turn(call, _ollama_conversation(body), judge=True)
        head = {"model": model, "created_at": _now_rfc3339()}
        message: JSON = {"role": "assistant", "content": turn.text}
        if turn.tool:
            message = {"role": "assistant", "content": "", "tool_calls": [_ollama_tool_call(turn)]}
        final = {
            **head,
            "done": True,
            "done_reason": "stop",
            "total_duration": 123_456_789,
            "load_duration": 1_234_567,
            "prompt_eval_count": turn.prompt_tokens,
            "prompt_eval_duration": 2_345_678,
            "eval_count": turn.completion_tokens,
            "eval_duration": 3_456_789,
        }
        if not body.get("stream", True):  # Ollama streams unless told otherwise
            return _json({**final, "message": message}, "application/json; charset=utf-8")
        parts = (
            [message]
            if turn.tool
            else [{"role": "assistant", "content": p} for p in _pieces(turn.text)]
        )
        lines = [{**head, "message": part, "done": False} for part in parts]
        lines.append({**final, "message": {"role": "assistant", "content": ""}})
        return _Reply(
            content_type="application/x-ndjson",
            events=[json.dumps(line).encode() + b"\n" for line in lines],
        )

    def _ollama_tags(self, call: _Call) -> _Reply:
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": "2025-01-01T00:00:00.000000000Z",
                "size": 2_019_393_189,
                "digest": hashlib.sha256(name.encode()).hexdigest(),
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "llama",
                    "families": ["llama"],
                    "parameter_size": "3.2B",
                    "quantization_level": "Q4_K_M",
                },
            }
            for name in sorted({_ollama_name(m) for m in self.models})
        ]
        return _json({"models": models}, "application/json; charset=utf-8")

    def _ollama_version(self, call: _Call) -> _Reply:
        return _json({"version": "0.6.3"}, "application/json; charset=utf-8")

    # -- Gemini ------------------------------------------------------------------

    def _gemini(self, call: _Call) -> _Reply:
        body, model = call.body, call.params["model"]
        turn = self._turn(call, _gemini_conversation(body))
        usage = {
            "promptTokenCount": turn.prompt_tokens,
            "candidatesTokenCount": turn.completion_tokens,
            "totalTokenCount": turn.prompt_tokens + turn.completion_tokens,
        }

        def chunk(parts: list[JSON], last: bool) -> JSON:
            candidate: JSON = {"content": {"parts": parts, "role": "model"}, "index": 0}
            if last:
                candidate["finishReason"] = "STOP"
            meta = usage if last else {"promptTokenCount": turn.prompt_tokens}
            return {
                "candidates": [candidate],
                "usageMetadata": meta,
                "modelVersion": model,
                "responseId": f"sim{call.seq:04d}",
            }

        if turn.tool:
            pieces: list[JSON] = [{"functionCall": {"name": turn.tool, "args": turn.args}}]
        else:
            pieces = [{"text": p} for p in self._text_pieces(turn.text)] or [{"text": ""}]
        if call.params["method"] == "generateContent":
            whole = [{"text": turn.text}] if not turn.tool else pieces
            return _json(chunk(whole, last=True))
        chunks = [chunk([p], last=i == len(pieces) - 1) for i, p in enumerate(pieces)]
        if call.request.query.get("alt") != "sse":  # without alt=sse Gemini streams a JSON array
            return _json(chunks)
        return _sse(
            [b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks],
            "text/event-stream",
        )

    # -- Bedrock (bedrock-runtime: Converse, ConverseStream, InvokeModel) ----------

    def _bedrock_converse(self, call: _Call) -> _Reply:
        turn = self._turn(call, _bedrock_conversation(call.body))
        block = _bedrock_tool_use(turn, call.seq) if turn.tool else {"text": turn.text}
        message = {"content": [block], "role": "assistant"}
        reply = _aws_json(
            {
                "metrics": {"latencyMs": 7},
                "output": {"message": message},
                "stopReason": "tool_use" if turn.tool else "end_turn",
                "usage": _bedrock_usage(turn),
            }
        )
        return _aws_request_id(reply, call.seq)

    def _bedrock_converse_stream(self, call: _Call) -> _Reply:
        """ConverseStream: AWS event-stream frames, one event per HTTP chunk."""
        turn = self._turn(call, _bedrock_conversation(call.body))
        events: list[tuple[str, JSON]] = [("messageStart", {"role": "assistant"})]
        if turn.tool:
            start = {"toolUse": {"name": turn.tool, "toolUseId": f"tooluse_sim{call.seq:04d}"}}
            events.append(("contentBlockStart", {"contentBlockIndex": 0, "start": start}))
            deltas = [{"toolUse": {"input": piece}} for piece in _pieces(turn.arguments)]
        else:
            deltas = [{"text": piece} for piece in self._text_pieces(turn.text)]
        events += [("contentBlockDelta", {"contentBlockIndex": 0, "delta": d}) for d in deltas]
        events += [
            ("contentBlockStop", {"contentBlockIndex": 0}),
            ("messageStop", {"stopReason": "tool_use" if turn.tool else "end_turn"}),
            ("metadata", {"metrics": {"latencyMs": 7}, "usage": _bedrock_usage(turn)}),
        ]
        frames = [_aws_event(name, self._padded(data)) for name, data in events]
        reply = _Reply(content_type="application/vnd.amazon.eventstream", events=frames)
        return _aws_request_id(reply, call.seq)

    def _bedrock_invoke(self, call: _Call) -> _Reply:
        """InvokeModel with an Anthropic model: the body and the answer are Anthropic's."""
        return _aws_request_id(self._anthropic_messages(call), call.seq)

    def _bedrock_invoke_stream(self, call: _Call) -> _Reply:
        """InvokeModelWithResponseStream: each Anthropic stream event, base64, in a chunk frame."""
        streamed = dataclasses.replace(call.request, json={**call.body, "stream": True})
        sse = self._anthropic_messages(dataclasses.replace(call, request=streamed))
        events = [json.loads(e.split(b"data: ", 1)[1]) for e in sse.events or []]
        frames = [
            _aws_event("chunk", self._padded({"bytes": base64.b64encode(_aws_payload(e)).decode()}))
            for e in events
        ]
        reply = _Reply(content_type="application/vnd.amazon.eventstream", events=frames)
        return _aws_request_id(reply, call.seq)

    def _padded(self, payload: JSON) -> JSON:
        """An event-stream payload with Bedrock's ``"p"`` padding, when ``aws_padding`` is set."""
        if not self.aws_padding:
            return payload
        with self._lock:
            self._pads += 1
            size = 1 + self._pads * 7 % 40
        return {**payload, "p": (string.ascii_letters + string.digits)[:size]}

    # -- hostile echoes: what a careless upstream does with credentials --------------

    def _text_pieces(self, text: str) -> list[str]:
        """A streamed reply's delta texts: word by word, or as the test cuts them."""
        return self.delta_pieces(text) if self.delta_pieces is not None else _pieces(text)

    def _redirect(self, call: _Call) -> _Reply:
        """A 302 to a server-signed URL, named in ``location`` and in an HTML body."""
        url = self.url("/hostile/landing") + "?" + urlencode(self.signed_params)
        body = f'<html><body><a href="{html.escape(url)}">Found</a></body></html>'
        return _Reply(
            status=302, body=body.encode(), content_type="text/html", headers={"location": url}
        )

    def _landing(self, call: _Call) -> _Reply:
        return _json({"downloaded": True, "params": sorted(call.request.query)})

    # -- pass-through helpers ----------------------------------------------------

    def _plain(self, call: _Call) -> _Reply:
        return _Reply(body=b"plain text from the simulator\n", content_type="text/plain")

    def _echo_json(self, call: _Call) -> _Reply:
        return _json(call.request.query)


_ROUTES: list[tuple[str, re.Pattern[str], Callable[[ProviderSimulator, _Call], _Reply]]] = [
    (m, re.compile(p), h)
    for m, p, h in [
        ("POST", r"/(?:openai/)?v1/chat/completions", ProviderSimulator._openai_chat),
        ("POST", r"/v1/responses", ProviderSimulator._openai_responses),
        ("POST", r"/v1/realtime/client_secrets", ProviderSimulator._realtime_client_secret),
        ("POST", r"/v1(?:alpha|beta)?/auth_tokens", ProviderSimulator._gemini_auth_token),
        ("POST", r"/upload/v1(?:beta)?/files", ProviderSimulator._gemini_upload),
        ("POST", r"/v1/audio/speech", ProviderSimulator._audio_speech),
        ("POST", r"/v1/audio/transcriptions", ProviderSimulator._audio_transcription),
        ("POST", r"/v1/messages", ProviderSimulator._anthropic_messages),
        ("POST", r"/api/chat", ProviderSimulator._ollama_chat),
        ("GET", r"/api/tags", ProviderSimulator._ollama_tags),
        ("GET", r"/api/version", ProviderSimulator._ollama_version),
        (
            "POST",
            r"/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)",
            ProviderSimulator._gemini,
        ),
        ("POST", r"/model/(?P<model>[^/]+)/converse", ProviderSimulator._bedrock_converse),
        (
            "POST",
            r"/model/(?P<model>[^/]+)/converse-stream",
            ProviderSimulator._bedrock_converse_stream,
        ),
        ("POST", r"/model/(?P<model>[^/]+)/invoke", ProviderSimulator._bedrock_invoke),
        (
            "POST",
            r"/model/(?P<model>[^/]+)/invoke-with-response-stream",
            ProviderSimulator._bedrock_invoke_stream,
        ),
        ("GET", r"/hostile/redirect", ProviderSimulator._redirect),
        ("GET", r"/hostile/landing", ProviderSimulator._landing),
        ("GET", r"/plain", ProviderSimulator._plain),
        ("GET", r"/echo-json", ProviderSimulator._echo_json),
    ]
]


# -- conversations: each provider's request shape, reduced to what the model needs --


def closed_port_url() -> str:
    """A loopback URL nothing listens on: a provider (or judge) that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _openai_conversation(body: JSON) -> _Conversation:
    messages = [(m.get("role", "user"), m.get("content")) for m in body.get("messages") or []]
    tools = [_tool_name(t) for t in body.get("tools") or []]
    return _conversation(messages, tools)


def _ollama_conversation(body: JSON) -> _Conversation:
    return _openai_conversation(body)


def _responses_conversation(body: JSON) -> _Conversation:
    items = body.get("input")
    if not isinstance(items, list):
        items = [{"role": "user", "content": items}]
    messages = []
    for item in items:
        if item.get("type") == "function_call_output":
            messages.append(("tool", item.get("output")))
        elif "role" in item:
            messages.append((item["role"], item.get("content")))
    tools = [_tool_name(t) for t in body.get("tools") or []]
    return _conversation(messages, tools)


def _anthropic_conversation(body: JSON) -> _Conversation:
    messages = []
    for m in body.get("messages") or []:
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if b.get("type") == "tool_result"]
        messages.append(("tool", results) if results else (m.get("role", "user"), content))
    tools = [str(t.get("name")) for t in body.get("tools") or []]
    return _conversation(messages, tools)


def _gemini_conversation(body: JSON) -> _Conversation:
    messages = []
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        results = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if results:
            messages.append(("tool", json.dumps(results[-1].get("response"))))
        else:
            messages.append((content.get("role", "user"), parts))
    tools = [
        str(decl.get("name"))
        for tool in body.get("tools") or []
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []
    ]
    return _conversation(messages, tools)


def _bedrock_conversation(body: JSON) -> _Conversation:
    messages = []
    for m in body.get("messages") or []:
        blocks = m.get("content") or []
        results = [b["toolResult"] for b in blocks if isinstance(b, dict) and "toolResult" in b]
        messages.append(("tool", results) if results else (m.get("role", "user"), blocks))
    specs = [t.get("toolSpec") or {} for t in (body.get("toolConfig") or {}).get("tools") or []]
    return _conversation(messages, [str(spec.get("name")) for spec in specs])


def _conversation(messages: list[tuple[str, Any]], tools: list[str]) -> _Conversation:
    texts = [(role, _text_of(content)) for role, content in messages]
    inputs = [(role, text) for role, text in texts if role in ("user", "tool")]
    role, text = inputs[-1] if inputs else ("user", "")
    prompt_tokens = sum(_count_tokens(t) for _, t in texts)
    results = sum(1 for role, _ in texts if role == "tool")
    return _Conversation(text, role == "tool", tools, prompt_tokens, results)


def _text_of(content: Any) -> str:
    """The text in any provider's content shape: a string, parts, blocks, tool results."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(t for t in (_text_of(p) for p in content) if t)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _text_of(content[key])
        return ""
    return str(content)


def _tool_name(tool: JSON) -> str:
    function = tool.get("function")
    return str(function.get("name") if isinstance(function, dict) else tool.get("name"))


def _default_tool_args(text: str) -> JSON:
    match = _ORDER_ID.search(text)
    return {"order_id": match.group(0) if match else "unknown"}


def _ollama_tool_call(turn: _Turn) -> JSON:
    return {"function": {"name": turn.tool, "arguments": turn.args}}


def _ollama_name(name: str) -> str:
    """Ollama treats ``llama3.2`` and ``llama3.2:latest`` as the same model."""
    return name if ":" in name else f"{name}:latest"


def _credential(request: ReceivedRequest) -> str:
    for name in _CREDENTIAL_HEADERS:
        if name in request.headers:
            return request.headers[name]
    return request.query.get("key", "")


def _provider_kind(path: str) -> str:
    if path.startswith("/model/"):
        return "bedrock"
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/api/"):
        return "ollama"
    if "/models/" in path and ":" in path:
        return "gemini"
    return "openai"


# -- reply building ------------------------------------------------------------------


def _error(kind: str, status: int, message: str, body: Any | None = None) -> _Reply:
    """An error body shaped like ``kind``'s, so the SDK raises its own typed error."""
    anthropic_type, google_status = _ERROR_NAMES.get(status, ("api_error", "UNKNOWN"))
    if body is None:
        if kind == "anthropic":
            body = {"type": "error", "error": {"type": anthropic_type, "message": message}}
        elif kind == "ollama":
            body = {"error": message}
        elif kind == "gemini":
            body = {"error": {"code": status, "message": message, "status": google_status}}
        elif kind == "bedrock":
            body = {"message": message}
        else:
            code = "rate_limit_exceeded" if status == 429 else None
            error = {"message": message, "type": anthropic_type, "param": None, "code": code}
            body = {"error": error}
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = _Reply(status=status, body=raw)
    if kind == "bedrock":  # botocore reads the error code from this header
        reply.headers["x-amzn-errortype"] = _AWS_ERRORS.get(status, "InternalServerException")
    return reply


def _json(payload: JSON | list[JSON], content_type: str = "application/json") -> _Reply:
    return _Reply(body=json.dumps(payload).encode(), content_type=content_type)


def _sse(events: list[bytes], content_type: str = "text/event-stream; charset=utf-8") -> _Reply:
    return _Reply(content_type=content_type, events=events)


def _sse_event(data: JSON, name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _aws_json(payload: JSON) -> _Reply:
    """Compact JSON with sorted members, as AWS's JSON protocols write it."""
    return _Reply(body=_aws_payload(payload))


def _aws_payload(payload: JSON) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def _aws_request_id(reply: _Reply, seq: int) -> _Reply:
    reply.headers["x-amzn-requestid"] = f"00000000-0000-4000-8000-{seq:012d}"
    return reply


def _aws_event(event_type: str, payload: JSON) -> bytes:
    """One AWS event-stream frame: prelude and its CRC32, string headers, JSON, message CRC32."""
    headers = (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    )
    head = b"".join(
        bytes([len(name)])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers
    )
    body = _aws_payload(payload)
    prelude = struct.pack(">II", 16 + len(head) + len(body), len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + body
    return message + struct.pack(">I", zlib.crc32(message))


def _bedrock_tool_use(turn: _Turn, seq: int) -> JSON:
    return {
        "toolUse": {"input": turn.args, "name": turn.tool, "toolUseId": f"tooluse_sim{seq:04d}"}
    }


def _bedrock_usage(turn: _Turn) -> JSON:
    return {
        "inputTokens": turn.prompt_tokens,
        "outputTokens": turn.completion_tokens,
        "totalTokens": turn.prompt_tokens + turn.completion_tokens,
    }


def _text_block(text: str) -> JSON:
    return {"type": "text", "text": text}


def _openai_usage(turn: _Turn) -> JSON:
    return {
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
    }


def _logprobs(text: str) -> JSON:
    """OpenAI's ``logprobs`` of a text: a token every four characters, each with its bytes."""
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)]
    content = [
        {"token": t, "logprob": -0.01, "bytes": list(t.encode()), "top_logprobs": []}
        for t in tokens
    ]
    return {"content": content, "refusal": None}


def _pieces(text: str) -> list[str]:
    """Split like a tokenizer: word-sized pieces that concatenate back exactly."""
    return re.findall(r"\s*\S+|\s+", text)


def _count_tokens(text: str) -> int:
    return max(1, len(text.split()))


def _now_rfc3339() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


# -- raw replies: exact bytes for the fidelity tests ------------------------------------

# /raw/<name>, with any path after it, so an SDK can use it as its base URL.
_RAW_PATH = re.compile(r"/raw/(?P<name>[^/]+)(?:/.*)?")


# -- HTTP plumbing -------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """Tracks its connections so ``stop()`` can cut kept-alive ones too."""

    daemon_threads = True

    def __init__(self, simulator: ProviderSimulator, port: int) -> None:
        self.simulator = simulator
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (socket.getfqdn), a DNS
        # lookup that can hang on a machine without network; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self._connections_lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            _hard_close(connection)


def _hard_close(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already gone
        connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Reads a request, asks the simulator for the reply, writes it (streams chunked)."""

    protocol_version = "HTTP/1.1"
    server_version = "ghostrun-simulator/1"
    sys_version = ""
    disable_nagle_algorithm = True  # each streamed event leaves at once
    timeout = 60
    server: _Server

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # the client left, or stop() cut the connection
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def _serve(self) -> None:
        simulator = self.server.simulator
        if simulator._stopping.is_set():
            self._abort()
            return
        request = self._read_request()
        raw = _RAW_PATH.fullmatch(request.path)
        if raw is not None:
            simulator._record(request)
            self._write_raw(simulator._take_raw(raw.group("name")))
            return
        reply = simulator._respond(request)
        if reply is None:
            self._abort()
        elif reply.events is None:
            self._write_whole(reply, compress=simulator.gzip)
        else:
            self._write_stream(reply, simulator.stream_delay)

    def _read_request(self) -> ReceivedRequest:
        url = urlsplit(self.path)
        body = self._read_body()
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return ReceivedRequest(
            method=self.command,
            path=url.path,
            query=dict(parse_qsl(url.query, keep_blank_values=True)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            json=parsed,
        )

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _write_whole(self, reply: _Reply, *, compress: bool) -> None:
        body = reply.body
        headers = {"content-type": reply.content_type, **reply.headers}
        if compress and reply.content_type.startswith("application/json"):
            body = gzip.compress(body, mtime=0)
            headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(body))
        self._write_head(reply.status, headers)
        self.wfile.write(body)

    def _write_stream(self, reply: _Reply, delay: float) -> None:
        headers = {"content-type": reply.content_type, **reply.headers}
        self._write_head(reply.status, {**headers, "transfer-encoding": "chunked"})
        for index, event in enumerate(reply.events or []):
            if reply.break_after is not None and index >= reply.break_after:
                self._abort()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            if delay:
                time.sleep(delay)
        self.wfile.write(b"0\r\n\r\n")

    def _write_raw(self, reply: RawReply | None) -> None:
        """A `RawReply` byte for byte; a name with no reply is a plain 404."""
        if reply is None:
            reply = RawReply(404, [("content-type", "text/plain")], b"no raw reply by that name")
        self.send_response_only(reply.status, reply.reason)  # "": "HTTP/1.1 200 ", no phrase
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.chunks is None:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for index, chunk in enumerate(reply.chunks):
            if reply.gate is not None and index == len(reply.chunks) - 1:
                reply.gate_timed_out = not reply.gate.wait(GATE_TIMEOUT)
            self._write_chunk(b"%x\r\n%s\r\n" % (len(chunk), chunk), reply.split_pause)
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, framed: bytes, split_pause: float) -> None:
        """One HTTP chunk, whole or in two TCP pieces ``split_pause`` seconds apart."""
        if split_pause:
            half = len(framed) // 2
            self.wfile.write(framed[:half])
            self.wfile.flush()
            time.sleep(split_pause)
            framed = framed[half:]
        self.wfile.write(framed)
        self.wfile.flush()

    def _write_head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _abort(self) -> None:
        """Drop the connection mid-response, as a crashed upstream would."""
        self.close_connection = True
        _hard_close(self.connection)
