"""Keeping credentials out of every file written (DESIGN §4).

    _credentials  the rule: which names and values are credentials
    _walk         the rule's one walker over a JSON value, and the every-string walker
    _headers      which request and response headers a cassette keeps
    _collect      finding the credentials a request carried, or an answer minted
    _memory       what the process remembers of them (one object, `MEMORY`)
    _mask         masking a known secret in any encoding, in a text
    _streams      masking one cut over a stream's chunks and events
    _stored       how a stored entry's parts read (content type, form, binary body)
    _mask_exact   masking exact secrets throughout an entry, streams and base64 too
    _mask_entry   masking a cassette entry before it is written: `redact_entry`
    _user_hook    learning what the user's ``redact=`` hook edited
    _scrub        scrubbing run logs and verdict files: `scrub_text`

May import: `_core`, `_wire`.
"""
