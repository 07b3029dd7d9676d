"""Every code block in the README and the docs site runs, offline, against the committed
example cassettes, and every claim a block makes is checked.

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
The README's quickstart is run apart, as a reader would: pasted into an empty
directory, recorded once from a provider, then replayed with none.
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
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

import ghostrun
from ghostrun._core import _project

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md")), ROOT / "CONTRIBUTING.md"]
_FENCE = re.compile(r"^([ \t]*)```([^\n]*)\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_RUN_WITH = re.compile(r"^# (?P<file>[\w.]+\.py)\s+\(run with: (?P<command>[^)]+)\)")
QUICKSTART_FILE = "test_quickstart.py"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _fenced(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            path,
            text.count("\n", 0, m.start()) + 1,
            m.group(2).strip(),
            textwrap.dedent(m.group(3)) if m.group(1) else m.group(3),
        )
        for m in _FENCE.finditer(text)
    ]


BLOCKS = _fenced(README)
ALL_BLOCKS = [block for page in PAGES for block in _fenced(page)]
PYTHON_BLOCKS = [
    b
    for b in ALL_BLOCKS
    if b.info.split()[:1] == ["python"] and not b.code.startswith(f"# {QUICKSTART_FILE}")
]


def test_readme_opens_with_the_two_commands() -> None:
    first, second = BLOCKS[:2]
    assert first.info == second.info == "bash"
    assert first.code.strip() == RUN_ALL
    assert second.code.strip() == "bash .ci/run"
    head = README.read_text(encoding="utf-8")[: README.read_text().index("```")]
    assert head.count("\n#") == 0, "nothing but the title and one sentence before the commands"


def test_readme_is_read_in_five_minutes() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for heading in ("## Install", "## Quickstart", "## pytest", "## unittest", "## CI"):
        assert f"\n{heading}\n" in text, heading


def test_every_link_in_the_readme_and_the_docs_leads_somewhere() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        prose = re.sub(r"`[^`\n]*`", "", page.read_text("utf-8"))  # links shown as code
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name}: a link to {target}"
    for doc in DOCS.glob("*.md"):
        assert f": {doc.name}" in nav, f"docs/{doc.name} is on no page of mkdocs.yml's nav"


def test_every_python_block_is_run() -> None:
    assert len(PYTHON_BLOCKS) >= 8
    shown_only = [b.id for b in PYTHON_BLOCKS if "no-run" in b.info.split()]
    # 6: docs/agents.md's two worked agents need a live provider and tool API; the same
    # shapes run against the loopback ones in tests/recording/test_tool_hosts.py.
    assert len(shown_only) <= 6, f"keep the blocks that cannot run to a minimum: {shown_only}"


def test_every_toml_block_holds_settings_ghostrun_reads(tmp_path: Path) -> None:
    blocks = [b for b in ALL_BLOCKS if b.info == "toml"]
    assert blocks
    for block in blocks:
        table = tomllib.loads(block.code)["tool"].get("ghostrun")
        if table is None:
            continue  # another tool's table (pytest's filterwarnings)
        _project._checked(tmp_path / "pyproject.toml", table)  # raises on a key it does not know


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


@pytest.mark.parametrize(
    "block", [b for b in PYTHON_BLOCKS if "no-run" not in b.info.split()], ids=lambda b: b.id
)
def test_python_block_runs(block: Block, workdir: Path, offline: dict[str, str]) -> None:
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


# -- every block that claims an output or a result ------------------------------------------
#
# README.md, docs/ and examples/README.md: each ```text block is the output of a block beside
# it, each ```bash block a set of commands, each ```yaml block a CI recipe. Every one is
# either run here and its claim checked, or listed below as skipped by design, with the
# reason. A new block that is neither fails `test_every_block_is_run_or_skipped_by_design`.

EXAMPLES_README = ROOT / "examples" / "README.md"

SKIPPED_BY_DESIGN = {
    # README.md and docs/
    "bash .ci/run": "runs this very suite",
    "pip install 'ghostrun-replay[": "installs into the environment; the extras it names are "
    "checked by test_the_install_commands_name_extras_that_exist",
    "OPENAI_API_KEY=sk-... python -m pytest --ghostrun-record": "records with a live key",
    ".venv/bin/python -m ruff check": "the linters, run by tests/project/test_static.py",
    "name: ghostrun review": "a GitHub Actions recipe: runs on GitHub, posting a comment",
    "ghostrun-review:": "a GitLab CI recipe: runs on GitLab, posting a note",
    '"body": {"eventstream": [': "an excerpt of a Bedrock cassette, whose format "
    "tests/intercept/test_bedrock.py checks",
    "pip install -e '.[bench]'": "installs the benchmarks' contenders into the environment",
    "10 rounds; tests per block:": "benchmarks/run.py's output: minutes on a quiet machine",
    "$ ghostrun import tests": "an import's report, as tests/tools/test_import.py checks its lines",
    "python -m pytest --ghostrun-rebase": "a user project's suite; the flag, and the outputs "
    "evolving-a-suite.md shows, are checked by tests/recording/test_rebase.py",
    "Rebased: ": "the review's rebased section, compared with a real review in "
    "tests/recording/test_rebase.py",
    "skipped exchange 1": "an import's report, as tests/tools/test_import.py checks its lines",
    "AuthFailureWarning: ghostrun: recorded": "the warning "
    "tests/recording/test_auth_failures.py checks",
    "ghostrun: no recording for POST grpc://": "a gRPC miss, checked by "
    "tests/intercept/test_grpc.py",
    "ghostrun: no recording for POST http://127.0.0.1": "a miss naming normalize=, checked by "
    "tests/core/test_normalize.py",
    "ghostrun: 2 semantic checks skipped: no judge.": "a run's closing line, checked by "
    "tests/judging/test_no_judge.py",
    "corrupt cassette tests/cassettes/": "a CassetteError's shape, checked by "
    "tests/store/test_hostile_cassettes.py",
    'import os; ("GHOSTRUN_REPLAY_PARENT" in os.environ': "the .pth start-up line, installed and "
    "checked by tests/intercept/test_guard_escapes.py",
    '{"body": {...}': "an excerpt of a cassette, not a whole one",
    ".ghostrun_cache/": "a directory listing",
    "ghostrun: tests/test_agent.py::test_refund used": "checked by "
    "tests/recording/test_trajectory.py",
    "step 2 of 3 of tests/test_agent.py": "checked by tests/recording/test_trajectory.py",
    "ghostrun: an MCP message to `python orders_server.py`": "an MCP miss, checked by "
    "tests/intercept/test_mcp_stdio.py",
    "ghostrun: no recorded MCP stdio connection": "the MCP refusal, checked by "
    "tests/intercept/test_mcp_stdio.py",
    "tests/test_agent.py::test_refund": "a test id, as the identity rule gives it",
    "UnlistedHostWarning: ghostrun: in replay mode": "the warning "
    "tests/intercept/test_unlisted_hosts.py checks",
    "expected: no tool more than 2 times in a row": "a trajectory failure, checked by "
    "tests/assertions/test_trajectory_vocabulary.py",
    '{"gpt-4o-mini":': "a price table's shape, read by tests/recording/test_trajectory.py's own",
    "{": "a file format's example (grpc.md, trajectories.md), validated by the tests of its reader",
    "GHOSTRUN_MODE=replay python -m pytest": "a user project's suite and tests/cassettes; the "
    "plugin's flags are tested in test_pytest_plugin.py and test_pytest_paths.py",
    "export GHOSTRUN_CASSETTE_DIR=tests/cassettes": "re-records with a live provider key",
    "python -m pytest --ghostrun-snapshot before": "a user project's suite re-recorded with a "
    "live provider; `ghostrun diff` is tested in test_cli.py",
    "ollama serve": "starts a live judge (serve runs until stopped)",
    "ghostrun benchmarks, ": "benchmarks/run.py's output: a 750 s run on a quiet machine",
    "openai 3.57.0 on httpx2, 120 rounds": "benchmarks/inprocess.py --anatomy's output (minutes)",
    "ghostrun calibrate: ollama": "compared line by line with a real run of the command "
    "against the loopback judge in tests/judging/test_calibrate.py",
    "ghostrun review: HEAD": "compared line by line with a real review of a re-recorded "
    "prompt edit in tests/tools/test_review.py",
    # docs/evolving-a-suite.md
    "ghostrun fork test_agent.py::": "forks with a live provider; tests/tools/test_fork.py runs "
    "the first against the loopback provider",
    "ghostrun compare --model gpt-small --repeat 5": "runs a suite live; tests/tools/"
    "test_compare.py runs compare against the loopback provider",
    "ghostrun calibrate --against ollama:": "grades with a live judge; "
    "tests/judging/test_judge_numbers.py runs --against with two stand-in judges",
    "branch small against the recording": "compared line by line with a real review --branch "
    "in tests/tools/test_fork.py",
    "ghostrun compare: gpt-small": "compared line by line with a real compare in "
    "tests/tools/test_compare.py",
    "ghostrun calibrate: callable:": "compared line by line with a real run in "
    "tests/judging/test_judge_numbers.py",
    "ghostrun calibrate --against: callable:": "compared line by line with a real run in "
    "tests/judging/test_judge_numbers.py",
    # examples/README.md
    ".venv/bin/python examples/record_with_standin.py": "re-records every example cassette "
    "(20 s, with new timestamps); tests/project/test_examples.py checks every committed file",
    "rm examples/cassettes/*.json": "records with a live OpenAI key",
    "ghostrun: a WebSocket frame to": "a WebSocket miss: checked against the message its code "
    "prints by test_websockets.py::test_the_readme_shows_the_websocket_miss_as_printed",
}


def _skip_reason(block: Block) -> str | None:
    first = block.code.strip().splitlines()[0]
    return next(
        (
            why
            for start, why in SKIPPED_BY_DESIGN.items()
            if first == start or (len(start) > 1 and first.startswith(start))
        ),
        None,
    )


RUN_ALL = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[examples]' && "
    ".venv/bin/python examples/run_all.py"
)
QUICKSTART_RUNS = "OPENAI_API_KEY=sk-... python -m pytest test_quickstart.py -q"
RUNNING_THEM = (
    "python examples/run_all.py                              # everything, with a summary"
)
MISS_MESSAGE = "ghostrun: no recording for POST https://api.openai.com/v1/chat/completions"
ENDS_WITH = "To enable grading, start the judge with `ollama serve`"
CHECKED_HERE = (RUN_ALL, RUNNING_THEM, MISS_MESSAGE, ENDS_WITH, QUICKSTART_RUNS)


@pytest.mark.parametrize("path", [*PAGES, EXAMPLES_README], ids=lambda p: p.name)
def test_every_block_is_run_or_skipped_by_design(path: Path) -> None:
    for block in _fenced(path):
        if block.info not in ("bash", "text", "yaml", "json", ""):
            continue
        if block.info == "json" and block.path.name == "judge.md":
            continue  # the labels file's lines: examples/calibration/labels.jsonl is tested
        first = block.code.strip().splitlines()[0]
        assert _skip_reason(block) or first.startswith(CHECKED_HERE), (
            f"{path.name}:{block.line}: a {block.info} block that is neither run by "
            f"tests/project/test_readme.py nor listed in its SKIPPED_BY_DESIGN: {first!r}"
        )


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command, comments=True)
    assert argv[0] in ("python", ".venv/bin/python"), command
    return subprocess.run(
        [sys.executable, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_miss_message_is_what_its_code_prints(workdir: Path, offline: dict[str, str]) -> None:
    blocks = _fenced(DOCS / "modes-and-ci.md")
    [at] = [i for i, b in enumerate(blocks) if b.code.startswith(MISS_MESSAGE)]
    claimed, code = blocks[at].code, blocks[at + 1].code
    assert blocks[at + 1].info == "python"
    (workdir / "miss.py").write_text(code, encoding="utf-8")
    done = _run("python miss.py", workdir, offline)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.replace(str(workdir), "/home/you/ghostrun")
    assert printed == claimed


def test_the_examples_commands_do_what_the_readmes_say(
    workdir: Path, offline: dict[str, str]
) -> None:
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**offline, "HTTP_PROXY": "", "HTTPS_PROXY": "", "ALL_PROXY": ""}
    env.pop("OLLAMA_HOST")  # no judge at all, as on a fresh machine
    [first] = [b for b in _fenced(README) if b.code.startswith(RUN_ALL)]
    [running] = [b for b in _fenced(EXAMPLES_README) if b.code.startswith(RUNNING_THEM)]
    commands = [first.code.strip().split(" && ")[-1], *running.code.strip().splitlines()]
    outputs = {}
    for command in commands:
        done = _run(command, workdir, env)
        outputs[command] = done.stdout + done.stderr
        assert done.returncode == 0, f"`{command}` failed:\n{outputs[command]}"
    summary = outputs[commands[0]]
    assert "All examples passed." in summary  # README: "a summary at the end"
    assert "Semantic checks were skipped" in summary  # "show as *skipped* until a judge runs"
    # examples/README: run by run_all.py (in replay), each skip message ends with its block.
    [ends] = [b for b in _fenced(EXAMPLES_README) if b.code.startswith(ENDS_WITH)]
    ending = re.escape(ends.code.strip())
    ending = ending.replace(re.escape("/home/you/ghostrun"), re.escape(str(workdir)))
    ending = ending.replace(re.escape("<key>"), "[0-9a-f]{32}") + "$"
    skips = [line for line in summary.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(re.search(ending, line) for line in skips), skips


def test_the_install_commands_name_extras_that_exist() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    installs = [
        line
        for block in ALL_BLOCKS
        if block.info == "bash"
        for line in block.code.splitlines()
        if line.startswith("pip install")
    ]
    assert installs
    for line in installs:
        named = re.findall(r"([\w-]+)\[([\w,]+)\]", line)
        assert named and all(name == project["name"] for name, _ in named), line
        for _, group in named:
            assert set(group.split(",")) <= set(extras), group


def test_every_setting_the_package_reads_is_in_the_configuration_page() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "ghostrun").rglob("*.py"))
    names = set(re.findall(r"\bGHOSTRUN_[A-Z_]+\b", source))
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert "GHOSTRUN_HOSTS" in names
    assert sorted(n for n in names if f"`{n}`" not in page) == []
    assert (
        sorted(key for key in _project.KEYS if f"| `{key}`" not in page.replace("`, `", "` | `"))
        == []
    )


def test_the_package_docstring_points_at_what_exists() -> None:
    assert "DESIGN in the README" not in (ghostrun.__doc__ or "")
    assert "README.md" in (ghostrun.__doc__ or "") and README.is_file()


def test_benchmark_verdicts_agree_with_their_figures() -> None:
    """Each per-test row says met or MISSED as its median ratio and its target say."""
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    rows = re.findall(r"\s([\d.]+) \[[\d.]+-[\d.]+\]\s+<= ([\d.]+)\s+(met|MISSED)\s*$", text, re.M)
    assert len(rows) >= 10, "the per-test table with its targets"
    for ratio, target, verdict in rows:
        assert (float(ratio) <= float(target)) == (verdict == "met"), (ratio, target, verdict)


# -- the quickstart, pasted into an empty directory ----------------------------------------


def test_the_quickstart_records_then_replays_pasted_into_an_empty_directory(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider is the loopback simulator (OPENAI_BASE_URL, which the SDK reads) for the
    first command; the second replays with a placeholder key and the provider counting."""
    [code] = [b.code for b in BLOCKS if b.code.startswith(f"# {QUICKSTART_FILE}")]
    [commands] = [b.code for b in BLOCKS if b.code.startswith(QUICKSTART_RUNS)]
    empty = tmp_path / "my-app"
    empty.mkdir()
    (empty / QUICKSTART_FILE).write_text(code, encoding="utf-8")
    for name in list(os.environ):
        if name.startswith(("GHOSTRUN_", "OPENAI_", "PYTEST_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", provider.url("/v1"))
    monkeypatch.setenv("GHOSTRUN_HOSTS", "127.0.0.1")  # the stand-in provider is a provider
    record, replay = commands.strip().splitlines()
    for command, served in ((record, 1), (replay, 1)):
        words = shlex.split(command, comments=True)
        env = dict(os.environ)
        while "=" in words[0]:
            name, _, value = words.pop(0).partition("=")
            env[name] = "sk-placeholder-for-the-test" if value == "sk-..." else value
        done = subprocess.run(
            [sys.executable, *words[1:]],
            cwd=empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"`{command}`:\n{done.stdout}{done.stderr}"
        assert "1 passed" in done.stdout
        assert provider.served == served  # recorded once; the replay sent nothing
    assert len(list((empty / ".ghostrun_cache").glob("*.json"))) == 1


def test_the_tested_with_page_is_generated_from_the_matrix_not_written() -> None:
    """docs/tested-with.md is what docs/tested_with.py renders of the lanes' last passes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tested_with", DOCS / "tested_with.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = json.loads((DOCS / "tested-with.json").read_text(encoding="utf-8"))
    assert {"newest", "oldest"} <= set(results)
    assert (DOCS / "tested-with.md").read_text(encoding="utf-8") == module.render(results)
