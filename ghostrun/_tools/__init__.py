"""The command line and what it reads: runs, diffs, reviews, reports.

    _cli          ``ghostrun COMMAND``: the parser, and the dispatch to a command
    _commands/    one module per command: its arguments, and how it shows what it found
    _diff         two run logs compared: regressions, drift
    _show         a cassette, readable
    _review/      what changed in a branch's cassettes and verdicts: states, pairing, output
    _report       the review as one HTML file
    _doctor       each road's library: version, hooked or why not
    _tokens       tokens per test and per step, and their cost from the user's price table
    _import       other tools' cassettes in, as if recorded here (readers: ``_importers/``)
    _branches     branches of a recording (``fork``, ``compare``): made, seeded, run into
    _candidate    a candidate model against the recording: pass rates, Wilson intervals, verdict

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`, `_intercept`, `_judging`,
`_assertions`.
"""
