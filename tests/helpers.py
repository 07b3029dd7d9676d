"""Helpers that test modules in several folders share: where the repository is, what a cassette
directory holds, a call recorded, then replayed with the provider gone, and a Python child
process run as a user runs it.

Imported by module name (``from helpers import cassettes``) like the suite's other helpers at
``tests/`` (pyproject.toml puts ``tests`` on pytest's ``pythonpath``); fixtures live in the
``conftest.py`` files instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents_under_test import AGENTS
from simulator import ProviderSimulator

import ghostrun

ROOT = Path(__file__).resolve().parent.parent
"""The repository: README.md, docs/, examples/, pyproject.toml and the ghostrun package."""


def cassettes(directory: Path) -> list[dict[str, Any]]:
    """Every cassette in ``directory``, parsed, in the order of their file names."""
    return [orjson.loads(p.read_bytes()) for p in sorted(directory.glob("*.json"))]


def record_then_replay(
    provider: ProviderSimulator,
    cassette_dir: Path,
    fn: Callable[[], Any],
    replaying: Callable[[], Any] | None = None,
    *,
    requests: int | None = 1,
    mode: str = "auto",
    hosts: Sequence[str] | None = None,
) -> tuple[Any, Any]:
    """Record ``fn`` live, stop the provider, replay it: (live result, replayed result).

    ``replaying`` is called in replay instead of ``fn`` (a client with placeholder keys, say).
    Each session sees ``requests`` requests, all recorded then all replayed (``None``: at least
    one), and replay sends the provider nothing. ``hosts``: the provider's own by default.
    """
    hosts = [provider.base_url] if hosts is None else list(hosts)
    with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=hosts) as recording:
        live = fn()
    served = provider.served
    if requests is None:
        assert recording.recorded >= 1
    else:
        assert (recording.recorded, recording.replayed) == (requests, 0)
        assert served == requests
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as replay:
        again = (replaying or fn)()
    if requests is None:
        assert replay.replayed >= 1
    else:
        assert (replay.replayed, replay.recorded) == (requests, 0)
    assert provider.served == served
    return live, again


def run_python(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a child process, this environment plus ``env``, as a user runs it.

    The test's pytest id is not handed on: ghostrun would name the child's sessions after it.
    Its output is read as UTF-8 whatever its console's encoding, and it has two minutes.
    """
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=120,
        check=False,
    )


AGENT_NAMES = [
    pytest.param(name, marks=pytest.mark.openai_agents) if name == "agents_runner" else name
    for name in sorted(AGENTS)
]
"""The agents of `agents_under_test` by name, to parametrize over; openai-agents' carries its
marker, so it runs in nox's ``agents`` lane (agents_under_test itself stays importable by the
pytest projects tests write, which register no marker)."""
