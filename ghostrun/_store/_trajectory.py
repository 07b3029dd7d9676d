"""A test's trajectory on disk: its steps, in order, one small file per test (DESIGN §3).

    <cassette_dir>/trajectories/<test id, made safe>.json

Steps are of three kinds (``kind``): model calls (below; ``kind`` absent or
``"model"``), tool calls answered by an MCP server or a tool host
(``{"kind": "tool", "session", "transport", "server", "tool", "arguments",
"result", "key", "response"}``), and the run's final answer
(``{"kind": "answer", "session", "text"}``), written last for each session
that made a model call. `_formats` has each as a type.

    {
      "version": 1,
      "test": "tests/test_agent.py::test_refund",
      "steps": [
        {"session": 0, "method": "POST",
         "endpoint": "https://api.openai.com/v1/chat/completions",
         "key": "<cassette key>", "response": 0,
         "prompt": "<first words of the newest message sent>",
         "model": "gpt-4o-mini" | null,
         "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A123"}}],
         "tokens": {"in": 52, "out": 9} | null},
        {"kind": "tool", "session": 0, "transport": "http" | "mcp-stdio" | "mcp-http",
         "server": "tracking.example.com", "tool": "GET /tracking/A123",
         "arguments": {"fields": "status"}, "result": "<first words of the result>",
         "key": "<cassette key>", "response": 0},
        {"kind": "answer", "session": 0, "text": "<first words of the final answer>"}
      ]
    }

A step without ``kind`` is a model call (``"kind": "model"``), as every step of
a file written before tool steps was. A tool step is a tool call answered by an
MCP server or a declared tool host (``tool_hosts=``); the answer step is
written last for each session that made a model call.

The exchanges stay in their content-addressed cassettes; this file says which
of them a test used and in which order, so a pull request shows an agent's run
as one readable file, replay can fail a test that left steps unplayed, and a
miss names the step it diverged at. ``session`` numbers the sessions of one
test in the order they opened (most tests have one). ``response`` is the
response's place in its cassette's run.

The file is written (atomically) only when its test records, and validated on
read (`_validate`): a bad one is a `CassetteError` naming the file and the
field. Its name keeps the test id readable and adds a short hash of it, so two
ids that differ only in characters a file name cannot hold never share a file.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from .._core._files import dump_json, write_atomic
from . import _validate
from ._formats import AnyStep, StepRecord, ToolStep, TrajectoryFile

__all__ = [
    "FORMAT_VERSION",
    "TRAJECTORIES",
    "AnyStep",
    "StepRecord",
    "ToolStep",
    "Trajectory",
    "cassette_keys",
    "load_trajectory",
    "model_steps",
    "played",
    "trajectory_file",
    "trajectory_path",
    "write_trajectory",
]

FORMAT_VERSION = _validate.FORMAT_VERSIONS["trajectory"]
TRAJECTORIES = "trajectories"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 120


Trajectory = TrajectoryFile  # the file's format (`_formats`), by the name this module uses


def trajectory_path(cassette_dir: str | os.PathLike[str], test: str) -> Path:
    """Where the trajectory of ``test`` lives: a readable, collision-free file name.

    Kept per directory and test: every replayed session looks its file up once.
    """
    try:
        return _paths[cassette_dir, test]
    except (KeyError, TypeError):  # TypeError: a path-like object that cannot be hashed
        pass
    path = Path(cassette_dir) / TRAJECTORIES / _file_name(test)
    if len(_paths) >= _KEPT_PATHS:
        _paths.clear()
    _paths[cassette_dir, test] = path
    return path


def trajectory_file(prefix: str, test: str) -> str:
    """`trajectory_path` as a string, from the directory with its separator (a session's
    ``prefix``): the look every replayed session takes builds no ``Path``."""
    found = _files.get((prefix, test))
    if found is None:
        if len(_files) >= _KEPT_PATHS:
            _files.clear()
        found = _files[prefix, test] = f"{prefix}{TRAJECTORIES}{os.sep}{_file_name(test)}"
    return found


def _file_name(test: str) -> str:
    readable = _UNSAFE.sub("_", test.replace("::", "--")).strip("._-")[:_MAX_STEM]
    digest = hashlib.sha256(test.encode()).hexdigest()[:8]
    return f"{readable or 'test'}-{digest}.json"


_paths: dict[tuple[str | os.PathLike[str], str], Path] = {}
_files: dict[tuple[str, str], str] = {}
_KEPT_PATHS = 4096


def played(steps: list[AnyStep]) -> list[StepRecord | ToolStep]:
    """The steps a replay plays, in order: model and tool steps, not the answer."""
    return [step for step in steps if step.get("kind") != "answer"]  # type: ignore[misc]  # narrowed by kind


def model_steps(steps: list[AnyStep]) -> list[StepRecord]:
    """The model calls among ``steps`` (a step without ``kind`` is one: an older file's)."""
    return [s for s in steps if s.get("kind", "model") == "model"]  # type: ignore[misc]


def cassette_keys(steps: list[AnyStep]) -> list[str]:
    """The cassettes the steps name (an answer names none)."""
    return [s["key"] for s in played(steps)]


def load_trajectory(path: str | os.PathLike[str]) -> Trajectory | None:
    """The trajectory at ``path``, checked; None if there is none."""
    return _validate.load(path, "trajectory")


def write_trajectory(cassette_dir: str | os.PathLike[str], trajectory: Trajectory) -> Path:
    """Write a test's trajectory atomically beside its cassettes; returns its path."""
    path = trajectory_path(cassette_dir, trajectory["test"])
    write_atomic(path, dump_json(dict(trajectory), sort_keys=False), root=cassette_dir)
    return path
