"""The command line and what it reads: runs, diffs, reviews, reports.

    _cli          ``ghostrun diff|check|prune|show|calibrate|review|report``
    _diff         two run logs compared: regressions, drift
    _show         a cassette, readable
    _review       what changed in a branch's cassettes and verdicts
    _report       the review as one HTML file
    _doctor       each road's library: version, hooked or why not
    _tokens       tokens per test and per step, and their cost from the user's price table
    _older        ``ghostrun check --older-than``: cassettes past an age
    _import       ``ghostrun import``: other tools' cassettes in (readers: ``_importers/``)

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`, `_intercept`, `_judging`,
`_assertions`.
"""
