"""Interception: the roads to a provider (DESIGN §1), one module per road, and their engine.

    _engine       the one record/replay core every HTTP adapter drives (no HTTP library in it)
    _patch        reference-counted install and restore, and the registry of roads
    _httpx        httpx and httpx2 (``Client._transport_for_url``)
    _aiohttp      aiohttp (a client middleware appended to every request)
    _urllib3      urllib3: requests, botocore/boto3 (``HTTPConnectionPool._make_request``)
    _websockets   websockets' sync and asyncio clients (``connect``), WebSocket conversations
    _aiohttp_ws   aiohttp's ``ws_connect`` (``ClientSession._ws_connect``), WebSocket conversations
    _wslink       the session side of a WebSocket conversation (record, replay, miss), shared
                  by the WebSocket roads
    _wscassette   a WebSocket conversation's cassette format, key and replay script (I/O-free)

What this folder may import: the standard library, ghostrun's session core
(``.._session``, ``.._cassette``, ``.._exceptions``, ``.._modes``, ``.._telemetry``,
and for the WebSocket modules ``.._keys``, ``.._redact``, ``.._files``,
``.._miss``), orjson (a runtime dependency) and, inside an adapter's
``check``/``install`` or the hooks they install only, the library it adapts;
never the public ``ghostrun`` package. The session core never imports this
folder at module level: nothing here is imported by ``import ghostrun``.
`Session.__enter__` imports ``_patch`` lazily, when the first session opens,
and ``_patch`` imports each road's module only when it installs it, so
``import ghostrun`` stays light and there is no import cycle between sessions
and adapters.
"""
