"""Keeping credentials out of every file written (DESIGN §4).

    _credentials  the rule: which names and values are credentials
    _mask         masking a known secret in any encoding, in a text
    _streams      masking one cut over a stream's chunks and events
    _redact       applying both to a cassette entry, and to run-log text

May import: `_core`, `_wire`.
"""
