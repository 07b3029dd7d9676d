"""ghostrun's examples: a small support app, its tests, and committed cassettes.

A package only so that the suites can say ``from examples.support_app import ...``
when run from the repository root (``python -m pytest examples/pytest``).
"""
