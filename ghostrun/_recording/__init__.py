"""Sessions: which one governs a request, replay or record, and what each test used.

    _session      the session users open, and which one governs a request
    _deck         what a session does with a request: wires the pieces below, enter and exit
    _settings     a session's arguments, and as resolved each time it is entered anew
    _request      a request as the deck sees it, and its match key
    _decide       replay, send or miss: a pure function of plain data (I/O-free)
    _cassettes    a session's cassettes: reading a key's run, locked writes, the cursors
    _redaction    the entry written: credentials masked, the user's ``redact=`` hook run
    _counts       what a session did, counted under one lock
    _closing      what a session's last exit settles: swallowed misses, failed writes
    _hops         requests a response caused: redirect hops
    _pushed       server-pushed streams (MCP over SSE) replayed at the pace of their requests
    _stale        saying that a replay used stale recordings
    _miss         what a replay miss tells the user
    _conversation what counts as a request's conversation, per provider format (I/O-free)
    _rebase       rebase: a request with no recording, answered by the recorded step at its place
    _steps        what one model call did: tool calls, tokens, text, prompt (I/O-free)
    _fork         a fork plan (``ghostrun fork``, ``compare``): its branch, what it replays,
                  what it sends changed
    _trajectory   each test's trajectory file: written when it records, checked in replay
    _runlog       each test's outcome and what it used, saved when the run ends
    _wiring       what runs before the first session: the layers above, wired late

May import: `_core`, `_wire`, `_secrets`, `_store`.
"""
