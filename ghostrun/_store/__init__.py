"""Cassettes on disk: the match key, the file format, checking and pruning (DESIGN §3).

    _keys         the match key of a request
    _formats      every file's format as types: cassettes, trajectories, verdicts, run logs
    _cassette     one request's cassette: its responses, runs and writes
    _wscassette   a WebSocket conversation's cassette (I/O-free)
    _wsredact     a WebSocket conversation as it may be written: its credentials masked
    _mcpcassette  an MCP stdio connection's cassette: launch, key, lenient ids (I/O-free)
    _trajectory   a test's trajectory file: its steps in order (path, format, writes)
    _grpcreply    a gRPC call's outcome as its cassette stores it (I/O-free)
    _validate     the one loader of every versioned file: cassettes, verdicts, run logs
    _render       a stored body as lines, to diff
    _inventory    which files are ghostrun's, for ``check`` and ``prune``
    _check        ``check`` and ``prune`` as functions: what a run left unused; what is too old

May import: `_core`, `_wire`, `_secrets`.
"""
