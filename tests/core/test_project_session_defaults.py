"""Every session default that is data can be written once, in ``[tool.ghostrun]``.

``normalize``, ``ignore_fields``, ``on_unplayed``, ``max_age`` and ``on_stale`` are read
from the table by sessions (here, through the real openai SDK), by the pytest plugin (a
user's project in a subprocess, with a ``pyproject.toml``) and by the command line; code
(a session argument, ``configure()``) beats the table; and a message about a setting
names where it came from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _config, _project

HEAD = '[tool.ghostrun]\ncassette_dir = "cassettes"\nhosts = ["127.0.0.1"]\n'
DEFAULTS = """\
normalize = ["uuid"]
ignore_fields = ["metadata.trace_id"]
on_unplayed = "ignore"
max_age = "30d"
on_stale = "fail"
"""

APP = """\
import os
import uuid

import openai


def ask():
    client = openai.OpenAI(base_url=os.environ["SIM_URL"] + "/v1", api_key="sk-placeholder")
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"order {uuid.uuid4()}: where is it?"}],
        metadata={"trace_id": os.urandom(6).hex()},
    )
    return reply.choices[0].message.content
"""

TEST = """\
import os

import pytest

from app import ask


@pytest.mark.ghostrun
def test_asks():
    for _ in range(int(os.environ.get("STEPS", "1"))):
        assert ask()
"""


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    _project.forget()
    before = (_config.settings.on_unplayed, _config.settings.normalize)
    yield
    _config.settings.on_unplayed, _config.settings.normalize = before
    _project.forget()


def _project_dir(root: Path, table: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(HEAD + table)
    (root / "app.py").write_text(APP)
    (root / "test_app.py").write_text(TEST)
    return root


def _ask(provider: ProviderSimulator) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-placeholder", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"order {uuid.uuid4()}: where is it?"}],
        metadata={"trace_id": os.urandom(6).hex()},
    )
    return reply.choices[0].message.content or ""


# -- a session -----------------------------------------------------------------------------


def test_a_session_reads_every_default_from_the_table(
    tmp_path: Path, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project_dir(tmp_path / "app", DEFAULTS)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GHOSTRUN_MAX_AGE", raising=False)
    monkeypatch.delenv("GHOSTRUN_ON_UNPLAYED", raising=False)
    with ghostrun.session(mode="record"):
        _ask(provider)
    # A new uuid in the prompt and a new trace id: the same key, by the table's settings.
    with ghostrun.session(mode="replay") as replay:
        _ask(provider)
    assert replay.replayed == 1 and provider.served == 1
    assert replay.on_unplayed == "ignore"
    settings = replay._deck.settings
    assert (settings.max_age, settings.on_stale) == (30, "fail")


def test_code_beats_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project_dir(tmp_path / "app", DEFAULTS))
    monkeypatch.delenv("GHOSTRUN_MAX_AGE", raising=False)
    monkeypatch.delenv("GHOSTRUN_ON_UNPLAYED", raising=False)
    with ghostrun.session(mode="replay", on_stale="warn", max_age="2d", on_unplayed="fail") as s:
        assert (s._deck.settings.on_stale, s._deck.settings.max_age) == ("warn", 2)
        assert s.on_unplayed == "fail"
    ghostrun.configure(on_unplayed="warn")
    try:
        assert ghostrun.session().on_unplayed == "warn"
        assert "configure(on_unplayed='warn')" in _config.setting_source("on_unplayed", "warn")
    finally:
        ghostrun.configure(on_unplayed=None)


@pytest.mark.parametrize(
    "line",
    [
        'on_unplayed = "sometimes"',
        'on_stale = "panic"',
        'max_age = "ninety days"',
        'normalize = ["timestamp"]',  # not a built-in, and a plain word is no regex
        'ignore_fields = "metadata.trace_id"',
    ],
)
def test_a_bad_value_in_the_table_names_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    monkeypatch.chdir(_project_dir(tmp_path / "app", line + "\n"))
    key = line.split(" ")[0]
    with pytest.raises(_project.ProjectConfigError, match=rf"\[tool.ghostrun\] {key}:"):
        ghostrun.session()


# -- the pytest plugin ---------------------------------------------------------------------


def _pytest(
    root: Path, provider: ProviderSimulator, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GHOSTRUN_")
        and k not in ("CI", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")
    }
    environ.update(SIM_URL=provider.base_url, **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
        ],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_plugin_reads_every_default_from_the_table(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    root = _project_dir(tmp_path / "app", DEFAULTS)
    done = _pytest(root, provider, GHOSTRUN_MODE="record", STEPS="2")
    assert done.returncode == 0, done.stdout + done.stderr

    # New uuids and trace ids (normalize, ignore_fields); one step of two (on_unplayed).
    done = _pytest(root, provider, GHOSTRUN_MODE="replay", STEPS="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert provider.served == 2

    # Recorded long ago: older than max_age = "30d", and on_stale = "fail".
    for path in (root / "cassettes").glob("*.json"):
        document = json.loads(path.read_text())
        for response in document["responses"]:
            response["recorded_on"] = "2001-01-01"
        path.write_text(json.dumps(document))
    done = _pytest(root, provider, GHOSTRUN_MODE="replay", STEPS="2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "StaleCassette" in done.stdout and provider.served == 2


JUDGED = """\
import pytest

import ghostrun


@pytest.mark.ghostrun
def test_judged():
    ghostrun.expect("Your refund was sent.").satisfies("mentions a refund")
"""


def test_the_judge_skip_names_the_table_as_its_source(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    root = _project_dir(tmp_path / "app", 'on_judge_unavailable = "skip"\n')
    (root / "test_app.py").write_text(JUDGED)
    done = _pytest(root, provider, GHOSTRUN_MODE="replay")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '(on_judge_unavailable = "skip" in [tool.ghostrun] (' in done.stdout, done.stdout
    assert "GHOSTRUN_ON_JUDGE_UNAVAILABLE=skip" not in done.stdout

    done = _pytest(root, provider, GHOSTRUN_MODE="replay", GHOSTRUN_ON_JUDGE_UNAVAILABLE="skip")
    assert "(GHOSTRUN_ON_JUDGE_UNAVAILABLE=skip)" in done.stdout, done.stdout


# -- the command line ----------------------------------------------------------------------


def test_check_older_than_uses_the_tables_max_age(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    root = _project_dir(tmp_path / "app", 'max_age = "30d"\n')
    assert _pytest(root, provider, GHOSTRUN_MODE="record").returncode == 0
    (cassette,) = (root / "cassettes").glob("*.json")
    command = [sys.executable, "-m", "ghostrun", "check", "--older-than"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "no cassette is older than 30d" in done.stdout, done.stdout

    document = json.loads(cassette.read_text())
    document["responses"][0]["recorded_on"] = "2001-01-01"
    cassette.write_text(json.dumps(document))
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "recorded more than 30d ago" in done.stdout, done.stdout


PROMPTED = """\
import os

import openai


def ask():
    client = openai.OpenAI(base_url=os.environ["SIM_URL"] + "/v1", api_key="sk-placeholder")
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": os.environ["PROMPT"]}],
        metadata={"trace_id": os.urandom(6).hex()},
    )
    return reply.choices[0].message.content
"""


def test_review_leaves_the_tables_ignore_fields_out_of_its_request_diffs(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    """A prompt edited and re-recorded: the review shows the prompt's change, not the trace
    id the suite ignores (which changes on every request)."""
    root = _project_dir(tmp_path / "app", 'ignore_fields = ["metadata.trace_id"]\n')
    (root / "app.py").write_text(PROMPTED)
    for prompt, snapshot in (("Where is my refund?", "base"), ("Where is my parcel?", "after")):
        done = _pytest(
            root, provider, GHOSTRUN_MODE="record", PROMPT=prompt, GHOSTRUN_SNAPSHOT=snapshot
        )
        assert done.returncode == 0, done.stdout + done.stderr
    command = [sys.executable, "-m", "ghostrun", "review", "--runs", "base", "after"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)
    assert "parcel" in done.stdout and "refund" in done.stdout, done.stdout + done.stderr
    assert "trace_id" not in done.stdout, done.stdout
