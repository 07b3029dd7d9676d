"""Every Python block in the README runs, offline, against the committed example cassettes.

A block is run one of two ways:

- a block whose first line names a file and a command, such as
  ``# test_replies.py  (run with: python -m pytest test_replies.py -q)``, is
  written to that file and the command is run, as a reader would;
- any other block is executed in this process, in a fresh namespace.

Either way the working directory is a copy of ``examples/`` in a temporary
directory, so a block can write no cassette or verdict into the repository;
there is no API key, every proxy points at a closed loopback port (a request
that had no cassette fails instead of leaving the machine), and the judge is
the loopback simulator answering PASS: the test checks that the code runs,
not what a real judge thinks. A block fenced as ```python no-run is shown only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ghostrun

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_RUN_WITH = re.compile(r"^# (?P<file>[\w.]+\.py)\s+\(run with: (?P<command>[^)]+)\)")


@dataclass(frozen=True)
class Block:
    line: int
    info: str
    code: str

    @property
    def id(self) -> str:
        return f"README.md:{self.line}"


def _blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
        for m in _FENCE.finditer(text)
    ]


BLOCKS = _blocks()
PYTHON_BLOCKS = [b for b in BLOCKS if b.info.split()[:1] == ["python"]]


def test_readme_opens_with_the_two_commands() -> None:
    first, second = BLOCKS[:2]
    assert first.info == second.info == "bash"
    assert first.code.strip() == (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' "
        "&& .venv/bin/python examples/run_all.py"
    )
    assert second.code.strip() == "bash .ci/run"
    head = README.read_text(encoding="utf-8")[: README.read_text().index("```")]
    assert head.count("\n#") == 0, "nothing but the title and one sentence before the commands"


def test_readme_has_the_sections_a_newcomer_needs() -> None:
    text = README.read_text(encoding="utf-8")
    for heading in (
        "## Quickstart",
        "## Modes",
        "## In CI",
        "## Re-recording and reviewing cassette diffs",
        "## The judge",
        "## Using it from unittest, pytest, scripts and asyncio",
        "## What a cassette holds, and what is never stored",
        "## Compared with other tools",
        "## Benchmarks",
    ):
        assert heading in text
    benchmarks = text.split("## Benchmarks")[1]
    assert "python benchmarks/run.py" in benchmarks  # the command that produced the table
    assert "ghostrun benchmarks, " in benchmarks and "CPUs" in benchmarks  # the table, the machine


def test_every_python_block_is_run() -> None:
    assert len(PYTHON_BLOCKS) >= 8
    shown_only = [b.id for b in PYTHON_BLOCKS if "no-run" in b.info.split()]
    assert len(shown_only) <= 2, f"keep the blocks that cannot run to a minimum: {shown_only}"


# -- running the blocks --------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of examples/ (the app and its cassettes) to run in."""
    shutil.copytree(
        ROOT / "examples",
        tmp_path / "examples",
        ignore=shutil.ignore_patterns("runs", "__pycache__", "judge"),
    )
    return tmp_path


@pytest.fixture
def offline(
    workdir: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The environment every block runs in; yields it for subprocesses."""
    provider.judge_reply = lambda body: json.dumps(
        {"verdict": "PASS", "reason": "the README test's stand-in judge passes every text"}
    )
    dead = f"http://127.0.0.1:{_closed_port()}"
    for name in list(os.environ):
        if name.startswith(("GHOSTRUN_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-key-replay-needs-none")
    monkeypatch.setenv("OLLAMA_HOST", provider.base_url)
    monkeypatch.chdir(workdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    yield env
    ghostrun.configure(
        mode=None, cassette_dir=None, hosts=None, judge=None, on_judge_unavailable=None
    )


def _cassettes(workdir: Path) -> set[Path]:
    return {
        p
        for folder in (workdir / "examples" / "cassettes", workdir / ".ghostrun_cache")
        for p in folder.glob("*.json")
    }


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs(block: Block, workdir: Path, offline: dict[str, str]) -> None:
    if "no-run" in block.info.split():
        pytest.skip("shown only: it needs a real service")
    before = _cassettes(workdir)
    run_with = _RUN_WITH.match(block.code)
    if run_with:
        _run_as_file(block, workdir, offline, run_with["file"], run_with["command"])
    else:
        code = compile(block.code, block.id, "exec")
        exec(code, {"__name__": "__readme__"})
    new = _cassettes(workdir) - before
    assert not new, f"{block.id} recorded new cassettes: a request had none ({sorted(new)})"


def _run_as_file(block: Block, workdir: Path, env: dict[str, str], file: str, command: str) -> None:
    (workdir / file).write_text(block.code, encoding="utf-8")
    argv = shlex.split(command)
    assert argv[0] == "python", f"{block.id}: the command should start with python"
    done = subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.id}: `{command}` failed:\n{output}"
    assert not re.search(r"\bskipped\b|\bno tests ran\b|Ran 0 tests", output), output
