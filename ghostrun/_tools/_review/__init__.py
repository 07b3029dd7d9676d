"""What a prompt change did: ``ghostrun review`` (DESIGN §7).

    _states       the two states compared: a directory on disk, or as committed in git
    _compare      the review: each new cassette paired with the one it replaced, per test
    _answers      a request and its answers as a reviewer reads them, and their diffs
    _verdicts     the judged assertions whose verdict changed
    _rebased      the tests a rebase run re-keyed, apart, the fields that changed said once
    _render       the review as text, Markdown or JSON
    _branch       ``review --branch``: a branch (``fork``, ``compare``) against the recording

Two states of a cassette directory are compared: *before* (a git revision,
``HEAD`` by default, or a directory) and *after* (the working tree, another
revision or directory), each with its cassettes, its verdicts and its run log
(``runs/_last.json``, or a snapshot). Two run snapshots of one directory
compare the same way. Everything shown comes from files ghostrun already
redacted, and is scrubbed of secret shapes once more.

Where a state has no run log for a test (run logs are rarely committed), its
committed trajectory (``trajectories/<test>.json``) says which cassettes are
the test's and in which order; each test also shows the tokens it used before
and after, in total and for each step whose tokens changed (`_tokens`), and
their cost when a price table is given.
"""
