"""The ``ghostrun`` commands, one module each: ``add_parser(subparsers)`` and ``run(args)``.

    _args         what every command shares: ``--cassette-dir``, usage errors, run names
    _console      output that survives any console: text, reports, JSON, files
    _diff         ``ghostrun diff``: regressions, fixes and drift between two runs
    _check        ``ghostrun check``: what the last run left unused, and what it missed
    _prune        ``ghostrun prune``: delete what ``check`` reports as unused
    _show         ``ghostrun show``: one cassette or verdict, readable
    _calibrate    ``ghostrun calibrate``: the judge against your labels
    _review       ``ghostrun review``: what a prompt change did
    _report       ``ghostrun report``: a run as one HTML page
    _doctor       ``ghostrun doctor``: each road's library, hooked or why not
    _import       ``ghostrun import``: other tools' cassettes in
    _fork         ``ghostrun fork``: one test from step N on, live and changed, in a branch
    _compare      ``ghostrun compare``: the suite on a candidate model against the recording

A command parses its arguments, calls the library (`_store._check`, `_tools._diff`,
`_judging._calibration`, ...) and renders what it returns; `_tools._cli` dispatches.
"""
