"""The ``grpc`` road (DESIGN §1): grpcio's sync channels and ``grpc.aio``.

Used by xai-sdk, Vertex AI (google-cloud-aiplatform) and Google's older
``google-ai-generativelanguage`` clients. Every unary-unary, unary-stream,
stream-unary and stream-stream call to a provider host or a session's
``hosts`` is recorded and replayed under the HTTP rules (`_grpclink`).

Hooks: the four methods of grpc's channel classes (``grpc._channel.Channel``
and ``grpc.aio._channel.Channel``) that hand out multi-callables, which a
generated stub calls when it is made, and the aio channel's ``__init__`` (to
note its target). So every channel counts, however it was made
(``grpc.insecure_channel``, ``secure_channel``, ``google.api_core``'s
``create_channel``, inside ``grpc.intercept_channel``), and the SDK's own
interceptors stay above ghostrun on sync channels. A stub made before any
session opened keeps the library's multi-callables: make the client inside
the session (or while one is open), as the road cannot see it.

A channel is made for real even in ``replay`` (grpc connects only when a call
is made, and a replayed call makes none): the guard, which refuses a channel
to a provider host in ``replay``, lets through those this road serves
(`serves`, registered with `_guard.serve_channels`).
"""

from __future__ import annotations

import importlib
from typing import Any

from .._core._exceptions import UnsupportedLibrary
from .._recording._session import current_deck, passing_through
from ._guard import serve_channels
from ._patch import Restore, library, replace

__all__ = ["GrpcAdapter", "adapters", "serves"]

_KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def adapters() -> list[GrpcAdapter]:
    """This road's adapters, for `_patch.ROADS`: grpc's sync and aio channels."""
    return [GrpcAdapter()]


def serves(host: str, port: int | None) -> bool:
    """Whether a channel made here and now to ``host:port`` has its calls answered by ghostrun."""
    if passing_through():
        return False
    deck = current_deck()
    return deck is not None and deck.matcher(host, port)


class GrpcAdapter:
    """Wraps the multi-callable factories of grpc's sync and aio channel classes."""

    waits_for = road = "grpc"
    distribution = "grpcio"

    def __init__(self) -> None:
        self.sync: Any = None
        self.aio: Any = None

    def check(self) -> bool:
        grpc = library("grpc")
        if grpc is None:
            return False
        self.sync = getattr(importlib.import_module("grpc._channel"), "Channel", None)
        self.aio = getattr(importlib.import_module("grpc.aio._channel"), "Channel", None)
        if not all(hasattr(cls, kind) for cls in (self.sync, self.aio) for kind in _KINDS):
            version = getattr(grpc, "__version__", "?")
            raise UnsupportedLibrary(
                f"grpcio {version} has no grpc._channel.Channel or grpc.aio._channel.Channel "
                "with unary_unary ... stream_stream, which ghostrun wraps to record gRPC calls. "
                "Install grpcio 1.60 or later: pip install 'grpcio>=1.60'."
            )
        return True

    def install(self) -> Restore:
        sync = importlib.import_module(f"{__package__}._grpc_sync")
        aio = importlib.import_module(f"{__package__}._grpc_aio")
        restore = replace(
            *((self.sync, kind, sync.hook(kind, getattr(self.sync, kind))) for kind in _KINDS),
            *((self.aio, kind, aio.hook(kind, getattr(self.aio, kind))) for kind in _KINDS),
            (self.aio, "__init__", aio.hook_init(self.aio.__init__)),
        )
        unserve = serve_channels(serves)

        def restore_all() -> None:
            unserve()
            restore()

        return restore_all
