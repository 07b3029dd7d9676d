"""Sessions: which one governs a request, replay or record, and what each test used.

    _session      the session: modes, counts, and the decision for each request
    _miss         what a replay miss tells the user
    _runlog       each test's outcome and what it used, saved when the run ends

May import: `_core`, `_wire`, `_secrets`, `_store`.
"""
