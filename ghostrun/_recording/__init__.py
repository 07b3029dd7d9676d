"""Sessions: which one governs a request, replay or record, and what each test used.

    _session      the session users open, and which one governs a request
    _deck         what a session does with a request: the key, the decision, the writes
    _miss         what a replay miss tells the user
    _steps        what one model call did: tool calls, tokens, text, prompt (I/O-free)
    _trajectory   each test's trajectory file: written when it records, checked in replay
    _runlog       each test's outcome and what it used, saved when the run ends

May import: `_core`, `_wire`, `_secrets`, `_store`.
"""
