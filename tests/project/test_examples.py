"""The examples: the README's first command passes offline, and the cassettes are honest.

``examples/run_all.py`` is what a newcomer runs first; here it runs as CI
runs it (``CI=true``), with no API key, no judge and every proxy pointing at a
closed loopback port, so a request that had no cassette would fail instead of
leaving the machine. The committed cassettes must be what the real SDK
parses, under the real provider URL, with no credential in them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from helpers import ROOT

from ghostrun._secrets._scrub import scrub_text

EXAMPLES = ROOT / "examples"
CASSETTES = EXAMPLES / "cassettes"
CASSETTE_FILES = sorted(CASSETTES.glob("*.json"))
COMMITTED_FILES = sorted(
    p for p in CASSETTES.rglob("*") if p.is_file() and "runs" not in p.relative_to(CASSETTES).parts
)
ENABLE_GRADING = (
    "To enable grading, start the judge with `ollama serve` (it keeps running: use another "
    "terminal, or the desktop app), then run `ollama pull llama3.2:3b`."
)


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _offline_env() -> dict[str, str]:
    """CI's environment with no key, no judge, and no way out to the network."""
    dead = f"http://127.0.0.1:{_closed_port()}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GHOSTRUN_", "OPENAI_", "PYTEST_")) and k.lower() != "no_proxy"
    }
    env.update(
        CI="true",
        OLLAMA_HOST=dead,  # even where a developer runs Ollama, the judge is unreachable
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        ALL_PROXY=dead,
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def test_run_all_passes_offline_and_semantic_checks_skip_with_the_fix() -> None:
    before = {p.name for p in CASSETTE_FILES}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "run_all.py")],
        cwd=ROOT,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert "Executing <Task" not in out, "asyncio's debug log of slow steps is noise"
    assert done.returncode == 0, out
    after = {p.name for p in CASSETTES.glob("*.json")}
    assert after == before, f"run_all.py wrote new cassettes: {sorted(after - before)}"

    summary = done.stdout.split("Summary", 1)[1]
    assert re.search(r"pytest\s+ok\s+4 passed, 3 skipped", summary), summary
    assert re.search(r"unittest\s+ok\s+Ran 10 tests in [\d.]+s: OK \(skipped=4\)", summary)
    assert re.search(r"script\s+ok\s+prompt_check: 4 passed, 0 failed, 2 skipped", summary)
    assert "0 recorded, mode replay" in summary
    assert "ollama serve" in summary
    assert summary.rstrip().endswith("All examples passed.")

    # Each semantic check is skipped with the commands that enable grading.
    pytest_part, rest = done.stdout.split("==> unittest:", 1)
    unittest_part, script_part = rest.split("==> script:", 1)
    skipped = re.findall(r"SKIPPED \[(\d)\] (\S+) semantic assertion skipped", pytest_part)
    assert sum(int(n) for n, _ in skipped) == 3, pytest_part  # pytest -rs
    assert all(where.startswith("examples/pytest/") for _, where in skipped), skipped
    assert ENABLE_GRADING in pytest_part
    skips = re.findall(r"skipped ['\"](semantic assertion skipped[^\n]*)", unittest_part)
    assert len(skips) == 4, unittest_part  # unittest -v: one line per test
    assert all(ENABLE_GRADING in skip for skip in skips)
    # each skipped check says how to enable grading, and the script's run says it once more
    assert script_part.count(ENABLE_GRADING) == 3
    assert "2 semantic checks skipped: no judge" in script_part


# The tests with no semantic check: in replay mode a semantic check never calls the judge,
# and with no verdict committed (see examples/README.md) it is a CacheMiss, not a skip.
DETERMINISTIC = ("offers", "costs", "streamed", "agent")
_PYTEST_K = ["-k", " or ".join(DETERMINISTIC)]
_UNITTEST_K = [f"-k{k}" for k in DETERMINISTIC]
REPLAY_COMMANDS = {
    "pytest": ["-m", "pytest", "examples/pytest", "-q", "--ghostrun-replay", *_PYTEST_K],
    "unittest": ["-m", "unittest", "discover", "-s", "examples/unittest", *_UNITTEST_K],
}


@pytest.mark.parametrize("command", REPLAY_COMMANDS.values(), ids=REPLAY_COMMANDS.keys())
def test_deterministic_examples_pass_in_replay_mode_on_ci(command: list[str]) -> None:
    env = {**_offline_env(), "GHOSTRUN_MODE": "replay"}
    done = subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert re.search(r"^4 passed, 3 deselected|^Ran 6 tests", out, re.MULTILINE), out
    assert "skipped" not in out


# -- the committed cassettes ---------------------------------------------------------------


def test_the_examples_have_cassettes() -> None:
    assert len(CASSETTE_FILES) >= 8


@pytest.mark.parametrize("path", CASSETTE_FILES, ids=lambda p: p.name[:12])
def test_cassette_is_what_the_real_sdk_parses(path: Path) -> None:
    cassette = json.loads(path.read_text(encoding="utf-8"))
    assert cassette["version"] == 1
    assert cassette["request"]["url"] == "https://api.openai.com/v1/chat/completions"
    assert cassette["request"]["method"] == "POST"
    assert cassette["responses"], "a cassette with no response"
    for response in cassette["responses"]:
        assert response["status"] == 200
        assert response["headers"]["content-type"].split(";")[0] in (
            "application/json",
            "text/event-stream",
        )
        body = response["body"]
        if "json" in body:
            completion = openai.types.chat.ChatCompletion.model_validate(body["json"])
            message = completion.choices[0].message
            assert message.content or message.tool_calls
        else:
            text = "".join(_stream_text(body["sse"]))
            assert text.strip()


def _stream_text(events: list[str]) -> list[str]:
    """The text pieces of an SSE chat stream, each event parsed by the SDK's own type."""
    assert events[-1].strip() == "data: [DONE]"
    pieces = []
    for event in events[:-1]:
        assert event.startswith("data: ") and event.endswith("\n\n"), event
        chunk = openai.types.chat.ChatCompletionChunk.model_validate_json(event[6:])
        pieces += [c.delta.content or "" for c in chunk.choices]
    return pieces


@pytest.mark.parametrize("path", COMMITTED_FILES, ids=lambda p: str(p.relative_to(CASSETTES)))
def test_committed_example_file_holds_no_secret(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for needle in ("sk-", "Bearer", "placeholder-key", "authorization", "api-key", "x-api-key"):
        assert needle not in text, f"{needle!r} in {path}"
    assert scrub_text(text) == text, "ghostrun's own secret shapes match something"
    if path.suffix == ".json" and path.parent == CASSETTES:
        headers: dict[str, Any] = json.loads(text)["request"]["headers"]
        assert set(headers) <= {"accept", "content-type"}


def test_run_all_says_checks_were_skipped_only_when_some_were(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from examples import run_all

    graded = [
        run_all.Outcome("pytest", 0, "7 passed in 2.1s", run_all.skipped("7 passed in 2.1s")),
        run_all.Outcome("unittest", 0, "Ran 10 tests: OK", run_all.skipped("Ran 10 tests: OK")),
        run_all.Outcome(
            "script",
            0,
            "prompt_check: 6 passed, 0 failed, 0 skipped",
            run_all.skipped("prompt_check: 6 passed, 0 failed, 0 skipped"),
        ),
    ]
    assert run_all._summary(graded, []) == 0
    assert "were skipped" not in capsys.readouterr().out
    assert run_all.skipped("4 passed, 3 skipped in 2.21s")
    assert run_all.skipped("Ran 10 tests in 0.5s: OK (skipped=4)")
    assert run_all.skipped("prompt_check: 4 passed, 0 failed, 2 skipped")
