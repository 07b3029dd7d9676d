"""Test frameworks: unittest's mixin here; the pytest plugin is ``ghostrun.pytest_plugin``
(public: pytest loads it by that name), and belongs to this layer too.

    _unittest     ``TestCaseMixin``: a session per test, outcomes in the run log
    _identity     a unittest test's name: its pytest node id, under every runner
    _vcr          pytest-recording's marker, fixture and flag, for a suite moved over

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`, `_intercept`, `_judging`,
`_assertions`.
"""
