"""A loopback gRPC provider serving the SDKs' own services, for the grpc road's tests.

It implements, from the SDKs' own generated protos:

- xAI's ``xai_api.Chat``: ``GetCompletion`` (unary) and ``GetCompletionChunk``
  (server stream), for xai-sdk (``GrpcSimulator(xai=True)``);
- Google's ``google.ai.generativelanguage.v1.GenerativeService``:
  ``GenerateContent`` and ``StreamGenerateContent``, the calls Vertex's
  ``PredictionService`` has by the same names and shapes, for the
  ``google-ai-generativelanguage`` client;
- ``ghostrun.test.Echo`` over raw bytes: all four kinds of call (unary-unary,
  unary-stream, stream-unary, stream-stream) and a failing one, for grpc's own
  channels.

Answers are deterministic, made from the prompt. Clients connect through a
counting TCP proxy in front of the server (`port`), so `connections` counts
every connection a client opened, and keeps counting after `stop_server`
(the proxy still accepts, then closes): replay must leave it at 0. Each call's
metadata is kept in `metadata`, to check the credential reached the server
and never the disk.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from google.ai import generativelanguage_v1 as glm

chat_pb2: Any = None  # xai-sdk's protos, imported when a simulator serves xAI
usage_pb2: Any = None

__all__ = ["GrpcSimulator", "reply_words"]


def reply_words(prompt: str) -> list[str]:
    """The answer to ``prompt``, word by word (each stream message is one word)."""
    return ["You", "said:", *prompt.split()]


class GrpcSimulator:
    """The server on an ephemeral loopback port, behind a counting proxy (`port`)."""

    def __init__(self, *, xai: bool = False) -> None:
        if xai:
            _import_xai()
        self.xai = xai
        self.calls: list[str] = []
        self.metadata: list[dict[str, str]] = []
        self.connections = 0
        self.release = threading.Event()  # lets the "Held" stream go on
        self._server: Any = None
        self._backend = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closing = False
        self._start_server()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> GrpcSimulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing = True
        self.stop_server()
        self._listener.close()

    def stop_server(self) -> None:
        """Stop answering: the proxy still accepts (and counts) connections, then drops them."""
        if self._server is not None:
            self._server.stop(None).wait()
            self._server = None

    # -- the gRPC server ---------------------------------------------------------------

    def _start_server(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers(self._handlers())
        self._backend = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server

    def _handlers(self) -> list[Any]:
        handlers = [
            grpc.method_handlers_generic_handler(
                "google.ai.generativelanguage.v1.GenerativeService",
                {
                    "GenerateContent": grpc.unary_unary_rpc_method_handler(
                        self._generate,
                        request_deserializer=glm.GenerateContentRequest.deserialize,
                        response_serializer=glm.GenerateContentResponse.serialize,
                    ),
                    "StreamGenerateContent": grpc.unary_stream_rpc_method_handler(
                        self._stream_generate,
                        request_deserializer=glm.GenerateContentRequest.deserialize,
                        response_serializer=glm.GenerateContentResponse.serialize,
                    ),
                },
            ),
            grpc.method_handlers_generic_handler(
                "ghostrun.test.Echo",
                {
                    "Unary": grpc.unary_unary_rpc_method_handler(self._echo),
                    "Fail": grpc.unary_unary_rpc_method_handler(self._fail),
                    "Length": grpc.unary_unary_rpc_method_handler(self._length),
                    "Split": grpc.unary_stream_rpc_method_handler(self._split),
                    "Held": grpc.unary_stream_rpc_method_handler(self._held),
                    "Join": grpc.stream_unary_rpc_method_handler(self._join),
                    "Each": grpc.stream_stream_rpc_method_handler(self._each),
                },
            ),
        ]
        if self.xai:
            handlers.append(
                grpc.method_handlers_generic_handler(
                    "xai_api.Chat",
                    {
                        "GetCompletion": grpc.unary_unary_rpc_method_handler(
                            self._complete,
                            request_deserializer=chat_pb2.GetCompletionsRequest.FromString,
                            response_serializer=chat_pb2.GetChatCompletionResponse.SerializeToString,
                        ),
                        "GetCompletionChunk": grpc.unary_stream_rpc_method_handler(
                            self._complete_chunks,
                            request_deserializer=chat_pb2.GetCompletionsRequest.FromString,
                            response_serializer=chat_pb2.GetChatCompletionChunk.SerializeToString,
                        ),
                    },
                )
            )
        return handlers

    def _seen(self, name: str, context: Any) -> None:
        self.calls.append(name)
        self.metadata.append({k: str(v) for k, v in context.invocation_metadata()})
        context.send_initial_metadata((("x-request-id", f"req-{len(self.calls)}"),))
        context.set_trailing_metadata((("x-served-by", "grpc-simulator"),))

    # xAI

    def _complete(self, request: Any, context: Any) -> Any:
        self._seen("GetCompletion", context)
        text = " ".join(reply_words(_xai_prompt(request)))
        return chat_pb2.GetChatCompletionResponse(
            id="resp-1",
            model=request.model,
            created={"seconds": 1764633600},
            outputs=[
                chat_pb2.CompletionOutput(
                    index=0,
                    finish_reason="REASON_STOP",
                    message=chat_pb2.CompletionMessage(content=text, role="ROLE_ASSISTANT"),
                )
            ],
            usage=usage_pb2.SamplingUsage(prompt_tokens=7, completion_tokens=5, total_tokens=12),
        )

    def _complete_chunks(self, request: Any, context: Any) -> Iterator[Any]:
        self._seen("GetCompletionChunk", context)
        for word in reply_words(_xai_prompt(request)):
            yield chat_pb2.GetChatCompletionChunk(
                id="resp-1",
                model=request.model,
                outputs=[
                    chat_pb2.CompletionOutputChunk(
                        index=0, delta=chat_pb2.Delta(content=word + " ", role="ROLE_ASSISTANT")
                    )
                ],
            )

    # Google

    def _generate(self, request: Any, context: Any) -> Any:
        self._seen("GenerateContent", context)
        return _google_reply(" ".join(reply_words(_google_prompt(request))))

    def _stream_generate(self, request: Any, context: Any) -> Iterator[Any]:
        self._seen("StreamGenerateContent", context)
        for word in reply_words(_google_prompt(request)):
            yield _google_reply(word + " ")

    # raw bytes

    def _echo(self, request: bytes, context: Any) -> bytes:
        self._seen("Unary", context)
        return b"echo:" + request

    def _fail(self, request: bytes, context: Any) -> bytes:
        self._seen("Fail", context)
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no such model: " + request.decode())
        raise AssertionError("unreachable")  # abort raises

    def _length(self, request: bytes, context: Any) -> bytes:
        self._seen("Length", context)
        return str(len(request)).encode()

    def _split(self, request: bytes, context: Any) -> Iterator[bytes]:
        self._seen("Split", context)
        yield from request.split()

    def _held(self, request: bytes, context: Any) -> Iterator[bytes]:
        """One message, then the rest only once the test sets `release` (or after 5 s)."""
        self._seen("Held", context)
        yield b"first"
        yield b"after release" if self.release.wait(5) else b"never released"

    def _join(self, requests: Iterator[bytes], context: Any) -> bytes:
        self._seen("Join", context)
        return b"+".join(requests)

    def _each(self, requests: Iterator[bytes], context: Any) -> Iterator[bytes]:
        self._seen("Each", context)
        for request in requests:
            yield request.upper()

    # -- the counting proxy --------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            if self._server is None:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self._backend))
            except OSError:
                client.close()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _import_xai() -> None:
    global chat_pb2, usage_pb2
    from xai_sdk.proto import chat_pb2, usage_pb2


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _xai_prompt(request: Any) -> str:
    return " ".join(part.text for m in request.messages for part in m.content)


def _google_prompt(request: Any) -> str:
    return " ".join(part.text for content in request.contents for part in content.parts)


def _google_reply(text: str) -> Any:
    return glm.GenerateContentResponse(
        candidates=[
            glm.Candidate(
                index=0,
                finish_reason=glm.Candidate.FinishReason.STOP,
                content=glm.Content(role="model", parts=[glm.Part(text=text)]),
            )
        ],
        usage_metadata=glm.GenerateContentResponse.UsageMetadata(
            prompt_token_count=4, candidates_token_count=3, total_token_count=7
        ),
    )
