"""A unittest test's identity: the pytest node id, whichever runner runs it (DESIGN §3).

``TestCase.id()`` depends on how the module was imported: ``python -m
unittest`` from the project names a test ``tests.test_agent.AgentTests.test_x``
and pytest (rootdir-relative imports) ``test_agent.AgentTests.test_x``, so one
test would keep two runs in each cassette and two trajectories. ghostrun names
every test the way pytest's node id does, from the test's file:

    tests/test_agent.py::AgentTests::test_x

The path is relative to the project's root: under pytest, pytest's rootdir
(read from the node id pytest announces for the running test); elsewhere, the
nearest directory above the test's file holding ``pyproject.toml``,
``pytest.ini``, ``.pytest.ini``, ``tox.ini``, ``setup.cfg`` or ``setup.py`` (the
files pytest looks for), else the current directory. A ``name=`` given in the
session's options always wins.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .._recording._settings import current_test_id

__all__ = ["node_id", "project_root"]

_ROOT_MARKERS = ("pyproject.toml", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "setup.py")


def node_id(cls: type, method: str) -> str:
    """The pytest node id of ``cls``'s test ``method``, computed alike under every runner."""
    names = "::".join(cls.__qualname__.split("."))
    tail = f"::{names}::{method}"
    running = current_test_id()
    if running and running.endswith(tail):
        return running  # pytest runs it now: its own id, rootdir and all
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return f"{cls.__module__}{tail}"
    path = Path(file).resolve()
    root = project_root(path.parent)
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    return relative + tail


def project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with a project file, else the cwd."""
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in _ROOT_MARKERS):
            return directory
    return Path(os.getcwd()).resolve()
