"""What a pull request that edits only ``[tool.ghostrun]`` can do to a CI job holding keys.

The table is project data, not code a reviewer reads as code (DESIGN §2). Each test is a
user's project run by pytest in a subprocess, as a CI job runs it: ``CI=true``, no
``GHOSTRUN_MODE``, a real-looking key in ``OPENAI_API_KEY``, the provider a loopback
simulator that counts what reaches it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from simulator import ProviderSimulator

from ghostrun._judging import _named

QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
KEY = "sk-proj-" + "ci0only0secret0ABCDEFGHIJKLMNOPQRSTUV"  # fake, assembled at run time

APP = """\
import os

import openai


def ask(prompt):
    client = openai.OpenAI(base_url=os.environ["SIM_URL"] + "/v1")
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content
"""

ASKS = """\
import pytest

from app import ask


@pytest.mark.ghostrun
def test_asks():
    assert ask("where is my refund?")
"""

JUDGED = """\
import pytest

import ghostrun


@pytest.mark.ghostrun
def test_judged():
    ghostrun.expect("Your refund was sent on Monday.").satisfies("mentions a refund")
"""

PLANTED = """\
import os
from pathlib import Path

Path(os.environ["MARKER"]).write_text("imported from the cassette directory")


def j(text, criterion):
    return True
"""


def _project(root: Path, table: str, test: str) -> Path:
    (root / "tests" / "cassettes").mkdir(parents=True)
    (root / ".git").mkdir()  # the project's root: the search for a config stops here
    (root / "pyproject.toml").write_text(
        '[tool.ghostrun]\ncassette_dir = "tests/cassettes"\nhosts = ["127.0.0.1"]\n' + table
    )
    (root / "tests" / "app.py").write_text(APP)
    (root / "tests" / "test_app.py").write_text(test)
    return root


def _ci_run(
    root: Path, provider: ProviderSimulator, **env: str
) -> subprocess.CompletedProcess[str]:
    """pytest as a CI job runs it: CI=true, the job's key, and no ghostrun setting."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GHOSTRUN_") and k not in ("PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")
    }
    environ.update(CI="true", OPENAI_API_KEY=KEY, SIM_URL=provider.base_url, **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", *QUIET],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _written(root: Path) -> list[Path]:
    """Cassettes written (the run log, under runs/, is written in every mode)."""
    return list((root / "tests" / "cassettes").glob("*.json"))


@pytest.mark.parametrize("mode", ["record", "auto", "all"])
def test_a_mode_in_the_table_cannot_make_a_ci_run_live(
    tmp_path: Path, provider: ProviderSimulator, mode: str
) -> None:
    root = _project(tmp_path / "app", f'mode = "{mode}"\n', ASKS)
    done = _ci_run(root, provider)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert provider.served == 0
    assert not _written(root)
    assert "CacheMiss" in output
    assert f"[tool.ghostrun] mode = '{mode}'" in output and "is ignored on CI" in output, output
    assert "GHOSTRUN_MODE=" in output

    # The switch a CI job sets on purpose still records: the fix the warning names works.
    done = _ci_run(root, provider, GHOSTRUN_MODE="record")
    assert done.returncode == 0, done.stdout + done.stderr
    assert provider.served == 1


def test_replay_in_the_table_still_applies_on_ci(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    root = _project(tmp_path / "app", 'mode = "replay"\n', ASKS)
    done = _ci_run(root, provider)
    assert done.returncode == 1 and provider.served == 0
    assert "is ignored on CI" not in done.stdout + done.stderr


def test_a_judge_url_in_the_table_never_receives_the_jobs_key(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    with ProviderSimulator() as elsewhere:
        elsewhere.reply = "PASS\nit mentions a refund"
        table = f'judge = "openai:judge-model"\njudge_url = "{elsewhere.base_url}/v1"\n'
        root = _project(tmp_path / "app", table, JUDGED)
        # A job that records on purpose (the only way a judge is called on CI).
        done = _ci_run(root, provider, GHOSTRUN_MODE="auto")
        assert elsewhere.served >= 1, done.stdout + done.stderr
        sent = [request.headers for request in elsewhere.requests]
    assert all(KEY not in " ".join(headers.values()) for headers in sent), sent
    assert all("authorization" not in headers for headers in sent), sent


def test_an_ollama_judge_url_in_the_table_never_receives_ollamas_key(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    """The ollama client adds OLLAMA_API_KEY to every request, whatever the host."""
    with ProviderSimulator() as elsewhere:
        table = f'judge = "ollama:llama3.2:3b"\njudge_url = "{elsewhere.base_url}"\n'
        root = _project(tmp_path / "app", table, JUDGED)
        done = _ci_run(root, provider, GHOSTRUN_MODE="auto", OLLAMA_API_KEY=KEY)
        assert elsewhere.served >= 1, done.stdout + done.stderr
        sent = [request.headers for request in elsewhere.requests]
    assert all(KEY not in " ".join(headers.values()) for headers in sent), sent


def test_an_environment_key_goes_only_to_openais_own_api_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GHOSTRUN_JUDGE_API_KEY", raising=False)
    assert _named.environment_key("https://api.openai.com/v1", from_table=True) == KEY
    for elsewhere in (
        "http://api.openai.com/v1",  # not https
        "https://api.openai.com.evil.example/v1",
        "https://evil.example/api.openai.com/v1",
        "https://api.openai.com:8443/v1",
        "http://127.0.0.1:9/v1",
    ):
        assert _named.environment_key(elsewhere, from_table=True) is None, elsewhere
    # A URL typed on the command line is the user's own choice.
    assert _named.environment_key("http://127.0.0.1:9/v1", from_table=False) == KEY


@pytest.mark.parametrize("mode", [None, "auto", "replay"])
def test_a_judge_module_planted_in_the_cassette_directory_is_never_imported(
    tmp_path: Path, provider: ProviderSimulator, mode: str | None
) -> None:
    root = _project(tmp_path / "app", 'judge = "cassettes.evil:j"\n', JUDGED)
    (root / "tests" / "cassettes" / "evil.py").write_text(PLANTED)
    marker = tmp_path / "imported"
    done = _ci_run(root, provider, MARKER=str(marker), **({"GHOSTRUN_MODE": mode} if mode else {}))
    output = done.stdout + done.stderr
    assert not marker.exists(), output
    assert done.returncode == 1, output
    assert "refused to import the judge module 'cassettes.evil'" in output, output
    assert "cassette directory" in output
    assert "Traceback" not in done.stderr


def test_a_module_whose_package_is_the_cassette_directory_is_refused_before_it_runs(
    tmp_path: Path,
) -> None:
    """The package's own ``__init__`` would run first: it is refused as well."""
    data = tmp_path / "cassettes"
    data.mkdir()
    (data / "__init__.py").write_text("raise SystemExit('the package ran')\n")
    (data / "judge.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match=r"refused to import .*'cassettes\.judge'"):
            _named.import_named("cassettes.judge", [data])
        assert "cassettes" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))
