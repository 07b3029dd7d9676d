"""A vcrpy suite moved over exactly as docs/coming-from-vcrpy.md says, drift included.

The suite's cassettes are written by the real vcrpy (pytest-recording's layout) against
the loopback provider through the real openai SDK. Then the app drifts the way real suites
drift while vcrpy, which never compared bodies, kept passing: a default parameter changed
(``max_tokens`` 8192 -> 64000), a field added (``service_tier``), a tool-call id minted per
run (``"call_" + uuid4().hex``), and one test's conversation changed (a tool result).
The documented path: ``ghostrun import``, one ``pytest --ghostrun-rebase`` run, then
``pytest --ghostrun-replay``: every test passes offline but the conversation change, which
misses naming the field; the provider is never reached again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

APP = """
import os
import uuid

import openai

DRIFTED = os.environ.get("APP_DRIFTED") == "1"


def _client():
    return openai.OpenAI(
        api_key=os.environ.get("OPENAI_API_KEY", "sk-placeholder"),
        base_url=os.environ["SIM_URL"] + "/v1",
        max_retries=0,
    )


def _ask(messages, **extra):
    reply = _client().chat.completions.create(model="gpt-4o-mini", messages=messages, **extra)
    return reply.choices[0].message.content


def summary():
    # the SDK's default max_tokens went 8192 -> 64000
    return _ask([{"role": "user", "content": "Summarise my refund."}],
                max_tokens=64000 if DRIFTED else 8192)


def greeting():
    extra = {"service_tier": "auto"} if DRIFTED else {}  # a field the new SDK adds
    return _ask([{"role": "user", "content": "Say hello."}], **extra)


def _tool_turn(result):
    call_id = "call_" + uuid.uuid4().hex  # minted on every run
    return _ask([
        {"role": "user", "content": "Which version am I on?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "version", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ])


def tool_loop():
    return _tool_turn("the order ships Monday")


def installed_version():
    # the tool result is now the installed version string: a change of conversation
    return _tool_turn("llm 0.27" if DRIFTED else "llm 0.19")
"""

RECORD = """
import vcr

import app

for name in ("summary", "greeting", "tool_loop", "installed_version"):
    recorder = vcr.VCR(cassette_library_dir="tests/cassettes/test_app", record_mode="all")
    with recorder.use_cassette(f"test_{name}.yaml", filter_headers=["authorization"]):
        getattr(app, name)()
"""

TESTS = """
import pytest

import app


@pytest.mark.vcr
def test_summary():
    assert app.summary()


@pytest.mark.vcr
def test_greeting():
    assert app.greeting()


@pytest.mark.vcr
def test_tool_loop():
    assert app.tool_loop()


@pytest.mark.vcr
def test_installed_version():
    assert app.installed_version()
"""

PYPROJECT = """
[tool.pytest.ini_options]
pythonpath = ["."]
ghostrun_normalize = ["hex_id"]
"""


def _listing(root: Path) -> dict[str, bytes]:
    """The committed files: cassettes and trajectories (the run log is each run's own)."""
    cassettes = root / ".ghostrun_cache"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in cassettes.rglob("*")
        if p.is_file() and "runs" not in p.relative_to(cassettes).parts
    }


def test_a_drifted_vcrpy_suite_passes_offline_after_one_rebase_run(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GHOSTRUN_MODE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + "recordingKey0123456789abcdefghij")  # fake
    root = pytester.path
    (root / "app.py").write_text(APP)
    (root / "record.py").write_text(RECORD)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text(TESTS)

    subprocess.run([sys.executable, "record.py"], cwd=root, check=True)  # vcrpy, as shipped
    recorded = provider.served
    assert recorded == 4

    imported = subprocess.run(
        [sys.executable, "-m", "ghostrun", "import", "tests/cassettes",
         "--cassette-dir", ".ghostrun_cache", "--normalize", "hex_id"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "Imported 4 exchanges into 4 cassettes from 4 files" in imported.stdout

    monkeypatch.setenv("APP_DRIFTED", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    not_theirs = ("-p", "no:cassetter", "-p", "no:randomly")

    rebased = pytester.runpytest_subprocess(*not_theirs, "--ghostrun-rebase")
    rebased.assert_outcomes(passed=3, failed=1)
    rebased.stdout.fnmatch_lines(["FAILED tests/test_app.py::test_installed_version*"])
    rebased.stdout.fnmatch_lines(  # the field's diff, and why it was not rebased
        ["*+messages?2?.content: ?llm 0.27?", "*not rebased*conversation: messages?2?.content."]
    )
    assert provider.served == recorded
    after_rebase = _listing(root)

    replayed = pytester.runpytest_subprocess(*not_theirs, "--ghostrun-replay")
    replayed.assert_outcomes(passed=3, failed=1)
    replayed.stdout.fnmatch_lines(["*CacheMiss*"])
    assert provider.served == recorded
    assert _listing(root) == after_rebase  # replay wrote nothing
