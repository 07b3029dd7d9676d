"""Interception: the roads to a provider (DESIGN §1), one module per road, and their engine.

    _engine       the one record/replay core every HTTP adapter drives (no HTTP library in it)
    _patch        reference-counted install and restore (a library imported later: when it
                  is), and the registry of roads
    _httpx        httpx and httpx2 (``Client._transport_for_url``)
    _aiohttp      aiohttp (a client middleware appended to every request)
    _urllib3      urllib3: requests, botocore/boto3 (``HTTPConnectionPool._make_request``)
    _websockets   websockets' sync and asyncio clients (``connect``), WebSocket conversations
    _aiohttp_ws   aiohttp's ``ws_connect`` (``ClientSession._ws_connect``), WebSocket conversations
    _lm15         dspy's vendored HTTP client (``StdlibTransport.stream``, ``_do_stream``)
    _wslink       the session side of a WebSocket conversation (record, replay, miss), shared
                  by the WebSocket roads
    _grpc         grpcio (sync channels and ``grpc.aio``): its adapter; ``_grpc_sync`` and
                  ``_grpc_aio`` hold the multi-callables and calls, ``_grpclink`` the
                  session side of one call, shared by both
    _grpctarget   a gRPC target read as gRPC's C core reads it: every address it may dial
    _mcp_stdio    MCP servers a client launches over stdio (``mcp.client.stdio``'s process
                  start): connections taped, or played with no process at all

    _guard        in replay, the refusal of any provider connection no road made
    _live         in replay, the hosts that went to the network unrecorded: said once each
    _at_exit      after a replay, telemetry a framework flushes at exit: answered locally

Nothing here is imported by ``import ghostrun`` but `_patch`, `_guard` (with its `_live`)
and `_at_exit` (``ghostrun/__init__`` subscribes them to sessions: the first session to open
installs the roads, the last to close restores them); `_patch` imports each
road's module when it installs it, and a road imports its HTTP library only in
its adapter's ``check``/``install`` or the hooks they install, so
``import ghostrun`` never loads an HTTP library. Nor does opening a session: a
road whose library is not imported yet is checked and installed the moment the
library is imported (`_patch.LateImports`, which the guard uses too for
``socket``, ``asyncio`` and ``grpc``), and restored with the others. Sessions
never import this folder.

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`.
"""
